// Attention forward for Hopper (sm_90a): TMA loads into 128-byte-swizzled
// shared memory and wgmma for both products, S = Q K^T and O += P V.
//
// Why: the mma.sync kernels (attention_kernel.cuh) run FlashAttention-2's
// tiles at FlashAttention-2's speed, 300-355 TFLOP/s at d 128 on an H100,
// about a third of its f16 tensor peak; their warps spend issue slots and
// registers on ldmatrix fragments of K and V and on 16x8 mma tiles. A wgmma reads its shared-memory operands
// itself and computes a 64 x N block per warpgroup instruction, so the
// consumer warps keep their issue slots for the softmax.
//
// Strategy (the warp-specialized forward of FlashAttention-3, Shah et al.
// 2024, without its FP8 path and its ping-pong of the two warpgroups): one
// CTA per (batch, head, 128 query rows). Warpgroup 0 is the producer: one
// thread loads the Q tile once and streams (BLOCK_N, HEAD_DIM) K and V tiles
// by TMA through a ring of kStages stages guarded by mbarriers ("full":
// bytes landed; "empty": all 8 consumer warps are done with it). Warpgroups
// 1 and 2 own 64 query rows each: S = Q K^T by wgmma with both operands
// K-major in shared memory; online softmax on the f32 accumulators in the
// exp2 domain (log2(e) folded into the scale); P converted in registers into
// the A fragments of O += P V, whose B operand V is read N-major (head dim
// contiguous, the transposed form wgmma takes for 16-bit types). The K stage
// is released once S is done, the V stage once P V is. At head dim 128 the
// S of key tile j and the P V of tile j - 1 go to the tensor cores together
// and tile j's softmax runs while P V does (AttnSm90Tile::kOverlap). At the end each warp
// writes its 16 rows of O / l into its own rows of the Q buffer (swizzled as
// TMA expects) and stores them by TMA, which drops rows past Sq. Key tiles
// outside the causal / window band are never loaded; tiles that cross it or
// the key length are masked (the rules of attention_kernel.cuh, KeyBand).
// Rows without a visible key end with l = 0: O = 0 and LSE = -inf.
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "common/env.hpp"
#include "cuda/attention_configs.cuh"
#include "cuda/attention_mma.cuh"
#include "cuda/attention_sm90.hpp"
#include "cuda/common/sm90.cuh"
#include "cuda/common/tensor_map.hpp"

namespace tops::cuda::attn {
namespace {

using sm90::kWarpgroupThreads;
using sm90::kWarpsPerWarpgroup;
using sm90::next_stage;

// 128 x 128 tiles for head dims 64 and 128: two consumer warpgroups of 64
// rows (one m64 wgmma each); 128 keys make S 64 f32 registers per thread,
// and with O (32 / 64) and P (32) that fits the consumers' 240 registers.
// Stages: as many (BLOCK_N, HEAD_DIM) K + V pairs as shared memory holds
// beside Q, up to 3 (d 128: 2 stages, 160 KiB). Measured with this tile on
// an H100 (docs/performance.md): 1.08-1.45x FlashAttention-2's TFLOP/s at
// d 64, 1.27-2.14x at d 128, over N = 512..16384; no other tile measured.
template <int kHeadDim_>
struct AttnSm90Tile {
    static constexpr int kHeadDim = kHeadDim_;
    static constexpr int kConsumers = 2;
    static constexpr int kWgmmaM = 64;
    static constexpr int kWgmmaK = 16;
    static constexpr int kBlockM = kConsumers * kWgmmaM;
    static constexpr int kBlockN = 128;
    static constexpr int kStages = kHeadDim <= 64 ? 3 : 2;
    // Schedule of a consumer warpgroup: with kOverlap, the S = Q K^T of key
    // tile j and the P V of tile j - 1 are issued together and tile j's
    // softmax runs while P V does; without, each product is waited for
    // before the softmax. H100, same run, two runs each, every anchor shape:
    // d 128 +1% to +15% with the overlap (N >= 1024: +5 to +15%); d 64 -1%
    // to -9% (not profiled; likely because P V is half as long there and
    // hides little of the softmax, while S waits behind it).
    static constexpr bool kOverlap = kHeadDim >= 128;
    static constexpr int kThreads = kWarpgroupThreads * (kConsumers + 1);
    // setmaxnreg budgets: 24 * 128 + 240 * 256 <= 65536.
    static constexpr int kProducerRegs = 24;
    static constexpr int kConsumerRegs = 240;
    static constexpr int kElemBytes = 2;
    static constexpr int kChunkCols = int(sm90::kSwizzleRowBytes) / kElemBytes;  // head-dim columns per swizzle row
    static constexpr int kChunks = kHeadDim / kChunkCols;
    static constexpr int kSlicesPerChunk = kChunkCols / kWgmmaK;
    static constexpr int kQChunkBytes = kBlockM * int(sm90::kSwizzleRowBytes);
    static constexpr int kKVChunkBytes = kBlockN * int(sm90::kSwizzleRowBytes);
    static constexpr int kQBytes = kChunks * kQChunkBytes;
    static constexpr int kKVBytes = kChunks * kKVChunkBytes;  // one K or one V tile
    static constexpr int kSAcc = kWgmmaM * kBlockN / kWarpgroupThreads;
    static constexpr int kOAcc = kWgmmaM * kHeadDim / kWarpgroupThreads;
    static constexpr int kKSlices = kHeadDim / kWgmmaK;  // k16 slices of S = Q K^T
    static constexpr int kPSlices = kBlockN / kWgmmaK;   // k16 slices of O += P V
    static constexpr int kWarpRows = 16;                 // rows of one warp: one TMA store box
    static constexpr int kBarriers = 1 + 4 * kStages;    // q_full, k_full/empty, v_full/empty
    static constexpr int kSmemAlign = int(sm90::kSwizzleAtomBytes);
    static constexpr int kSmemBytes =
        kQBytes + 2 * kStages * kKVBytes + kBarriers * int(sizeof(uint64_t)) + kSmemAlign;

