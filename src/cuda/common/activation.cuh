// The activations of the fused epilogues (bias + activation, GEMM, conv2d),
// in f32 on the device: one definition for every CUDA kernel, matching the
// CPU backend and tops.h (ReLU is max(v, 0), so NaN gives 0; GELU erf is
// x * Phi(x) to a few f32 ulp; GELU tanh is the usual cubic approximation,
// evaluated as x * sigmoid(2u)).
//
// GELU erf is the activation of BERT's FFN and runs over every element of
// the widest tensor of a layer, so its cost decides whether the f16 passes
// are memory-bound. CUDA's erff (about 20 instructions, plus the cancelling
// 1 + erf(x) of the negative tail) made them instruction-bound. Here both
// signs go through the relative-accurate lower tail
//   Phi(-|x|) = erfc(|x| / sqrt2) / 2 = t * 2^(Q(t) - x^2 log2(e) / 2) / 2,
//   t = 1 / (1 + p |x|),
// (one fast reciprocal, one polynomial in t, one ex2) and
//   GELU(x) = x * Phi(-|x|) for x < 0,  x - x * Phi(-|x|) for x >= 0,
// so nothing cancels. Q is a minimax fit (Lawson's iteration on Chebyshev
// nodes, in double) of log2(erfc(z) / t) + z^2 log2(e) for z = |x| / sqrt2
// over |x| <= kGeluClamp. Two accuracy tiers, chosen by the storage type:
//   f32 storage: Q of degree 8 and the exponent -x^2 log2(e) / 2 formed
//     exactly (x^2 split into hi + lo, integer part taken by a round-to-int
//     fma, 2^n built from its bits), so the exponent's magnitude (up to 122)
//     costs no accuracy: max relative error 4.9e-7 (4.1 ulp) over every
//     float in [-13, 13] on an H100 (CUDA's erff form: 100%, the tail
//     rounds 1 + erf to 0);
//   f16 / bf16 storage: Q of degree 5 and a single-rounding exponent,
//     max relative error 1.14e-5 (same sweep), under 3% of the output's half
//     ulp (f16 2^-11, bf16 2^-8), for about half the instructions. (Its
//     clamp-free final step and the pair form were checked against the
//     stored-output bounds of GeluAccuracy, not re-swept for that figure.)
// Beyond |x| = kGeluClamp the result is x (x > 0) or -0 (x < 0): the exact
// value differs from those by less than FLT_MIN (the f32 subnormal range is
// flushed, as -ftz would); -inf gives NaN (-inf * 0, as PyTorch), NaN
// propagates.
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/params.hpp"

namespace tops::cuda {

constexpr float kGeluSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluTanhCubic = 0.044715f;
constexpr float kLog2E = 1.44269502163f;

// |x| beyond which Phi(-|x|) is taken as 0: keeps 2^(-x^2 log2(e) / 2) a
// normal float (>= 2^-122) on both tiers.
constexpr float kGeluClamp = 13.0f;
// log2(e) / 2 as hi + lo (the lo part matters: the exponent reaches 122).
constexpr float kGeluExpHi = 7.213475108e-01f;
constexpr float kGeluExpLo = 9.629815168e-09f;
// 1.5 * 2^23: adding it rounds a float of magnitude < 2^22 to an integer,
// which then sits in the low mantissa bits.
constexpr float kRoundToIntMagic = 12582912.0f;

// f32 tier: t = 1 / (1 + p |x|) with p = 0.56 / sqrt2; Q(t) = sum c_k t^k.
constexpr float kGeluP32 = 3.959797919e-01f;
constexpr int kGeluDeg32 = 8;
__device__ constexpr float kGeluQ32[kGeluDeg32 + 1] = {
    -1.662046909e+00f, 1.437599897e+00f, 5.491576195e-01f, -2.869392633e-01f, 8.782016635e-01f,
    -2.634820700e+00f, 2.851729631e+00f, -1.403179884e+00f, 2.702980936e-01f};
// 16-bit tier: p = 0.49 / sqrt2; the factor 1/2 of Phi folded into c_0 (-1).
constexpr float kGeluP16 = 3.464823365e-01f;
constexpr int kGeluDeg16 = 5;
__device__ constexpr float kGeluQ16[kGeluDeg16 + 1] = {
    -2.857167482e+00f, 1.478361845e+00f, 3.305367529e-01f, 7.864786983e-01f, -1.072507262e+00f, 3.343013525e-01f};

// Hardware approximations (MUFU): 1/x and 2^x, each within 2 ulp; results
// below 2^-126 flush to zero, which the callers keep away from.
__device__ __forceinline__ float rcp_approx(float v) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}
__device__ __forceinline__ float ex2_approx(float v) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}

