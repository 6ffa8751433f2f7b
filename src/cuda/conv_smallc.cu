// Conv2d forward for inputs of fewer channels than a 16-byte chunk (the
// 3-channel image stem), f16 / bf16 on mma.sync with f32 accumulation.
//
// Strategy: the implicit GEMM pads every tap's channels to a chunk (3 of 8
// lanes carrying data) or folds a filter row's taps into a repacked copy of
// x 3.5 times x's size; both spend their time on per-pixel overheads, not
// MMAs. Here a CTA stages the input window of its output tile once, as
// pixels of `cp` channels (4 or 8, zero-padded), and reads the A fragments
// straight out of that window: for a fixed filter row r, the reduction
// (s, c) of output pixel q is the contiguous run of S * cp elements that
// starts at window column q * stride_w, so A (pixels x S*cp) is the window
// row itself with a row pitch of stride_w * cp elements. cp is chosen so the
// pitch is a whole 16 bytes: ldmatrix takes the rows directly, and 8
// consecutive pixels are 8 consecutive 16-byte rows (conflict-free). The
// reduction is padded to k16 steps; the padding columns of the last step
// are real pixels of the window (the next pixel's taps), so their fragment
// registers are zeroed, not only their weights: a NaN or inf there must not
// reach this pixel. The filter is packed once per call into the workspace
// as (K padded to 64, R, k16 steps) and copied with cp.async once per CTA;
// on sm_90 the conv kernel is the pack's programmatic dependent, so its
// CTAs stage their first window while the pack runs.
// A band is 64 output channels of bp output rows x mq 16-pixel m-tiles, a
// warp computing two m-tiles at a time (acc 2 x 64 channels); a CTA walks
// group_bands consecutive bands, the window being a ring of rows in which
// each band after the first stages only the rows it adds. The epilogue
// stages each m-tile through a per-warp buffer for 16-byte stores of 8
// channels. Measured (docs/performance.md): the stem 0.149 -> 0.073 ms.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "common/env.hpp"
#include "common/int_math.hpp"
#include "cuda/common/mma.cuh"
#include "cuda/conv_common.cuh"