    static_assert(kHeadDim % kChunkCols == 0, "whole swizzle rows of head dim");
    static_assert(kBlockN % kWgmmaK == 0 && kBlockN <= 256, "one wgmma covers the key tile");
    static_assert(kSAcc == 64 && (kOAcc == 32 || kOAcc == 64), "instantiated wgmma shapes");
    static_assert(kWgmmaM == kWarpsPerWarpgroup * kWarpRows, "each warp stores its own 16 rows");
    static_assert(kProducerRegs * kWarpgroupThreads + kConsumers * kConsumerRegs * kWarpgroupThreads <= 65536,
                  "register file");
};

struct AttnSm90Params {   // 64-byte aligned by its tensor maps
    CUtensorMap tmap_q;   // (D, Sq, H, B), D innermost; box (64, BLOCK_M)
    CUtensorMap tmap_k;   // (D, Sk, Hk, B); box (64, BLOCK_N)
    CUtensorMap tmap_v;   // (D, Sk, Hk, B); box (64, BLOCK_N)
    CUtensorMap tmap_o;   // (D, Sq, H, B); box (64, 16)
    // Sizes, scale, window and the optional lse (B, H, Sq, natural log); m_blocks
    // counts this kernel's BLOCK_M tiles. q, k, v and o are read through the maps.
    FwdParams f;
};

template <class T, int D>
__global__ void __launch_bounds__(AttnSm90Tile<D>::kThreads, 1)
    attention_sm90_tma_wgmma_kernel(const __grid_constant__ AttnSm90Params p) {
#if TOPS_SM90A
    using Tile = AttnSm90Tile<D>;
    constexpr int kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN, kStages = Tile::kStages;
    constexpr uint32_t kRowBytes = sm90::kSwizzleRowBytes;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    const uint32_t base = (raw + Tile::kSmemAlign - 1) / Tile::kSmemAlign * Tile::kSmemAlign;
    const uint32_t s_q = base;                                // (CHUNKS, BLOCK_M, 64) swizzled
    const uint32_t s_k = s_q + Tile::kQBytes;                 // (STAGES, CHUNKS, BLOCK_N, 64) swizzled
    const uint32_t s_v = s_k + kStages * Tile::kKVBytes;      // (STAGES, CHUNKS, BLOCK_N, 64) swizzled
    const uint32_t q_full = s_v + kStages * Tile::kKVBytes;
    const uint32_t k_full = q_full + uint32_t(sizeof(uint64_t));
    const uint32_t k_empty = k_full + kStages * uint32_t(sizeof(uint64_t));
    const uint32_t v_full = k_empty + kStages * uint32_t(sizeof(uint64_t));
    const uint32_t v_empty = v_full + kStages * uint32_t(sizeof(uint64_t));
    auto bar = [](uint32_t set, int stage) { return set + uint32_t(stage) * uint32_t(sizeof(uint64_t)); };

    if (threadIdx.x == 0) {
        sm90::mbar_init(q_full, 1);
        for (int s = 0; s < kStages; ++s) {
            sm90::mbar_init(bar(k_full, s), 1);
            sm90::mbar_init(bar(v_full, s), 1);
            sm90::mbar_init(bar(k_empty, s), Tile::kConsumers * kWarpsPerWarpgroup);
            sm90::mbar_init(bar(v_empty, s), Tile::kConsumers * kWarpsPerWarpgroup);
        }
        sm90::mbar_fence_init();
    }
    __syncthreads();

    // Block -> (batch, head, query tile), query tile fastest so neighbouring
    // CTAs share K / V in L2; with a right bound the heaviest tiles go first.
    unsigned idx = blockIdx.x;
    int mi = int(idx % unsigned(p.f.m_blocks));
    idx /= unsigned(p.f.m_blocks);
    const int h = int(idx % unsigned(p.f.heads));
    const int b = int(idx / unsigned(p.f.heads));
    if (p.f.window_right >= 0) mi = p.f.m_blocks - 1 - mi;
    const int m0 = mi * kBlockM;
    const int sq = p.f.seqlen_q, sk = p.f.seqlen_k;
    const KeyBand band = key_band(m0, kBlockM, kBlockN, sq, sk, p.f.window_left, p.f.window_right, 0, 1);

    const int wg = threadIdx.x / kWarpgroupThreads;
    const int tid = threadIdx.x % kWarpgroupThreads;

    if (wg == 0) {  // producer
        sm90::warpgroup_reg_dealloc<Tile::kProducerRegs>();
        if (tid != 0) return;
        sm90::tma_prefetch_desc(&p.tmap_q);
        sm90::tma_prefetch_desc(&p.tmap_k);
        sm90::tma_prefetch_desc(&p.tmap_v);
        const int hk = h / p.f.group;
        sm90::mbar_arrive_expect_tx(q_full, Tile::kQBytes);
        for (int c = 0; c < Tile::kChunks; ++c) {
            sm90::tma_load_4d(s_q + c * Tile::kQChunkBytes, &p.tmap_q, q_full, c * Tile::kChunkCols, m0, h, b);
        }
        int stage = 0;
        uint32_t phase = 0;
        for (int nb = band.nb_begin; nb < band.nb_end; ++nb) {
            const int n0 = nb * kBlockN;
            sm90::mbar_wait(bar(k_empty, stage), phase ^ 1u);  // the first pass finds every stage free
            sm90::mbar_arrive_expect_tx(bar(k_full, stage), Tile::kKVBytes);
            for (int c = 0; c < Tile::kChunks; ++c) {
                sm90::tma_load_4d(s_k + stage * Tile::kKVBytes + c * Tile::kKVChunkBytes, &p.tmap_k,
                                  bar(k_full, stage), c * Tile::kChunkCols, n0, hk, b);
            }
            sm90::mbar_wait(bar(v_empty, stage), phase ^ 1u);
            sm90::mbar_arrive_expect_tx(bar(v_full, stage), Tile::kKVBytes);
            for (int c = 0; c < Tile::kChunks; ++c) {
                sm90::tma_load_4d(s_v + stage * Tile::kKVBytes + c * Tile::kKVChunkBytes, &p.tmap_v,
                                  bar(v_full, stage), c * Tile::kChunkCols, n0, hk, b);
            }
            next_stage(stage, phase, kStages);
        }
        return;
    }

    // consumers: warpgroup cw owns query rows [wm0, wm0 + 64) of the tile
    sm90::warpgroup_reg_alloc<Tile::kConsumerRegs>();
    const int cw = wg - 1;
    const int warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const int wm0 = m0 + cw * Tile::kWgmmaM;
    const int row0 = wm0 + warp * Tile::kWarpRows + g;  // this thread's rows: row0, row0 + 8
    const uint32_t q_rows = s_q + uint32_t(cw * Tile::kWgmmaM) * kRowBytes;  // this warpgroup's rows of chunk 0
    constexpr uint32_t kSliceBytes = Tile::kWgmmaK * Tile::kElemBytes;       // one k16 slice of a swizzle row

    float o[Tile::kOAcc];  // (64, HEAD_DIM) per warpgroup, wgmma fragment order
#pragma unroll
    for (int i = 0; i < Tile::kOAcc; ++i) o[i] = 0.0f;
    uint32_t pa[Tile::kPSlices][4];  // P as the A fragments of its k16 slices (keys 16 kk .. 16 kk + 15)
    float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};

