// LayerNorm / RMSNorm over rows (norm_<dtype>_rows_<isa> and
// norm_<dtype>_strided_<isa>).
//
// Strategy: one row at a time, three passes over the row, each recomputing
// s = x + bias + residual in f32:
//   1. sum(s) -> mean (LayerNorm) or sum(s^2) -> rstd (RMSNorm),
//   2. LayerNorm only: M2 = sum((s - mean)^2) -> rstd = 1 / sqrt(M2/n + eps),
//   3. y = (s - mean) * rstd * gamma + beta (and prenorm = s).
// The exact two-pass variance is more stable than Welford's update and costs
// nothing extra in memory traffic: a row (up to a few hundred KiB) stays in
// L1/L2 between the passes, so DRAM sees one read of each input and one write
// of each output; long rows prefetch the next row during pass 3, so that read
// overlaps this row's writes. Outputs of 8 MiB or more (kStreamMinBytes) are
// written with non-temporal stores, which skip the read-for-ownership of y
// (and of prenorm, where it has y's alignment): DRAM then sees two streams,
// not three. Pass 3 reads element j of every input before
// writing element j of any output and passes 1-2 write nothing, so y /
// prenorm may alias x / residual exactly. Reductions use kUnroll independent
// vector accumulators; tails use masked loads (rowwise_simd.hpp).
#include <cmath>
#include <type_traits>

#include "cpu/isa_arch.hpp"
#include "cpu/kernels/rowwise_simd.hpp"
#include "cpu/norm_kernels.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {
namespace {

constexpr int kUnroll = 4;  // independent accumulators per row reduction
constexpr int64_t kStep = int64_t(kUnroll) * kLanes;
// Rows of at least this many bytes prefetch the next row's inputs (into L2:
// locality 2) during pass 3. Passes 2 and 3 of a long row read it from cache,
// so without this the DRAM stream stops until the next row's pass 1. 2-core
// EPYC VM, f32 4096x4096: 8.0-8.5 ms against 8.9-9.4 at 1 thread, 4.5-4.8
// against 5.0-5.2 at 2 (three alternating runs); 4096x768 (3 KiB rows)
// showed no gain, so short rows do not prefetch.
constexpr int64_t kPrefetchRowBytes = 8 * 1024;
constexpr int kPrefetchLocality = 2;

// One row's inputs: s = x [+ bias] [+ residual], unit column stride.
template <tops_dtype_t DT, bool kBias, bool kRes>
struct RowInput {
    const storage_t<DT>* x;
    const float* bias;
    const storage_t<DT>* res;

