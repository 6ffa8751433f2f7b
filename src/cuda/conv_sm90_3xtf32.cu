// f32 convolution on Hopper (sm_90a) tensor cores as 3xTF32: the TMA +
// wgmma implicit GEMM of conv_sm90.cu with each operand split into TF32 big
// and small parts, y = a_big b_big + (a_big b_small + a_small b_big).
//
// Why: the mma.sync 3xTF32 kernel (conv_igemm.cu) splits x's fragments in
// registers and is bound by issue (0.52 instructions per cycle per
// scheduler, the tensor pipe at 43%), 0.78x cuDNN's strict f32 on the C128
// 28x28 layer. wgmma reads both operands from shared memory and issues no
// per-element work: the three products are 12 wgmmas per K block.
//
// Strategy: the repack (conv_repack.cu) writes x as dense NHWC and w as
// dense KRSC, channels padded to cpad, each as a TF32 big plane followed by
// its small plane. Roles are swapped against conv_sm90.cu: the GEMM's rows
// are output channels (A = w; 128 per tile, 64 per consumer warpgroup, or
// 64 per tile with the warpgroups splitting the pixels: Tf32Shape) and its
// columns output pixels (B = x, a box of 128 pixels gathered by one 5-D TMA load per
// tap and 32-channel K block, both planes at once, padding as TMA's zero
// fill), so a thread's accumulator pairs are two neighbouring pixels of one
// channel: NCHW y is written straight from registers with 8-byte stores.
// Accuracy: the tensor core truncates as it accumulates, so the big
// products of a K block go to a fresh accumulator that is added to the
// result in f32 (as conv_igemm.cu does per step); the cross products, 2^-11
// of the result's size, accumulate in a second one over the whole
// reduction, which keeps their truncation below f32 rounding.
// With TOPS_CONV_ALLOW_TF32 (SPLIT false) the same kernel loads only the
// big planes (x rounded to TF32 by the repack, which then writes no small
// plane) and issues the big products alone, into one accumulator.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "common/env.hpp"
#include "common/int_math.hpp"
#include "cuda/common/activation.cuh"
#include "cuda/common/device.cuh"
#include "cuda/common/sm90.cuh"
#include "cuda/common/tensor_map.hpp"
#include "cuda/conv.hpp"
#include "cuda/conv_common.cuh"

namespace tops::cuda {
namespace {

using sm90::kWarpgroupThreads;

constexpr int kPlanes = 2;      // TF32 big part, then small part
constexpr int kBlockK = 32;     // f32 channels per K block: one 128-byte swizzle row
constexpr int kWgmmaK = 8;      // the TF32 wgmma's depth
constexpr uint32_t kSliceBytes = kWgmmaK * sizeof(float);
constexpr int kWgRows = 64;     // output channels per consumer warpgroup (wgmma M)
constexpr int kConsumers = 2;
constexpr int kBlockN = 128;    // output pixels per tile
constexpr int kThreads = (kConsumers + 1) * kWarpgroupThreads;
// setmaxnreg budgets: up to three accumulator sets of 64 per consumer thread.
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
constexpr int kFragCols = 8;    // columns per accumulator group of four (d[4c..4c+3])
constexpr uint32_t kRowBytes = sm90::kSwizzleRowBytes;

// Tile shapes. WIDE: 128 output channels x 128 pixels, each consumer
// warpgroup 64 channels. Narrow: 64 channels x 128 pixels, each warpgroup
// 64 pixels (wgmma N 64), for K of 64 and where 128-channel tiles would
// leave SMs idle (C512 7x7 K512: 64 wide tiles, 128 narrow ones). A stage
// holds the planes the form loads (SPLIT: both, big and small, of a (BLOCK_M,
// 32) f32 tile of w and a (128, 32) one of x; TF32: the big ones), and the
// stages fill 192 of the 227 KiB: 3 / 4 (wide / narrow) for 3xTF32, 6 / 8
// for TF32.
template <bool WIDE, bool SPLIT>
struct Tf32Shape {
    static constexpr int kBlockM = WIDE ? kConsumers * kWgRows : kWgRows;  // output channels per tile
    static constexpr int kWgN = WIDE ? kBlockN : kBlockN / kConsumers;     // wgmma N
    static constexpr int kAcc = kWgRows * kWgN / kWarpgroupThreads;        // accumulators per thread and set
    static constexpr uint32_t kLoadPlanes = SPLIT ? kPlanes : 1;
    static constexpr uint32_t kPlaneBytesA = kBlockM * kRowBytes, kPlaneBytesB = kBlockN * kRowBytes;
    static constexpr uint32_t kStageBytesA = kLoadPlanes * kPlaneBytesA, kStageBytesB = kLoadPlanes * kPlaneBytesB;
    static constexpr int kStages = (WIDE ? 3 : 4) * (SPLIT ? 1 : 2);
    static constexpr int kSmemBytes =
        int(kStages * (kStageBytesA + kStageBytesB) + 2 * kStages * sizeof(uint64_t) + sm90::kSwizzleAtomBytes);
    // Warpgroup cw's A and B rows (bytes into a plane) and its first channel and pixel of the tile.
    static constexpr uint32_t a_off(int cw) { return WIDE ? uint32_t(cw * kWgRows) * kRowBytes : 0u; }
    static constexpr uint32_t b_off(int cw) { return WIDE ? 0u : uint32_t(cw * kWgN) * kRowBytes; }
    static constexpr int row_off(int cw) { return WIDE ? cw * kWgRows : 0; }
    static constexpr int col_off(int cw) { return WIDE ? 0 : cw * kWgN; }