    // Issues S = Q K^T, (64, BLOCK_N) per warpgroup, on the K tile of `st`
    // (committed, not waited for).
    auto issue_s = [&](float (&s)[Tile::kSAcc], int st, uint32_t ph) {
        sm90::mbar_wait(bar(k_full, st), ph);
        sm90::wgmma_fence();
        const uint32_t k_tile = s_k + st * Tile::kKVBytes;
#pragma unroll
        for (int kk = 0; kk < Tile::kKSlices; ++kk) {
            const uint32_t chunk = uint32_t(kk / Tile::kSlicesPerChunk);
            const uint32_t slice = uint32_t(kk % Tile::kSlicesPerChunk) * kSliceBytes;
            sm90::wgmma_ss<T, kBlockN>(s, sm90::smem_desc_k_sw128(q_rows + chunk * Tile::kQChunkBytes + slice),
                                       sm90::smem_desc_k_sw128(k_tile + chunk * Tile::kKVChunkBytes + slice), kk != 0);
        }
        sm90::wgmma_commit();
    };
    // Issues O += P V on the V tile of `st`, V N-major: 16 keys (two 8-row
    // atoms) per slice (committed, not waited for).
    auto issue_pv = [&](int st, uint32_t ph) {
        sm90::mbar_wait(bar(v_full, st), ph);
        sm90::wgmma_fence();
        const uint32_t v_tile = s_v + st * Tile::kKVBytes;
#pragma unroll
        for (int kk = 0; kk < Tile::kPSlices; ++kk) {
            sm90::wgmma_rs_nmajor<T, D>(
                o, pa[kk], sm90::smem_desc_n_sw128(v_tile + uint32_t(kk * Tile::kWgmmaK) * kRowBytes, Tile::kKVChunkBytes),
                1u);
        }
        sm90::wgmma_commit();
    };
    // Masks S of key tile nb where it crosses the key length or the band,
    // then one online-softmax step in the exp2 domain: P overwrites S, the
    // row sums are updated, and alpha (the factor O must be rescaled by) is
    // returned per row half.
    auto softmax = [&](float (&s)[Tile::kSAcc], int nb, float (&alpha)[2]) {
        const int n0 = nb * kBlockN;
        if (!band.unmasked(n0, kBlockN, wm0, Tile::kWgmmaM, sk)) {
#pragma unroll
            for (int hr = 0; hr < 2; ++hr) {
                const int i = row0 + 8 * hr;
#pragma unroll
                for (int c = 0; c < kBlockN / 8; ++c) {
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const int j = n0 + 8 * c + 2 * t + e;
                        const int dji = j - i;
                        if (j >= sk || dji < band.lo || dji > band.hi) s[4 * c + 2 * hr + e] = -INFINITY;
                    }
                }
            }
        }
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
            float mx = row_max[hr];
#pragma unroll
            for (int c = 0; c < kBlockN / 8; ++c) mx = fmaxf(mx, fmaxf(s[4 * c + 2 * hr], s[4 * c + 2 * hr + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_scaled = mx == -INFINITY ? 0.0f : mx * p.f.scale_log2;
            alpha[hr] = exp2_approx(row_max[hr] * p.f.scale_log2 - m_scaled);
            row_max[hr] = mx;
            float sum = 0.0f;
#pragma unroll
            for (int c = 0; c < kBlockN / 8; ++c) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const float pv = exp2_approx(fmaf(s[4 * c + 2 * hr + e], p.f.scale_log2, -m_scaled));
                    s[4 * c + 2 * hr + e] = pv;
                    sum += pv;
                }
            }
            row_sum[hr] = row_sum[hr] * alpha[hr] + sum;
        }
    };
    auto to_pa = [&](const float (&s)[Tile::kSAcc]) {
#pragma unroll
        for (int kk = 0; kk < Tile::kPSlices; ++kk) {
            pa[kk][0] = pack2<T>(s[8 * kk + 0], s[8 * kk + 1]);
            pa[kk][1] = pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
            pa[kk][2] = pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
            pa[kk][3] = pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
        }
    };
    auto rescale = [&](const float (&alpha)[2]) {
#pragma unroll
        for (int i = 0; i < Tile::kOAcc; ++i) o[i] *= alpha[(i / 2) % 2];
    };
    auto release = [&](uint32_t set, int st) {
        if (lane == 0) sm90::mbar_arrive(bar(set, st));
    };

