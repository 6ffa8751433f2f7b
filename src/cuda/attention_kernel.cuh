// FlashAttention-2 forward on tensor cores (mma.sync.m16n8k16, f32 accumulate).
//
// Strategy (Dao, "FlashAttention-2", 2023): one thread block owns a tile of
// BLOCK_M query rows of one (batch, head) and streams the visible K/V tiles of
// BLOCK_N keys through shared memory; each warp owns 16 * M_TILES of the
// query rows, so no reduction across warps is needed. K and V tiles are
// double buffered with cp.async (tile j + 2 loads while tile j + 1 is
// computed). Shared rows are padded by 16 bytes, which makes the eight row
// addresses of every ldmatrix fall in distinct bank groups for every head
// dim (no swizzle needed, 3-6% more shared memory). S = Q K^T comes out of
// the mma accumulators in exactly the register layout of the A operand of
// P V, so P never leaves registers. Softmax is online in the exp2 domain
// (log2(e) folded into the scale); O is rescaled by 2^(m_old - m_new) per
// tile and divided by the row sum once at the end. Key tiles entirely outside
// the causal/window band are never visited; only tiles crossing the band or
// the key length are masked (a block-uniform branch). Rows without a visible
// key end with l = 0: O = 0 and LSE = -inf.
//
// Split-KV (decode): blockIdx also enumerates `splits` slices of the key
// tiles; each slice writes O / l and its log2-sum-exp as f32 partials, and
// attn_combine_kernel merges them weighted by 2^(lse_s - max).
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "cuda/attention_mma.cuh"
#include "cuda/attention_params.hpp"

namespace tops::cuda::attn {

constexpr int kWarpThreads = 32;
constexpr int kMmaM = 16;            // rows of one mma tile
constexpr int kMmaN = 8;             // columns of one mma tile
constexpr int kMmaK = 16;            // reduction depth of one mma
constexpr int kChunkBytes = 16;      // one cp.async / ldmatrix row
constexpr int kStages = 2;           // K/V shared-memory buffers

// Tile shape of one forward configuration.
template <class T_, int kHeadDim_, int kBlockM_, int kBlockN_, int kWarps_, bool kQInRegs_>
struct FwdTraits {
    using T = T_;
    static constexpr int kHeadDim = kHeadDim_;
    static constexpr int kBlockM = kBlockM_;
    static constexpr int kBlockN = kBlockN_;
    static constexpr int kWarps = kWarps_;
    static constexpr bool kQInRegs = kQInRegs_;  // Q fragments loaded once, not per key tile
    static constexpr int kThreads = kWarps * kWarpThreads;
    static constexpr int kRowsPerWarp = kBlockM / kWarps;
    static constexpr int kMTiles = kRowsPerWarp / kMmaM;
    static constexpr int kNTiles = kBlockN / kMmaN;      // S columns per warp
    static constexpr int kDTiles = kHeadDim / kMmaN;     // O columns per warp
    static constexpr int kElemsPerChunk = kChunkBytes / int(sizeof(T));
    static constexpr int kChunksPerRow = kHeadDim / kElemsPerChunk;
    static constexpr int kStride = kHeadDim + kElemsPerChunk;  // padded shared row (elements)
    static constexpr int kSmemBytes = (kBlockM + 2 * kStages * kBlockN) * kStride * int(sizeof(T));
    // Skip the O rescale when no row max of the warp moved: a warp vote per
    // tile. Pays off from d 96 (96-128 multiplies saved per tile and thread;
    // d128 f16 n512..16384 went from 0.87-0.95x to 0.93-1.01x of FA2's
    // TFLOP/s on an H200); at d <= 64 the vote cost more than it saved
    // (causal d64 fell from 1.00-1.09x to 0.94-1.05x).
    static constexpr bool kLazyRescale = kHeadDim >= 96;
    // Commit V_0 apart from (Q, K_0) so the first S = Q K^T overlaps it;
    // costs one more barrier per block. Measured with kLazyRescale as one
    // change at d128 (above); at d64 causal it cost ~4% (0.96-0.99x vs
    // 1.00-1.09x of FA2), so d <= 64 waits for Q, K_0 and V_0 together.
    static constexpr bool kSplitPrologue = kHeadDim >= 96;

