// NHWC convolution as an implicit GEMM for Hopper (sm_90a): the shared TMA +
// wgmma main loop of gemm_sm90_kernel.cuh with the A operand gathered by TMA
// straight from x, no im2col and no gather arithmetic in the kernel.
//
// Why: the mma.sync implicit GEMM (conv_igemm.cu) spends its issue slots on
// address and mask arithmetic for the gather and reaches 0.41-0.55x of
// cuDNN's Hopper kernels on the 3x3 ResNet layers.
//
// Strategy: a tile of 128 output pixels is a box of (bn images, bp rows, bq
// columns) of y; for stride 1 and dilation 1 the input pixels that filter
// tap (r, s) needs for it are the same box of x moved by (r - pad_h,
// s - pad_w), and a 4-D TMA load of x as (C, W, H, N) at those coordinates
// lands them in shared memory as the (128, 64) K-major A tile the main loop
// expects (64 channels per K block; taps past the image edge, negative
// coordinates included, arrive as zeros: that is the padding). The filter
// is B^T, (K, R*S, C) loaded as (BLOCK_N, 64) boxes of tap (r, s). Each warp
// stores its 16 output pixels through a 4-D map of y, which drops pixels
// past P, Q or N. K block kb = (r * S + s) * ceil(C / 64) + c block.
// Layers with too few 128-channel tiles to fill the SMs (7x7 K512: 64 tiles)
// run them split-K on clusters of two CTAs (ConvSplitOp; see the kernel),
// and where a channel block's taps share one box of x, the pair loads that
// box once per channel block and gathers each tap's A rows from it
// (ConvHaloSplitOp, the kernel's halo form).
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "common/env.hpp"
#include "common/int_math.hpp"
#include "cuda/common/tensor_map.hpp"
#include "cuda/conv.hpp"
#include "cuda/conv_common.cuh"
#include "cuda/gemm_sm90_kernel.cuh"

