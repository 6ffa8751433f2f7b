// Fused elementwise ops (eltwise_<op>_<dtype>_{rows,strided}_<isa>).
//
// Strategy: the plan merges y's dims so that the work is rows of n elements
// with unit stride in y. In the rows kernel every input is either a full row
// (unit stride, loaded as vectors) or one value per row (stride 0: a
// per-channel PReLU slope or bias, broadcast once per row), so the inner loop
// is a pure stream: one vector load per full input, a few FMAs or the
// activation polynomial, one vector store (non-temporal for a y of 8 MiB or
// more). Weighted sums fold the per-row scalar inputs into one constant
// before the loop. Math is f32 throughout; tanh and exp come from xsimd; GELU
// erf is a table of piecewise polynomials on AVX-512 (gelu_erf_table) and a
// short rational-times-exp form elsewhere (gelu_erf_as, with exp_simd.hpp's
// exp). Element j of every input is read before element j of y is written,
// so y may alias an input of the same layout.
#include <cmath>
#include <type_traits>

#include "cpu/activation.hpp"
#include "cpu/eltwise_kernels.hpp"
#include "cpu/isa_arch.hpp"
#include "cpu/kernels/exp_simd.hpp"
#include "cpu/kernels/rowwise_simd.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {
namespace {

// GELU erf = v Phi(v) with Phi(-|v|) = (1 - erf(|z|)) / 2, z = v / sqrt(2), and
// erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): 1 - erf(a) =
// t P(t) exp(-a^2), t = 1 / (1 + p a). The reciprocal is the ISA's estimate
// (12 or 14 bits) and one Newton step, the exp exp_simd.hpp's, and the halves
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

// 1 / d for d >= 1: the estimate and one Newton step (about 2^-23 relative error).
inline VecF reciprocal_nr(VecF d) {
#if defined(TOPS_CPU_ISA_avx512)
    const VecF r = _mm512_rcp14_ps(d);
#else
    const VecF r = xsimd::reciprocal(d);
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
// AVX-512: GELU(v) = v Phi(v) = v / 2 + |v| q(|v|), q(a) = erf(a / sqrt(2)) / 2,
// with q on [0, kGeluTailEnd) as 31 intervals of kGeluTailWidth, a degree-4
// polynomial in the position r in [0, 1) within each, its five coefficients
// picked from 32-entry tables by vpermt2ps (entry 31, |v| >= 6.2 where 1/2 - q
// < 1e-9: the constant 1/2). About 11 arithmetic operations and 5 permutes per
// vector, against about 29 for gelu_erf_as, whose exp alone takes 11.
// scripts/gelu_tail_table.py fits and prints the table, and checks it:
// max |error| / max(1, |x|) over [-12, 12] 8.2e-8 (gelu_erf_as: 1.7e-7).
constexpr float kGeluTailWidth = 0.2f;
constexpr float kGeluTailEnd = 6.2f;
alignas(64) constexpr float kGeluTail[5][32] = {  // [coefficient of r^k][interval]
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

inline __attribute__((always_inline)) VecF gelu_erf_table(VecF v) {
    const VecF t = xsimd::min(xsimd::abs(v), VecF(kGeluTailEnd)) * VecF(1.0f / kGeluTailWidth);  // NaN: the end
    const VecF whole = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const VecF r = t - whole;
    const __m512i interval = _mm512_cvttps_epi32(whole);
    constexpr int kDegree = int(sizeof(kGeluTail) / sizeof(kGeluTail[0])) - 1;
    static_assert(sizeof(kGeluTail[0]) == 2 * sizeof(__m512), "a table is two vectors");
    const auto coef = [&](int k) {  // (16,) coefficient k of each lane's interval
        return VecF(_mm512_permutex2var_ps(_mm512_load_ps(kGeluTail[k]), interval,
                                           _mm512_load_ps(kGeluTail[k] + kLanes)));
    };
    VecF p = coef(kDegree);
    for (int k = kDegree - 1; k >= 0; --k) p = xsimd::fma(p, r, coef(k));
    return xsimd::fma(xsimd::abs(v), p, VecF(0.5f) * v);  // p = q(|v|); -inf: -inf + inf = NaN
}
#endif

template <Activation ACT>
inline __attribute__((always_inline)) VecF activate(VecF v) {
    if constexpr (ACT == Activation::relu) {
        return xsimd::max(v, VecF(0.0f));
    } else if constexpr (ACT == Activation::gelu_erf) {
#if defined(TOPS_CPU_ISA_avx512)
        return gelu_erf_table(v);
#else
        return gelu_erf_as(v);
#endif
    } else if constexpr (ACT == Activation::gelu_tanh) {
        const VecF inner = VecF(kGeluSqrt2OverPi) * xsimd::fma(VecF(kGeluTanhCubic) * v, v * v, v);
        return VecF(0.5f) * v * (VecF(1.0f) + xsimd::tanh(inner));
    } else if constexpr (ACT == Activation::silu) {
        return v / (VecF(1.0f) + xsimd::exp(-v));
    } else {
        return v;
    }
}


// Element offsets of y and every input for consecutive outer rows.
class RowCursor {
public:
    RowCursor(const EltwiseArgs& a, int64_t row) : a_(a) {
        for (int d = a.rank - 1; d >= 0; --d) {
            idx_[d] = row % a.dims[d];
            row /= a.dims[d];
            y += idx_[d] * a.y_outer[d];
            for (int i = 0; i < a.num_inputs; ++i) in[i] += idx_[d] * a.in_outer[i][d];
        }
    }
    void next() {
        for (int d = a_.rank - 1; d >= 0; --d) {
            y += a_.y_outer[d];
            for (int i = 0; i < a_.num_inputs; ++i) in[i] += a_.in_outer[i][d];
            if (++idx_[d] < a_.dims[d]) return;
            y -= a_.dims[d] * a_.y_outer[d];
            for (int i = 0; i < a_.num_inputs; ++i) in[i] -= a_.dims[d] * a_.in_outer[i][d];
            idx_[d] = 0;
        }
    }
    int64_t y = 0;
    int64_t in[kMaxEltwiseInputs] = {};

private:
    const EltwiseArgs& a_;
    int64_t idx_[kMaxRank] = {};
};

// y[j] = f(j, count) over [j0, j1) in vectors (count < kLanes only at the
// ends); with `nt` (y >= kStreamMinBytes) the vector-aligned full vectors go
// out as non-temporal stores (row_store): a plain store first reads its line
// for ownership, a third stream of DRAM traffic beside x and y. Zen 4 VM,
// bias + GELU 4096x4096 f32, one thread: 6.9-7.0 -> 5.1-5.3 ms.
template <tops_dtype_t DT, class F>
inline void stream(storage_t<DT>* y, int64_t j0, int64_t j1, bool nt, F&& f) {
    if (nt) {
        row_store<DT>(y + j0, j1 - j0, true, [&](int64_t j, int count) { return f(j0 + j, count); });
        return;
    }
    int64_t j = j0;
    for (; j + kLanes <= j1; j += kLanes) store<DT>(y + j, f(j, kLanes));
    if (j < j1) store_n<DT>(y + j, f(j, int(j1 - j)), int(j1 - j));
}

// x + bias, bias a full row (kBiasRow), one value per row, or absent.
template <tops_dtype_t DT, Activation ACT, bool kBiasRow>
void bias_act_segment(const storage_t<DT>* x, const storage_t<DT>* bias, storage_t<DT>* y, int64_t j0,
                      int64_t j1, bool nt) {
    const VecF b_scalar(bias && !kBiasRow ? to_float<DT>(bias[0]) : 0.0f);
    stream<DT>(y, j0, j1, nt, [&](int64_t j, int count) {
        VecF v = load_any<DT>(x + j, count);
        if constexpr (kBiasRow) v += load_any<DT>(bias + j, count);
        else v += b_scalar;
        return activate<ACT>(v);
    });
}

template <tops_dtype_t DT, Activation ACT>
void bias_act_row(const EltwiseArgs& a, const RowCursor& cur, int64_t j0, int64_t j1) {
    using T = storage_t<DT>;
    const T* x = static_cast<const T*>(a.in[0]) + cur.in[0];
    T* y = static_cast<T*>(a.y) + cur.y;
    const T* bias = a.num_inputs > 1 ? static_cast<const T*>(a.in[1]) + cur.in[1] : nullptr;
    if (bias && a.in_inner[1] == 1) bias_act_segment<DT, ACT, true>(x, bias, y, j0, j1, a.stream);
    else bias_act_segment<DT, ACT, false>(x, bias, y, j0, j1, a.stream);
}

template <tops_dtype_t DT>
void prelu_row(const EltwiseArgs& a, const RowCursor& cur, int64_t j0, int64_t j1) {
    using T = storage_t<DT>;
    const T* x = static_cast<const T*>(a.in[0]) + cur.in[0];
    const T* slope = static_cast<const T*>(a.in[1]) + cur.in[1];
    T* y = static_cast<T*>(a.y) + cur.y;
    const bool nt = a.stream;
    const VecF zero(0.0f);
    if (a.in_inner[1] == 1) {
        stream<DT>(y, j0, j1, nt, [&](int64_t j, int count) {
            const VecF v = load_any<DT>(x + j, count);
            return xsimd::select(v > zero, v, v * load_any<DT>(slope + j, count));
        });
    } else {
        const VecF s(to_float<DT>(slope[0]));
        stream<DT>(y, j0, j1, nt, [&](int64_t j, int count) {
            const VecF v = load_any<DT>(x + j, count);
            return xsimd::select(v > zero, v, v * s);
        });
    }
}

template <tops_dtype_t DT>
void weighted_sum_row(const EltwiseArgs& a, const RowCursor& cur, int64_t j0, int64_t j1) {
    using T = storage_t<DT>;
    const T* full[kMaxEltwiseInputs];
    VecF coef[kMaxEltwiseInputs];
    int nfull = 0;
    float constant = 0.0f;
    for (int i = 0; i < a.num_inputs; ++i) {
        const T* p = static_cast<const T*>(a.in[i]) + cur.in[i];
        if (a.in_inner[i] == 0) {
            constant = std::fma(a.coefs[i], to_float<DT>(p[0]), constant);
        } else {
            full[nfull] = p;
            coef[nfull++] = VecF(a.coefs[i]);
        }
    }
    T* y = static_cast<T*>(a.y) + cur.y;
    const bool nt = a.stream;
    const VecF c0(constant);
    stream<DT>(y, j0, j1, nt, [&](int64_t j, int count) {
        VecF acc = c0;
        for (int i = 0; i < nfull; ++i) acc = xsimd::fma(coef[i], load_any<DT>(full[i] + j, count), acc);
        return acc;
    });
}

template <tops_dtype_t DT, class RowFn>
void for_items(const EltwiseArgs& a, RowFn&& row) {
    const int64_t blocks = (a.n + a.block - 1) / a.block;
    int64_t r = a.item_begin / blocks;
    RowCursor cur(a, r);
    for (int64_t item = a.item_begin; item < a.item_end; ++item) {
        if (item / blocks != r) {
            ++r;
            cur.next();
        }
        const int64_t j0 = (item % blocks) * a.block;
        const int64_t j1 = j0 + a.block < a.n ? j0 + a.block : a.n;
        row(cur, j0, j1);
    }
}

template <tops_dtype_t DT>
void eltwise_rows_body(const EltwiseArgs& a) {
    switch (a.kind) {
        case EltwiseKind::prelu:
            for_items<DT>(a, [&](const RowCursor& c, int64_t j0, int64_t j1) { prelu_row<DT>(a, c, j0, j1); });
            return;
        case EltwiseKind::weighted_sum:
            for_items<DT>(a, [&](const RowCursor& c, int64_t j0, int64_t j1) { weighted_sum_row<DT>(a, c, j0, j1); });
            return;
        default: break;
    }
    auto run = [&](auto act_tag) {
        constexpr Activation ACT = decltype(act_tag)::value;
        for_items<DT>(a, [&](const RowCursor& c, int64_t j0, int64_t j1) { bias_act_row<DT, ACT>(a, c, j0, j1); });
    };
    switch (a.act) {
        case Activation::relu: run(std::integral_constant<Activation, Activation::relu>{}); break;
        case Activation::gelu_erf: run(std::integral_constant<Activation, Activation::gelu_erf>{}); break;
        case Activation::gelu_tanh: run(std::integral_constant<Activation, Activation::gelu_tanh>{}); break;
        case Activation::silu: run(std::integral_constant<Activation, Activation::silu>{}); break;
        default: run(std::integral_constant<Activation, Activation::none>{}); break;
    }
}

template <tops_dtype_t DT>
void eltwise_rows(const EltwiseArgs& a) {
    eltwise_rows_body<DT>(a);
    if (a.stream) stream_fence();  // the non-temporal stores are visible before the threads join
}

template <tops_dtype_t DT>
void eltwise_strided(const EltwiseArgs& a) {
    using T = storage_t<DT>;
    auto in_at = [&](int i, const RowCursor& c, int64_t j) {
        return to_float<DT>(static_cast<const T*>(a.in[i])[c.in[i] + j * a.in_inner[i]]);
    };
    for_items<DT>(a, [&](const RowCursor& c, int64_t j0, int64_t j1) {
        T* y = static_cast<T*>(a.y) + c.y;
        for (int64_t j = j0; j < j1; ++j) {
            float v;
            if (a.kind == EltwiseKind::weighted_sum) {
                v = 0.0f;
                for (int i = 0; i < a.num_inputs; ++i) v = std::fma(a.coefs[i], in_at(i, c, j), v);
            } else if (a.kind == EltwiseKind::prelu) {
                const float x = in_at(0, c, j);
                v = x > 0.0f ? x : x * in_at(1, c, j);
            } else {
                v = activate_scalar(a.act, a.num_inputs > 1 ? in_at(0, c, j) + in_at(1, c, j) : in_at(0, c, j));
            }
            y[j * a.y_inner] = from_float<DT>(v);
        }
    });
}

}  // namespace
}  // namespace TOPS_ISA_NS

template <tops_dtype_t DT>
template <class A>
void EltwiseRowsKernel<DT>::operator()(A, EltwiseArgs a) const {
    static_assert(std::is_same_v<A, Arch>, "instantiated for this file's ISA only");
    TOPS_ISA_NS::eltwise_rows<DT>(a);
}

template <tops_dtype_t DT>
template <class A>
void EltwiseStridedKernel<DT>::operator()(A, EltwiseArgs a) const {
    static_assert(std::is_same_v<A, Arch>, "instantiated for this file's ISA only");
    TOPS_ISA_NS::eltwise_strided<DT>(a);
}

TOPS_CPU_INSTANTIATE(EltwiseRowsKernel<TOPS_DTYPE_F32>, EltwiseArgs)
TOPS_CPU_INSTANTIATE(EltwiseRowsKernel<TOPS_DTYPE_F16>, EltwiseArgs)
TOPS_CPU_INSTANTIATE(EltwiseRowsKernel<TOPS_DTYPE_BF16>, EltwiseArgs)
TOPS_CPU_INSTANTIATE(EltwiseStridedKernel<TOPS_DTYPE_F32>, EltwiseArgs)
TOPS_CPU_INSTANTIATE(EltwiseStridedKernel<TOPS_DTYPE_F16>, EltwiseArgs)
TOPS_CPU_INSTANTIATE(EltwiseStridedKernel<TOPS_DTYPE_BF16>, EltwiseArgs)

}  // namespace tops::cpu