    static_assert(kPlaneBytesA % sm90::kSwizzleAtomBytes == 0 && kPlaneBytesB % sm90::kSwizzleAtomBytes == 0,
                  "planes keep atom alignment");
    static_assert(a_off(1) % sm90::kSwizzleAtomBytes == 0 && b_off(1) % sm90::kSwizzleAtomBytes == 0,
                  "a warpgroup's rows start on an atom");
    static_assert(kAcc == kWgN / 2, "a m64nN wgmma holds N / 2 accumulators per thread");
    static_assert(kSmemBytes <= 227 * 1024, "shared memory per block");
};

static_assert(kBlockK * sizeof(float) == kRowBytes, "a K block is one swizzle row");
static_assert(kBlockK % kWgmmaK == 0, "whole k8 slices per K block");
static_assert(kProducerRegs * kWarpgroupThreads + kConsumerRegs * kConsumers * kWarpgroupThreads <= 65536,
              "register file");

struct ConvTf32Params {  // 64-byte aligned by its tensor maps
    CUtensorMap tmap_x;  // (cpad, W, H, N, plane); box (32, bq, bp, bn, 2)
    CUtensorMap tmap_w;  // (cpad, R*S, K, plane); box (32, 1, block_m, 2)
    float* y;
    const float* bias;   // (K) or nullptr
    int64_t ys[4];
    int64_t bias_stride;
    float alpha;
    int n, p, q, k;
    int c_blocks, s, rs, pad_h, pad_w;
    int bq, bp, bn;
    int tiles_q, tiles_p, tiles_n, tiles;
    int vec2;            // y takes a pixel pair as one 8-byte store
};

#if TOPS_SM90A
template <class Sh>
__device__ __forceinline__ ConvBoxTile tile_coord(const ConvTf32Params& p, int tile) {
    return conv_box_tile(tile, p.tiles_q, p.tiles_p, p.tiles_n, p.bq, p.bp, p.bn, Sh::kBlockM);
}

// act(alpha * acc + bias) of this thread's fragment, stored to y: rows
// (channels) row0 + lane / 4 + 8 h, columns (pixels) col0 + 8 c + 2
// (lane % 4) + e of the tile in box order.
template <Activation ACT, int NACC>
__device__ __forceinline__ void store_tile(const ConvTf32Params& p, const ConvBoxTile& tc, const float (&acc)[NACC],
                                           int row0, int col0, int lane) {
    const int g = lane / 4, t = lane % 4;
    float bias_v[2];
    int64_t ch_off[2];
    bool ch_ok[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int ch = tc.col0 + row0 + g + 8 * h;
        ch_ok[h] = ch < p.k;
        bias_v[h] = ch_ok[h] && p.bias ? p.bias[int64_t(ch) * p.bias_stride] : 0.0f;
        ch_off[h] = int64_t(ch) * p.ys[1];
    }
    const int slab = p.bq * p.bp;
#pragma unroll
    for (int c = 0; c < NACC / 4; ++c) {
        const int col = col0 + kFragCols * c + 2 * t;  // even, and bq is even: the pair shares an output row
        const int nn = col / slab;
        const int rem = col - nn * slab;
        const int pp = rem / p.bq;
        const int n = tc.n0 + nn, pi = tc.p0 + pp, qi = tc.q0 + (rem - pp * p.bq);
        if (n >= p.n || pi >= p.p || qi >= p.q) continue;
        const bool two = qi + 1 < p.q;
        float* row = p.y + (int64_t(n) * p.ys[0] + int64_t(pi) * p.ys[2] + int64_t(qi) * p.ys[3]);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            if (!ch_ok[h]) continue;
            float v0 = fmaf(p.alpha, acc[4 * c + 2 * h], bias_v[h]);
            float v1 = fmaf(p.alpha, acc[4 * c + 2 * h + 1], bias_v[h]);
            activate_pair<ACT, float>(v0, v1);
            float* dst = row + ch_off[h];
            if (two && p.vec2) {
                *reinterpret_cast<float2*>(dst) = make_float2(v0, v1);
            } else {
                dst[0] = v0;
                if (two) dst[p.ys[3]] = v1;
            }
        }
    }
}

// The 3xTF32 form's accumulator sets beside the result (TF32 has none): a K
// block's big products, and the cross products of the whole reduction.
template <bool SPLIT, int NACC>
struct SplitAcc {
    float big[NACC];    // one K block's a_big b_big
    float cross[NACC];  // a_big b_small + a_small b_big over the whole reduction
};
template <int NACC>
struct SplitAcc<false, NACC> {};
#endif  // TOPS_SM90A

template <Activation ACT, bool SPLIT, bool WIDE>
__global__ void __launch_bounds__(kThreads, 1) conv_sm90_tf32_kernel(const __grid_constant__ ConvTf32Params p) {
#if TOPS_SM90A
    using Sh = Tf32Shape<WIDE, SPLIT>;
    constexpr int kStages = Sh::kStages, kAcc = Sh::kAcc;
    constexpr uint32_t kStageBytesA = Sh::kStageBytesA, kStageBytesB = Sh::kStageBytesB;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t raw = smem_addr(smem_raw);
    const uint32_t base = (raw + sm90::kSwizzleAtomBytes - 1) / sm90::kSwizzleAtomBytes * sm90::kSwizzleAtomBytes;
    const uint32_t sa = base;                          // (kStages, plane, kBlockM channels, 32) swizzled
    const uint32_t sb = sa + kStages * kStageBytesA;   // (kStages, plane, 128 pixels, 32) swizzled
    const uint32_t full = sb + kStages * kStageBytesB;
    const uint32_t empty = full + kStages * sizeof(uint64_t);
    auto bar = [](uint32_t set, int stage) { return set + uint32_t(stage) * uint32_t(sizeof(uint64_t)); };
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            sm90::mbar_init(bar(full, s), 1);
            sm90::mbar_init(bar(empty, s), kConsumers * sm90::kWarpsPerWarpgroup);
        }
        sm90::mbar_fence_init();
    }
    __syncthreads();

    const int k_blocks = p.rs * p.c_blocks;
    const int wg = threadIdx.x / kWarpgroupThreads;
    const int tid = threadIdx.x % kWarpgroupThreads;
    int stage = 0;
    uint32_t phase = 0;

    if (wg == 0) {  // producer: K block kb = tap * c_blocks + channel block
        sm90::warpgroup_reg_dealloc<kProducerRegs>();
        if (tid == 0) {
            sm90::tma_prefetch_desc(&p.tmap_x);
            sm90::tma_prefetch_desc(&p.tmap_w);
            for (int tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
                const ConvBoxTile tc = tile_coord<Sh>(p, tile);
                for (int kb = 0; kb < k_blocks; ++kb) {
                    sm90::mbar_wait(bar(empty, stage), phase ^ 1u);  // the first pass finds every stage free
                    sm90::mbar_arrive_expect_tx(bar(full, stage),
                                                Sh::kStageBytesA + Sh::kStageBytesB);
                    const int cb = kb % p.c_blocks, tap = kb / p.c_blocks;
                    const int r = tap / p.s, s = tap - r * p.s;
                    sm90::tma_load_4d(sa + stage * kStageBytesA, &p.tmap_w, bar(full, stage), cb * kBlockK, tap,
                                      tc.col0, 0);
                    const int xc[5] = {cb * kBlockK, tc.q0 - p.pad_w + s, tc.p0 - p.pad_h + r, tc.n0, 0};
                    sm90::tma_load_5d(sb + stage * kStageBytesB, &p.tmap_x, bar(full, stage), xc);
                    sm90::next_stage(stage, phase, kStages);
                }
            }
        }
        return;
    }

    // consumers: warpgroup cw owns 64 output channels x kWgN pixels of each tile (Tf32Shape)
    sm90::warpgroup_reg_alloc<kConsumerRegs>();
    const int cw = wg - 1;
    const int warp = tid / 32, lane = tid % 32;
    float acc[kAcc];  // (64, kWgN): sum of the K blocks' big products, added in f32
    SplitAcc<SPLIT, kAcc> sx;
    for (int tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
        const ConvBoxTile tc = tile_coord<Sh>(p, tile);
#pragma unroll
        for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;
        int prev = -1;
        for (int kb = 0; kb < k_blocks; ++kb) {
            sm90::mbar_wait(bar(full, stage), phase);
            if constexpr (SPLIT) {
                sm90::wgmma_fence_operands(sx.big);
                sm90::wgmma_fence_operands(sx.cross);
            }
            sm90::wgmma_fence();
            const uint32_t a_big = sa + stage * kStageBytesA + Sh::a_off(cw), a_small = a_big + Sh::kPlaneBytesA;
            const uint32_t b_big = sb + stage * kStageBytesB + Sh::b_off(cw), b_small = b_big + Sh::kPlaneBytesB;
            if constexpr (!SPLIT) {  // TF32: the big products straight into acc, one stage in flight
#pragma unroll
                for (int kk = 0; kk < kBlockK / kWgmmaK; ++kk) {
                    sm90::wgmma_ss_tf32<Sh::kWgN>(acc, sm90::smem_desc_k_sw128(a_big + kk * kSliceBytes),
                                                 sm90::smem_desc_k_sw128(b_big + kk * kSliceBytes), 1u);
                }
                sm90::wgmma_commit();
                sm90::wgmma_wait<1>();  // the previous stage's wgmmas are done
                sm90::wgmma_fence_operands(acc);
            } else {
#pragma unroll
                for (int kk = 0; kk < kBlockK / kWgmmaK; ++kk) {
                    sm90::wgmma_ss_tf32<Sh::kWgN>(sx.big, sm90::smem_desc_k_sw128(a_big + kk * kSliceBytes),
                                                 sm90::smem_desc_k_sw128(b_big + kk * kSliceBytes), kk != 0);
                }
                sm90::wgmma_commit();
#pragma unroll
                for (int kk = 0; kk < kBlockK / kWgmmaK; ++kk) {
                    sm90::wgmma_ss_tf32<Sh::kWgN>(sx.cross, sm90::smem_desc_k_sw128(a_big + kk * kSliceBytes),
                                                 sm90::smem_desc_k_sw128(b_small + kk * kSliceBytes),
                                                 (kb | kk) != 0);
                    sm90::wgmma_ss_tf32<Sh::kWgN>(sx.cross, sm90::smem_desc_k_sw128(a_small + kk * kSliceBytes),
                                                 sm90::smem_desc_k_sw128(b_big + kk * kSliceBytes), 1u);
                }
                sm90::wgmma_commit();
                // This block's big products and the previous block's cross
                // products are done once at most the cross group just issued
                // is in flight: the previous stage is free, this one still read.
                sm90::wgmma_wait<1>();
                sm90::wgmma_fence_operands(sx.big);
#pragma unroll
                for (int i = 0; i < kAcc; ++i) acc[i] += sx.big[i];
            }
            if (prev >= 0 && lane == 0) sm90::mbar_arrive(bar(empty, prev));
            prev = stage;
            sm90::next_stage(stage, phase, kStages);
        }
        sm90::wgmma_wait<0>();
        sm90::wgmma_fence_operands(acc);
        if constexpr (SPLIT) sm90::wgmma_fence_operands(sx.cross);
        if (prev >= 0 && lane == 0) sm90::mbar_arrive(bar(empty, prev));
        if constexpr (SPLIT) {
#pragma unroll
            for (int i = 0; i < kAcc; ++i) acc[i] += sx.cross[i];
        }
        store_tile<ACT>(p, tc, acc, Sh::row_off(cw) + warp * 16, Sh::col_off(cw), lane);
    }