namespace tops::cuda {
namespace {

constexpr int kStepElems = 16;                 // one mma k-step of f16 / bf16
constexpr int kChunkHalves = kChunkElems<__half>;  // 16 bytes of f16 / bf16
constexpr int kBlockN = 64;                    // output channels per CTA
constexpr int kNTiles = kBlockN / 8;           // n8 MMA tiles per warp
constexpr int kWarpMTiles = 2;                 // m16 tiles per warp pass
constexpr int kMaxWarps = 8;
constexpr int kStageBatch = 4;                 // window pixels a thread loads before storing (stem: 4.1 per band)
constexpr int kMaxSteps = 4;                   // S * cp <= 64
constexpr int kRowPad = kChunkHalves;          // filter row pad: an odd number of 16-byte units per row
constexpr int kHalfN = kBlockN / 2;            // channels staged per epilogue pass
constexpr int kStageLd = kHalfN + 8;           // f32 staging pitch: conflict-free float2 stores
// Shared memory per CTA: the stem's tile takes 64 KB; registers (128 per
// thread) hold the kernel to 2 CTAs per SM either way.
constexpr int kSmemBudget = 72 * 1024;
// About 16 m-tiles per band (the stem: 2 rows of 7, 7 warps). Chosen, not
// tuned: the stem's time went to window staging and the epilogue, which
// the ring of rows cut without changing the band.
constexpr int kTargetMTiles = 16;
constexpr int kMaxRowMTiles = 8;

struct SmallcArgs {
    ConvKernelParams p;
    ConvSmallcTile t;
    uint16_t* wpack;  // (kblocks * 64, R, ksteps * 16), written by the pack kernel
};

__host__ __device__ constexpr int filter_row_elems(const ConvSmallcTile& t, int r) {
    return r * t.ksteps * kStepElems;
}
__host__ __device__ constexpr int filter_pitch(const ConvSmallcTile& t, int r) {
    return filter_row_elems(t, r) + kRowPad;
}

// wpack[n][r][j] = w[n, c, r, s] for j = s * cp + c (s < S, c < C), else 0.
__global__ void __launch_bounds__(256) conv_smallc_pack_kernel(const __grid_constant__ SmallcArgs a, int64_t total) {
    allow_dependent_launch();  // the conv kernel may start staging x; it waits for this grid before the filter
    const ConvKernelParams& p = a.p;
    const int kr = a.t.ksteps * kStepElems;
    const uint16_t* w = static_cast<const uint16_t*>(p.w);
    uint16_t* out = a.wpack;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
        const int j = int(i % kr);
        const int64_t nr = i / kr;
        const int r = int(nr % p.r), n = int(nr / p.r);
        const int s = j / a.t.cp, c = j % a.t.cp;
        uint16_t v = 0;
        if (n < p.k && s < p.s && c < p.c) v = w[n * p.ws[0] + c * p.ws[1] + r * p.ws[2] + s * p.ws[3]];
        out[i] = v;
    }
}

// Stages window rows [rel0, rel0 + count) of the CTA's band group: window
// row rel is input row ih_base + rel and lands in ring slot rel % xrows;
// window column j is input column iw0 + j. Zero outside x and in channels
// c >= C. A thread issues the loads of kStageBatch pixels before it stores
// any (one round trip per batch), and walks (row, column) by increments.
template <int CP>
__device__ __forceinline__ void stage_window(const ConvKernelParams& p, const ConvSmallcTile& t, uint16_t* sx, int n,
                                             int ih_base, int iw0, int rel0, int count) {
    using Word = std::conditional_t<CP == 4, uint2, uint4>;
    static_assert(sizeof(Word) == CP * 2, "one store per window pixel");
    // The parameters the loop reads, held in registers rather than re-read
    // from the parameter bank per pixel.
    const int64_t xs1 = p.xs[1], xs2 = p.xs[2], xs3 = p.xs[3];
    const int h = p.h, w_in = p.w_in, channels = p.c, xcols = t.xcols, xrows = t.xrows;
    const uint16_t* x = static_cast<const uint16_t*>(p.x) + int64_t(n) * p.xs[0];
    const int nthreads = blockDim.x, total = count * xcols;
    const int drow = nthreads / xcols, dcol = nthreads % xcols;
    int col = threadIdx.x % xcols, row = threadIdx.x / xcols;
    int ih = ih_base + rel0 + row, slot = (rel0 + row) % xrows;
    for (int base = threadIdx.x; base < total; base += nthreads * kStageBatch) {
        const int here = min(kStageBatch, (total - base + nthreads - 1) / nthreads);  // this thread's pixels
        uint16_t v[kStageBatch][CP];
        int dst[kStageBatch];
#pragma unroll
        for (int b = 0; b < kStageBatch; ++b) {  // predicated, not branched: a branch here spills v
            const int iw = iw0 + col;
            const bool in = b < here && unsigned(ih) < unsigned(h) && unsigned(iw) < unsigned(w_in);
            const uint16_t* px = x + (in ? ih * xs2 + iw * xs3 : 0);
#pragma unroll
            for (int c = 0; c < CP; ++c) v[b][c] = in && c < channels ? px[c * xs1] : uint16_t(0);
            dst[b] = slot * xcols + col;
            col += dcol;
            int inc = drow;
            if (col >= xcols) {
                col -= xcols;
                ++inc;
            }
            ih += inc;
            slot += inc;
            if (slot >= xrows) slot %= xrows;
        }
#pragma unroll
        for (int b = 0; b < kStageBatch; ++b) {
            if (b >= here) break;
            uint32_t word[CP / 2];
#pragma unroll
            for (int e = 0; e < CP / 2; ++e) word[e] = uint32_t(v[b][2 * e]) | uint32_t(v[b][2 * e + 1]) << 16;
            reinterpret_cast<Word*>(sx)[dst[b]] = *reinterpret_cast<const Word*>(word);
        }
    }
}

template <class T>
__global__ void __launch_bounds__(kMaxWarps * 32, 2) conv_smallc_kernel(const __grid_constant__ SmallcArgs a) {
    const ConvKernelParams& p = a.p;
    const ConvSmallcTile& t = a.t;
    extern __shared__ __align__(16) unsigned char smem[];
    const int wpitch = filter_pitch(t, p.r);
    uint16_t* sw = reinterpret_cast<uint16_t*>(smem);                        // (64, R * KR + pad)
    uint16_t* sx = sw + kBlockN * wpitch;                                     // (xrows, xcols, cp), a ring of rows
    float* stage = reinterpret_cast<float*>(sx + t.xrows * t.xcols * t.cp);  // (warps, 16, kStageLd)
    float* sbias = stage + t.warps * 16 * kStageLd;                          // (64): the block's bias, 0 past K

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, nthreads = blockDim.x;
    int bx = blockIdx.x;
    const int ct = bx % t.q_tiles;
    bx /= t.q_tiles;
    const int group = bx % t.groups, n = bx / t.groups;
    const int band0 = group * t.group_bands, band_end = min(t.bands, band0 + t.group_bands);
    const int q0 = ct * t.mq * 16, n0 = blockIdx.y * kBlockN;
    const int ih_base = band0 * t.bp * p.stride_h - p.pad_h, iw0 = q0 * p.stride_w - p.pad_w;

    for (int i = tid; i < kBlockN; i += nthreads) sbias[i] = n0 + i < p.k ? conv_bias<T>(p, n0 + i) : 0.0f;

    const int mtiles = t.bp * t.mq, pairs = (mtiles + kWarpMTiles - 1) / kWarpMTiles;
    const int g = lane / 4, tq = lane % 4;
    const int kvalid = p.s * t.cp;   // reduction columns per filter row holding taps
    const int row_bytes = t.xcols * t.cp * 2;
    // ldmatrix row addresses: A rows are pixels (lanes 0-15 at k 0, 16-31 at
    // k 8), B rows output channels (matrices: n 0-7 / 8-15 x k 0-7 / 8-15).
    const uint32_t b_lane = smem_addr(sw) +
                            uint32_t(((lane % 8 + (lane / 16) * 8) * wpitch + ((lane / 8) % 2) * 8) * 2);
    const uint32_t x_base = smem_addr(sx);

    // Consecutive bands share all but bp * stride_h of their window rows:
    // the window is a ring of xrows rows, and each band after the first
    // stages only the rows it adds.
    const int step_rows = t.bp * p.stride_h;
    for (int band = band0; band < band_end; ++band) {
        const int rel_band = (band - band0) * step_rows;  // this band's first window row
        const int fresh = band == band0 ? t.xrows : min(step_rows, t.xrows);
        const int rel0 = rel_band + t.xrows - fresh;
        if (t.cp == 4) stage_window<4>(p, t, sx, n, ih_base, iw0, rel0, fresh);
        else stage_window<8>(p, t, sx, n, ih_base, iw0, rel0, fresh);
        if (band == band0) {
            // The filter block, once per CTA (cp.async, 16-byte chunks), after
            // the pack kernel: this grid may start as its programmatic
            // dependent, staging x while the pack runs.
            wait_for_primary();
            const int chunks_per_row = filter_row_elems(t, p.r) / kChunkHalves;
            const uint16_t* src = a.wpack + int64_t(n0) * filter_row_elems(t, p.r);
            for (int i = tid; i < kBlockN * chunks_per_row; i += nthreads) {
                const int row = i / chunks_per_row, chunk = i % chunks_per_row;
                cp_async_16_zfill(smem_addr(sw + row * wpitch + chunk * kChunkHalves),
                                  src + int64_t(i) * kChunkHalves, true);
            }
            cp_async_commit();
        }
        cp_async_wait<0>();
        __syncthreads();
        const int oh0 = band * t.bp;
        for (int pair = warp; pair < pairs; pair += nthreads / 32) {
            uint32_t a_col[kWarpMTiles];
            int tile_row[kWarpMTiles], tile_q[kWarpMTiles], slot[kWarpMTiles];
#pragma unroll
            for (int m = 0; m < kWarpMTiles; ++m) {
                const int mt = min(pair * kWarpMTiles + m, mtiles - 1);  // a missing second tile recomputes the first
                tile_row[m] = mt / t.mq;
                tile_q[m] = (mt % t.mq) * 16;
                a_col[m] = x_base + uint32_t((tile_q[m] + lane % 16) * p.stride_w * t.cp * 2 + (lane / 16) * 16);
                slot[m] = (rel_band + tile_row[m] * p.stride_h) % t.xrows;  // filter row 0's window row
            }
            float acc[kWarpMTiles][kNTiles][4] = {};
            for (int r = 0; r < p.r; ++r) {
                for (int ks = 0; ks < t.ksteps; ++ks) {
                    uint32_t b[kNTiles][2];
#pragma unroll
                    for (int jp = 0; jp < kNTiles / 2; ++jp) {
                        uint32_t f[4];
                        const int at = jp * 16 * wpitch + (r * t.ksteps + ks) * kStepElems;
                        ldmatrix_x4(f, b_lane + uint32_t(at * 2));
                        b[2 * jp][0] = f[0];
                        b[2 * jp][1] = f[1];
                        b[2 * jp + 1][0] = f[2];
                        b[2 * jp + 1][1] = f[3];
                    }
                    // Columns past the taps (in the last step) hold the next
                    // pixels' data: zero them.
                    const bool last = ks == t.ksteps - 1;
                    const bool lo = ks * kStepElems + 2 * tq < kvalid, hi = ks * kStepElems + 8 + 2 * tq < kvalid;
#pragma unroll
                    for (int m = 0; m < kWarpMTiles; ++m) {
                        uint32_t f[4];
                        ldmatrix_x4(f, a_col[m] + uint32_t(slot[m] * row_bytes + ks * kStepElems * 2));
                        if (last) {
                            if (!lo) f[0] = f[1] = 0u;
                            if (!hi) f[2] = f[3] = 0u;
                        }
#pragma unroll
                        for (int j = 0; j < kNTiles; ++j) mma_m16n8k16<T>(acc[m][j], f, b[j]);
                    }
                }
#pragma unroll
                for (int m = 0; m < kWarpMTiles; ++m) {  // the next filter row, dil_h window rows down the ring
                    slot[m] += p.dil_h;
                    if (slot[m] >= t.xrows) slot[m] -= t.xrows;
                }
            }

            // Epilogue: per m-tile and half of the channels, the warp stages its
            // (16, 32) f32 block, then each lane stores 8 channels of a pixel
            // (16-byte vectors) or, for pixel-major y, walks consecutive pixels.
            float* ws = stage + warp * 16 * kStageLd;
            const bool pixel_major = !p.vec_out && p.ys[3] == 1 && p.ys[1] != 1;
            const int mcount = min(kWarpMTiles, mtiles - pair * kWarpMTiles);
            with_activation(p.act, [&](auto act_c) {
                constexpr Activation A = decltype(act_c)::value;
#pragma unroll
                for (int m = 0; m < kWarpMTiles; ++m) {
                    if (m >= mcount) break;
                    const int oh = oh0 + tile_row[m], qm = q0 + tile_q[m];
                    // The m-tile's first pixel in y and the residual; a row adds a column stride.
                    const int64_t y_tile = n * p.ys[0] + oh * p.ys[2] + qm * p.ys[3];
                    const int64_t res_tile = n * p.res[0] + oh * p.res[2] + qm * p.res[3];
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
#pragma unroll
                        for (int j = 0; j < kNTiles / 2; ++j) {
                            const float* c = acc[m][h * (kNTiles / 2) + j];
                            *reinterpret_cast<float2*>(ws + g * kStageLd + j * 8 + 2 * tq) = make_float2(c[0], c[1]);
                            *reinterpret_cast<float2*>(ws + (g + 8) * kStageLd + j * 8 + 2 * tq) =
                                make_float2(c[2], c[3]);
                        }
                        __syncwarp();
                        const int kh = n0 + h * kHalfN;
                        constexpr int kItems = 16 * kHalfN / kConvEpiChannels;  // (pixel, 8 channels) pairs
#pragma unroll
                        for (int it = 0; it < kItems / 32; ++it) {
                            const int item = lane + 32 * it;
                            const int row = pixel_major ? item % 16 : item / (kHalfN / kConvEpiChannels);
                            const int grp = pixel_major ? item / 16 : item % (kHalfN / kConvEpiChannels);
                            const int q = qm + row, ko = kh + grp * kConvEpiChannels;
                            if (oh >= p.p || q >= p.q || ko >= p.k) continue;
                            const float4 v0 = *reinterpret_cast<const float4*>(ws + row * kStageLd + grp * 8);
                            const float4 v1 = *reinterpret_cast<const float4*>(ws + row * kStageLd + grp * 8 + 4);
                            float v[kConvEpiChannels] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
                            const int64_t y_off = y_tile + row * p.ys[3], res_off = res_tile + row * p.res[3];
                            if (p.vec_out) {
                                const float4 b0 = *reinterpret_cast<const float4*>(sbias + (ko - n0));
                                const float4 b1 = *reinterpret_cast<const float4*>(sbias + (ko - n0) + 4);
                                const float bias[kConvEpiChannels] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
                                for (int e = 0; e < kConvEpiChannels; ++e) v[e] = p.alpha * v[e] + bias[e];
                                conv_finish_vec8<T, A>(p, y_off, res_off, ko, v);
                            } else {
#pragma unroll
                                for (int e = 0; e < kConvEpiChannels; ++e) {
                                    if (ko + e < p.k) conv_store_at<T, A>(p, y_off, res_off, ko + e, v[e]);
                                }
                            }
                        }
                        __syncwarp();
                    }
                }
            });
        }
        __syncthreads();  // every warp is done with the rows the next band overwrites
    }
}

