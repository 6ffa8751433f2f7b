// The vector exp of the CPU kernels (softmax rows, attention's online
// softmax, the GELU of the elementwise ops; its polynomial also serves
// SiLU's exp on AVX-512), per ISA build: everything lives
// in TOPS_ISA_NS, so each ISA keeps its own copy. Include after
// cpu/isa_arch.hpp.
#pragma once

#include <immintrin.h>

#include "cpu/isa_arch.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu::TOPS_ISA_NS {

// 2^u for u <= 0 (u may exceed 0 by rounding; any u below kExp2Min, -inf
// included, gives 0, so no denormal ever leaves; NaN stays NaN, so a row
// holding NaN, or +inf whose u is inf - inf, sums to NaN). Softmax passes
// u = (x * scale - max) * log2(e): the difference is formed first so large
// inputs keep their low bits on ISAs without FMA, and exp needs no Cody-Waite
// reduction: u = k + f with integer k and |f| <= 1/2 (exact), 2^f by a
// degree-7 Horner polynomial (Cephes' expf coefficients times ln2^i, about
// 1 ulp), times 2^k. AVX-512 rounds with vrndscaleps and scales with a
// zero-masked vscalefps; the other ISAs round with the 1.5 * 2^23 shifter,
// whose low mantissa bits then hold k + 127, and shift those into the
// exponent field.
constexpr float kLog2e = 1.44269504088896341f;

// 2^f for |f| <= 1/2: a degree-7 Horner polynomial (Cephes' expf
// coefficients times ln2^i, about 1 ulp).
inline __attribute__((always_inline)) VecF exp2_poly(VecF f) {
    constexpr float kC7 = 1.5279194486e-05f;  // 2^f ~ 1 + f (kC1 + f (kC2 + ... + f kC7))
    constexpr float kC6 = 1.5506794443e-04f;
    constexpr float kC5 = 1.3333747629e-03f;
    constexpr float kC4 = 9.6179284155e-03f;
    constexpr float kC3 = 5.5504105985e-02f;
    constexpr float kC2 = 2.4022650719e-01f;
    constexpr float kC1 = 6.9314718246e-01f;
    VecF p = xsimd::fma(VecF(kC7), f, VecF(kC6));
    p = xsimd::fma(p, f, VecF(kC5));
    p = xsimd::fma(p, f, VecF(kC4));
    p = xsimd::fma(p, f, VecF(kC3));
    p = xsimd::fma(p, f, VecF(kC2));
    p = xsimd::fma(p, f, VecF(kC1));
    return xsimd::fma(p, f, VecF(1.0f));
}

inline __attribute__((always_inline)) VecF exp2_nonpositive(VecF u) {
    constexpr float kExp2Min = -126.0f;  // 2^kExp2Min is the smallest normal float
#if defined(TOPS_CPU_ISA_avx512)
    const VecF k = _mm512_roundscale_ps(u, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __mmask16 in_range = _mm512_cmp_ps_mask(u, VecF(kExp2Min), _CMP_NLT_UQ);  // NaN: kept
    return _mm512_maskz_scalef_ps(in_range, exp2_poly(u - k), k);
#else
    constexpr float kShifter = 12582912.0f + 127.0f;  // 1.5 * 2^23 + exponent bias
    constexpr int kMantissaBits = 23;
    const VecF shifted = u + VecF(kShifter);
    const VecF k = shifted - VecF(kShifter);
    const VecF pow2k = xsimd::bitwise_cast<VecF>(xsimd::bitwise_cast<VecI>(shifted) << kMantissaBits);
    return xsimd::select(u < VecF(kExp2Min), VecF(0.0f), exp2_poly(u - k) * pow2k);  // NaN: kept
#endif
}

}  // namespace tops::cpu::TOPS_ISA_NS