#endif
}

using ConvTf32Kernel = void (*)(ConvTf32Params);

// The one dispatch point: 3xTF32 or TF32 x tile shape x the activations
// ResNet-style layers use (others take conv_igemm).
template <bool SPLIT, bool WIDE>
ConvTf32Kernel kernel_of(Activation act) {
    switch (act) {
        case Activation::none: return conv_sm90_tf32_kernel<Activation::none, SPLIT, WIDE>;
        case Activation::relu: return conv_sm90_tf32_kernel<Activation::relu, SPLIT, WIDE>;
        default: return nullptr;
    }
}
ConvTf32Kernel kernel_for(const ConvTf32Problem& q) {
    if (q.block_m == Tf32Shape<true, true>::kBlockM) {
        return q.split ? kernel_of<true, true>(q.act) : kernel_of<false, true>(q.act);
    }
    return q.split ? kernel_of<true, false>(q.act) : kernel_of<false, false>(q.act);
}
int smem_bytes_for(const ConvTf32Problem& q) {
    const bool wide = q.block_m == Tf32Shape<true, true>::kBlockM;
    if (q.split) return wide ? Tf32Shape<true, true>::kSmemBytes : Tf32Shape<false, true>::kSmemBytes;
    return wide ? Tf32Shape<true, false>::kSmemBytes : Tf32Shape<false, false>::kSmemBytes;
}

