// The vector GELU erf of the CPU kernels (bias + activation, and the GEMM and
// conv2d epilogues through activation_simd.hpp), per ISA build: everything
// lives in TOPS_ISA_NS, so each ISA keeps its own copy. Include after
// cpu/isa_arch.hpp. gelu_erf takes the table form on AVX-512 and the
// rational-times-exp form elsewhere; ActivationAccuracyCpu checks both
// against fp64 (max |error| / max(1, |x|): 1.1e-7 AVX-512, 1.9e-7 AVX2, 1.8e-7
// SSE4). The table form also serves GELU tanh on AVX-512 (activation_simd.hpp).
#pragma once

#include <immintrin.h>

#include "cpu/activation.hpp"
#include "cpu/isa_arch.hpp"
#include "cpu/kernels/exp_simd.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu::TOPS_ISA_NS {

// GELU erf = v Phi(v) with Phi(-|v|) = (1 - erf(|z|)) / 2, z = v / sqrt(2), and
// erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): 1 - erf(a) =
// t P(t) exp(-a^2), t = 1 / (1 + p a). The reciprocal is reciprocal_nr's
// (the ISA's estimate and Newton steps), the exp exp_simd.hpp's, and the halves
// are folded into P's coefficients. This form replaced a division, xsimd::exp
// and a copysign: the GELU was compute-bound at one thread on the 2-core Zen 4
// VM (4096x4096 f32 at 45-50% of copy; 0.85-0.87x the time now). |v| is
// clamped at kGeluClampAbs: Phi(-16) underflows f32 (exp2 of
// -16^2 log2(e) / 2 flushes to 0), so -inf gives -inf * 0 = NaN as elsewhere,
// +inf gives +inf, and NaN stays NaN through v itself.
constexpr float kErfP = 0.3275911f;
constexpr float kErfA1 = 0.254829592f;
constexpr float kErfA2 = -0.284496736f;
constexpr float kErfA3 = 1.421413741f;
constexpr float kErfA4 = -1.453152027f;
constexpr float kErfA5 = 1.061405429f;
constexpr float kGeluClampAbs = 16.0f;

// 1 / d for d >= 1: the ISA's estimate and Newton steps to about 2^-23
// relative error: one from AVX-512's 14 bits, two from the 12 bits of the
// others (one left SSE4's GELU tanh at 2.5e-7 max(1, |x|)).
inline VecF reciprocal_nr(VecF d) {
#if defined(TOPS_CPU_ISA_avx512)
    const VecF r = _mm512_rcp14_ps(d);
#else
    VecF r = xsimd::reciprocal(d);
    r = r * xsimd::fnma(d, r, VecF(2.0f));
#endif
    return r * xsimd::fnma(d, r, VecF(2.0f));
}

inline __attribute__((always_inline)) VecF gelu_erf_as(VecF v) {
    const VecF a = xsimd::min(xsimd::abs(v), VecF(kGeluClampAbs));
    const VecF t = reciprocal_nr(xsimd::fma(VecF(kErfP * kGeluInvSqrt2), a, VecF(1.0f)));
    VecF p = xsimd::fma(VecF(0.5f * kErfA5), t, VecF(0.5f * kErfA4));
    p = xsimd::fma(p, t, VecF(0.5f * kErfA3));
    p = xsimd::fma(p, t, VecF(0.5f * kErfA2));
    p = xsimd::fma(p, t, VecF(0.5f * kErfA1));
    const VecF tail = p * t * exp2_nonpositive(a * a * VecF(-0.5f * kLog2e));  // Phi(-|v|)
    return v * xsimd::select(v < VecF(0.0f), tail, VecF(1.0f) - tail);
}