namespace tops::cuda {
namespace {

constexpr int kBlockK = sm90gemm::Tile<64>::kBlockK;
constexpr int kStoreRows = sm90gemm::Tile<64>::kWarpRows;  // pixels one warp stores
constexpr int kTilePixels = sm90gemm::Tile<64>::kBlockM;

struct ConvSm90Params {     // 64-byte aligned by its tensor maps
    CUtensorMap tmap_x;     // (C, W, H, N), C innermost; box (64, bq, bp, bn), or (64, hq, hp, bn) for a halo
    CUtensorMap tmap_w;     // (C, R*S, K); box (64, 1, BLOCK_N)
    CUtensorMap tmap_y;     // (K, Q, P, N); box (64, min(bq, 16), 16 / min(bq, 16), 1)
    sm90gemm::Epilogue epi;  // bias (K) or nullptr, alpha, cols = K
    int c_blocks, s, rs, pad_h, pad_w;
    int bq, bp, bn, block_n;
    int hq, hp;  // halo form: the box of x a tile's taps read, (bq + S - 1, bp + R - 1)
    int tiles_q, tiles_p, tiles_n, tiles_k;
};

struct ConvOp {
    using Params = ConvSm90Params;
    using Coord = ConvBoxTile;
#if TOPS_SM90A
    static __device__ __forceinline__ int tiles(const Params& p) {
        return p.tiles_q * p.tiles_p * p.tiles_n * p.tiles_k;
    }
    static __device__ __forceinline__ int k_blocks(const Params& p) { return p.rs * p.c_blocks; }
    static __device__ __forceinline__ Coord coord(const Params& p, int tile) {
        return conv_box_tile(tile, p.tiles_q, p.tiles_p, p.tiles_n, p.bq, p.bp, p.bn, p.block_n);
    }
    static __device__ __forceinline__ void prefetch(const Params& p) {
        sm90::tma_prefetch_desc(&p.tmap_x);
        sm90::tma_prefetch_desc(&p.tmap_w);
        sm90::tma_prefetch_desc(&p.tmap_y);
    }
    static __device__ __forceinline__ void load(const Params& p, const Coord& c, int kb, uint32_t sa, uint32_t sb,
                                                uint32_t bar) {
        const int cb = kb % p.c_blocks;
        const int tap = kb / p.c_blocks;
        const int r = tap / p.s;
        const int s = tap - r * p.s;
        sm90::tma_load_4d(sa, &p.tmap_x, bar, cb * kBlockK, c.q0 - p.pad_w + s, c.p0 - p.pad_h + r, c.n0);
        sm90::tma_load_3d(sb, &p.tmap_w, bar, cb * kBlockK, tap, c.col0);
    }
    // A warp's 16 pixels starting at tile pixel `row` (pixels in box order:
    // column fastest, then row, then image), channels [col, col + 64).
    static __device__ __forceinline__ void store(const Params& p, const Coord& c, int row, int col, uint32_t src) {
        const int slab = p.bq * p.bp;
        const int nn = row / slab;
        const int rem = row - nn * slab;
        const int pp = rem / p.bq;
        sm90::tma_store_4d(&p.tmap_y, src, c.col0 + col, c.q0 + (rem - pp * p.bq), c.p0 + pp, c.n0 + nn);
    }
#endif
};

// Each tile on a cluster of two CTAs, each reducing half the K blocks.
struct ConvSplitOp : ConvOp {
    static constexpr int kSplits = 2;
};
constexpr int kSplitBlockN = 128;  // the split form's only tile width

// The split form with A from a halo (the kernel's halo form): K block kb =
// c block * R*S + tap, so the R*S taps of one channel block read one box of
// x, (64, hq, hp, bn), loaded once into a halo slot; tile row m (pixel (nn,
// pp, qq) of the box) at tap (r, s) is halo row (nn hp + pp + r) hq + qq + s.
// Each CTA of the pair takes whole channel blocks (the plan checks their
// count is even).
struct ConvHaloSplitOp : ConvSplitOp {
    // 208 rows of 128 bytes: every 3x3 box of conv_sm90_shape (at most
    // 34 x 6 rows) fits.
    static constexpr int kHaloRows = 208;
    static constexpr int kHaloBytes = kHaloRows * kBlockK * 2;
#if TOPS_SM90A
    static __device__ __forceinline__ void load(const Params& p, const Coord& c, int kb, uint32_t, uint32_t sb,
                                                uint32_t bar) {
        sm90::tma_load_3d(sb, &p.tmap_w, bar, (kb / p.rs) * kBlockK, kb % p.rs, c.col0);
    }
    // Where K block kb sits among its channel block's taps, stepped without
    // divisions (the consumers' per-K-block path): tap index, filter column
    // s and the tap's shift in halo rows, r hq + s.
    struct Walk {
        int tap, col, shift;
    };
    static __device__ __forceinline__ Walk halo_walk(const Params& p, int kb) {
        const int tap = kb % p.rs;
        const int r = tap / p.s;
        const int col = tap - r * p.s;
        return Walk{tap, col, r * p.hq + col};
    }
    static __device__ __forceinline__ void halo_step(const Params& p, Walk& w) {
        if (++w.tap == p.rs) {
            w = Walk{0, 0, 0};
        } else if (++w.col == p.s) {
            w.col = 0;
            w.shift += p.hq - p.s + 1;
        } else {
            ++w.shift;
        }
    }
    static __device__ __forceinline__ bool halo_first(const Params&, const Walk& w) { return w.tap == 0; }
    static __device__ __forceinline__ bool halo_last(const Params& p, const Walk& w) { return w.tap == p.rs - 1; }
    static __device__ __forceinline__ uint32_t halo_bytes(const Params& p) {
        return uint32_t(p.hq * p.hp * p.bn * kBlockK * 2);
    }
    static __device__ __forceinline__ void load_halo(const Params& p, const Coord& c, int kb, uint32_t dst,
                                                     uint32_t bar) {
        sm90::tma_load_4d(dst, &p.tmap_x, bar, (kb / p.rs) * kBlockK, c.q0 - p.pad_w, c.p0 - p.pad_h, c.n0);
    }
    static __device__ __forceinline__ int halo_row(const Params& p, int m) {
        const int slab = p.bq * p.bp;
        const int nn = m / slab;
        const int rem = m - nn * slab;
        const int pp = rem / p.bq;
        return (nn * p.hp + pp) * p.hq + (rem - pp * p.bq);
    }
#endif
};

using ConvSm90Kernel = void (*)(ConvSm90Params);

template <class T, class Op, int BLOCK_N>
ConvSm90Kernel kernel_of(Activation act) {
    switch (act) {
        case Activation::none: return sm90gemm::kernel<T, Activation::none, Op, BLOCK_N>;
        case Activation::relu: return sm90gemm::kernel<T, Activation::relu, Op, BLOCK_N>;
        default: return nullptr;
    }
}

// The one dispatch point: dtype x output-channel tile (64, 128, 128 split
// over two CTAs, with or without a halo) x activation (the epilogues
// ResNet-style layers use; others take conv_igemm).
ConvSm90Kernel kernel_for(tops_dtype_t dtype, int block_n, int splits, bool halo, Activation act) {
    const bool f16 = dtype == TOPS_DTYPE_F16;
    if (dtype != TOPS_DTYPE_F16 && dtype != TOPS_DTYPE_BF16) return nullptr;
    if (splits == 2 && block_n == kSplitBlockN && halo) {
        return f16 ? kernel_of<__half, ConvHaloSplitOp, kSplitBlockN>(act)
                   : kernel_of<__nv_bfloat16, ConvHaloSplitOp, kSplitBlockN>(act);
    }
    if (halo) return nullptr;
    if (splits == 2 && block_n == kSplitBlockN) {
        return f16 ? kernel_of<__half, ConvSplitOp, kSplitBlockN>(act)
                   : kernel_of<__nv_bfloat16, ConvSplitOp, kSplitBlockN>(act);
    }
    if (splits != 1) return nullptr;
    if (block_n == 64) return f16 ? kernel_of<__half, ConvOp, 64>(act) : kernel_of<__nv_bfloat16, ConvOp, 64>(act);
    if (block_n == 128) return f16 ? kernel_of<__half, ConvOp, 128>(act) : kernel_of<__nv_bfloat16, ConvOp, 128>(act);
    return nullptr;
}

int smem_bytes_for(int block_n, int splits, bool halo) {
    if (splits == 2 && halo) return sm90gemm::KernelSmem<kSplitBlockN, 2, ConvHaloSplitOp::kHaloBytes>::kBytes;
    if (splits == 2) return sm90gemm::KernelSmem<kSplitBlockN, 2>::kBytes;
    return block_n == 64 ? sm90gemm::KernelSmem<64, 1>::kBytes : sm90gemm::KernelSmem<128, 1>::kBytes;
}

// Launch configuration of the split form: `ctas` CTAs in clusters of two.
struct PairLaunch {
    cudaLaunchAttribute attr = {};
    cudaLaunchConfig_t cfg = {};
    PairLaunch(unsigned ctas, bool halo, cudaStream_t stream) {
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = 2;
        attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
        cfg.gridDim = dim3(ctas);
        cfg.blockDim = dim3(sm90gemm::Tile<kSplitBlockN>::kThreads);
        cfg.dynamicSmemBytes = size_t(smem_bytes_for(kSplitBlockN, 2, halo));
        cfg.stream = stream;
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
    }
    PairLaunch(const PairLaunch&) = delete;
    PairLaunch& operator=(const PairLaunch&) = delete;
};

// Whether the split kernel for (dtype, halo, act) takes its shared memory
// and a cluster of two of its CTAs fits on the device.
bool split_pair_fits(tops_dtype_t dtype, bool halo, Activation act) {
    const ConvSm90Kernel kernel = kernel_for(dtype, kSplitBlockN, 2, halo, act);
    if (!kernel) return false;
    const void* fn = reinterpret_cast<const void*>(kernel);
    cudaFuncAttributes fa{};
    const PairLaunch pair(2, halo, nullptr);
    int clusters = 0;
    if (cudaFuncGetAttributes(&fa, fn) != cudaSuccess ||
        cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             smem_bytes_for(kSplitBlockN, 2, halo)) != cudaSuccess ||
        cudaOccupancyMaxActiveClusters(&clusters, fn, &pair.cfg) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return clusters >= 1;
}


// The 4 tensor maps' element strides must be multiples of 16 bytes.
constexpr int64_t kStrideElems = 16 / 2;

bool strides_ok(const int64_t (&st)[4]) {
    for (int i = 0; i < 4; ++i) {
        if (i != 1 && (st[i] <= 0 || st[i] % kStrideElems != 0)) return false;
    }
    return st[1] == 1;
}

// Byte strides of dims W, H, N of a channels-last canonical (N, C, H, W)
// tensor (dims and strides in canonical order), as its 4-D tensor map takes them.
bool whn_strides(const int64_t (&st)[4], const int64_t (&dims)[4], cuuint64_t (&out)[3]) {
    const int64_t extent[3] = {dims[3], dims[2], dims[0]}, stride[3] = {st[3], st[2], st[0]};
    return tma_outer_strides_16bit(dims[1], 3, extent, stride, out);
}

Status encode_all(const ConvSm90Problem& q, const void* x, const void* w, const void* y, ConvSm90Params* k) {
    const int64_t xd[4] = {q.n, q.c, q.h, q.w}, yd[4] = {q.n, q.k, q.p, q.q};
    cuuint64_t xs[3], ys[3];
    if (!whn_strides(q.xs, xd, xs) || !whn_strides(q.ys, yd, ys)) {
        return Status(TOPS_ERROR_NOT_SUPPORTED, "conv2d sm90: x or y strides TMA cannot express");
    }
    const cuuint64_t x_dims[4] = {cuuint64_t(q.c), cuuint64_t(q.w), cuuint64_t(q.h), cuuint64_t(q.n)};
    const cuuint32_t x_box[4] = {cuuint32_t(kBlockK), cuuint32_t(q.halo ? q.bq + q.s - 1 : q.bq),
                                 cuuint32_t(q.halo ? q.bp + q.r - 1 : q.bp), cuuint32_t(q.bn)};
    TOPS_RETURN_IF_ERROR(encode_tensor_map_sw128(&k->tmap_x, q.dtype, x, 4, x_dims, xs, x_box, "conv2d sm90 x"));
    const int64_t taps = int64_t(q.r) * q.s;
    const cuuint64_t w_dims[3] = {cuuint64_t(q.c), cuuint64_t(taps), cuuint64_t(q.k)};
    // Tap (r, s) = r * S + s: one run of stride ws[3] (or ws[2] when S is 1).
    const int64_t tap_stride = q.s > 1 ? q.ws[3] : q.r > 1 ? q.ws[2] : q.c;
    const cuuint64_t w_st[2] = {cuuint64_t(tap_stride) * 2u, cuuint64_t(q.ws[0]) * 2u};
    const cuuint32_t w_box[3] = {cuuint32_t(kBlockK), 1, cuuint32_t(q.block_n)};
    TOPS_RETURN_IF_ERROR(encode_tensor_map_sw128(&k->tmap_w, q.dtype, w, 3, w_dims, w_st, w_box, "conv2d sm90 w"));
    const int store_q = q.bq < kStoreRows ? q.bq : kStoreRows;
    const cuuint64_t y_dims[4] = {cuuint64_t(q.k), cuuint64_t(q.q), cuuint64_t(q.p), cuuint64_t(q.n)};
    const cuuint32_t y_box[4] = {cuuint32_t(kBlockK), cuuint32_t(store_q), cuuint32_t(kStoreRows / store_q), 1};
    return encode_tensor_map_sw128(&k->tmap_y, q.dtype, y, 4, y_dims, ys, y_box, "conv2d sm90 y");
}

// A tile's 128 output pixels as a box of (bq columns, bp rows, bn images) of
// y, the box that pads the output least (the first listed on a tie); returns
// the number of pixel tiles. 7x7 outputs take two 8x8 images, 14x14 one 16x8
// box, 28x28 and 56x56 32x4 boxes. Every bq is even (the 3xTF32 kernel
// stores pixel pairs of one row).
int64_t pixel_box(int n, int p, int q, int (&box)[3]) {
    constexpr int kBoxes[][3] = {{32, 4, 1}, {16, 8, 1}, {8, 16, 1}, {8, 8, 2}};
    static_assert(kBoxes[0][0] * kBoxes[0][1] * kBoxes[0][2] == kTilePixels, "boxes of a tile's pixels");
    int64_t best = -1;
    for (const auto& b : kBoxes) {
        const int64_t padded = ceil_div(q, b[0]) * ceil_div(p, b[1]) * ceil_div(n, b[2]);
        if (best < 0 || padded < best) {
            best = padded;
            box[0] = b[0], box[1] = b[1], box[2] = b[2];
        }
    }
    return best;
}

}  // namespace

int64_t conv_sm90_shape(const ConvKernelParams& kp, ConvSm90Shape* out) {
    ConvSm90Shape& q = *out;
    q.act = kp.act;
    q.n = kp.n, q.h = kp.h, q.w = kp.w_in, q.k = kp.k, q.r = kp.r, q.s = kp.s, q.p = kp.p, q.q = kp.q;
    q.pad_h = kp.pad_h, q.pad_w = kp.pad_w;
    for (int i = 0; i < 4; ++i) q.ys[i] = kp.ys[i];
    q.bias_stride = kp.bias_stride;
    q.alpha = kp.alpha;
    int box[3];
    const int64_t pixel_tiles = pixel_box(q.n, q.p, q.q, box);
    q.bq = box[0], q.bp = box[1], q.bn = box[2];
    return pixel_tiles;
}

std::string conv_sm90_shared_why(const ConvKernelParams& kp, bool residual, const DeviceInfo& dev) {
    if (dev.cc_major != 9 || dev.cc_minor != 0) return "not an sm_90 device";
    if (kp.groups != 1) return "grouped";
    if (kp.stride_h != 1 || kp.stride_w != 1 || kp.dil_h != 1 || kp.dil_w != 1) return "stride or dilation above 1";
    if (residual) return "residual";
    if (kp.act != Activation::none && kp.act != Activation::relu) return "activation other than none / relu";
    return std::string();
}

bool conv_sm90_fills_sms(int64_t tiles, const DeviceInfo& dev) {
    constexpr int64_t kWaveTenths = 9;
    return tiles * 10 >= kWaveTenths * dev.sm_count;
}

const char* conv_sm90_kernel_name(const ConvSm90Problem& q) {
    const bool f16 = q.dtype == TOPS_DTYPE_F16;
    if (q.splits == 2 && q.halo) {
        return f16 ? "conv2d_f16_sm90_tma_wgmma_nhwc_128x128x64_splitk2_cluster_halo"
                   : "conv2d_bf16_sm90_tma_wgmma_nhwc_128x128x64_splitk2_cluster_halo";
    }
    if (q.splits == 2) {
        return f16 ? "conv2d_f16_sm90_tma_wgmma_nhwc_128x128x64_splitk2_cluster"
                   : "conv2d_bf16_sm90_tma_wgmma_nhwc_128x128x64_splitk2_cluster";
    }
    if (q.block_n == 64) return f16 ? "conv2d_f16_sm90_tma_wgmma_nhwc_128x64x64" : "conv2d_bf16_sm90_tma_wgmma_nhwc_128x64x64";
    return f16 ? "conv2d_f16_sm90_tma_wgmma_nhwc_128x128x64" : "conv2d_bf16_sm90_tma_wgmma_nhwc_128x128x64";
}

std::string conv_sm90_plan(const ConvKernelParams& kp, tops_dtype_t dtype, bool residual, const DeviceInfo& dev,
                           ConvSm90Problem* out) {
    if (env_switched_off("TOPS_CONV_SM90")) return "TOPS_CONV_SM90=0";
    const std::string why = conv_sm90_shared_why(kp, residual, dev);
    if (!why.empty()) return why;
    if (dtype != TOPS_DTYPE_F16 && dtype != TOPS_DTYPE_BF16) return "not f16 / bf16";
    if (kp.c % kStrideElems != 0 || kp.k % kStrideElems != 0) return "channels not a multiple of 8";
    if (!strides_ok(kp.xs) || !strides_ok(kp.ws) || !strides_ok(kp.ys)) return "x, w or y not channels-last with 16-byte strides";
    if (kp.s > 1 && kp.r > 1 && kp.ws[2] != int64_t(kp.s) * kp.ws[3]) return "filter taps not one strided run";
    ConvSm90Problem q;
    const int64_t pixel_tiles = conv_sm90_shape(kp, &q);
    q.dtype = dtype;
    q.c = kp.c;
    for (int i = 0; i < 4; ++i) {
        q.xs[i] = kp.xs[i];
        q.ws[i] = kp.ws[i];
    }
    // 128 output channels per tile when K allows and the tiles still fill
    // nine tenths of the SMs (conv_sm90_fills_sms); else 64 (twice the
    // tiles). H100, f16 N32: 14x14 K256 ran 230 TFLOP/s at 64 wide (256
    // tiles) and 350 at 128 wide (128 tiles); 28x28 K128 at 128 wide (224
    // tiles) 315; 7x7 K512 at 64 wide (128 tiles; 128 wide would leave half
    // the SMs idle) 238. By count, a 64-wide wgmma reads 32 KiB of shared
    // memory per MFLOP against 24 for 128 (each warpgroup reads its A rows
    // and all of B), the likely reason.
    // Where 128-wide tiles fill less than that but twice them fit on the
    // SMs, each 128-wide tile runs on a cluster of two CTAs splitting K
    // (7x7 K512: 64 tiles on 128 CTAs), if such a cluster fits on the device.
    // TOPS_CONV_SM90_SPLIT=0 keeps the 64-wide tiles there, =1 splits
    // wherever K is a multiple of 128 and the K blocks are even.
    const int64_t wide_tiles = q.k % 128 == 0 ? pixel_tiles * (q.k / 128) : 0;
    const int64_t k_blocks = int64_t(q.r) * q.s * ceil_div(q.c, kBlockK);
    q.block_n = wide_tiles > 0 && conv_sm90_fills_sms(wide_tiles, dev) ? 128 : 64;
    const char split_env = env_flag("TOPS_CONV_SM90_SPLIT");
    if (wide_tiles > 0 && k_blocks % 2 == 0 && split_env != '0' &&
        (split_env == '1' || (q.block_n == 64 && 2 * wide_tiles <= dev.sm_count)) &&
        split_pair_fits(dtype, false, q.act)) {
        q.block_n = kSplitBlockN;
        q.splits = 2;
        // The split pair reads A from a halo where the taps share one (R*S
        // above 1), each CTA gets whole channel blocks and the box of x a
        // tile's taps read fits a halo slot. TOPS_CONV_SM90_HALO=0 keeps
        // the A tiles in the stages.
        const int64_t halo_rows = int64_t(q.bq + q.s - 1) * (q.bp + q.r - 1) * q.bn;
        q.halo = q.r * q.s > 1 && ceil_div(q.c, kBlockK) % 2 == 0 && halo_rows <= ConvHaloSplitOp::kHaloRows &&
                 !env_switched_off("TOPS_CONV_SM90_HALO") && split_pair_fits(dtype, true, q.act);
    }
    const int64_t tiles = pixel_tiles * ceil_div(q.k, q.block_n);
    if (tiles > INT_MAX) return "too many tiles";
    q.tiles = int(tiles);
    const ConvSm90Kernel kernel = kernel_for(dtype, q.block_n, q.splits, q.halo, q.act);
    if (!kernel) return "no kernel for this dtype / activation";
    cudaFuncAttributes fa{};
    if (cudaFuncGetAttributes(&fa, reinterpret_cast<const void*>(kernel)) != cudaSuccess) {
        (void)cudaGetLastError();
        return "no sm_90a image";
    }
    if (dev.max_smem_per_block_optin < smem_bytes_for(q.block_n, q.splits, q.halo)) return "too little shared memory";
    if (!tensor_map_encoder()) return "no cuTensorMapEncodeTiled in the driver";
    const void* stand_in = tma_stand_in_address();
    ConvSm90Params probe{};
    if (!encode_all(q, stand_in, stand_in, stand_in, &probe).is_ok()) return "strides TMA cannot express";
    if (cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel), cudaFuncAttributeMaxDynamicSharedMemorySize,
                             smem_bytes_for(q.block_n, q.splits, q.halo)) != cudaSuccess) {
        (void)cudaGetLastError();
        return "shared memory opt-in refused";
    }
    *out = q;
    return std::string();
}