Status encode_all(const ConvTf32Problem& q, const void* x, const void* w, ConvTf32Params* k) {
    constexpr cuuint64_t kF32 = sizeof(float);
    const cuuint64_t cpad = cuuint64_t(q.cpad), taps = cuuint64_t(q.r) * cuuint64_t(q.s);
    const cuuint32_t planes = q.split ? Tf32Shape<true, true>::kLoadPlanes : Tf32Shape<true, false>::kLoadPlanes;
    const cuuint64_t x_dims[5] = {cpad, cuuint64_t(q.w), cuuint64_t(q.h), cuuint64_t(q.n), planes};
    const cuuint64_t x_row = cpad * kF32, x_img_row = x_row * cuuint64_t(q.w);
    // (TF32 loads one plane: the plane stride is then unused but valid.)
    const cuuint64_t x_st[4] = {x_row, x_img_row, x_img_row * cuuint64_t(q.h), cuuint64_t(q.x_plane) * kF32};
    const cuuint32_t x_box[5] = {cuuint32_t(kBlockK), cuuint32_t(q.bq), cuuint32_t(q.bp), cuuint32_t(q.bn), planes};
    TOPS_RETURN_IF_ERROR(encode_tensor_map(&k->tmap_x, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, x, 5, x_dims, x_st, x_box,
                                           CU_TENSOR_MAP_SWIZZLE_128B, "conv2d sm90 3xTF32 x"));
    const cuuint64_t w_dims[4] = {cpad, taps, cuuint64_t(q.k), planes};
    const cuuint64_t w_st[3] = {cpad * kF32, cpad * kF32 * taps, cuuint64_t(q.w_plane) * kF32};
    const cuuint32_t w_box[4] = {cuuint32_t(kBlockK), 1, cuuint32_t(q.block_m), planes};
    return encode_tensor_map(&k->tmap_w, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, w, 4, w_dims, w_st, w_box,
                             CU_TENSOR_MAP_SWIZZLE_128B, "conv2d sm90 3xTF32 w");
}

}  // namespace