    sm90::mbar_wait(q_full, 0);
    int stage = 0;
    uint32_t phase = 0;
    if (band.nb_begin < band.nb_end) {
        // The first tile alone: S, then its softmax (O is still zero).
        {
            float s[Tile::kSAcc];
            float alpha[2];
            issue_s(s, stage, phase);
            sm90::wgmma_wait<0>();
            sm90::wgmma_fence_operands(s);
            release(k_empty, stage);
            softmax(s, band.nb_begin, alpha);
            to_pa(s);
        }
        int prev = stage;
        uint32_t prev_phase = phase;
        next_stage(stage, phase, kStages);
        for (int nb = band.nb_begin + 1; nb < band.nb_end; ++nb) {
            float s[Tile::kSAcc];
            float alpha[2];
            if constexpr (Tile::kOverlap) {
                // S of this tile and P V of the previous one go to the tensor
                // cores together; this tile's softmax runs beside P V.
                issue_s(s, stage, phase);
                issue_pv(prev, prev_phase);
                sm90::wgmma_wait<1>();
                sm90::wgmma_fence_operands(s);
                release(k_empty, stage);
                softmax(s, nb, alpha);
                sm90::wgmma_wait<0>();
                sm90::wgmma_fence_operands(o);
                release(v_empty, prev);
            } else {
                issue_pv(prev, prev_phase);
                sm90::wgmma_wait<0>();
                sm90::wgmma_fence_operands(o);
                release(v_empty, prev);
                issue_s(s, stage, phase);
                sm90::wgmma_wait<0>();
                sm90::wgmma_fence_operands(s);
                release(k_empty, stage);
                softmax(s, nb, alpha);
            }
            rescale(alpha);
            to_pa(s);
            prev = stage;
            prev_phase = phase;
            next_stage(stage, phase, kStages);
        }
        issue_pv(prev, prev_phase);
        sm90::wgmma_wait<0>();
        sm90::wgmma_fence_operands(o);
        release(v_empty, prev);
    }

