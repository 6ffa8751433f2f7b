// Conv2d operands rewritten into the tensor-core kernels' layouts: dense
// NHWC x and KRSC w, channels zero-padded to a whole 16-byte chunk, with a
// filter row's taps optionally folded into the channels and f32 operands
// optionally split into TF32 big and small planes (ConvRepackParams, conv.hpp).
//
// Strategy: two kernels.
//  - The general one: one thread per destination chunk gathers the chunk's
//    channels from any strides (NCHW, padded or strided x, KCRS w, folds).
//  - A source whose pixels are contiguous per channel (dense NCHW x, no fold)
//    is a batched transpose (C, H * W) -> (H * W, cpad): a block stages a (64
//    pixels, 32 channels) tile in shared memory, read along the pixels and
//    written along the channels, so both sides move whole sectors. The
//    general kernel stores 16 bytes per lane with lanes a pixel (C * 4 bytes
//    for f32) apart: 17.2 us for the f32 C128 28x28 layer's x (12.8 MB each
//    way, 1.5 TB/s) on an H100.
// Both let the stream's next kernel launch as they start and, launched as a
// dependent themselves, finish only after their own primary: x's repack
// launched as a programmatic dependent of w's overlaps it, and the conv
// (launched normally) starts once both are done.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "cuda/common/mma.cuh"
#include "cuda/conv_common.cuh"

namespace tops::cuda {
namespace {

constexpr int kRepackThreads = 256;
constexpr int kPlaneTilePixels = 64;    // a transposed tile: 64 pixels (a 256-byte f32 run per channel)
constexpr int kPlaneTileChannels = 32;  // x 32 channels (128 bytes of each f32 destination pixel)
constexpr int64_t kMaxGridY = 65535, kMaxGridZ = 65535;

// Stores one chunk at d; f32 with a nonzero plane stores its TF32 big part
// there and its small part plane elements on, with round_tf32 its big part.
template <class T, int CE>
__device__ __forceinline__ void store_chunk(T* d, Vec<T, CE> v, int64_t plane, bool round_tf32) {
    if constexpr (sizeof(T) == 4) {
        if (round_tf32) {  // as conv_igemm's TF32 mode rounds x
#pragma unroll
            for (int j = 0; j < CE; ++j) v.v[j] = __uint_as_float(tf32_round(__float_as_uint(v.v[j])));
        } else if (plane != 0) {
            Vec<T, CE> small;
#pragma unroll
            for (int j = 0; j < CE; ++j) {
                uint32_t big_bits, small_bits;
                tf32_split(__float_as_uint(v.v[j]), big_bits, small_bits);
                v.v[j] = __uint_as_float(big_bits);
                small.v[j] = __uint_as_float(small_bits);
            }
            *reinterpret_cast<Vec<T, CE>*>(d + plane) = small;
        }
    }
    *reinterpret_cast<Vec<T, CE>*>(d) = v;
}

// One thread per (d0, channel chunk, d2, d3): a chunk's channels gathered,
// 16 bytes stored; d3 is the fast thread direction, the unit-stride dim of NCHW.
// (Walking the chunks fastest, so that a warp writes whole folded pixels,
// measured the same: 40 us for the folded f16 stem's 39 MB either way.)
template <class T>
__global__ void __launch_bounds__(kRepackThreads) conv_repack_kernel(const __grid_constant__ ConvRepackParams p) {
    allow_dependent_launch();
    constexpr int CE = kChunkElems<T>;
    const T* src = static_cast<const T*>(p.src);
    T* dst = static_cast<T*>(p.dst);
    const int64_t chunks = p.cpad / CE;
    const int64_t d3 = p.dst_dim3();
    const int64_t total = p.dims[0] * chunks * p.dims[2] * d3;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    const T zero = ElemTraits<T>::from_float(0.0f);
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
        int64_t rest = e;
        const int64_t i3 = rest % d3;
        rest /= d3;
        const int64_t i2 = rest % p.dims[2];
        rest /= p.dims[2];
        const int64_t ch = rest % chunks;
        const int64_t i0 = rest / chunks;
        const T* s = src + (i0 * p.strides[0] + i2 * p.strides[2]);
        Vec<T, CE> v;
        if (p.fold == 1) {
            s += i3 * p.strides[3];
#pragma unroll
            for (int j = 0; j < CE; ++j) {
                const int64_t c = ch * CE + j;
                v.v[j] = c < p.dims[1] ? s[c * p.strides[1]] : zero;
            }
        } else {  // one division per chunk; (tap, ci), the column and the offset then step with j
            const int cin = int(p.dims[1]), src3 = int(p.dims[3]), dil3 = int(p.dil3);
            int tap = int(ch * CE) / cin, ci = int(ch * CE) - tap * cin;
            int at = int(i3 * p.step3 - p.pad3) + tap * dil3;  // the plan keeps input columns in int range
            int64_t off = ci * p.strides[1] + int64_t(at) * p.strides[3];
            const int64_t wrap = dil3 * p.strides[3] - cin * p.strides[1];
#pragma unroll
            for (int j = 0; j < CE; ++j) {
                v.v[j] = tap < p.fold && at >= 0 && at < src3 ? s[off] : zero;
                off += p.strides[1];
                if (++ci == cin) {
                    ci = 0;
                    ++tap;
                    at += dil3;
                    off += wrap;
                }
            }
        }
        store_chunk(dst + ((i0 * p.dims[2] + i2) * d3 + i3) * p.cpad + ch * CE, v, p.plane, p.round_tf32);
    }
    wait_for_primary();
}

// Dense NCHW x, no fold: block (pixel tile, channel tile, image) transposes
// (32 channels, 64 pixels) through shared memory.
template <class T>
__global__ void __launch_bounds__(kRepackThreads)
    conv_repack_planes_kernel(const __grid_constant__ ConvRepackParams p) {
    allow_dependent_launch();
    constexpr int CE = kChunkElems<T>;
    constexpr int kChunksPerPixel = kPlaneTileChannels / CE;
    constexpr int kLoadRows = kRepackThreads / kPlaneTilePixels;
    static_assert(kPlaneTileChannels % CE == 0 && kRepackThreads % kPlaneTilePixels == 0, "whole chunks, whole rows");
    __shared__ T tile[kPlaneTilePixels][kPlaneTileChannels + 1];  // (pixels, channels); +1: no bank conflicts
    const int64_t pixels = p.dims[2] * p.dims[3];
    const int64_t p0 = int64_t(blockIdx.x) * kPlaneTilePixels, c0 = int64_t(blockIdx.y) * kPlaneTileChannels;
    const T* src = static_cast<const T*>(p.src) + int64_t(blockIdx.z) * p.strides[0];
    const T zero = ElemTraits<T>::from_float(0.0f);
    const int lp = threadIdx.x % kPlaneTilePixels;
    for (int c = threadIdx.x / kPlaneTilePixels; c < kPlaneTileChannels; c += kLoadRows) {
        const int64_t ch = c0 + c, pix = p0 + lp;
        tile[lp][c] = ch < p.dims[1] && pix < pixels ? src[ch * p.strides[1] + pix] : zero;
    }
    __syncthreads();
    T* dst = static_cast<T*>(p.dst) + int64_t(blockIdx.z) * pixels * p.cpad;
    for (int i = threadIdx.x; i < kPlaneTilePixels * kChunksPerPixel; i += kRepackThreads) {
        const int q = i / kChunksPerPixel, k = i % kChunksPerPixel;
        const int64_t pix = p0 + q, ch = c0 + int64_t(k) * CE;
        if (pix >= pixels || ch >= p.cpad) continue;
        Vec<T, CE> v;
#pragma unroll
        for (int j = 0; j < CE; ++j) v.v[j] = tile[q][k * CE + j];
        store_chunk(dst + pix * p.cpad + ch, v, p.plane, p.round_tf32);
    }
    wait_for_primary();
}

}  // namespace