template <int DEG>
__device__ __forceinline__ float horner(const float (&c)[DEG + 1], float t) {
    float q = c[DEG];
#pragma unroll
    for (int k = DEG - 1; k >= 0; --k) q = fmaf(q, t, c[k]);
    return q;
}

// 16-bit tier from t = 1 / (1 + p |x|): with te = t 2^(Q(t) - x^2 log2(e) / 2)
// = Phi(-|x|), GELU(x) = x te (x < 0) or x (1 - te) (x >= 0). No clamp is
// needed: past |x| ~ 13.3 the ex2 flushes to 0, so te = 0 and the result is
// x or -0; x = +inf gives inf * 1, x = -inf gives -inf * 0 = NaN (as
// x * Phi(x) in PyTorch), NaN propagates.
__device__ __forceinline__ float gelu_erf16_from_t(float x, float t) {
    const float q = horner<kGeluDeg16>(kGeluQ16, t);
    const float te = t * ex2_approx(fmaf(x * x, -kGeluExpHi, q));
    return x * (x < 0.0f ? te : 1.0f - te);
}

// GELU erf; ACCURATE selects the f32 tier (see the file comment).
template <bool ACCURATE>
__device__ __forceinline__ float gelu_erf(float x) {
    if constexpr (!ACCURATE) {
        return gelu_erf16_from_t(x, rcp_approx(fmaf(kGeluP16, fabsf(x), 1.0f)));
    } else {
        const float ax = fabsf(x);
        const float t = rcp_approx(fmaf(kGeluP32, ax, 1.0f));
        const float q = horner<kGeluDeg32>(kGeluQ32, t);
        // -x^2 * log2(e) / 2 = n + f exactly up to f's rounding: n an integer, |f| <= 1/2.
        const float x2 = x * x;
        const float x2lo = fmaf(x, x, -x2);
        const float s = fmaf(x2, -kGeluExpHi, kRoundToIntMagic);
        const float n = s - kRoundToIntMagic;
        float f = fmaf(x2, -kGeluExpHi, -n);
        f = fmaf(x2, -kGeluExpLo, f);
        f = fmaf(x2lo, -kGeluExpHi, f);
        // 2^(n - 1): n (in [-122, 0] while |x| <= kGeluClamp) sits in s's low
        // mantissa bits, and the magic's own exponent bits shift out.
        const float scale = __int_as_float(int((uint32_t(__float_as_int(s)) + 126u) << 23));
        float xt = x * t * ex2_approx(f + q) * scale;  // x * Phi(-|x|)
        // Past the clamp: x (x > 0), or x * 0 (x < 0: -0, and NaN for -inf as
        // x * Phi(x) gives in PyTorch and on the CPU backend). NaN stays NaN.
        if (ax > kGeluClamp) xt = fminf(x, 0.0f) * 0.0f;
        return x < 0.0f ? xt : x - xt;
    }
}

// The 16-bit tier for two values with one reciprocal: 1 / (u v) times v and
// times u. u and v are capped at kGeluPairCap so u v stays finite; a capped
// value has |x| > 3e18, its exponent -x^2 log2(e) / 2 is far below ex2's
// range, te = 0 and its t does not matter (NaN caps too, and stays NaN
// through x^2). Two multiplies instead of one MUFU op: where MUFU throughput
// bounds an epilogue (the fused GEMM), 3 MUFU ops per pair instead of 4.
constexpr float kGeluPairCap = 1152921504606846976.0f;  // 2^60
__device__ __forceinline__ void gelu_erf16_pair(float& a, float& b) {
    const float u = fminf(fmaf(kGeluP16, fabsf(a), 1.0f), kGeluPairCap);
    const float v = fminf(fmaf(kGeluP16, fabsf(b), 1.0f), kGeluPairCap);
    const float r = rcp_approx(u * v);
    a = gelu_erf16_from_t(a, r * v);
    b = gelu_erf16_from_t(b, r * u);
}

