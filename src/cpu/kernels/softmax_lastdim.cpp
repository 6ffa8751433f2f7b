// Softmax along a contiguous axis: rows of n unit-stride elements
// (softmax_<dtype>_lastdim_<isa>).
//
// Strategy: three passes per row, computing exp once per element.
//   1. max of scale*x over the entries taking part (read x),
//   2. e = exp(scale*x - max): summed and stored (f32: into y; f16/bf16: into
//      an f32 stack buffer so the output is rounded once; rows too long for
//      the buffer recompute exp in pass 3 instead),
//   3. y = e / sum (log-softmax: y = scale*x - max - log(sum), no store in 2).
// A row of f32 up to a few hundred KiB stays in L1/L2 between the passes, so
// passes 2-3 run from cache and memory traffic stays one read of x and one
// write of y. Reductions use kUnroll independent accumulators to hide
// latency. Masked entries enter the max as -inf, so their exp is 0 and the
// stored e already holds the 0 the softmax writes there.
#include "cpu/kernels/softmax_common.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {
namespace {

constexpr int kUnroll = 4;                 // independent accumulators per reduction
constexpr int64_t kScratchFloats = 8192;   // f16/bf16 rows up to 32 KiB of f32 exps
constexpr int64_t kStep = int64_t(kUnroll) * kLanes;

inline BoolF first_lanes(int count) {
    alignas(64) int32_t iota[kLanes];
    for (int i = 0; i < kLanes; ++i) iota[i] = i;
    return xsimd::bool_cast(VecI::load_aligned(iota) < VecI(count));
}

// Which lanes of x[j .. j+kLanes) take part (masked variant).
template <bool kMasked>
inline BoolF active(const uint8_t* mask, int64_t j) {
    if constexpr (kMasked) return load_mask(mask + j);
    else return BoolF(true);
}

template <bool kMasked>
inline BoolF active_tail(const uint8_t* mask, int64_t j, int count) {
    if constexpr (kMasked) return load_mask_strided(mask + j, 1, count);
    else return first_lanes(count);
}

// scale * x at lanes taking part, -inf elsewhere.
template <tops_dtype_t DT, bool kMasked>
inline VecF scaled(const storage_t<DT>* x, const uint8_t* mask, int64_t j, VecF s) {
    const VecF t = load<DT>(x + j) * s;
    if constexpr (kMasked) return xsimd::select(active<true>(mask, j), t, VecF(-kInf));
    else return t;
}

template <tops_dtype_t DT, bool kMasked>
inline VecF scaled_tail(const storage_t<DT>* x, const uint8_t* mask, int64_t j, int count, VecF s) {
    return xsimd::select(active_tail<kMasked>(mask, j, count), load_partial<DT>(x + j, count, 0.0f) * s,
                         VecF(-kInf));
}

// Pass 1: max of scale*x over [0, len) (-inf if nothing takes part).
template <tops_dtype_t DT, bool kMasked>
float row_max(const storage_t<DT>* x, const uint8_t* mask, int64_t len, VecF s) {
    VecF acc[kUnroll];
    for (auto& v : acc) v = VecF(-kInf);
    int64_t j = 0;
    for (; j + kStep <= len; j += kStep) {
        for (int u = 0; u < kUnroll; ++u) acc[u] = xsimd::max(acc[u], scaled<DT, kMasked>(x, mask, j + u * kLanes, s));
    }
    for (; j + kLanes <= len; j += kLanes) acc[0] = xsimd::max(acc[0], scaled<DT, kMasked>(x, mask, j, s));
    if (j < len) acc[1] = xsimd::max(acc[1], scaled_tail<DT, kMasked>(x, mask, j, int(len - j), s));
    for (int u = 1; u < kUnroll; ++u) acc[0] = xsimd::max(acc[0], acc[u]);
    return hmax(acc[0]);
}

// Pass 2: sum of e = exp(scale*x - m) over [0, len); stores e to `out`
// (f32, unit stride) unless it is null.
template <tops_dtype_t DT, bool kMasked>
float row_exp_sum(const storage_t<DT>* x, const uint8_t* mask, int64_t len, VecF s, VecF neg_m, float* out) {
    VecF acc[kUnroll];
    for (auto& v : acc) v = VecF(0.0f);
    auto exp_at = [&](int64_t j) {
        VecF t = xsimd::fma(load<DT>(x + j), s, neg_m);
        if constexpr (kMasked) t = xsimd::select(active<true>(mask, j), t, VecF(-kInf));
        return exp_nonpositive(t);
    };
    int64_t j = 0;
    for (; j + kStep <= len; j += kStep) {
        for (int u = 0; u < kUnroll; ++u) {
            const VecF e = exp_at(j + u * kLanes);
            if (out) e.store_unaligned(out + j + u * kLanes);
            acc[u] += e;
        }
    }
    for (; j + kLanes <= len; j += kLanes) {
        const VecF e = exp_at(j);
        if (out) e.store_unaligned(out + j);
        acc[0] += e;
    }
    if (j < len) {
        const int count = int(len - j);
        const VecF t = xsimd::select(active_tail<kMasked>(mask, j, count),
                                     xsimd::fma(load_partial<DT>(x + j, count, 0.0f), s, neg_m), VecF(-kInf));
        const VecF e = exp_nonpositive(t);
        if (out) store_partial<TOPS_DTYPE_F32>(out + j, e, count);
        acc[1] += e;
    }
    for (int u = 1; u < kUnroll; ++u) acc[0] += acc[u];
    return hsum(acc[0]);
}

// y[j] = f(j) for vectors over [0, len): f(j, count) returns the batch of
// lanes j .. j+count (count < kLanes only for the tail).
template <tops_dtype_t DT, class F>
inline void row_store(storage_t<DT>* y, int64_t len, F&& f) {
    int64_t j = 0;
    for (; j + kLanes <= len; j += kLanes) store<DT>(y + j, f(j, kLanes));
    if (j < len) store_partial<DT>(y + j, f(j, int(len - j)), int(len - j));
}

template <tops_dtype_t DT>
inline void row_fill(storage_t<DT>* y, int64_t begin, int64_t end, float value) {
    const storage_t<DT> v = from_float<DT>(value);
    for (int64_t j = begin; j < end; ++j) y[j] = v;
}

// One row: entries [0, len) take part (subject to the mask), [len, n) are
// written as masked.
template <tops_dtype_t DT, bool kMasked>
void softmax_row(const storage_t<DT>* x, storage_t<DT>* y, const uint8_t* mask, int64_t len, int64_t n,
                 float scale, bool log, float* scratch) {
    row_fill<DT>(y, len, n, masked_value(log));
    if (len == 0) return;
    const VecF s(scale);
    const float m = safe_max(row_max<DT, kMasked>(x, mask, len, s));
    const VecF neg_m(-m);
    if (log) {
        const float sum = row_exp_sum<DT, kMasked>(x, mask, len, s, neg_m, nullptr);
        const VecF neg_off(-log_offset(m, sum));
        row_store<DT>(y, len, [&](int64_t j, int count) {
            const VecF v = count == kLanes ? load<DT>(x + j) : load_partial<DT>(x + j, count, 0.0f);
            const VecF t = xsimd::fma(v, s, neg_off);
            if constexpr (kMasked) {
                const BoolF on = count == kLanes ? active<true>(mask, j) : active_tail<true>(mask, j, count);
                return xsimd::select(on, t, VecF(-kInf));
            } else {
                return t;
            }
        });
        return;
    }
    float* e = nullptr;
    if constexpr (DT == TOPS_DTYPE_F32) e = y;
    else if (len <= kScratchFloats) e = scratch;
    const VecF inv(inv_sum(row_exp_sum<DT, kMasked>(x, mask, len, s, neg_m, e)));
    if (e) {
        row_store<DT>(y, len, [&](int64_t j, int count) {
            const VecF v = count == kLanes ? VecF::load_unaligned(e + j)
                                           : load_partial<TOPS_DTYPE_F32>(e + j, count, 0.0f);
            return v * inv;
        });
        return;
    }
    row_store<DT>(y, len, [&](int64_t j, int count) {
        VecF t = xsimd::fma(count == kLanes ? load<DT>(x + j) : load_partial<DT>(x + j, count, 0.0f), s, neg_m);
        if constexpr (kMasked) {
            t = xsimd::select(count == kLanes ? active<true>(mask, j) : active_tail<true>(mask, j, count), t,
                              VecF(-kInf));
        }
        return exp_nonpositive(t) * inv;
    });
}

}  // namespace
}  // namespace TOPS_ISA_NS