    VecF full(int64_t j) const {
        VecF v = load<DT>(x + j);
        if constexpr (kBias) v += VecF::load_unaligned(bias + j);
        if constexpr (kRes) v += load<DT>(res + j);
        return v;
    }
    // Lanes >= count are 0.
    VecF part(int64_t j, int count) const {
        VecF v = load_n<DT>(x + j, count);
        if constexpr (kBias) v += load_n<TOPS_DTYPE_F32>(bias + j, count);
        if constexpr (kRes) v += load_n<DT>(res + j, count);
        return v;
    }
};

// sum over the row of s (kSquare false) or of (s - shift)^2 (kSquare true).
template <bool kSquare, class In>
float row_moment(const In& in, int64_t n, float shift) {
    const VecF sh(shift);
    VecF acc[kUnroll];
    for (auto& v : acc) v = VecF(0.0f);
    auto add = [&](VecF& a, VecF s) {
        if constexpr (kSquare) {
            const VecF d = s - sh;
            a = xsimd::fma(d, d, a);
        } else {
            a += s;
        }
    };
    int64_t j = 0;
    for (; j + kStep <= n; j += kStep) {
        for (int u = 0; u < kUnroll; ++u) add(acc[u], in.full(j + u * kLanes));
    }
    for (; j + kLanes <= n; j += kLanes) add(acc[0], in.full(j));
    if (j < n) {
        const int count = int(n - j);
        VecF s = in.part(j, count);
        if constexpr (kSquare) s = xsimd::select(first_lanes(count), s, sh);  // (sh - sh)^2 = 0
        add(acc[1], s);
    }
    acc[0] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    return xsimd::hadd(acc[0]);
}

struct RowStats {
    float mean;  // 0 for RMSNorm
    float rstd;
};

template <class In>
RowStats row_stats(const In& in, int64_t n, bool rms, float eps) {
    if (n == 0) return {0.0f, 1.0f / std::sqrt(eps)};
    const float inv_n = 1.0f / float(n);
    if (rms) {
        const float ms = row_moment<true>(in, n, 0.0f) * inv_n;
        return {0.0f, 1.0f / std::sqrt(ms + eps)};
    }
    const float mean = row_moment<false>(in, n, 0.0f) * inv_n;
    const float var = row_moment<true>(in, n, mean) * inv_n;
    return {mean, 1.0f / std::sqrt(var + eps)};
}

template <tops_dtype_t DT, bool kBias, bool kRes>
void norm_rows(const NormArgs& a) {
    using T = storage_t<DT>;
    const T* x = static_cast<const T*>(a.x);
    const T* res = static_cast<const T*>(a.residual);
    T* y = static_cast<T*>(a.y);
    T* pre = static_cast<T*>(a.prenorm);
    // Locals: the vector stores may alias anything, so members of a would be reloaded per vector.
    const float* gamma = a.gamma;
    const float* beta = a.beta;
    const int64_t n = a.cols;
    for (int64_t r = a.row_begin; r < a.row_end; ++r) {
        const RowInput<DT, kBias, kRes> in{x + r * a.x_rs, a.bias, kRes ? res + r * a.res_rs : nullptr};
        const RowStats st = row_stats(in, n, a.rms, a.eps);
        if (a.mean) a.mean[r * a.mean_stride] = st.mean;
        if (a.rstd) a.rstd[r * a.rstd_stride] = st.rstd;
        T* yr = y + r * a.y_rs;
        T* pr = pre ? pre + r * a.pre_rs : nullptr;
        const VecF mean(st.mean), rstd(st.rstd);
        // row_store streams y's full vectors at aligned addresses; prenorm
        // streams with them where it has y's alignment.
        const bool pre_stream = a.stream && pr &&
                                (reinterpret_cast<uintptr_t>(pr) - reinterpret_cast<uintptr_t>(yr)) %
                                        uintptr_t(kVecBytes<DT>) == 0;
        auto out = [&](int64_t j, int count) {
            const VecF s = count == kLanes ? in.full(j) : in.part(j, count);
            if (pre_stream && count == kLanes) store_stream<DT>(pr + j, s);
            else if (pr) store_any<DT>(pr + j, s, count);
            // Each form written out with its one fma, so no compiler can contract
            // differently in the two row_store instantiations below (rows would then
            // differ by an ulp with the thread split).
            if (gamma && beta) {
                return xsimd::fma((s - mean) * rstd, load_any<TOPS_DTYPE_F32>(gamma + j, count),
                                  load_any<TOPS_DTYPE_F32>(beta + j, count));
            }
            if (beta) return xsimd::fma(s - mean, rstd, load_any<TOPS_DTYPE_F32>(beta + j, count));
            if (gamma) return (s - mean) * rstd * load_any<TOPS_DTYPE_F32>(gamma + j, count);
            return (s - mean) * rstd;
        };
        if (n * int64_t(sizeof(T)) >= kPrefetchRowBytes && r + 1 < a.row_end) {
            const T* next_x = x + (r + 1) * a.x_rs;
            const T* next_res = kRes ? res + (r + 1) * a.res_rs : nullptr;
            row_store<DT>(yr, n, a.stream, [&](int64_t j, int count) {
                __builtin_prefetch(next_x + j, 0, kPrefetchLocality);
                if constexpr (kRes) __builtin_prefetch(next_res + j, 0, kPrefetchLocality);
                return out(j, count);
            });
        } else {
            row_store<DT>(yr, n, a.stream, out);
        }
    }
    if (a.stream) stream_fence();  // the non-temporal stores are visible before the threads join
}

// sum of f(j) over [0, n) in blocks of kScalarBlock terms: the rounding error
// grows with kScalarBlock + n / kScalarBlock terms instead of n.
constexpr int64_t kScalarBlock = 64;

template <class F>
float blocked_sum(int64_t n, F&& f) {
    float total = 0.0f;
    for (int64_t b = 0; b < n; b += kScalarBlock) {
        const int64_t e = b + kScalarBlock < n ? b + kScalarBlock : n;
        float part = 0.0f;
        for (int64_t j = b; j < e; ++j) part += f(j);
        total += part;
    }
    return total;
}

// Scalar rows with any column strides, same passes and arithmetic order per
// element (lane assignment differs, so results are not bitwise those of the
// vector kernel).
template <tops_dtype_t DT>
void norm_strided(const NormArgs& a) {
    using T = storage_t<DT>;
    const T* x = static_cast<const T*>(a.x);
    const T* res = static_cast<const T*>(a.residual);
    T* y = static_cast<T*>(a.y);
    T* pre = static_cast<T*>(a.prenorm);
    const int64_t n = a.cols;
    for (int64_t r = a.row_begin; r < a.row_end; ++r) {
        const T* xr = x + r * a.x_rs;
        const T* rr = res ? res + r * a.res_rs : nullptr;
        auto s_at = [&](int64_t j) {
            float v = to_float<DT>(xr[j * a.x_cs]);
            if (a.bias) v += a.bias[j];
            if (rr) v += to_float<DT>(rr[j * a.res_cs]);
            return v;
        };
        RowStats st{0.0f, 1.0f / std::sqrt(a.eps)};
        if (n > 0) {
            const float inv_n = 1.0f / float(n);
            const float m = a.rms ? 0.0f : blocked_sum(n, [&](int64_t j) { return s_at(j); }) * inv_n;
            const float m2 = blocked_sum(n, [&](int64_t j) {
                const float d = s_at(j) - m;
                return d * d;
            });
            st = {m, 1.0f / std::sqrt(m2 * inv_n + a.eps)};
        }
        if (a.mean) a.mean[r * a.mean_stride] = st.mean;
        if (a.rstd) a.rstd[r * a.rstd_stride] = st.rstd;
        T* yr = y + r * a.y_rs;
        T* pr = pre ? pre + r * a.pre_rs : nullptr;
        for (int64_t j = 0; j < n; ++j) {
            const float s = s_at(j);
            if (pr) pr[j * a.pre_cs] = from_float<DT>(s);
            float t = (s - st.mean) * st.rstd;
            if (a.gamma) t *= a.gamma[j];
            if (a.beta) t += a.beta[j];
            yr[j * a.y_cs] = from_float<DT>(t);
        }
    }
}

}  // namespace
}  // namespace TOPS_ISA_NS