    static_assert(sizeof(T) == 2, "f16 / bf16 operands");
    static_assert(kHeadDim % kMmaK == 0, "head dim is a multiple of the mma depth");
    static_assert(kBlockM % (kWarps * kMmaM) == 0, "each warp owns whole 16-row mma tiles");
    static_assert(kBlockN % kMmaK == 0, "key tile is a multiple of the P.V mma depth");
    static_assert((kStride * int(sizeof(T))) % kChunkBytes == 0, "rows stay 16-byte aligned");
};

// ------------------------------------------------------------------ loads

// (kRows, kHeadDim) rows [row0, row0 + kRows) of a (seq, dim) matrix into
// padded shared rows; rows >= nvalid become zeros. Vector path: thread tid
// copies chunk tid % LOAD_COLS of rows tid / LOAD_COLS + it * ROW_STEP; the
// source pointer advances by one opaque add per row step, so the compiler
// cannot keep a 64-bit address per chunk alive across the key loop.
template <class Tr, int kRows>
__device__ __forceinline__ void load_tile(typename Tr::T* smem, const typename Tr::T* g, int64_t ss, int64_t ds,
                                          int row0, int nvalid, bool vec) {
    using T = typename Tr::T;
    constexpr int kCols = Tr::kChunksPerRow;
    constexpr int kLoadCols = kCols <= 4 ? 4 : kCols <= 8 ? 8 : kCols <= 16 ? 16 : 32;  // power of two >= kCols
    static_assert(Tr::kThreads % kLoadCols == 0, "whole rows per thread group");
    constexpr int kRowStep = Tr::kThreads / kLoadCols;
    const int tid = threadIdx.x;
    if (vec) {
        const int ch = tid % kLoadCols;
        const int r0 = tid / kLoadCols;
        if (ch >= kCols) return;
        const T* src = g + int64_t(row0 + r0) * ss + ch * Tr::kElemsPerChunk;
        const int64_t step = int64_t(kRowStep) * ss;
        T* dst = smem + r0 * Tr::kStride + ch * Tr::kElemsPerChunk;
#pragma unroll
        for (int it = 0; it < (kRows + kRowStep - 1) / kRowStep; ++it) {
            const int r = r0 + it * kRowStep;
            if (kRows % kRowStep == 0 || r < kRows) {
                const bool ok = row0 + r < nvalid;
                cp_async_16(dst + it * kRowStep * Tr::kStride, ok ? src : g, ok);
            }
            src += step;
            asm volatile("" : "+l"(src));
        }
    } else {
        // Any strides: element loads (no cp.async), visible after the next barrier.
        for (int e = tid; e < kRows * Tr::kHeadDim; e += Tr::kThreads) {
            const int r = e / Tr::kHeadDim;
            const int d = e % Tr::kHeadDim;
            const bool ok = row0 + r < nvalid;
            smem[r * Tr::kStride + d] = ok ? g[int64_t(row0 + r) * ss + int64_t(d) * ds] : T(0.0f);
        }
    }
}

// ------------------------------------------------------------------ forward

template <class Tr>
__global__ void __launch_bounds__(Tr::kThreads) attn_fwd_kernel(const FwdParams p) {
    using T = typename Tr::T;
    constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN, kD = Tr::kHeadDim, kStride = Tr::kStride;
    constexpr int kMT = Tr::kMTiles, kNT = Tr::kNTiles, kDT = Tr::kDTiles;

    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* const sQ = reinterpret_cast<T*>(smem_raw);    // (BLOCK_M, STRIDE)
    T* const sK = sQ + kBlockM * kStride;             // (STAGES, BLOCK_N, STRIDE)
    T* const sV = sK + kStages * kBlockN * kStride;   // (STAGES, BLOCK_N, STRIDE)

    // Block -> (batch, head, split, query tile); query tile fastest so that
    // neighbouring blocks share K/V in L2. With a right bound (causal), the
    // heaviest tiles (last rows) start first.
    unsigned idx = blockIdx.x;
    int mi = int(idx % unsigned(p.m_blocks));
    idx /= unsigned(p.m_blocks);
    const int split = int(idx % unsigned(p.splits));
    idx /= unsigned(p.splits);
    const int h = int(idx % unsigned(p.heads));
    const int b = int(idx / unsigned(p.heads));
    if (p.window_right >= 0) mi = p.m_blocks - 1 - mi;

    int64_t q_row0 = 0, k_row0 = 0;
    int sq = p.seqlen_q, sk = p.seqlen_k;
    if (p.cu_q) {
        q_row0 = p.cu_q[b];
        sq = p.cu_q[b + 1] - int(q_row0);
        k_row0 = p.cu_k[b];
        sk = p.cu_k[b + 1] - int(k_row0);
    } else if (p.seqlens_k) {
        sk = min(max(p.seqlens_k[b], 0), p.seqlen_k);
    }
    const int m0 = mi * kBlockM;
    if (m0 >= sq) return;
    const int hk = h / p.group;

    const T* gQ = static_cast<const T*>(p.q) + b * p.q_bs + q_row0 * p.q_ss + h * p.q_hs;
    const T* gK = static_cast<const T*>(p.k) + b * p.k_bs + k_row0 * p.k_ss + hk * p.k_hs;
    const T* gV = static_cast<const T*>(p.v) + b * p.v_bs + k_row0 * p.v_ss + hk * p.v_hs;

    const KeyBand band = key_band(m0, kBlockM, kBlockN, sq, sk, p.window_left, p.window_right, split, p.splits);
    const int nb_begin = band.nb_begin, nb_end = band.nb_end, band_lo = band.lo, band_hi = band.hi;

    const int warp = threadIdx.x / kWarpThreads;
    const int lane = threadIdx.x % kWarpThreads;
    const int g = lane / 4;  // accumulator row within an mma tile
    const int t = lane % 4;  // accumulator column pair
    const int warp_row0 = warp * Tr::kRowsPerWarp;

    float acc_o[kMT][kDT][4];  // (ROWS_PER_WARP, HEAD_DIM) per warp
    float row_max[kMT][2], row_sum[kMT][2];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
        for (int dt = 0; dt < kDT; ++dt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) acc_o[mt][dt][e] = 0.0f;
        }
        row_max[mt][0] = row_max[mt][1] = -INFINITY;
        row_sum[mt][0] = row_sum[mt][1] = 0.0f;
    }

    if (nb_begin < nb_end) {
        // Per-lane ldmatrix offsets (elements): Q as A (rows lane % 16, dims
        // (lane / 16) * 8), K as B (keys lane % 8 + (lane / 16) * 8, dims
        // ((lane / 8) % 2) * 8), V as transposed B (keys lane % 8 +
        // ((lane / 8) % 2) * 8, dims (lane / 16) * 8).
        const int q_lane = (warp_row0 + lane % 16) * kStride + (lane / 16) * 8;
        const int k_lane = (lane % 8 + (lane / 16) * 8) * kStride + ((lane / 8) % 2) * 8;
        const int v_lane = (lane % 8 + ((lane / 8) % 2) * 8) * kStride + (lane / 16) * 8;

        // Groups: (Q, K_0), (V_0) [empty without kSplitPrologue: V_0 joins
        // the first], (K_1, V_1), then one per iteration.
        load_tile<Tr, kBlockM>(sQ, gQ, p.q_ss, p.q_ds, m0, sq, p.vec_qkv);
        load_tile<Tr, kBlockN>(sK, gK, p.k_ss, p.k_ds, nb_begin * kBlockN, sk, p.vec_qkv);
        if constexpr (Tr::kSplitPrologue) cp_async_commit();
        load_tile<Tr, kBlockN>(sV, gV, p.v_ss, p.v_ds, nb_begin * kBlockN, sk, p.vec_qkv);
        cp_async_commit();
        if constexpr (!Tr::kSplitPrologue) cp_async_commit();
        if (nb_begin + 1 < nb_end) {
            load_tile<Tr, kBlockN>(sK + kBlockN * kStride, gK, p.k_ss, p.k_ds, (nb_begin + 1) * kBlockN, sk,
                                   p.vec_qkv);
            load_tile<Tr, kBlockN>(sV + kBlockN * kStride, gV, p.v_ss, p.v_ds, (nb_begin + 1) * kBlockN, sk,
                                   p.vec_qkv);
        }
        cp_async_commit();

        uint32_t q_frag[Tr::kQInRegs ? kMT : 1][Tr::kQInRegs ? kD / kMmaK : 1][4];

        for (int nb = nb_begin; nb < nb_end; ++nb) {
            const int stage = (nb - nb_begin) % kStages;
            const T* sKs = sK + stage * kBlockN * kStride;
            const T* sVs = sV + stage * kBlockN * kStride;
            if (nb == nb_begin) {
                cp_async_wait<2>();
            } else {
                cp_async_wait<1>();
            }
            __syncthreads();
            if constexpr (Tr::kQInRegs) {
                if (nb == nb_begin) {
#pragma unroll
                    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
                        for (int kk = 0; kk < kD / kMmaK; ++kk) {
                            ldmatrix_x4(q_frag[mt][kk], sQ + q_lane + mt * kMmaM * kStride + kk * kMmaK);
                        }
                    }
                }
            }

            // S = Q K^T: (ROWS_PER_WARP, BLOCK_N) per warp.
            float acc_s[kMT][kNT][4];
#pragma unroll
            for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
                    for (int e = 0; e < 4; ++e) acc_s[mt][nt][e] = 0.0f;
                }
            }
