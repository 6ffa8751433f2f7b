// Device helpers shared by the Conv2d kernels: the fused epilogue
// y = act(alpha * acc + bias + beta * residual) for one output element or for
// eight consecutive output channels, output-pixel decomposition, the
// element-type dispatch of the conv kernels, and their 16-byte chunk unit.
#pragma once

#include <cstdint>

#include "cuda/common/activation.cuh"
#include "cuda/common/device.cuh"
#include "cuda/conv.hpp"

namespace tops::cuda {

// The unit the conv kernels move operands in: one cp.async, one ldmatrix
// row, one vector store.
constexpr int kChunkBytes = 16;
template <class T>
constexpr int kChunkElems = kChunkBytes / int(sizeof(T));  // 8 f16 / bf16, 4 f32

template <class T>
__device__ __forceinline__ float conv_bias(const ConvKernelParams& p, int64_t ko) {
    if (!p.bias) return 0.0f;
    if (p.bias_f32) return static_cast<const float*>(p.bias)[ko * p.bias_stride];
    return ElemTraits<T>::to_float(static_cast<const T*>(p.bias)[ko * p.bias_stride]);
}

// A pixel-box tile of the Hopper kernels (a box of bn images x bp rows x bq
// columns of y by block_n output channels): tile t -> its first image, row,
// column and channel, pixel tiles fastest so that neighbouring CTAs share
// the filter tile in L2.
struct ConvBoxTile {
    int n0, p0, q0, col0;
};

__device__ __forceinline__ ConvBoxTile conv_box_tile(int tile, int tiles_q, int tiles_p, int tiles_n, int bq, int bp,
                                                    int bn, int block_n) {
    const int tq = tile % tiles_q;
    int t = tile / tiles_q;
    const int tp = t % tiles_p;
    t /= tiles_p;
    const int tn = t % tiles_n;
    return ConvBoxTile{tn * bn, tp * bp, tq * bq, (t / tiles_n) * block_n};
}

// Output pixel m = (n * P + oh) * Q + ow.
struct ConvPixel {
    int n, oh, ow;
};

__device__ __forceinline__ ConvPixel conv_pixel(int m, int p, int q) {
    const int pq = p * q;
    ConvPixel px;
    px.n = m / pq;
    const int rem = m - px.n * pq;
    px.oh = rem / q;
    px.ow = rem - px.oh * q;
    return px;
}

// Element offset of pixel px, channel 0, in a tensor of strides (n, k, h, w).
__device__ __forceinline__ int64_t conv_pixel_offset(const ConvPixel& px, const int64_t (&st)[4]) {
    return px.n * st[0] + px.oh * st[2] + px.ow * st[3];
}

// One output element at the pixel offsets y_off / res_off (conv_pixel_offset),
// channel ko across groups, the activation known at compile time.
template <class T, Activation A>
__device__ __forceinline__ void conv_store_at(const ConvKernelParams& p, int64_t y_off, int64_t res_off, int64_t ko,
                                              float acc) {
    float v = p.alpha * acc + conv_bias<T>(p, ko);
    if (p.residual) v += p.beta * ElemTraits<T>::to_float(static_cast<const T*>(p.residual)[res_off + ko * p.res[1]]);
    static_cast<T*>(p.y)[y_off + ko * p.ys[1]] = ElemTraits<T>::from_float(activate<A>(v));
}

// One output element: ko is the channel across groups; the activation is
// chosen at run time (the per-element callers).
template <class T>
__device__ __forceinline__ void conv_store_one(const ConvKernelParams& p, const ConvPixel& px, int64_t ko, float acc) {
    with_activation(p.act, [&](auto act_c) {
        conv_store_at<T, decltype(act_c)::value>(p, conv_pixel_offset(px, p.ys), conv_pixel_offset(px, p.res), ko, acc);
    });
}

// Bits t < taps set where first + t * dil lies in [0, extent): the filter
// rows (or columns) of a window that fall inside the image. taps <= 32.
__device__ __forceinline__ uint32_t conv_tap_mask(int first, int taps, int dil, int extent) {
    if (dil == 1) {  // one run of taps: [max(0, -first), min(taps, extent - first))
        const int lo = max(0, -first), hi = min(taps, extent - first);
        if (hi <= lo) return 0u;
        const uint32_t below_hi = hi >= 32 ? ~0u : (1u << hi) - 1u;
        return below_hi & ~((1u << lo) - 1u);
    }
    uint32_t mask = 0;
    for (int t = 0; t < taps; ++t) {
        const int at = first + t * dil;
        mask |= uint32_t(at >= 0 && at < extent) << t;
    }
    return mask;
}

// Eight consecutive channels ko .. ko + 7 with 16-byte accesses (one for
// f16/bf16, two for f32); requires p.vec_out. y_off / res_off: the pixel's
// element offsets in y and the residual (channel 0). v holds
// alpha * acc + bias; this adds the residual, activates and stores.
template <class T, Activation A>
__device__ __forceinline__ void conv_finish_vec8(const ConvKernelParams& p, int64_t y_off, int64_t res_off,
                                                 int64_t ko, float (&v)[kConvEpiChannels]) {
    constexpr int kLen = kConvEpiChannels, kPer = 16 / int(sizeof(T));
    static_assert(kLen % kPer == 0, "whole 16-byte vectors");
    using V = Vec<T, kPer>;
    if (p.residual) {
        const T* r = static_cast<const T*>(p.residual) + (res_off + ko);
#pragma unroll
        for (int c = 0; c < kLen / kPer; ++c) {
            const V rv = reinterpret_cast<const V*>(r)[c];
#pragma unroll
            for (int e = 0; e < kPer; ++e) v[c * kPer + e] += p.beta * ElemTraits<T>::to_float(rv.v[e]);
        }
    }
    T* y = static_cast<T*>(p.y) + (y_off + ko);
#pragma unroll
    for (int c = 0; c < kLen / kPer; ++c) {
        V out;
#pragma unroll
        for (int e = 0; e < kPer; ++e) out.v[e] = ElemTraits<T>::from_float(activate<A>(v[c * kPer + e]));
        reinterpret_cast<V*>(y)[c] = out;
    }
}

// The same from the raw accumulators: alpha and the bias applied here.
template <class T, Activation A>
__device__ __forceinline__ void conv_store_vec8(const ConvKernelParams& p, int64_t y_off, int64_t res_off,
                                                int64_t ko, const float (&acc)[kConvEpiChannels]) {
    float v[kConvEpiChannels];
#pragma unroll
    for (int e = 0; e < kConvEpiChannels; ++e) v[e] = p.alpha * acc[e] + conv_bias<T>(p, ko + e);
    conv_finish_vec8<T, A>(p, y_off, res_off, ko, v);
}

// Runs fn(T{}) for the element type of a conv kernel (f16, bf16, f32).
template <class Fn>
Status with_elem(tops_dtype_t dtype, const char* what, Fn&& fn) {
    switch (dtype) {
        case TOPS_DTYPE_F16: return fn(__half{});
        case TOPS_DTYPE_BF16: return fn(__nv_bfloat16{});
        case TOPS_DTYPE_F32: return fn(float{});
        default: return Status(TOPS_ERROR_INTERNAL, fmt(what, ": unexpected dtype"));
    }
}

}  // namespace tops::cuda