template <tops_dtype_t DT>
template <class A>
void NormRowsKernel<DT>::operator()(A, NormArgs a) const {
    using namespace TOPS_ISA_NS;
    static_assert(std::is_same_v<A, Arch>, "instantiated for this file's ISA only");
    const bool bias = a.bias != nullptr, res = a.residual != nullptr;
    if (bias && res) norm_rows<DT, true, true>(a);
    else if (bias) norm_rows<DT, true, false>(a);
    else if (res) norm_rows<DT, false, true>(a);
    else norm_rows<DT, false, false>(a);
}

template <tops_dtype_t DT>
template <class A>
void NormStridedKernel<DT>::operator()(A, NormArgs a) const {
    static_assert(std::is_same_v<A, Arch>, "instantiated for this file's ISA only");
    TOPS_ISA_NS::norm_strided<DT>(a);
}

TOPS_CPU_INSTANTIATE(NormRowsKernel<TOPS_DTYPE_F32>, NormArgs)
TOPS_CPU_INSTANTIATE(NormRowsKernel<TOPS_DTYPE_F16>, NormArgs)
TOPS_CPU_INSTANTIATE(NormRowsKernel<TOPS_DTYPE_BF16>, NormArgs)
TOPS_CPU_INSTANTIATE(NormStridedKernel<TOPS_DTYPE_F32>, NormArgs)
TOPS_CPU_INSTANTIATE(NormStridedKernel<TOPS_DTYPE_F16>, NormArgs)
TOPS_CPU_INSTANTIATE(NormStridedKernel<TOPS_DTYPE_BF16>, NormArgs)

}  // namespace tops::cpu