std::string conv_sm90_tf32_plan(const ConvKernelParams& kp, bool residual, bool split, const DeviceInfo& dev,
                                ConvTf32Problem* out) {
    const char env = env_flag("TOPS_CONV_SM90_TF32");
    if (env == '0') return "TOPS_CONV_SM90_TF32=0";
    const std::string why = conv_sm90_shared_why(kp, residual, dev);
    if (!why.empty()) return why;
    ConvTf32Problem q;
    const int64_t pixel_tiles = conv_sm90_shape(kp, &q);
    q.split = split;
    q.cpad = int(round_up(int64_t(kp.c), int64_t(kTmaAddressAlign / sizeof(float))));  // the repack's 16-byte chunks
    q.x_plane = int64_t(q.n) * q.h * q.w * q.cpad;
    q.w_plane = int64_t(q.k) * q.r * q.s * q.cpad;
    // Output channels below a tile's 64 leave its rows idle: taken from K =
    // 64 on unless TOPS_CONV_SM90_TF32=1 asks for it wherever it applies.
    // 128-channel tiles where K is above 64 and they fill nine tenths of the
    // SMs (conv_sm90_fills_sms), else 64-channel ones
    // (TOPS_CONV_SM90_TF32_WIDE=1 / 0 forces either).
    constexpr int kWide = Tf32Shape<true, true>::kBlockM, kNarrow = Tf32Shape<false, true>::kBlockM;
    if (env != '1' && q.k < kNarrow) return "fewer than 64 output channels";
    const int64_t wide_tiles = pixel_tiles * ceil_div(int64_t(q.k), int64_t(kWide));
    const char wide_env = env_flag("TOPS_CONV_SM90_TF32_WIDE");
    const bool wide = wide_env == '1' || (wide_env != '0' && q.k > kNarrow && conv_sm90_fills_sms(wide_tiles, dev));
    q.block_m = wide ? kWide : kNarrow;
    const int64_t tiles = pixel_tiles * ceil_div(int64_t(q.k), int64_t(q.block_m));
    if (tiles > INT_MAX) return "too many tiles";
    q.tiles = int(tiles);
    const ConvTf32Kernel kernel = kernel_for(q);
    cudaFuncAttributes fa{};
    if (cudaFuncGetAttributes(&fa, reinterpret_cast<const void*>(kernel)) != cudaSuccess) {
        (void)cudaGetLastError();
        return "no sm_90a image";
    }
    if (dev.max_smem_per_block_optin < smem_bytes_for(q)) return "too little shared memory";
    if (!tensor_map_encoder()) return "no cuTensorMapEncodeTiled in the driver";
    const void* stand_in = tma_stand_in_address();
    ConvTf32Params probe{};
    if (!encode_all(q, stand_in, stand_in, &probe).is_ok()) return "sizes TMA cannot express";
    if (cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                             smem_bytes_for(q)) != cudaSuccess) {
        (void)cudaGetLastError();
        return "shared memory opt-in refused";
    }
    *out = q;
    return std::string();
}