#pragma unroll
            for (int kk = 0; kk < kD / kMmaK; ++kk) {
                uint32_t qa[kMT][4];
#pragma unroll
                for (int mt = 0; mt < kMT; ++mt) {
                    if constexpr (Tr::kQInRegs) {
#pragma unroll
                        for (int e = 0; e < 4; ++e) qa[mt][e] = q_frag[mt][kk][e];
                    } else {
                        ldmatrix_x4(qa[mt], sQ + q_lane + mt * kMmaM * kStride + kk * kMmaK);
                    }
                }
#pragma unroll
                for (int np = 0; np < kNT / 2; ++np) {
                    uint32_t kb[4];
                    ldmatrix_x4(kb, sKs + k_lane + np * 16 * kStride + kk * kMmaK);
#pragma unroll
                    for (int mt = 0; mt < kMT; ++mt) {
                        mma_16816<T>(acc_s[mt][2 * np], qa[mt], kb[0], kb[1]);
                        mma_16816<T>(acc_s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
                    }
                }
            }

            // Mask only tiles that cross the key length or the band.
            const int n0 = nb * kBlockN;
            const int i_first = m0 + warp_row0;
            const bool full = band.unmasked(n0, kBlockN, m0, kBlockM, sk);
            if (!full) {
#pragma unroll
                for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
                    for (int hr = 0; hr < 2; ++hr) {
                        const int i = i_first + mt * kMmaM + g + hr * 8;
#pragma unroll
                        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
                            for (int e = 0; e < 2; ++e) {
                                const int j = n0 + nt * kMmaN + 2 * t + e;
                                const int dji = j - i;
                                if (j >= sk || dji < band_lo || dji > band_hi) acc_s[mt][nt][hr * 2 + e] = -INFINITY;
                            }
                        }
                    }
                }
            }

            // Online softmax in the exp2 domain; P overwrites S. With
            // kLazyRescale, O is rescaled only when some row max of the warp
            // moved (alpha != 1).
            float alpha[kMT][2];
            bool moved = false;
