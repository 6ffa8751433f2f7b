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
// of copy). SiLU is v / (1 + e^-v), its exp reduced by Cody-Waite so the
// negative tail keeps its relative precision (the sigmoid form above, whose
// exp is not, drifts to 1e-6 relative error at v = -12 and grows with |v|):
// on AVX-512 exp_full below, 3-5% faster than xsimd's exp, which the other
// ISAs keep (Zen 4 VM, 4096x4096 f32 bias + SiLU, 1 thread: 6.62-6.85 ->
// 6.36-6.53 ms; docs/performance.md).
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

#if defined(TOPS_CPU_ISA_avx512)
// e^x over the whole float range (SiLU's 1 + e^-v): x clamped to [kExpLo,
// kExpHi] (NaN kept), k = round(x log2 e), r = x - k ln2 in two FMAs
// (Cody-Waite), 2^(r log2 e) by exp2_nonpositive's polynomial and
// vscalefps by k, which overflows to inf above kExpHi's range and
// underflows to 0 below it. With r exact to a few ulp the result keeps its
// relative precision however large |x| is.
inline __attribute__((always_inline)) VecF exp_full(VecF x) {
    constexpr float kExpHi = 89.0f;    // e^89 > FLT_MAX: inf
    constexpr float kExpLo = -104.0f;  // e^-104 < the smallest denormal: 0
    constexpr float kLn2Hi = 0.693359375f;  // ln 2 = kLn2Hi + kLn2Lo, kLn2Hi exact in 9 bits
    constexpr float kLn2Lo = -2.12194440e-4f;
    // maxps / minps return their second operand when either is NaN.
    x = _mm512_min_ps(VecF(kExpHi), _mm512_max_ps(VecF(kExpLo), x));
    const VecF k = _mm512_roundscale_ps(x * VecF(kLog2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const VecF r = xsimd::fnma(k, VecF(kLn2Lo), xsimd::fnma(k, VecF(kLn2Hi), x));
    return _mm512_scalef_ps(exp2_poly(r * VecF(kLog2e)), k);
}
#endif

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
#if defined(TOPS_CPU_ISA_avx512)
        return v / (VecF(1.0f) + exp_full(-v));
#else
        return v / (VecF(1.0f) + xsimd::exp(-v));  // xsimd's exp keeps the negative tail's relative precision
#endif
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
