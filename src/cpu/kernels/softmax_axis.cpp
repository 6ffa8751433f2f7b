// Softmax along a strided axis when another dim is contiguous in x and y
// (softmax_<dtype>_axis_<isa>), e.g. softmax over C of an NCHW tensor.
//
// Strategy: a work item is one outer index and a block of kSoftmaxAxisVecs
// SIMD vectors of contiguous ("inner") columns; every lane is its own softmax.
// Walking along the axis, each step loads kSoftmaxAxisVecs vectors from one
// contiguous run, so no gather or transpose is needed and the reductions are
// plain lane-wise max/add with kSoftmaxAxisVecs independent chains. The three
// passes of the row kernel (max; exp stored + summed; normalize) revisit a
// tile of (n, block) elements, which stays in L1/L2 for the axis lengths this
// layout is used with; f16/bf16 keep exp in an f32 stack tile when it fits
// and recompute it otherwise. Masks and lengths are read per lane with any
// stride along the inner dim (unit stride loads directly).
#include "cpu/kernels/softmax_common.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {
namespace {

constexpr int kVecs = kSoftmaxAxisVecs;
constexpr int64_t kBlock = int64_t(kVecs) * kLanes;  // columns per work item
constexpr int64_t kScratchFloats = 8192;             // f16/bf16 exp tile (n, kBlock) up to 32 KiB
static_assert(kScratchFloats % kBlock == 0, "the scratch tile holds whole axis steps");
// Pass 1 prefetches this many axis steps ahead: consecutive steps are usually
// pages apart, where hardware prefetchers do not follow.
constexpr int64_t kPrefetchSteps = 16;

// One work item: columns [c0, c0 + (NV - 1) * kLanes + last) of one outer row.
template <tops_dtype_t DT, bool kMasked, int NV>
struct AxisBlock {
    using T = storage_t<DT>;
    const T* x;                 // (n, cols) with row stride x_axis
    T* y;                       // (n, cols) with row stride y_axis
    const uint8_t* mask;        // (n, cols) with strides (mask_axis, mask_inner)
    const int32_t* lengths;     // (cols) with stride lengths_inner
    int64_t n, x_axis, y_axis, mask_axis, mask_inner, lengths_inner;
    int last;                   // lanes of the last vector, 1..kLanes
    VecF s;                     // scale: exp(scale x - m) = 2^((x scale - m) log2(e))

    int lanes(int v) const { return v == NV - 1 ? last : kLanes; }

    VecF ld(const T* p, int v) const { return lanes(v) == kLanes ? load<DT>(p) : load_partial<DT>(p, lanes(v), 0.0f); }

    template <tops_dtype_t OutDT>
    void st(storage_t<OutDT>* p, VecF val, int v) const {
        if (lanes(v) == kLanes) store<OutDT>(p, val);
        else store_partial<OutDT>(p, val, lanes(v));
    }

    // Lanes of step j taking part (masked variant only).
    BoolF on(int64_t j, int v, const VecI* len) const {
        BoolF b(true);
        if (mask) {
            const uint8_t* m = mask + j * mask_axis + int64_t(v) * kLanes * mask_inner;
            b = mask_inner == 1 && lanes(v) == kLanes ? load_mask(m) : load_mask_strided(m, mask_inner, lanes(v));
        }
        if (lengths) b = b && xsimd::bool_cast(VecI(int32_t(j)) < len[v]);
        return b;
    }

    // scale * x at step j, -inf where not taking part.
    VecF t_at(int64_t j, int v, const VecI* len) const {
        const VecF t = ld(x + j * x_axis + v * kLanes, v) * s;
        if constexpr (kMasked) return xsimd::select(on(j, v, len), t, VecF(-kInf));
        else return t;
    }

    VecF e_at(int64_t j, int v, const VecI* len, VecF neg_m) const {
        VecF u = xsimd::fma(ld(x + j * x_axis + v * kLanes, v), s, neg_m) * VecF(kLog2e);
        if constexpr (kMasked) u = xsimd::select(on(j, v, len), u, VecF(-kInf));
        return exp2_nonpositive(u);
    }

