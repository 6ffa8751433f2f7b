// Reductions over a strided tensor (reduce_<dtype>_{row,col,generic}_<isa>).
//
// Strategy, chosen by src/cpu/reduce.cpp from the merged layout:
//   row:     the innermost reduced dim has unit stride: each output streams
//            its contiguous segments through kUnroll independent vector
//            accumulators (latency hiding), tails by masked loads. Global
//            average pooling of NCHW is this case (segments of H*W). On AMD
//            CPUs an x too large to be cached (ReduceRowArgs::stream; slower
//            on an Intel Xeon, see reduce_kernels.hpp) takes one cache line
//            per step, one accumulator per vector of it, and each page's
//            first line prefetches the line kPrefetchAheadBytes ahead: the
//            hardware prefetchers stop at page ends, and a loop that runs far
//            ahead of memory fills the miss queue with demand loads (Zen 4
//            VM, 4096x4096 f32, AVX-512: 4 accumulators 24.9-26.5 GB/s, one
//            26.5-27.8, one with the page prefetch 29.0-30.0, 4 with it
//            24.1-25.2). Outputs that are one whole segment (row sums,
//            pooling) skip the chunk and segment bookkeeping
//            (reduce_row_segments).
//   col:     a kept dim has unit stride: vectorize across a tile of up to
//            kReduceColTile outputs held in an f32 stack buffer (L1) and
//            stream kColRows reduced rows at a time over it, so x is read as
//            a few long contiguous streams rather than one column at a time.
//   generic: scalar odometers, any strides.
// Determinism: each output's accumulation order depends only on the shape
// (segments, lanes and chunks are fixed by the plan), never on the thread
// split, so results are bitwise reproducible across runs and thread counts.
// Max / min propagate NaN: x86 max(v, acc) returns acc when either is NaN, so
// step() keeps an accumulated NaN and selects a NaN input explicitly (with
// xsimd::isnan: xsimd's `!=` is an ordered compare on AVX-512). Whole-segment
// outputs skip the select and check for NaN afterwards (Stepper).
#include <cmath>
#include <limits>
#include <type_traits>

#include "cpu/isa_arch.hpp"
#include "cpu/kernels/rowwise_simd.hpp"
#include "cpu/reduce_kernels.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {
namespace {

constexpr int kUnroll = 4;   // independent accumulators per output (row kernel)
static_assert(kUnroll == 4, "the accumulator arrays are initialized element by element");
constexpr int kColRows = 4;  // reduced rows streamed together over a column tile
constexpr int64_t kStep = int64_t(kUnroll) * kLanes;
constexpr uintptr_t kPageBytes = 4096;
// Two pages ahead. In the probe above, one accumulator with the line two or
// three pages ahead: 28.3-30.0 GB/s; four accumulators with one page ahead
// 18.9-19.2, two or three pages 22.8-23.8.
constexpr uintptr_t kPrefetchAheadBytes = 2 * kPageBytes;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

template <ReduceAcc OP>
struct Acc {
    static float identity() {
        if constexpr (OP == ReduceAcc::max) return -std::numeric_limits<float>::infinity();
        else if constexpr (OP == ReduceAcc::min) return std::numeric_limits<float>::infinity();
        else if constexpr (OP == ReduceAcc::prod) return 1.0f;
        else return 0.0f;
    }
    // Lanes loaded as 0 past a tail leave the accumulator unchanged.
    static constexpr bool kZeroNeutral = OP == ReduceAcc::sum || OP == ReduceAcc::sumsq;