const char* conv_sm90_tf32_kernel_name(const ConvTf32Problem& q) {
    if (q.block_m == Tf32Shape<true, true>::kBlockM) {
        return q.split ? "conv2d_f32_sm90_tma_wgmma_3xtf32_128x128x32" : "conv2d_f32_sm90_tma_wgmma_tf32_128x128x32";
    }
    return q.split ? "conv2d_f32_sm90_tma_wgmma_3xtf32_64x128x32" : "conv2d_f32_sm90_tma_wgmma_tf32_64x128x32";
}

Status launch_conv_sm90_tf32(const ConvTf32Problem& q, const void* x_planes, const void* w_planes, void* y,
                             const void* bias, int sm_count, cudaStream_t stream) {
    ConvTf32Params p{};
    TOPS_RETURN_IF_ERROR(encode_all(q, x_planes, w_planes, &p));
    p.y = static_cast<float*>(y);
    p.bias = static_cast<const float*>(bias);
    for (int i = 0; i < 4; ++i) p.ys[i] = q.ys[i];
    p.bias_stride = q.bias_stride;
    p.alpha = q.alpha;
    p.n = q.n, p.p = q.p, p.q = q.q, p.k = q.k;
    p.c_blocks = int(ceil_div(int64_t(q.cpad), int64_t(kBlockK)));
    p.s = q.s;
    p.rs = q.r * q.s;
    p.pad_h = q.pad_h, p.pad_w = q.pad_w;
    p.bq = q.bq, p.bp = q.bp, p.bn = q.bn;
    p.tiles_q = int(ceil_div(int64_t(q.q), int64_t(q.bq)));
    p.tiles_p = int(ceil_div(int64_t(q.p), int64_t(q.bp)));
    p.tiles_n = int(ceil_div(int64_t(q.n), int64_t(q.bn)));
    p.tiles = q.tiles;
    constexpr uintptr_t kPairBytes = 2 * sizeof(float);
    p.vec2 = q.ys[3] == 1 && q.ys[0] % 2 == 0 && q.ys[1] % 2 == 0 && q.ys[2] % 2 == 0 &&
             reinterpret_cast<uintptr_t>(y) % kPairBytes == 0;
    const int grid = q.tiles < sm_count ? q.tiles : sm_count;
    kernel_for(q)<<<grid, kThreads, smem_bytes_for(q), stream>>>(p);
    return launch_status(conv_sm90_tf32_kernel_name(q));
}

}  // namespace tops::cuda