template <tops_dtype_t DT>
template <class A>
void SoftmaxLastDimKernel<DT>::operator()(A, SoftmaxLastDimArgs a) const {
    using namespace TOPS_ISA_NS;
    using T = storage_t<DT>;
    static_assert(std::is_same_v<A, Arch>, "instantiated for this file's ISA only");
    const T* x = static_cast<const T*>(a.io.x);
    T* y = static_cast<T*>(a.io.y);
    const bool row_mask = a.io.mask && a.mask_axis_stride == 0;
    const bool lane_mask = a.io.mask && a.mask_axis_stride != 0;
    alignas(64) float scratch[DT == TOPS_DTYPE_F32 ? 1 : kScratchFloats];
    RowCursor cur(a.rows, a.row_begin);
    for (int64_t r = a.row_begin; r < a.row_end; ++r, cur.next()) {
        int64_t len = valid_length(a.io.lengths ? a.io.lengths + cur.lengths : nullptr, a.n);
        if (row_mask && a.io.mask[cur.mask] == 0) len = 0;
        if (lane_mask) {
            softmax_row<DT, true>(x + cur.x, y + cur.y, a.io.mask + cur.mask, len, a.n, a.io.scale, a.io.log,
                                  scratch);
        } else {
            softmax_row<DT, false>(x + cur.x, y + cur.y, nullptr, len, a.n, a.io.scale, a.io.log, scratch);
        }
    }
}

TOPS_CPU_INSTANTIATE(SoftmaxLastDimKernel<TOPS_DTYPE_F32>, SoftmaxLastDimArgs)
TOPS_CPU_INSTANTIATE(SoftmaxLastDimKernel<TOPS_DTYPE_F16>, SoftmaxLastDimArgs)
TOPS_CPU_INSTANTIATE(SoftmaxLastDimKernel<TOPS_DTYPE_BF16>, SoftmaxLastDimArgs)

}  // namespace tops::cpu
