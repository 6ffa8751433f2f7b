// The activations of the fused epilogues (bias + activation, GEMM, conv2d)
// on one f32 value: one definition for every CPU kernel, as tops.h documents
// them (ReLU is max(v, 0), so NaN gives 0; GELU erf exact; GELU tanh the
// usual cubic approximation). `static` so that every translation unit, each
// ISA build included, keeps its own copy compiled for its instruction set.
#pragma once

#include <cmath>

#include "common/params.hpp"

namespace tops::cpu {

constexpr float kGeluInvSqrt2 = 0.70710678118654752f;
constexpr float kGeluSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluTanhCubic = 0.044715f;

static inline float activate_scalar(Activation act, float v) {
    switch (act) {
        case Activation::relu: return v > 0.0f ? v : 0.0f;
        case Activation::gelu_erf: return 0.5f * v * (1.0f + std::erf(v * kGeluInvSqrt2));
        case Activation::gelu_tanh:
            return 0.5f * v * (1.0f + std::tanh(kGeluSqrt2OverPi * std::fma(kGeluTanhCubic * v, v * v, v)));
        case Activation::silu: return v / (1.0f + std::exp(-v));
        default: return v;
    }
}

}  // namespace tops::cpu