#pragma unroll
            for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
                for (int hr = 0; hr < 2; ++hr) {
                    float mx = row_max[mt][hr];
#pragma unroll
                    for (int nt = 0; nt < kNT; ++nt) {
                        mx = fmaxf(mx, fmaxf(acc_s[mt][nt][hr * 2], acc_s[mt][nt][hr * 2 + 1]));
                    }
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                    const float m_scaled = mx == -INFINITY ? 0.0f : mx * p.scale_log2;
                    const float a = exp2_approx(row_max[mt][hr] * p.scale_log2 - m_scaled);
                    alpha[mt][hr] = a;
                    moved |= a != 1.0f;
                    row_max[mt][hr] = mx;
                    float sum = 0.0f;
#pragma unroll
                    for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
                        for (int e = 0; e < 2; ++e) {
                            const float pv = exp2_approx(fmaf(acc_s[mt][nt][hr * 2 + e], p.scale_log2, -m_scaled));
                            acc_s[mt][nt][hr * 2 + e] = pv;
                            sum += pv;
                        }
                    }
                    row_sum[mt][hr] = row_sum[mt][hr] * a + sum;
                }
            }
            if (!Tr::kLazyRescale || __any_sync(0xffffffffu, moved)) {
#pragma unroll
                for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
                    for (int dt = 0; dt < kDT; ++dt) {
#pragma unroll
                        for (int e = 0; e < 4; ++e) acc_o[mt][dt][e] *= alpha[mt][e / 2];
                    }
                }
            }

            if (Tr::kSplitPrologue && nb == nb_begin) {  // V_0 landed (group 1)
                cp_async_wait<1>();
                __syncthreads();
            }

            // O += P V: P from registers, V transposed by ldmatrix.
