// Softmax along a contiguous axis: rows of n unit-stride elements
// (softmax_<dtype>_lastdim_<isa>).
//
// Strategy: three passes per row, exp computed once per element where the
// row fits the scratch buffer.
//   1. max of scale*x over the entries taking part (reads x from memory),
//   2. e = exp(scale*x - max), summed and kept in an f32 stack buffer of
//      kScratchFloats (L1/L2 resident); meanwhile the next row is prefetched,
//      so memory keeps streaming while this pass computes,
//   3. y = e / sum, one rounding to the output dtype.
// Log-softmax stores nothing in pass 2 and writes y = scale*x - max -
// log(sum) in pass 3. Rows longer than the buffer keep e in y (f32 with
// cached stores) or recompute exp in pass 3. Outputs too large to stay
// cached (SoftmaxLastDimArgs::stream) use non-temporal stores, so memory
// traffic is one read of x and one write of y, with no read-for-ownership of
// y. Reductions use kUnroll independent accumulators to hide latency. Masked
// entries enter the max and the exp as -inf, so their e is exactly 0.
#include <algorithm>
#include <cstdint>

#include "cpu/kernels/softmax_common.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {
namespace {

constexpr int kUnroll = 4;                // independent accumulators per reduction
constexpr int64_t kStep = int64_t(kUnroll) * kLanes;
constexpr int64_t kScratchFloats = 8192;  // e of rows up to 8192 entries (32 KiB)
constexpr int64_t kNearRowBytes = 16 * 1024;  // longer rows are prefetched into L2, not L1

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

// Pass 2: sum of e = exp(scale*x - m) = 2^((x*scale - m) log2(e)) over
// [0, len); the difference is formed before the log2(e) factor so that large
// inputs (x ~ 1000) lose no bits where the ISA has no FMA; stores e to `out`
// (f32, unit stride) unless it is null. Meanwhile prefetches the same range
// of the next row (`next`, may be null) so that its pass 1 finds it cached
// and memory keeps streaming while this pass computes.
template <tops_dtype_t DT, bool kMasked>
float row_exp_sum(const storage_t<DT>* x, const uint8_t* mask, int64_t len, VecF sv, VecF neg_m, float* out,
                  const storage_t<DT>* next, bool next_far) {
    constexpr int64_t kStepBytes = kStep * int64_t(sizeof(storage_t<DT>));
    VecF acc[kUnroll];
    for (auto& v : acc) v = VecF(0.0f);
    auto exp_at = [&](int64_t j) {
        VecF u = xsimd::fma(load<DT>(x + j), sv, neg_m) * VecF(kLog2e);
        if constexpr (kMasked) u = xsimd::select(active<true>(mask, j), u, VecF(-kInf));
        return exp2_nonpositive(u);
    };
    int64_t j = 0;
    for (; j + kStep <= len; j += kStep) {
        if (next) {
            for (int64_t b = 0; b < kStepBytes; b += kCacheLine) {
                prefetch_read(reinterpret_cast<const char*>(next + j) + b, next_far);
            }
        }
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
        const VecF u = xsimd::select(active_tail<kMasked>(mask, j, count),
                                     xsimd::fma(load_partial<DT>(x + j, count, 0.0f), sv, neg_m) * VecF(kLog2e), VecF(-kInf));
        const VecF e = exp2_nonpositive(u);
        if (out) store_partial<TOPS_DTYPE_F32>(out + j, e, count);
        acc[1] += e;
    }
    for (int u = 1; u < kUnroll; ++u) acc[0] += acc[u];
    return hsum(acc[0]);
}

template <tops_dtype_t DT>
inline void row_fill(storage_t<DT>* y, int64_t begin, int64_t end, float value) {
    const storage_t<DT> v = from_float<DT>(value);
    for (int64_t j = begin; j < end; ++j) y[j] = v;
}

// One row of n elements: [0, len) take part (subject to the mask), [len, n)
// are written as masked.
template <tops_dtype_t DT>
struct RowJob {
    const storage_t<DT>* x;
    storage_t<DT>* y;
    const uint8_t* mask;
    int64_t len, n;
    const storage_t<DT>* next;  // the next row's x, prefetched (null: none)
};

struct RowConfig {
    float scale;
    bool log;
    bool stream;
    float* scratch;  // kScratchFloats floats
};

template <tops_dtype_t DT, bool kMasked>
void softmax_row(const RowJob<DT>& r, const RowConfig& c) {
    const auto* x = r.x;
    const uint8_t* mask = r.mask;
    const int64_t len = r.len;
    row_fill<DT>(r.y, len, r.n, masked_value(c.log));
    if (len == 0) return;
    const VecF s(c.scale);
    const bool far = len * int64_t(sizeof(*x)) > kNearRowBytes;
    const float m = safe_max(row_max<DT, kMasked>(x, mask, len, c.scale));
    const VecF neg_m(-m);
    // x * sv + neg at lanes taking part (-inf elsewhere), for vectors of pass 3.
    auto shifted = [&](int64_t j, int count, VecF sv, VecF neg) {
        const VecF v = count == kLanes ? load<DT>(x + j) : load_partial<DT>(x + j, count, 0.0f);
        const VecF t = xsimd::fma(v, sv, neg);
        if constexpr (kMasked) {
            const BoolF on = count == kLanes ? active<true>(mask, j) : active_tail<true>(mask, j, count);
            return xsimd::select(on, t, VecF(-kInf));
        } else {
            return t;
        }
    };
    if (c.log) {
        const float sum = row_exp_sum<DT, kMasked>(x, mask, len, s, neg_m, nullptr, r.next, far);
        const VecF neg_off(-log_offset(m, sum));
        row_store<DT>(r.y, len, c.stream, [&](int64_t j, int count) { return shifted(j, count, s, neg_off); });
        return;
    }
    // Where exp is kept between passes 2 and 3: the f32 scratch when the row
    // fits, else y itself (f32 without streaming), else nowhere (recompute).
    float* e = nullptr;
    if (len <= kScratchFloats) e = c.scratch;
    else if constexpr (DT == TOPS_DTYPE_F32) e = c.stream ? nullptr : r.y;
    const VecF inv(inv_sum(row_exp_sum<DT, kMasked>(x, mask, len, s, neg_m, e, r.next, far)));
    if (e) {
        row_store<DT>(r.y, len, c.stream, [&](int64_t j, int count) {
            const VecF v = count == kLanes ? VecF::load_unaligned(e + j)
                                           : load_partial<TOPS_DTYPE_F32>(e + j, count, 0.0f);
            return v * inv;
        });
    } else {
        row_store<DT>(r.y, len, c.stream,
                      [&](int64_t j, int count) { return exp2_nonpositive(shifted(j, count, s, neg_m) * VecF(kLog2e)) * inv; });
    }
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
    alignas(64) float scratch[kScratchFloats];
    const RowConfig cfg{a.io.scale, a.io.log, a.stream, scratch};
    RowCursor cur(a.rows, a.row_begin);
    for (int64_t r = a.row_begin; r < a.row_end; ++r) {
        RowJob<DT> job{x + cur.x, y + cur.y, lane_mask ? a.io.mask + cur.mask : nullptr, a.n, a.n, nullptr};
        job.len = valid_length(a.io.lengths ? a.io.lengths + cur.lengths : nullptr, a.n);
        if (row_mask && a.io.mask[cur.mask] == 0) job.len = 0;
        cur.next();
        if (r + 1 < a.row_end) job.next = x + cur.x;
        if (lane_mask) softmax_row<DT, true>(job, cfg);
        else softmax_row<DT, false>(job, cfg);
    }
    if (a.stream) stream_fence();
}

TOPS_CPU_INSTANTIATE(SoftmaxLastDimKernel<TOPS_DTYPE_F32>, SoftmaxLastDimArgs)
TOPS_CPU_INSTANTIATE(SoftmaxLastDimKernel<TOPS_DTYPE_F16>, SoftmaxLastDimArgs)
TOPS_CPU_INSTANTIATE(SoftmaxLastDimKernel<TOPS_DTYPE_BF16>, SoftmaxLastDimArgs)

}  // namespace tops::cpu