    void run(bool log, float* scratch) const {
        VecI len[NV];
        if constexpr (kMasked) {
            for (int v = 0; v < NV; ++v) {
                alignas(64) int32_t tmp[kLanes] = {};
                for (int i = 0; i < lanes(v) && lengths; ++i) {
                    tmp[i] = int32_t(valid_length(lengths + (int64_t(v) * kLanes + i) * lengths_inner, n));
                }
                len[v] = VecI::load_aligned(tmp);
            }
        }
        VecF m[NV];
        for (auto& v : m) v = VecF(-kInf);
        for (int64_t j = 0; j < n; ++j) {
            if (j + kPrefetchSteps < n) {
                const char* ahead = reinterpret_cast<const char*>(x + (j + kPrefetchSteps) * x_axis);
                for (int64_t b = 0; b < int64_t(NV) * kVecBytes<DT>; b += kCacheLine) prefetch_read(ahead + b, false);
            }
            for (int v = 0; v < NV; ++v) m[v] = xsimd::max(m[v], t_at(j, v, len));
        }
        VecF neg_m[NV], sum[NV];
        for (int v = 0; v < NV; ++v) {
            m[v] = safe_max(m[v]);
            neg_m[v] = -m[v];
            sum[v] = VecF(0.0f);
        }
        if (log) {
            for (int64_t j = 0; j < n; ++j) {
                for (int v = 0; v < NV; ++v) sum[v] += e_at(j, v, len, neg_m[v]);
            }
            VecF neg_off[NV];
            for (int v = 0; v < NV; ++v) neg_off[v] = -log_offset(m[v], sum[v]);
            for (int64_t j = 0; j < n; ++j) {
                for (int v = 0; v < NV; ++v) {
                    VecF t = xsimd::fma(ld(x + j * x_axis + v * kLanes, v), s, neg_off[v]);
                    if constexpr (kMasked) t = xsimd::select(on(j, v, len), t, VecF(-kInf));
                    st<DT>(y + j * y_axis + v * kLanes, t, v);
                }
            }
            return;
        }
        // exp tile: y itself for f32, the f32 scratch for f16/bf16 when it fits.
        float* e = nullptr;
        int64_t e_stride = 0;
        if constexpr (DT == TOPS_DTYPE_F32) {
            e = y;
            e_stride = y_axis;
        } else if (n * kBlock <= kScratchFloats) {
            e = scratch;
            e_stride = kBlock;
        }
        for (int64_t j = 0; j < n; ++j) {
            for (int v = 0; v < NV; ++v) {
                const VecF ev = e_at(j, v, len, neg_m[v]);
                sum[v] += ev;
                if (e) st<TOPS_DTYPE_F32>(e + j * e_stride + v * kLanes, ev, v);
            }
        }
        VecF inv[NV];
        for (int v = 0; v < NV; ++v) inv[v] = inv_sum(sum[v]);
        for (int64_t j = 0; j < n; ++j) {
            for (int v = 0; v < NV; ++v) {
                VecF ev;
                if (e) {
                    const float* p = e + j * e_stride + v * kLanes;
                    ev = lanes(v) == kLanes ? VecF::load_unaligned(p) : load_partial<TOPS_DTYPE_F32>(p, lanes(v), 0.0f);
                } else {
                    ev = e_at(j, v, len, neg_m[v]);
                }
                st<DT>(y + j * y_axis + v * kLanes, ev * inv[v], v);
            }
        }
    }
};

template <tops_dtype_t DT, bool kMasked, int NV>
void run_block(const SoftmaxAxisArgs& a, const RowCursor& cur, int64_t c0, int last, float* scratch) {
    using T = storage_t<DT>;
    AxisBlock<DT, kMasked, NV> b;
    b.x = static_cast<const T*>(a.io.x) + cur.x + c0;
    b.y = static_cast<T*>(a.io.y) + cur.y + c0;
    b.mask = a.io.mask ? a.io.mask + cur.mask + c0 * a.mask_inner : nullptr;
    b.lengths = a.io.lengths ? a.io.lengths + cur.lengths + c0 * a.lengths_inner : nullptr;
    b.n = a.n;
    b.x_axis = a.x_axis;
    b.y_axis = a.y_axis;
    b.mask_axis = a.mask_axis;
    b.mask_inner = a.mask_inner;
    b.lengths_inner = a.lengths_inner;
    b.last = last;
    b.s = VecF(a.io.scale);
    b.run(a.io.log, scratch);
}

template <tops_dtype_t DT, bool kMasked>
void run_columns(const SoftmaxAxisArgs& a, const RowCursor& cur, int64_t c0, int64_t cols, float* scratch) {
    static_assert(kVecs == 4, "run_columns dispatches 1..4 vectors");
    const int nv = int((cols + kLanes - 1) / kLanes);
    const int last = int(cols - int64_t(nv - 1) * kLanes);
    switch (nv) {
        case 4: run_block<DT, kMasked, 4>(a, cur, c0, last, scratch); break;
        case 3: run_block<DT, kMasked, 3>(a, cur, c0, last, scratch); break;
        case 2: run_block<DT, kMasked, 2>(a, cur, c0, last, scratch); break;
        default: run_block<DT, kMasked, 1>(a, cur, c0, last, scratch); break;
    }
}

}  // namespace
}  // namespace TOPS_ISA_NS

template <tops_dtype_t DT>
template <class A>
void SoftmaxAxisKernel<DT>::operator()(A, SoftmaxAxisArgs a) const {
    using namespace TOPS_ISA_NS;
    static_assert(std::is_same_v<A, Arch>, "instantiated for this file's ISA only");
    if (a.n == 0 || a.inner == 0 || a.item_begin >= a.item_end) return;
    alignas(64) float scratch[DT == TOPS_DTYPE_F32 ? 1 : kScratchFloats];
    const bool masked = a.io.mask || a.io.lengths;
    const int64_t blocks = (a.inner + kBlock - 1) / kBlock;
    RowCursor cur(a.outer, a.item_begin / blocks);
    int64_t b = a.item_begin % blocks;
    for (int64_t item = a.item_begin; item < a.item_end; ++item) {
        const int64_t c0 = b * kBlock;
        const int64_t cols = a.inner - c0 < kBlock ? a.inner - c0 : kBlock;
        if (masked) run_columns<DT, true>(a, cur, c0, cols, scratch);
        else run_columns<DT, false>(a, cur, c0, cols, scratch);
        if (++b == blocks) {
            b = 0;
            cur.next();
        }
    }
}

TOPS_CPU_INSTANTIATE(SoftmaxAxisKernel<TOPS_DTYPE_F32>, SoftmaxAxisArgs)
TOPS_CPU_INSTANTIATE(SoftmaxAxisKernel<TOPS_DTYPE_F16>, SoftmaxAxisArgs)
TOPS_CPU_INSTANTIATE(SoftmaxAxisKernel<TOPS_DTYPE_BF16>, SoftmaxAxisArgs)

}  // namespace tops::cpu