int smallc_smem(const ConvKernelParams& kp, const ConvSmallcTile& t) {
    return kBlockN * filter_pitch(t, kp.r) * 2 + t.xrows * t.xcols * t.cp * 2 + t.warps * 16 * kStageLd * 4 +
           kBlockN * 4;
}

template <class Fn>
Status with_smallc_kernel(tops_dtype_t dtype, Fn&& fn) {
    switch (dtype) {
        case TOPS_DTYPE_F16: return fn(conv_smallc_kernel<__half>);
        case TOPS_DTYPE_BF16: return fn(conv_smallc_kernel<__nv_bfloat16>);
        default: return Status(TOPS_ERROR_INTERNAL, "conv smallc: unexpected dtype");
    }
}

}  // namespace

std::string conv_smallc_plan(const ConvKernelParams& kp, tops_dtype_t dtype, const DeviceInfo& dev,
                             ConvSmallcTile* out) {
    if (env_flag("TOPS_CONV_SMALLC") == '0') return "TOPS_CONV_SMALLC=0";
    if (dtype != TOPS_DTYPE_F16 && dtype != TOPS_DTYPE_BF16) return "f32 (the window kernel is f16 / bf16)";
    if (kp.groups != 1) return "grouped";
    if (kp.c >= kChunkHalves) return "channels fill a 16-byte chunk";
    if (kp.dil_w != 1) return "dilated columns";
    ConvSmallcTile t;
    t.cp = kp.stride_w % 2 == 0 && kp.c <= kChunkHalves / 2 ? kChunkHalves / 2 : kChunkHalves;
    if (int64_t(kp.s) * t.cp > int64_t(kMaxSteps) * kStepElems) return "filter row wider than 64 reduction columns";
    t.ksteps = int(ceil_div(int64_t(kp.s) * t.cp, int64_t(kStepElems)));
    const int mq_all = int(ceil_div(int64_t(kp.q), int64_t(16)));
    t.q_tiles = int(ceil_div(int64_t(mq_all), int64_t(kMaxRowMTiles)));
    t.mq = int(ceil_div(int64_t(mq_all), int64_t(t.q_tiles)));
    t.bp = std::max(1, std::min(kp.p, kTargetMTiles / t.mq));
    for (;;) {
        t.warps = std::min(kMaxWarps, (t.bp * t.mq + kWarpMTiles - 1) / kWarpMTiles);
        t.xrows = (t.bp - 1) * kp.stride_h + (kp.r - 1) * kp.dil_h + 1;
        // Even for cp 4, so that every window row starts on 16 bytes.
        t.xcols = int(round_up((t.mq * 16 - 1) * kp.stride_w + t.ksteps * kStepElems / t.cp, 2));
        t.smem = smallc_smem(kp, t);
        if (t.smem <= kSmemBudget) break;
        if (t.bp > 1) --t.bp;
        else if (t.mq > 1) --t.mq;
        else return "filter and input window exceed the shared-memory budget";
        t.q_tiles = int(ceil_div(int64_t(mq_all), int64_t(t.mq)));
    }
    t.bands = int(ceil_div(int64_t(kp.p), int64_t(t.bp)));
    int resident = 0;
    const Status st = with_smallc_kernel(dtype, [&](auto kernel) {
        TOPS_RETURN_IF_ERROR(cuda_status(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBudget),
            "conv smallc: cudaFuncSetAttribute"));
        t.pdl = runs_sm90_code(dev, reinterpret_cast<const void*>(kernel));
        return cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, t.warps * 32, t.smem),
                           "conv smallc: cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    });
    if (!st.is_ok()) return st.message();
    if (resident < 1) return "no CTA of the tile fits an SM";
    // Bands per CTA: as many as keep one wave of resident CTAs busy, so each
    // CTA loads the filter once and stages only the rows a band adds.
    const int64_t units = int64_t(kp.n) * t.bands * t.q_tiles * ceil_div(int64_t(kp.k), int64_t(kBlockN));
    const int64_t slots = std::max<int64_t>(1, int64_t(dev.sm_count) * resident);
    t.group_bands = int(std::min<int64_t>(t.bands, ceil_div(units, slots)));
    // TOPS_CONV_SMALLC_BANDS=<n> sets the bands per CTA (tests of the ring).
    if (const char* env = std::getenv("TOPS_CONV_SMALLC_BANDS")) {
        t.group_bands = std::max(1, std::min(t.bands, std::atoi(env)));
    }
    t.groups = int(ceil_div(int64_t(t.bands), int64_t(t.group_bands)));
    if (int64_t(kp.n) * t.groups * t.q_tiles > INT32_MAX || ceil_div(int64_t(kp.k), int64_t(kBlockN)) > UINT16_MAX) {
        return "too many tiles";
    }
    *out = t;
    return "";
}