    static VecF step(VecF acc, VecF v) {
        if constexpr (OP == ReduceAcc::sum) return acc + v;
        else if constexpr (OP == ReduceAcc::sumsq) return xsimd::fma(v, v, acc);
        else if constexpr (OP == ReduceAcc::prod) return acc * v;
        else if constexpr (OP == ReduceAcc::max) return xsimd::select(xsimd::isnan(v), v, xsimd::max(v, acc));
        else return xsimd::select(xsimd::isnan(v), v, xsimd::min(v, acc));
    }
    static float step1(float acc, float v) {
        if constexpr (OP == ReduceAcc::sum) return acc + v;
        else if constexpr (OP == ReduceAcc::sumsq) return std::fma(v, v, acc);
        else return merge1(acc, v);
    }
    // Combines two accumulators (vector / scalar).
    static VecF merge(VecF a, VecF b) {
        if constexpr (OP == ReduceAcc::sum || OP == ReduceAcc::sumsq) return a + b;
        else return step(a, b);
    }
    static float merge1(float a, float b) {
        if constexpr (OP == ReduceAcc::sum || OP == ReduceAcc::sumsq) return a + b;
        else if constexpr (OP == ReduceAcc::prod) return a * b;
        else if (a != a || b != b) return kNaN;
        else if constexpr (OP == ReduceAcc::max) return b > a ? b : a;
        else return b < a ? b : a;
    }
    static float horizontal(VecF v) {
        if constexpr (OP == ReduceAcc::sum || OP == ReduceAcc::sumsq) {
            return xsimd::hadd(v);
        } else if constexpr (OP == ReduceAcc::prod) {
            return fold_lanes(v, [](VecF a, VecF b) { return a * b; });
        } else {
            if (xsimd::any(xsimd::isnan(v))) return kNaN;
            if constexpr (OP == ReduceAcc::max) return fold_lanes(v, [](VecF a, VecF b) { return xsimd::max(a, b); });
            else return fold_lanes(v, [](VecF a, VecF b) { return xsimd::min(a, b); });
        }
    }
};

// Element offsets (x and y) of consecutive row-major indices of a ReduceSpace.
class Odometer {
public:
    Odometer(const ReduceSpace& s, int64_t index) : s_(s) {
        for (int d = s.rank - 1; d >= 0; --d) {
            idx_[d] = index % s.dims[d];
            index /= s.dims[d];
            x += idx_[d] * s.x[d];
            y += idx_[d] * s.y[d];
        }
    }
    // Forced inline: left to GCC 12 it is called (127 call sites), and the 8x64x56x56 pool
    // fell from 1.03-1.06x to 0.92-0.95x oneDNN on the Zen 4 VM (docs/performance.md).
    inline __attribute__((always_inline)) void next() {
        for (int d = s_.rank - 1; d >= 0; --d) {
            x += s_.x[d];
            y += s_.y[d];
            if (++idx_[d] < s_.dims[d]) return;
            x -= s_.dims[d] * s_.x[d];
            y -= s_.dims[d] * s_.y[d];
            idx_[d] = 0;
        }
    }
    int64_t x = 0, y = 0;

private:
    const ReduceSpace& s_;
    int64_t idx_[kMaxRank] = {};
};

inline void emit(const ReduceOut& out, int64_t output, int64_t chunk, int64_t y_off, float acc) {
    if (out.nchunks == 1) reduce_store_final(out, y_off, acc);
    else out.partial[output * out.nchunks + chunk] = acc;
}

// How a vector enters an accumulator: exactly (Acc::step), or (CHECKED, max /
// min only) without the NaN select, which is two of the step's three
// operations; a NaN anywhere then shows in a running sum per accumulator (NaN
// plus anything is NaN; so do +inf and -inf together) and the caller redoes
// the segment exactly. Without NaNs both give the same bits. 4096x4096 f32 row
// max from memory, one thread (bench/reduce_rows_probe.c): 28.6-28.8 GB/s with
// the select, 29.5-29.6 checked, the row sum's 29.7.
template <ReduceAcc OP, bool CHECKED>
struct Stepper {
    static_assert(!CHECKED || OP == ReduceAcc::max || OP == ReduceAcc::min, "only max / min skip a select");
    VecF chk[kUnroll] = {VecF(0.0f), VecF(0.0f), VecF(0.0f), VecF(0.0f)};
    void check(int u, VecF v) {
        if constexpr (CHECKED) chk[u] = chk[u] + v;
    }
    static VecF step(VecF acc, VecF v) {
        if constexpr (!CHECKED) return Acc<OP>::step(acc, v);
        else if constexpr (OP == ReduceAcc::max) return xsimd::max(v, acc);
        else return xsimd::min(v, acc);
    }
    bool saw_nan() const { return xsimd::any(xsimd::isnan((chk[0] + chk[1]) + (chk[2] + chk[3]))); }
    // The accumulators into one float; CHECKED: only after a check that passed.
    static float finish(VecF* acc) {
        if constexpr (!CHECKED) {
            using A = Acc<OP>;
            return A::horizontal(A::merge(A::merge(acc[0], acc[1]), A::merge(acc[2], acc[3])));
        } else {
            return fold_lanes(step(step(acc[0], acc[1]), step(acc[2], acc[3])), step);
        }
    }
};

// Accumulates len contiguous elements into acc[kUnroll].
template <tops_dtype_t DT, ReduceAcc OP, class St>
inline __attribute__((always_inline)) void accumulate_segment(const storage_t<DT>* p, int64_t len, VecF* acc,
                                                              St& st) {
    using A = Acc<OP>;
    int64_t j = 0;
    for (; j + kStep <= len; j += kStep) {
#pragma GCC unroll 4
        for (int u = 0; u < kUnroll; ++u) {
            const VecF v = load<DT>(p + j + u * kLanes);
            st.check(u, v);
            acc[u] = St::step(acc[u], v);
        }
    }
    for (; j + kLanes <= len; j += kLanes) {
        const VecF v = load<DT>(p + j);
        st.check(0, v);
        acc[0] = St::step(acc[0], v);
    }
    if (j < len) {
        const int count = int(len - j);
        VecF v = load_n<DT>(p + j, count);
        st.check(1, v);
        if constexpr (!A::kZeroNeutral) v = xsimd::select(first_lanes(count), v, VecF(A::identity()));
        acc[1] = St::step(acc[1], v);
    }
}

// The same for an x read from memory: one cache line per step, its vectors
// into accumulators of their own (one for f32 on AVX-512, so the adds pace
// the loads), and a prefetch two pages ahead at each page's first line. (Two
// lines per step into two accumulators: the sum as fast, the max 1.3-1.6x
// slower, 4096x4096 f32 from memory.)
template <tops_dtype_t DT, ReduceAcc OP, class St>
inline void accumulate_segment_streamed(const storage_t<DT>* p, int64_t len, VecF* acc, St& st) {
    constexpr int kPerLineAll = kCacheLine > kVecBytes<DT> ? int(kCacheLine / kVecBytes<DT>) : 1;
    constexpr int kPerLine = kPerLineAll < kUnroll ? kPerLineAll : kUnroll;  // SSE4 f16: half a line
    constexpr int64_t kLineStep = int64_t(kPerLine) * kLanes;
    int64_t j = 0;
    for (; j + kLineStep <= len; j += kLineStep) {
        const storage_t<DT>* q = p + j;
        if (reinterpret_cast<uintptr_t>(q) % kPageBytes < uintptr_t(kPerLine * kVecBytes<DT>)) {
            prefetch_read(reinterpret_cast<const char*>(q) + kPrefetchAheadBytes, false);
        }
#pragma GCC unroll 4
        for (int u = 0; u < kPerLine; ++u) {
            const VecF v = load<DT>(q + u * kLanes);
            st.check(u, v);
            acc[u] = St::step(acc[u], v);
        }
    }
    accumulate_segment<DT, OP>(p + j, len - j, acc, st);
}

// The reduction of one whole segment, or (CHECKED) false where a NaN check
// failed. The accumulators are initialized in their declarations and the
// loops over them unrolled by pragma so that they stay in registers: left to
// GCC 12, the tail code kept them on the stack, and short rows ran slower
// (32x256x14x14 global pool f32, one thread, against oneDNN: cold mean 0.87x,
// warm max 0.69-0.85x; now 0.96-1.01x and 1.07x).
template <tops_dtype_t DT, ReduceAcc OP, bool STREAM, bool CHECKED>
inline __attribute__((always_inline)) bool reduce_whole_segment(const storage_t<DT>* p, int64_t len, float* r) {
    VecF acc[kUnroll] = {VecF(Acc<OP>::identity()), VecF(Acc<OP>::identity()), VecF(Acc<OP>::identity()),
                         VecF(Acc<OP>::identity())};
    Stepper<OP, CHECKED> st;
    if constexpr (STREAM) accumulate_segment_streamed<DT, OP>(p, len, acc, st);
    else accumulate_segment<DT, OP>(p, len, acc, st);
    if (CHECKED && st.saw_nan()) return false;
    *r = Stepper<OP, CHECKED>::finish(acc);
    return true;
}

// Each output one whole contiguous segment (row sums, global pooling): no
// chunk or segment bookkeeping between the short rows; max / min checked
// (Stepper) and redone exactly where the check fails.
template <tops_dtype_t DT, ReduceAcc OP, bool STREAM>
void reduce_row_segments(const ReduceRowArgs& a) {
    constexpr bool kChecked = OP == ReduceAcc::max || OP == ReduceAcc::min;
    const storage_t<DT>* x = static_cast<const storage_t<DT>*>(a.x);
    Odometer out_pos(a.kept, a.item_begin);
    for (int64_t o = a.item_begin; o < a.item_end; ++o, out_pos.next()) {
        float r;
        if (!reduce_whole_segment<DT, OP, STREAM, kChecked>(x + out_pos.x, a.n, &r)) {
            reduce_whole_segment<DT, OP, STREAM, false>(x + out_pos.x, a.n, &r);
        }
        reduce_store_final(a.out, out_pos.y, r);
    }
}

template <tops_dtype_t DT, ReduceAcc OP>
void reduce_row(const ReduceRowArgs& a) {
    using A = Acc<OP>;
    using T = storage_t<DT>;
    if (a.out.nchunks == 1 && a.red.count == 1) {
        if (a.stream) reduce_row_segments<DT, OP, true>(a);
        else reduce_row_segments<DT, OP, false>(a);
        return;
    }
    const T* x = static_cast<const T*>(a.x);
    const int64_t nch = a.out.nchunks;
    const int64_t total = a.red.count * a.n;
    int64_t o = a.item_begin / nch;
    Odometer out_pos(a.kept, o);
    for (int64_t item = a.item_begin; item < a.item_end; ++item) {
        const int64_t c = item % nch;
        if (item / nch != o) {
            ++o;
            out_pos.next();
        }
        const int64_t k0 = c * a.chunk;
        const int64_t k1 = k0 + a.chunk < total ? k0 + a.chunk : total;
        VecF acc[kUnroll];
        for (auto& v : acc) v = VecF(A::identity());
        int64_t r = k0 / a.n, j = k0 % a.n;
        Odometer seg(a.red, r);
        Stepper<OP, false> exact;
        for (int64_t k = k0; k < k1;) {
            const int64_t len = a.n - j < k1 - k ? a.n - j : k1 - k;
            if (a.stream) accumulate_segment_streamed<DT, OP>(x + out_pos.x + seg.x + j, len, acc, exact);
            else accumulate_segment<DT, OP>(x + out_pos.x + seg.x + j, len, acc, exact);
            k += len;
            j = 0;
            seg.next();
        }
        acc[0] = A::merge(A::merge(acc[0], acc[1]), A::merge(acc[2], acc[3]));
        emit(a.out, o, c, out_pos.y, A::horizontal(acc[0]));
    }
}

template <tops_dtype_t DT, ReduceAcc OP>
void reduce_col(const ReduceColArgs& a) {
    using A = Acc<OP>;
    using T = storage_t<DT>;
    static_assert(kReduceColTile % 16 == 0, "tiles hold whole vectors of every ISA");
    const T* x = static_cast<const T*>(a.x);
    const int64_t nch = a.out.nchunks;
    const int64_t tiles = (a.m + a.tile - 1) / a.tile;
    alignas(64) float acc[kReduceColTile];
    for (int64_t item = a.item_begin; item < a.item_end; ++item) {
        const int64_t c = item % nch;
        const int64_t t = (item / nch) % tiles;
        const int64_t ko = item / nch / tiles;
        const Odometer outer(a.kept_outer, ko);
        const int64_t c0 = t * a.tile;
        const int64_t width = a.m - c0 < a.tile ? a.m - c0 : a.tile;
        const int64_t r0 = c * a.chunk;
        const int64_t r1 = r0 + a.chunk < a.red.count ? r0 + a.chunk : a.red.count;
        for (int64_t i = 0; i < width; ++i) acc[i] = A::identity();
        const T* base = x + outer.x + c0;
        Odometer rows(a.red, r0);
        for (int64_t r = r0; r < r1;) {
            const int batch = r1 - r < kColRows ? int(r1 - r) : kColRows;
            const T* src[kColRows];
            for (int b = 0; b < batch; ++b, rows.next()) src[b] = base + rows.x;
            r += batch;
            int64_t j = 0;
            for (; j + kLanes <= width; j += kLanes) {
                VecF v = VecF::load_aligned(acc + j);
                for (int b = 0; b < batch; ++b) v = A::step(v, load<DT>(src[b] + j));
                v.store_aligned(acc + j);
            }
            for (; j < width; ++j) {
                float v = acc[j];
                for (int b = 0; b < batch; ++b) v = A::step1(v, to_float<DT>(src[b][j]));
                acc[j] = v;
            }
        }
        for (int64_t i = 0; i < width; ++i) {
            emit(a.out, ko * a.m + c0 + i, c, outer.y + (c0 + i) * a.y_inner, acc[i]);
        }
    }
}

template <tops_dtype_t DT, ReduceAcc OP>
void reduce_generic(const ReduceGenericArgs& a) {
    using A = Acc<OP>;
    using T = storage_t<DT>;
    const T* x = static_cast<const T*>(a.x);
    Odometer out_pos(a.kept, a.item_begin);
    for (int64_t o = a.item_begin; o < a.item_end; ++o, out_pos.next()) {
        float acc = A::identity();
        Odometer in(a.red, 0);
        for (int64_t r = 0; r < a.red.count; ++r, in.next()) acc = A::step1(acc, to_float<DT>(x[out_pos.x + in.x]));
        emit(a.out, o, 0, out_pos.y, acc);
    }
}

}  // namespace
}  // namespace TOPS_ISA_NS