    // Epilogue: finish the row sums across the quad, divide once, write LSE.
    float inv[2];
#pragma unroll
    for (int hr = 0; hr < 2; ++hr) {
        float l = row_sum[hr];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        inv[hr] = l > 0.0f ? 1.0f / l : 0.0f;
        const int i = row0 + 8 * hr;
        if (p.f.lse && t == 0 && i < sq) {
            const float lse2 = l > 0.0f ? row_max[hr] * p.f.scale_log2 + __log2f(l) : -INFINITY;
            p.f.lse[b * p.f.lse_bs + int64_t(i) * p.f.lse_ss + h * p.f.lse_hs] = lse2 * kLn2;
        }
    }
    // O / l into this warp's 16 rows of the Q buffer (their only reader, this
    // warpgroup's last S wgmma, is done): 16-byte unit u of row r at unit
    // u ^ (r % 8), and r % 8 == g for both rows of this thread.
    const uint32_t warp_rows = q_rows + uint32_t(warp * Tile::kWarpRows) * kRowBytes;
#pragma unroll
    for (int c = 0; c < Tile::kOAcc / 4; ++c) {  // 8-column group c of O
        const uint32_t chunk = uint32_t(c / 8), unit = uint32_t(c % 8);
#pragma unroll
        for (int hr = 0; hr < 2; ++hr) {
            const uint32_t addr = warp_rows + chunk * Tile::kQChunkBytes + uint32_t(g + 8 * hr) * kRowBytes +
                                  ((unit ^ uint32_t(g)) * 16u) + uint32_t(4 * t);
            const uint32_t bits = pack2<T>(o[4 * c + 2 * hr] * inv[hr], o[4 * c + 2 * hr + 1] * inv[hr]);
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(bits) : "memory");
        }
    }
    sm90::fence_async_smem();
    __syncwarp();
    const int warp_m0 = wm0 + warp * Tile::kWarpRows;
    if (lane == 0 && warp_m0 < sq) {
        for (int c = 0; c < Tile::kChunks; ++c) {
            sm90::tma_store_4d(&p.tmap_o, warp_rows + c * Tile::kQChunkBytes, c * Tile::kChunkCols, warp_m0, h, b);
        }
        sm90::bulk_commit();
        sm90::bulk_wait<0>();  // shared memory must outlive the store's reads
    }