bool conv_repack_pdl_ok(const DeviceInfo& dev) {
    return runs_sm90_code(dev, reinterpret_cast<const void*>(conv_repack_planes_kernel<float>));
}

Status launch_conv_repack(const ConvRepackParams& p, tops_dtype_t dtype, cudaStream_t stream, bool pdl) {
    constexpr int64_t kMaxBlocks = int64_t(1) << 20;
    const int64_t total = p.dims[0] * (p.cpad * int64_t(dtype_size(dtype)) / kChunkBytes) * p.dims[2] * p.dst_dim3();
    if (total == 0) return Status::ok();
    const int64_t pixels = p.dims[2] * p.dims[3];
    const int64_t channel_tiles = (p.cpad + kPlaneTileChannels - 1) / kPlaneTileChannels;
    // (Fewer channels than a tile, as the 3-channel stem, stay on the general
    // kernel: their tiles would be mostly padding. The f32 stem's whole call
    // was 41-49 us slower with its x through them; the repack alone was not
    // timed. A split f32 filter, whose pixels are its few taps, stays there too.)
    const bool planes = p.fold == 1 && (p.plane == 0 || pixels >= kPlaneTilePixels) && p.strides[3] == 1 &&
                        p.strides[2] == p.dims[3] && p.cpad >= kPlaneTileChannels && channel_tiles <= kMaxGridY &&
                        p.dims[0] <= kMaxGridZ && (pixels + kPlaneTilePixels - 1) / kPlaneTilePixels <= kMaxBlocks;
    return with_elem(dtype, "conv repack", [&](auto elem) {
        using T = decltype(elem);
        ConvRepackParams a = p;
        void* args[] = {&a};
        if (planes) {
            const dim3 grid(unsigned((pixels + kPlaneTilePixels - 1) / kPlaneTilePixels), unsigned(channel_tiles),
                            unsigned(p.dims[0]));
            (void)launch_maybe_pdl(reinterpret_cast<const void*>(conv_repack_planes_kernel<T>), grid,
                                   dim3(kRepackThreads), args, stream, pdl);
        } else {
            const int grid = int(std::min(kMaxBlocks, (total + kRepackThreads - 1) / kRepackThreads));
            (void)launch_maybe_pdl(reinterpret_cast<const void*>(conv_repack_kernel<T>), dim3(unsigned(grid)),
                                   dim3(kRepackThreads), args, stream, pdl);
        }
        return launch_status("conv_repack");
    });
}

}  // namespace tops::cuda
