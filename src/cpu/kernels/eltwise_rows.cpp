// Fused elementwise ops (eltwise_<op>_<dtype>_{rows,strided}_<isa>).
//
// Strategy: the plan merges y's dims so that the work is rows of n elements
// with unit stride in y. In the rows kernel every input is either a full row
// (unit stride, loaded as vectors) or one value per row (stride 0: a
// per-channel PReLU slope or bias, broadcast once per row), so the inner loop
// is a pure stream: one vector load per full input, a few FMAs or the
// activation polynomial, one vector store (non-temporal for a y of 8 MiB or
// more). Weighted sums fold the per-row scalar inputs into one constant
// before the loop. Math is f32 throughout; the activations are
// activation_simd.hpp's, shared with the GEMM and conv2d epilogues. Element j
// of every input is read before element j of y is written, so y may alias an
// input of the same layout.
#include <cmath>
#include <type_traits>

#include "cpu/activation.hpp"
#include "cpu/eltwise_kernels.hpp"
#include "cpu/isa_arch.hpp"
#include "cpu/kernels/activation_simd.hpp"
#include "cpu/kernels/rowwise_simd.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {
namespace {

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
// for ownership, a third stream of DRAM traffic beside x and y. Zen 4 VM, one
// thread: PReLU 32x64x56x56 f32 2.36-2.38 -> 1.39-1.43 ms, weighted sum of 3
// 4096x4096 9.9-10.4 -> 7.4-9.0 ms (bias + GELU, then compute-bound, within
// noise: 6.9-7.0 -> 6.5-6.7).
template <tops_dtype_t DT, class F>
inline void stream(storage_t<DT>* y, int64_t j0, int64_t j1, bool nt, F&& f) {
    row_store<DT>(y + j0, j1 - j0, nt, [&](int64_t j, int count) { return f(j0 + j, count); });
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