// x * sigmoid(z), relative-accurate on both tails (GELU tanh, SiLU). With
// h = e^(-|z| / 2) (normal while |z| <= 174): x / (1 + h^2) for z >= 0 and
// (x h) h / (1 + h^2) for z < 0, so e^z is never formed alone where it would
// be subnormal while x e^z is not (|x| > 1, e.g. SiLU's x in [-91, -87.3]).
// ACCURATE: expf and a division (f32 storage); otherwise ex2 and a reciprocal
// (MUFU, 16-bit storage). Specials: NaN propagates, x = +inf gives +inf,
// x = -inf gives NaN (-inf * 0, as v sigmoid(v) in PyTorch), |z| past 174 gives
// x or -0.
template <bool ACCURATE>
__device__ __forceinline__ float mul_sigmoid(float x, float z) {
    const float w = -0.5f * fabsf(z);
    const float h = ACCURATE ? expf(w) : ex2_approx(kLog2E * w);
    const float d = fmaf(h, h, 1.0f);
    const float num = z < 0.0f ? (x * h) * h : x;
    return ACCURATE ? num / d : num * rcp_approx(d);
}

// The accuracy an activation needs is set by the storage it is rounded to.
template <class Storage>
constexpr bool kAccurateFor = sizeof(Storage) >= sizeof(float);

// act(v) with the activation known at compile time, for a result stored as
// Storage (f32 math either way; 16-bit storage takes the cheaper forms).
template <Activation A, class Storage = float>
__device__ __forceinline__ float activate(float v) {
    if constexpr (A == Activation::relu) return v > 0.0f ? v : 0.0f;
    if constexpr (A == Activation::gelu_erf) return gelu_erf<kAccurateFor<Storage>>(v);
    // 0.5 v (1 + tanh(u)) = v sigmoid(2 u): the tanh form cancels for u < 0
    // (1 + tanh(u) is 3.5e-7 at v = -4.8, where even a correctly rounded f32
    // tanh leaves a relative error of 1.4%).
    if constexpr (A == Activation::gelu_tanh) {
        return mul_sigmoid<kAccurateFor<Storage>>(v, 2.0f * kGeluSqrt2OverPi * (v + kGeluTanhCubic * v * v * v));
    }
    if constexpr (A == Activation::silu) return mul_sigmoid<kAccurateFor<Storage>>(v, v);
    return v;
}

// act(v) with the activation chosen at run time.
template <class Storage = float>
__device__ __forceinline__ float activate(Activation act, float v) {
    switch (act) {
        case Activation::relu: return activate<Activation::relu, Storage>(v);
        case Activation::gelu_erf: return activate<Activation::gelu_erf, Storage>(v);
        case Activation::gelu_tanh: return activate<Activation::gelu_tanh, Storage>(v);
        case Activation::silu: return activate<Activation::silu, Storage>(v);
        default: return v;
    }
}

// fn(std::integral_constant<Activation, A>{}) for the run-time activation: a
// loop over many values switches once, not once per value (per value, the
// switch was a jump table per element of the conv epilogues).
template <class Fn>
__device__ __forceinline__ void with_activation(Activation act, Fn&& fn) {
    switch (act) {
        case Activation::relu: fn(std::integral_constant<Activation, Activation::relu>{}); return;
        case Activation::gelu_erf: fn(std::integral_constant<Activation, Activation::gelu_erf>{}); return;
        case Activation::gelu_tanh: fn(std::integral_constant<Activation, Activation::gelu_tanh>{}); return;
        case Activation::silu: fn(std::integral_constant<Activation, Activation::silu>{}); return;
        default: fn(std::integral_constant<Activation, Activation::none>{}); return;
    }
}

// act on two values; GELU erf for 16-bit storage shares one reciprocal.
template <Activation A, class Storage = float>
__device__ __forceinline__ void activate_pair(float& a, float& b) {
    if constexpr (A == Activation::gelu_erf && !kAccurateFor<Storage>) {
        gelu_erf16_pair(a, b);
    } else {
        a = activate<A, Storage>(a);
        b = activate<A, Storage>(b);
    }
}

}  // namespace tops::cuda
