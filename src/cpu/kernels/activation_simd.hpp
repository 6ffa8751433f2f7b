// The activations of the GEMM and conv2d epilogues on one xsimd vector of
// f32 lanes, per ISA build (the scalar form, for edge columns, is
// activate_scalar in cpu/activation.hpp; both give the same results up to
// the vector math's rounding: GELU erf within 2e-7 max(1, |x|),
// gelu_simd.hpp).
#pragma once

#include "cpu/activation.hpp"
#include "cpu/kernels/gelu_simd.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu::TOPS_ISA_NS {

inline __attribute__((always_inline)) VecF activate(Activation act, VecF v) {
    switch (act) {
        case Activation::relu: return xsimd::max(v, VecF(0.0f));
        case Activation::gelu_erf: return gelu_erf(v);
        case Activation::gelu_tanh: {
            const VecF inner = VecF(kGeluSqrt2OverPi) * xsimd::fma(VecF(kGeluTanhCubic) * v, v * v, v);
            return VecF(0.5f) * v * (VecF(1.0f) + xsimd::tanh(inner));
        }
        case Activation::silu: return v / (VecF(1.0f) + xsimd::exp(-v));
        default: return v;
    }
}

}  // namespace tops::cpu::TOPS_ISA_NS