#pragma unroll
            for (int kk = 0; kk < kBlockN / kMmaK; ++kk) {
                uint32_t pa[kMT][4];
#pragma unroll
                for (int mt = 0; mt < kMT; ++mt) {
                    pa[mt][0] = pack2<T>(acc_s[mt][2 * kk][0], acc_s[mt][2 * kk][1]);
                    pa[mt][1] = pack2<T>(acc_s[mt][2 * kk][2], acc_s[mt][2 * kk][3]);
                    pa[mt][2] = pack2<T>(acc_s[mt][2 * kk + 1][0], acc_s[mt][2 * kk + 1][1]);
                    pa[mt][3] = pack2<T>(acc_s[mt][2 * kk + 1][2], acc_s[mt][2 * kk + 1][3]);
                }
#pragma unroll
                for (int dp = 0; dp < kDT / 2; ++dp) {
                    uint32_t vb[4];
                    ldmatrix_x4_trans(vb, sVs + v_lane + kk * kMmaK * kStride + dp * 16);
#pragma unroll
                    for (int mt = 0; mt < kMT; ++mt) {
                        mma_16816<T>(acc_o[mt][2 * dp], pa[mt], vb[0], vb[1]);
                        mma_16816<T>(acc_o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
                    }
                }
            }

            // Every warp is done with this stage: refill it with tile nb + 2.
            __syncthreads();
            if (nb + kStages < nb_end) {
                const int r0 = (nb + kStages) * kBlockN;
                load_tile<Tr, kBlockN>(sK + stage * kBlockN * kStride, gK, p.k_ss, p.k_ds, r0, sk, p.vec_qkv);
                load_tile<Tr, kBlockN>(sV + stage * kBlockN * kStride, gV, p.v_ss, p.v_ds, r0, sk, p.vec_qkv);
            }
            cp_async_commit();
        }
        cp_async_wait<0>();
    }

    // Epilogue: finish the row sums across the quad and divide once. When o
    // rows allow 16-byte stores, each warp stages its O rows in its own rows
    // of sQ (only this warp ever read them) and writes whole 16-byte chunks
    // of each row; otherwise 4-byte pairs (or elements) go straight from the
    // accumulators, whose quads cover 16 bytes of 8 rows per store.
    const bool staged = p.splits == 1 && p.vec16_o;
    if (staged) __syncwarp();
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
            float l = row_sum[mt][hr];
            l += __shfl_xor_sync(0xffffffffu, l, 1);
            l += __shfl_xor_sync(0xffffffffu, l, 2);
            const int r = warp_row0 + mt * kMmaM + g + hr * 8;  // row of the block's tile
            const int i = m0 + r;
            const float inv = l > 0.0f ? 1.0f / l : 0.0f;
            const float lse2 = l > 0.0f ? row_max[mt][hr] * p.scale_log2 + __log2f(l) : -INFINITY;
            if (staged) {
                T* srow = sQ + r * kStride + 2 * t;  // (ROWS_PER_WARP, HEAD_DIM) of this warp
#pragma unroll
                for (int dt = 0; dt < kDT; ++dt) {
                    *reinterpret_cast<uint32_t*>(srow + dt * kMmaN) =
                        pack2<T>(acc_o[mt][dt][hr * 2] * inv, acc_o[mt][dt][hr * 2 + 1] * inv);
                }
            }
            if (i >= sq) continue;
            const int64_t tok = q_row0 + i;
            if (p.splits > 1) {
                const int64_t row = p.cu_q ? tok : int64_t(b) * p.seqlen_q + i;
                const int64_t prow = (int64_t(split) * p.part_rows + row) * p.heads + h;
                float* po = p.part_o + prow * kD;
#pragma unroll
                for (int dt = 0; dt < kDT; ++dt) {
                    const float2 v2 = make_float2(acc_o[mt][dt][hr * 2] * inv, acc_o[mt][dt][hr * 2 + 1] * inv);
                    *reinterpret_cast<float2*>(po + dt * kMmaN + 2 * t) = v2;
                }
                if (t == 0) p.part_lse[prow] = lse2;
                continue;
            }
            if (p.lse && t == 0) p.lse[b * p.lse_bs + tok * p.lse_ss + h * p.lse_hs] = lse2 * kLn2;
            if (staged) continue;
            T* go = static_cast<T*>(p.o) + b * p.o_bs + tok * p.o_ss + h * p.o_hs;