#endif
}

using Sm90Kernel = void (*)(AttnSm90Params);

// The one dispatch point: dtype x head dim.
Sm90Kernel kernel_for(tops_dtype_t dtype, int head_dim) {
    const bool f16 = dtype == TOPS_DTYPE_F16;
    if (dtype != TOPS_DTYPE_F16 && dtype != TOPS_DTYPE_BF16) return nullptr;
    switch (head_dim) {
        case 64:
            return f16 ? attention_sm90_tma_wgmma_kernel<__half, 64>
                       : attention_sm90_tma_wgmma_kernel<__nv_bfloat16, 64>;
        case 128:
            return f16 ? attention_sm90_tma_wgmma_kernel<__half, 128>
                       : attention_sm90_tma_wgmma_kernel<__nv_bfloat16, 128>;
        default: return nullptr;
    }
}

int smem_bytes_for(int head_dim) {
    return head_dim == 64 ? AttnSm90Tile<64>::kSmemBytes : AttnSm90Tile<128>::kSmemBytes;
}

Status encode(CUtensorMap* map, tops_dtype_t dtype, const void* ptr, int head_dim, const int64_t (&extent)[3],
              const int64_t (&stride)[3], int box_rows) {
    cuuint64_t strides[3];
    if (!tma_outer_strides_16bit(head_dim, 3, extent, stride, strides)) {
        return Status(TOPS_ERROR_NOT_SUPPORTED, "attention sm90: strides TMA cannot express");
    }
    const cuuint64_t dims[4] = {cuuint64_t(head_dim), cuuint64_t(extent[0]), cuuint64_t(extent[1]),
                                cuuint64_t(extent[2])};
    const cuuint32_t box[4] = {cuuint32_t(AttnSm90Tile<64>::kChunkCols), cuuint32_t(box_rows), 1, 1};
    return encode_tensor_map_sw128(map, dtype, ptr, 4, dims, strides, box, "attention sm90");
}

template <int D>
int m_blocks_of(int seqlen_q) {
    return (seqlen_q + AttnSm90Tile<D>::kBlockM - 1) / AttnSm90Tile<D>::kBlockM;
}

int m_blocks_for(int head_dim, int seqlen_q) {
    return head_dim == 64 ? m_blocks_of<64>(seqlen_q) : m_blocks_of<128>(seqlen_q);
}

// The four tensor maps of p's pointers.
Status encode_all(const FwdParams& p, tops_dtype_t dtype, int head_dim, AttnSm90Params* k) {
    const int kv_heads = p.heads / p.group;
    const int64_t q_ext[3] = {p.seqlen_q, p.heads, p.batch}, kv_ext[3] = {p.seqlen_k, kv_heads, p.batch};
    const int64_t q_st[3] = {p.q_ss, p.q_hs, p.q_bs}, k_st[3] = {p.k_ss, p.k_hs, p.k_bs};
    const int64_t v_st[3] = {p.v_ss, p.v_hs, p.v_bs}, o_st[3] = {p.o_ss, p.o_hs, p.o_bs};
    constexpr int kRowsM = AttnSm90Tile<64>::kBlockM, kRowsN = AttnSm90Tile<64>::kBlockN;
    static_assert(kRowsM == AttnSm90Tile<128>::kBlockM && kRowsN == AttnSm90Tile<128>::kBlockN, "one box per role");
    TOPS_RETURN_IF_ERROR(encode(&k->tmap_q, dtype, p.q, head_dim, q_ext, q_st, kRowsM));
    TOPS_RETURN_IF_ERROR(encode(&k->tmap_k, dtype, p.k, head_dim, kv_ext, k_st, kRowsN));
    TOPS_RETURN_IF_ERROR(encode(&k->tmap_v, dtype, p.v, head_dim, kv_ext, v_st, kRowsN));
    return encode(&k->tmap_o, dtype, p.o, head_dim, q_ext, o_st, AttnSm90Tile<64>::kWarpRows);
}

}  // namespace

