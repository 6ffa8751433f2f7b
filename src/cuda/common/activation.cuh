// The activations of the fused epilogues (bias + activation, GEMM, conv2d),
// in f32 on the device: one definition for every CUDA kernel, matching the
// CPU backend and tops.h (ReLU is max(v, 0), so NaN gives 0; GELU erf is
// exact; GELU tanh is the usual cubic approximation).
#pragma once

#include "common/params.hpp"

namespace tops::cuda {

constexpr float kGeluInvSqrt2 = 0.70710678118654752f;
constexpr float kGeluSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluTanhCubic = 0.044715f;

// act(v) with the activation known at compile time.
template <Activation A>
__device__ __forceinline__ float activate(float v) {
    if constexpr (A == Activation::relu) return v > 0.0f ? v : 0.0f;
    if constexpr (A == Activation::gelu_erf) return 0.5f * v * (1.0f + erff(v * kGeluInvSqrt2));
    if constexpr (A == Activation::gelu_tanh) {
        return 0.5f * v * (1.0f + tanhf(kGeluSqrt2OverPi * (v + kGeluTanhCubic * v * v * v)));
    }
    if constexpr (A == Activation::silu) return v / (1.0f + expf(-v));
    return v;
}

// act(v) with the activation chosen at run time.
__device__ __forceinline__ float activate(Activation act, float v) {
    switch (act) {
        case Activation::relu: return activate<Activation::relu>(v);
        case Activation::gelu_erf: return activate<Activation::gelu_erf>(v);
        case Activation::gelu_tanh: return activate<Activation::gelu_tanh>(v);
        case Activation::silu: return activate<Activation::silu>(v);
        default: return v;
    }
}

}  // namespace tops::cuda