template <tops_dtype_t DT, ReduceAcc OP>
template <class A>
void ReduceRowKernel<DT, OP>::operator()(A, ReduceRowArgs a) const {
    static_assert(std::is_same_v<A, Arch>, "instantiated for this file's ISA only");
    TOPS_ISA_NS::reduce_row<DT, OP>(a);
}

template <tops_dtype_t DT, ReduceAcc OP>
template <class A>
void ReduceColKernel<DT, OP>::operator()(A, ReduceColArgs a) const {
    static_assert(std::is_same_v<A, Arch>, "instantiated for this file's ISA only");
    TOPS_ISA_NS::reduce_col<DT, OP>(a);
}

template <tops_dtype_t DT, ReduceAcc OP>
template <class A>
void ReduceGenericKernel<DT, OP>::operator()(A, ReduceGenericArgs a) const {
    static_assert(std::is_same_v<A, Arch>, "instantiated for this file's ISA only");
    TOPS_ISA_NS::reduce_generic<DT, OP>(a);
}

// (TOPS_CPU_INSTANTIATE cannot take a two-argument template as its macro argument.)
#define TOPS_REDUCE_INSTANTIATE_OP(DT, OP)                                                                     \
    template void ReduceRowKernel<DT, OP>::operator()<Arch>(Arch, ReduceRowArgs) const;         \
    template void ReduceColKernel<DT, OP>::operator()<Arch>(Arch, ReduceColArgs) const;         \
    template void ReduceGenericKernel<DT, OP>::operator()<Arch>(Arch, ReduceGenericArgs) const;

#define TOPS_REDUCE_INSTANTIATE(DT)                          \
    TOPS_REDUCE_INSTANTIATE_OP(DT, ReduceAcc::sum)           \
    TOPS_REDUCE_INSTANTIATE_OP(DT, ReduceAcc::sumsq)         \
    TOPS_REDUCE_INSTANTIATE_OP(DT, ReduceAcc::max)           \
    TOPS_REDUCE_INSTANTIATE_OP(DT, ReduceAcc::min)           \
    TOPS_REDUCE_INSTANTIATE_OP(DT, ReduceAcc::prod)

TOPS_REDUCE_INSTANTIATE(TOPS_DTYPE_F32)
TOPS_REDUCE_INSTANTIATE(TOPS_DTYPE_F16)
TOPS_REDUCE_INSTANTIATE(TOPS_DTYPE_BF16)

}  // namespace tops::cpu