size_t conv_smallc_workspace(const ConvKernelParams& kp, const ConvSmallcTile& t) {
    return size_t(ceil_div(int64_t(kp.k), int64_t(kBlockN))) * kBlockN * filter_row_elems(t, kp.r) * 2;
}

std::string conv_smallc_kernel_name(const ConvSmallcTile& t, tops_dtype_t dtype) {
    return fmt("conv2d_", dtype == TOPS_DTYPE_BF16 ? "bf16" : "f16", "_smallc_window_c", t.cp, "_", t.bp, "x",
               t.mq * 16, "x", kBlockN, "_w", t.warps, "_bands", t.group_bands, "_mma16816");
}

Status launch_conv_smallc(const ConvKernelParams& p, const ConvSmallcTile& t, void* workspace, tops_dtype_t dtype,
                          cudaStream_t stream) {
    SmallcArgs a{p, t, static_cast<uint16_t*>(workspace)};
    constexpr int kPackThreads = 256;
    constexpr int64_t kMaxPackBlocks = 1024;
    const int64_t total = int64_t(conv_smallc_workspace(p, t) / 2);
    const int pack_grid = int(std::min(kMaxPackBlocks, ceil_div(total, int64_t(kPackThreads))));
    conv_smallc_pack_kernel<<<pack_grid, kPackThreads, 0, stream>>>(a, total);
    TOPS_RETURN_IF_ERROR(launch_status("conv_smallc_pack"));
    const dim3 grid(unsigned(int64_t(p.n) * t.groups * t.q_tiles), unsigned(ceil_div(int64_t(p.k), int64_t(kBlockN))));
    return with_smallc_kernel(dtype, [&](auto kernel) {
        void* args[] = {&a};
        (void)launch_maybe_pdl(reinterpret_cast<const void*>(kernel), grid, dim3(unsigned(t.warps * 32)), args, stream,
                               t.pdl, size_t(t.smem));
        return launch_status("conv_smallc");  // the launch's error is also the last error
    });
}

}  // namespace tops::cuda