const char* sm90_kernel_name(tops_dtype_t dtype, int head_dim) {
    const bool f16 = dtype == TOPS_DTYPE_F16;
    if (head_dim == 64) return f16 ? "attention_f16_sm90_tma_wgmma_d64_128x128" : "attention_bf16_sm90_tma_wgmma_d64_128x128";
    return f16 ? "attention_f16_sm90_tma_wgmma_d128_128x128" : "attention_bf16_sm90_tma_wgmma_d128_128x128";
}

std::string sm90_unusable(const AttentionParams& ap, const FwdParams& p, const DeviceInfo& dev) {
    const char env = env_flag("TOPS_ATTENTION_SM90");
    if (env == '0') return "TOPS_ATTENTION_SM90=0";
    const bool forced = env == '1';
    if (dev.cc_major != 9 || dev.cc_minor != 0) return "not an sm_90 device";
    const tops_dtype_t dt = ap.q.dtype;
    if (ap.k.dtype != dt || ap.v.dtype != dt || ap.o.dtype != dt) return "mixed dtypes";
    const Sm90Kernel kernel = kernel_for(dt, int(ap.head_dim));
    if (!kernel) return "dtype or head dim not covered (f16 / bf16, 64 / 128)";
    if (ap.varlen || ap.seqlens_k.present()) return "varlen or key lengths";
    if (ap.batch == 0 || ap.heads == 0 || ap.seqlen_k == 0) return "empty problem";
    if (ap.seqlen_q <= kDecodeMaxSq) return "decode shapes";
    if (p.q_ds != 1 || p.k_ds != 1 || p.v_ds != 1 || p.o_ds != 1) return "head dim not contiguous";
    const int64_t m_blocks = m_blocks_for(int(ap.head_dim), int(ap.seqlen_q));
    const int64_t grid = ap.batch * ap.heads * m_blocks;
    if (grid > INT_MAX || ap.seqlen_q > INT_MAX || ap.seqlen_k > INT_MAX) return "extents past 32-bit coordinates";
    if (!forced && grid < dev.sm_count) return "query tiles fill less than one wave (split-KV instead)";
    cudaFuncAttributes fa{};
    if (cudaFuncGetAttributes(&fa, reinterpret_cast<const void*>(kernel)) != cudaSuccess) {
        (void)cudaGetLastError();
        return "no sm_90a image";
    }
    const int smem = smem_bytes_for(int(ap.head_dim));
    if (dev.max_smem_per_block_optin < smem) return "too little shared memory";
    if (!tensor_map_encoder()) return "no cuTensorMapEncodeTiled in the driver";
    // Encode once with an aligned stand-in address: strides the hardware
    // cannot take show here, at create time, not at execute.
    FwdParams probe = p;
    probe.q = probe.k = probe.v = tma_stand_in_address();
    probe.o = const_cast<void*>(tma_stand_in_address());
    AttnSm90Params k{};
    if (!encode_all(probe, dt, int(ap.head_dim), &k).is_ok()) return "strides TMA cannot express";
    if (cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                             smem) != cudaSuccess) {
        (void)cudaGetLastError();
        return "shared memory opt-in refused";
    }
    return std::string();
}

bool sm90_pointers_ok(const FwdParams& p) { return tma_aligned({p.q, p.k, p.v, p.o}); }

Status launch_sm90(const FwdParams& p, tops_dtype_t dtype, int head_dim, cudaStream_t stream) {
    AttnSm90Params k{};
    TOPS_RETURN_IF_ERROR(encode_all(p, dtype, head_dim, &k));
    k.f = p;
    k.f.m_blocks = m_blocks_for(head_dim, p.seqlen_q);
    const unsigned grid = unsigned(int64_t(p.batch) * p.heads * k.f.m_blocks);
    if (grid == 0) return Status::ok();
    constexpr int kThreads = AttnSm90Tile<64>::kThreads;
    static_assert(kThreads == AttnSm90Tile<128>::kThreads, "one block size");
    kernel_for(dtype, head_dim)<<<grid, kThreads, smem_bytes_for(head_dim), stream>>>(k);
    return launch_status(sm90_kernel_name(dtype, head_dim));
}

}  // namespace tops::cuda::attn