#pragma unroll
            for (int dt = 0; dt < kDT; ++dt) {
                const int d = dt * kMmaN + 2 * t;
                const float lo = acc_o[mt][dt][hr * 2] * inv, hi = acc_o[mt][dt][hr * 2 + 1] * inv;
                if (p.vec_o) {
                    *reinterpret_cast<uint32_t*>(go + d) = pack2<T>(lo, hi);
                } else {
                    go[d * p.o_ds] = T(lo);
                    go[(d + 1) * p.o_ds] = T(hi);
                }
            }
        }
    }
    if (staged) {
        // (ROWS_PER_WARP, CHUNKS_PER_ROW) 16-byte chunks, lanes along rows.
        constexpr int kChunks = Tr::kChunksPerRow;
        constexpr int kWarpChunks = Tr::kRowsPerWarp * kChunks;
        static_assert(kWarpChunks % kWarpThreads == 0, "whole warp steps over the staged rows");
        __syncwarp();
#pragma unroll
        for (int it = 0; it < kWarpChunks / kWarpThreads; ++it) {
            const int e = it * kWarpThreads + lane;
            const int r = warp_row0 + e / kChunks;
            const int col = (e % kChunks) * Tr::kElemsPerChunk;
            const int i = m0 + r;
            if (i < sq) {
                const uint4 v = *reinterpret_cast<const uint4*>(sQ + r * kStride + col);
                T* go = static_cast<T*>(p.o) + b * p.o_bs + (q_row0 + i) * p.o_ss + h * p.o_hs + col;
                *reinterpret_cast<uint4*>(go) = v;
            }
        }
    }
}

