// The activations of the fused epilogues (bias + activation, GEMM, conv2d) on
// one xsimd vector of f32 lanes, per ISA build: activate<ACT> for kernels
// that fix the activation at compile time, activate(act, v) for the rest (the
// scalar form, for edge columns and strided rows, is activate_scalar in
// cpu/activation.hpp; both agree up to the vector math's rounding: GELU erf
// within 2e-7 max(1, |x|) (gelu_simd.hpp, also GELU tanh on AVX-512), SiLU
// within a few ulp). GELU tanh on the other ISAs is v sigmoid(z), z = 2
// sqrt(2/pi) (v + 0.044715 v^3) (0.5 (1 + tanh(u)) = sigmoid(2u)), on
// exp_simd.hpp's exp and a reciprocal estimate: xsimd's tanh left bias + GELU
// tanh compute-bound at one thread on the 2-core Zen 4 VM (4096x4096 f32: 35%
// of copy). SiLU keeps xsimd's exp: the same sigmoid form, whose exp takes
// its argument without Cody-Waite reduction, drifts to 1e-6 relative error
// at v = -12 (and grows with |v|) for no measured gain (6.8 against 6.9 ms).
#pragma once

#include "cpu/activation.hpp"
#include "cpu/kernels/exp_simd.hpp"
#include "cpu/kernels/gelu_simd.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu::TOPS_ISA_NS {

// v sigmoid(z): e = exp(-|z|) (never overflows), 1 / (1 + e) by the
// reciprocal estimate and Newton steps, and e / (1 + e) where z < 0. NaN
// stays NaN; z = -inf gives v * 0 (NaN for v = -inf, as 0.5 v (1 + tanh)).
inline __attribute__((always_inline)) VecF times_sigmoid(VecF v, VecF z) {
    const VecF e = exp2_nonpositive(xsimd::abs(z) * VecF(-kLog2e));
    const VecF s = reciprocal_nr(VecF(1.0f) + e);
    return v * xsimd::select(z < VecF(0.0f), e * s, s);
}

template <Activation ACT>
inline __attribute__((always_inline)) VecF activate(VecF v) {
    if constexpr (ACT == Activation::relu) {
        return xsimd::max(v, VecF(0.0f));  // NaN gives 0 (the second operand)
    } else if constexpr (ACT == Activation::gelu_erf) {
        return gelu_erf(v);
    } else if constexpr (ACT == Activation::gelu_tanh) {
#if defined(TOPS_CPU_ISA_avx512)
        return gelu_from_table(v, kGeluHalfTanh);
#else
        return times_sigmoid(v, VecF(2.0f * kGeluSqrt2OverPi) * xsimd::fma(VecF(kGeluTanhCubic) * v, v * v, v));
#endif
    } else if constexpr (ACT == Activation::silu) {
        return v / (VecF(1.0f) + xsimd::exp(-v));  // xsimd's exp keeps the negative tail's relative precision
    } else {
        return v;
    }
}

inline __attribute__((always_inline)) VecF activate(Activation act, VecF v) {
    switch (act) {
        case Activation::relu: return activate<Activation::relu>(v);
        case Activation::gelu_erf: return activate<Activation::gelu_erf>(v);
        case Activation::gelu_tanh: return activate<Activation::gelu_tanh>(v);
        case Activation::silu: return activate<Activation::silu>(v);
        default: return v;
    }
}

}  // namespace tops::cpu::TOPS_ISA_NS