bool conv_sm90_pointers_ok(const void* x, const void* w, const void* y) { return tma_aligned({x, w, y}); }

Status launch_conv_sm90(const ConvSm90Problem& q, const void* x, const void* w, void* y, const void* bias,
                        int sm_count, cudaStream_t stream) {
    ConvSm90Params p{};
    TOPS_RETURN_IF_ERROR(encode_all(q, x, w, y, &p));
    p.epi.bias = bias;
    p.epi.bias_stride = q.bias_stride;
    p.epi.alpha = q.alpha;
    p.epi.cols = q.k;
    p.c_blocks = int(ceil_div(q.c, kBlockK));
    p.s = q.s;
    p.rs = q.r * q.s;
    p.pad_h = q.pad_h;
    p.pad_w = q.pad_w;
    p.bq = q.bq, p.bp = q.bp, p.bn = q.bn, p.block_n = q.block_n;
    p.hq = q.bq + q.s - 1, p.hp = q.bp + q.r - 1;
    p.tiles_q = int(ceil_div(q.q, q.bq));
    p.tiles_p = int(ceil_div(q.p, q.bp));
    p.tiles_n = int(ceil_div(q.n, q.bn));
    p.tiles_k = int(ceil_div(q.k, q.block_n));
    static_assert(sm90gemm::Tile<64>::kThreads == sm90gemm::Tile<128>::kThreads, "one block size");
    static_assert(kTilePixels == 128, "pixel boxes hold 128 pixels");
    const ConvSm90Kernel kernel = kernel_for(q.dtype, q.block_n, q.splits, q.halo, q.act);
    const int smem = smem_bytes_for(q.block_n, q.splits, q.halo);
    if (q.splits == 1) {
        const int grid = q.tiles < sm_count ? q.tiles : sm_count;
        kernel<<<grid, sm90gemm::Tile<64>::kThreads, smem, stream>>>(p);
        return launch_status(conv_sm90_kernel_name(q));
    }
    // Clusters of two CTAs (one tile each pair), at most one CTA per SM; each
    // reduces half the K blocks, so their count must be even (the plan's test).
    if ((p.rs * p.c_blocks) % 2 != 0 || (q.halo && p.c_blocks % 2 != 0)) {
        return Status(TOPS_ERROR_INTERNAL, "conv2d sm90: split-K over an odd K block count");
    }
    const PairLaunch pair(unsigned(std::min<int64_t>(int64_t(q.tiles) * 2, sm_count / 2 * 2)), q.halo, stream);
    (void)cudaLaunchKernelEx(&pair.cfg, kernel, p);  // its error is also the last error, which launch_status takes
    return launch_status(conv_sm90_kernel_name(q));
}

}  // namespace tops::cuda