// ------------------------------------------------------------------ combine

template <class T>
__global__ void __launch_bounds__(kCombineWarps * kWarpThreads) attn_combine_kernel(const CombineParams p) {
    __shared__ float weights[kCombineWarps][kMaxSplits];
    const int warp = threadIdx.x / kWarpThreads;
    const int lane = threadIdx.x % kWarpThreads;
    const int64_t item = int64_t(blockIdx.x) * kCombineWarps + warp;  // (batch, seq_q, head)
    const int h = int(item % p.heads);
    const int64_t bi = item / p.heads;
    const int i = int(bi % p.seqlen_q);
    const int b = int(bi / p.seqlen_q);
    if (b >= p.batch) return;
    int64_t tok = i, row = int64_t(b) * p.seqlen_q + i;
    if (p.cu_q) {
        if (i >= p.cu_q[b + 1] - p.cu_q[b]) return;
        tok = p.cu_q[b] + int64_t(i);
        row = tok;
    }
    const int64_t stride_split = p.part_rows * p.heads;
    const int64_t prow = row * p.heads + h;
    float mx = -INFINITY;
    for (int s = lane; s < p.splits; s += kWarpThreads) mx = fmaxf(mx, p.part_lse[s * stride_split + prow]);
#pragma unroll
    for (int o = kWarpThreads / 2; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.0f;
    for (int s = lane; s < p.splits; s += kWarpThreads) {
        const float w = mx == -INFINITY ? 0.0f : exp2f(p.part_lse[s * stride_split + prow] - mx);
        weights[warp][s] = w;
        sum += w;
    }
#pragma unroll
    for (int o = kWarpThreads / 2; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    __syncwarp();
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    T* go = static_cast<T*>(p.o) + b * p.o_bs + tok * p.o_ss + int64_t(h) * p.o_hs;
    for (int d = lane; d < p.head_dim; d += kWarpThreads) {
        float acc = 0.0f;
        for (int s = 0; s < p.splits; ++s) {
            const float w = weights[warp][s];
            if (w != 0.0f) acc += w * p.part_o[(s * stride_split + prow) * p.head_dim + d];
        }
        go[d * p.o_ds] = T(acc * inv);
    }
    if (p.lse && lane == 0) {
        p.lse[b * p.lse_bs + tok * p.lse_ss + int64_t(h) * p.lse_hs] = sum > 0.0f ? (mx + __log2f(sum)) * kLn2 : -INFINITY;
    }
}

// ------------------------------------------------------------------ launchers

template <class Tr>
cudaError_t launch_fwd(const FwdParams& p, unsigned grid, cudaStream_t stream) {
    attn_fwd_kernel<Tr><<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p);
    return cudaGetLastError();
}

template <class T>
cudaError_t launch_combine(const CombineParams& p, unsigned grid, cudaStream_t stream) {
    attn_combine_kernel<T><<<grid, kCombineWarps * kWarpThreads, 0, stream>>>(p);
    return cudaGetLastError();
}

template <class Tr>
KernelConfig make_config(bool decode, int rows, const char* name) {
    return KernelConfig{Tr::kHeadDim,     decode,       rows,         Tr::kBlockM,
                        Tr::kBlockN,      Tr::kThreads, Tr::kSmemBytes,
                        reinterpret_cast<const void*>(&attn_fwd_kernel<Tr>), name,
                        &launch_fwd<Tr>,  &launch_combine<typename Tr::T>};
}

}  // namespace tops::cuda::attn