#if defined(TOPS_CPU_ISA_avx512)
// AVX-512: both GELUs are v / 2 + |v| q(|v|), q(a) = erf(a / sqrt(2)) / 2
// (GELU erf) or tanh(sqrt(2 / pi) (a + 0.044715 a^3)) / 2 (GELU tanh), with q
// on [0, kGeluTableEnd) as 31 intervals of kGeluTableWidth, a degree-4
// polynomial in the position r in [0, 1) within each, its five coefficients
// picked from 32-entry tables by vpermt2ps (entry 31, |v| >= 6.2 where 1/2 - q
// < 1e-9: the constant 1/2). About 11 arithmetic operations and 5 permutes per
// vector, against about 29 for gelu_erf_as, whose exp alone takes 11; the
// final fma cancels for large negative v, as 0.5 v (1 + erf) does in f32.
// scripts/gelu_table.py fits and prints the tables, and checks them: max
// |error| / max(1, |x|) over [-12, 12] 8.2e-8 (erf) and 8.4e-8 (tanh).
constexpr float kGeluTableWidth = 0.2f;
constexpr float kGeluTableEnd = 6.2f;
constexpr int kGeluTableDegree = 4;
constexpr int kGeluTableEntries = 32;
using GeluTable = float[kGeluTableDegree + 1][kGeluTableEntries];
alignas(64) constexpr float kGeluHalfErf[5][32] = {  // [coefficient of r^k][interval]
    {6.08983575e-09f, 0.079259716f, 0.155421749f, 0.225746885f,
     0.288144588f, 0.341344744f, 0.384930313f, 0.419243336f,
     0.445200711f, 0.464069664f, 0.477249861f, 0.486096561f,
     0.491802454f, 0.495338827f, 0.497444868f, 0.498650104f,
     0.499312848f, 0.499663085f, 0.499840885f, 0.49992764f,
     0.49996832f, 0.499986649f, 0.499994576f, 0.499997884f,
     0.499999195f, 0.499999702f, 0.499999911f, 0.49999997f,
     0.5f, 0.5f, 0.5f, 0.5f},
    {0.0797881484f, 0.07820829f, 0.0736538768f, 0.0666448921f,
     0.0579383895f, 0.0483943f, 0.0388373993f, 0.0299456771f,
     0.0221843161f, 0.0157901309f, 0.0107982419f, 0.0070949262f,
     0.00447888672f, 0.00271656085f, 0.0015830542f, 0.000886337308f,
     0.00047679196f, 0.000246425334f, 0.000122368059f, 5.83817346e-05f,
     2.67615869e-05f, 1.17861655e-05f, 4.98722375e-06f, 2.02754541e-06f,
     7.91967921e-07f, 2.97214314e-07f, 1.07165931e-07f, 3.71251758e-08f,
     1.23567689e-08f, 3.95153466e-09f, 1.21409005e-09f, 0.0f},
    {2.44509783e-06f, -0.00156215683f, -0.00294493698f, -0.00399841648f,
     -0.00463566184f, -0.00484063989f, -0.00466198148f, -0.0041938494f,
     -0.00355067034f, -0.00284301164f, -0.00216003996f, -0.00156095205f,
     -0.00107478618f, -0.00070605136f, -0.000442976569f, -0.000265650597f,
     -0.000152374705f, -8.36413747e-05f, -4.39571631e-05f, -2.21258924e-05f,
     -1.06701855e-05f, -4.93128982e-06f, -2.18457672e-06f, -9.2785416e-07f,
     -3.7789755e-07f, -1.47610507e-07f, -5.53055095e-08f, -1.9878323e-08f,
     -6.85485446e-09f, -2.26811792e-09f, -7.20143556e-10f, 0.0f},
    {-0.000538791821f, -0.000506253098f, -0.000416005321f, -0.000285254559f,
     -0.000137481227f, 3.36814423e-06f, 0.00011815031f, 0.000195817251f,
     0.000234130668f, 0.000238108143f, 0.000217136825f, 0.000181862604f,
     0.0001417288f, 0.000103589562f, 7.13800619e-05f, 4.65386001e-05f,
     2.87851017e-05f, 1.69238647e-05f, 9.4726829e-06f, 5.05374828e-06f,
     2.57243846e-06f, 1.25029999e-06f, 5.806437e-07f, 2.57794738e-07f,
     1.09474591e-07f, 4.44840609e-08f, 1.73021633e-08f, 6.44368381e-09f,
     2.29839126e-09f, 7.85366661e-10f, 2.57140559e-10f, 0.0f},
    {7.89290061e-06f, 2.214304e-05f, 3.21990374e-05f, 3.6500096e-05f,
     3.49033398e-05f, 2.85618808e-05f, 1.94489203e-05f, 9.72955604e-06f,
     1.20199343e-06f, -5.03642877e-06f, -8.65266793e-06f, -9.92503738e-06f,
     -9.48216439e-06f, -8.04257252e-06f, -6.22687548e-06f, -4.46648073e-06f,
     -2.99470753e-06f, -1.88787078e-06f, -1.12352086e-06f, -6.33086358e-07f,
     -3.38519641e-07f, -1.72065299e-07f, -8.32503204e-08f, -3.838338e-08f,
     -1.68795573e-08f, -7.08548864e-09f, -2.84085111e-09f, -1.08851439e-09f,
     -3.98780897e-10f, -1.39741579e-10f, -4.68555125e-11f, 0.0f},
};
alignas(64) constexpr float kGeluHalfTanh[5][32] = {  // [coefficient of r^k][interval]
    {6.22557028e-09f, 0.079257153f, 0.155402929f, 0.225692004f,
     0.288039625f, 0.341191977f, 0.384752303f, 0.419077188f,
     0.445085585f, 0.464033067f, 0.477298856f, 0.486217499f,
     0.491967976f, 0.495517731f, 0.497611105f, 0.498787522f,
     0.499415755f, 0.499733567f, 0.49988538f, 0.499953657f,
     0.499982446f, 0.499993801f, 0.499997944f, 0.499999374f,
     0.499999821f, 0.49999994f, 0.5f, 0.5f,
     0.5f, 0.5f, 0.5f, 0.5f},
    {0.079788141f, 0.0782007501f, 0.0736278072f, 0.0665998161f,
     0.0578861162f, 0.048354581f, 0.0388291627f, 0.0299780164f,
     0.0222520065f, 0.0158758778f, 0.0108800866f, 0.00715468498f,
     0.00450764876f, 0.00271551823f, 0.00156049174f, 0.000853077217f,
     0.000442310207f, 0.000216812899f, 0.000100141493f, 4.34341819e-05f,
     1.76294707e-05f, 6.67318045e-06f, 2.34751838e-06f, 7.64834851e-07f,
     2.29992366e-07f, 6.36143298e-08f, 1.6128892e-08f, 3.73574505e-09f,
     7.87753585e-10f, 1.50717744e-10f, 2.60741845e-11f, 0.0f},
    {2.49982395e-06f, -0.00156930636f, -0.00295537338f, -0.00400595646f,
     -0.00463473564f, -0.00482919905f, -0.00464286283f, -0.00417361874f,
     -0.00353650493f, -0.00283940532f, -0.00216713222f, -0.00157511886f,
     -0.0010907792f, -0.000719319505f, -0.000451075583f, -0.000268405478f,
     -0.000151142565f, -8.02991635e-05f, -4.01176585e-05f, -1.87834048e-05f,
     -8.2132583e-06f, -3.34227229e-06f, -1.26136615e-06f, -4.39957546e-07f,
     -1.41337637e-07f, -4.16772075e-08f, -1.1242328e-08f, -2.76477174e-09f,
     -6.17790041e-10f, -1.25009031e-10f, -2.28270493e-11f, 0.0f},
    {-0.000541578862f, -0.000508280238f, -0.000416103983f, -0.000283102912f,
     -0.000133869675f, 6.81373649e-06f, 0.000119773569f, 0.000194820052f,
     0.00023097088f, 0.000234171777f, 0.000213954496f, 0.000180387753f,
     0.00014205226f, 0.000105126419f, 7.33016495e-05f, 4.81686257e-05f,
     2.97927363e-05f, 1.73050503e-05f, 9.41272538e-06f, 4.77927051e-06f,
     2.25772487e-06f, 9.88969873e-07f, 4.00349762e-07f, 1.49277241e-07f,
     5.10987981e-08f, 1.60054121e-08f, 4.57241223e-09f, 1.18750154e-09f,
     2.7946423e-10f, 5.94057858e-11f, 1.13659811e-11f, 0.0f},
    {8.07125616e-06f, 2.2604816e-05f, 3.27406633e-05f, 3.68551555e-05f,
     3.48702015e-05f, 2.81289231e-05f, 1.88174472e-05f, 9.20051571e-06f,
     1.00308591e-06f, -4.86350882e-06f, -8.24226026e-06f, -9.48508296e-06f,
     -9.17950638e-06f, -7.94087646e-06f, -6.2925692e-06f, -4.61669879e-06f,
     -3.14903991e-06f, -1.9984152e-06f, -1.17862771e-06f, -6.44694808e-07f,
     -3.26221368e-07f, -1.5228197e-07f, -6.53910135e-08f, -2.57548862e-08f,
     -9.27690724e-09f, -3.04699488e-09f, -9.09869347e-10f, -2.46280524e-10f,
     -6.02454336e-11f, -1.32793195e-11f, -2.62774936e-12f, 0.0f},
};

inline __attribute__((always_inline)) VecF gelu_from_table(VecF v, const GeluTable& table) {
    const VecF t = xsimd::min(xsimd::abs(v), VecF(kGeluTableEnd)) * VecF(1.0f / kGeluTableWidth);  // NaN: the end
    const VecF whole = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const VecF r = t - whole;
    const __m512i interval = _mm512_cvttps_epi32(whole);
    static_assert(sizeof(table[0]) == 2 * sizeof(__m512), "a table is two vectors");
    const auto coef = [&](int k) {  // (16,) coefficient k of each lane's interval
        return VecF(_mm512_permutex2var_ps(_mm512_load_ps(table[k]), interval, _mm512_load_ps(table[k] + kLanes)));
    };
    VecF p = coef(kGeluTableDegree);
    for (int k = kGeluTableDegree - 1; k >= 0; --k) p = xsimd::fma(p, r, coef(k));
    return xsimd::fma(xsimd::abs(v), p, VecF(0.5f) * v);  // p = q(|v|); -inf: -inf + inf = NaN
}
#endif

inline __attribute__((always_inline)) VecF gelu_erf(VecF v) {
#if defined(TOPS_CPU_ISA_avx512)
    return gelu_from_table(v, kGeluHalfErf);
#else
    return gelu_erf_as(v);
#endif
}

}  // namespace tops::cpu::TOPS_ISA_NS
