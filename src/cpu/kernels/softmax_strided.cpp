// Softmax for any strides (softmax_<dtype>_strided_<isa>): the fallback when
// neither the softmax axis nor any other dim has unit stride in both x and y.
//
// Strategy: scalar loops, one row at a time, with the same three passes as
// the vector kernels (max; exp + sum; normalize). f32 keeps exp in y between
// passes 2 and 3; f16/bf16 recompute it so that y is rounded only once.
// Nothing here is vectorized: layouts this general have no contiguous run to
// vectorize over, and being simple keeps this the reference the fast paths
// are checked against.
#include <cmath>

#include "cpu/kernels/softmax_common.hpp"

namespace tops::cpu {

template <tops_dtype_t DT>
template <class A>
void SoftmaxStridedKernel<DT>::operator()(A, SoftmaxStridedArgs a) const {
    using namespace TOPS_ISA_NS;
    using T = storage_t<DT>;
    static_assert(std::is_same_v<A, Arch>, "instantiated for this file's ISA only");
    const T* xb = static_cast<const T*>(a.io.x);
    T* yb = static_cast<T*>(a.io.y);
    const float scale = a.io.scale;
    const float fill = masked_value(a.io.log);
    RowCursor cur(a.rows, a.row_begin);
    for (int64_t r = a.row_begin; r < a.row_end; ++r, cur.next()) {
        const T* x = xb + cur.x;
        T* y = yb + cur.y;
        const uint8_t* mask = a.io.mask ? a.io.mask + cur.mask : nullptr;
        const int64_t len = valid_length(a.io.lengths ? a.io.lengths + cur.lengths : nullptr, a.n);
        auto on = [&](int64_t j) { return !mask || mask[j * a.mask_axis] != 0; };
        auto t_at = [&](int64_t j) { return to_float<DT>(x[j * a.x_axis]) * scale; };

        float m = -kInf;
        for (int64_t j = 0; j < len; ++j) {
            if (on(j)) m = std::fmax(m, t_at(j));
        }
        m = safe_max(m);
        float sum = 0.0f;
        for (int64_t j = 0; j < len; ++j) {
            const float e = on(j) ? std::exp(t_at(j) - m) : 0.0f;
            sum += e;
            if constexpr (DT == TOPS_DTYPE_F32) {
                if (!a.io.log) y[j * a.y_axis] = e;
            }
        }
        if (a.io.log) {
            const float off = log_offset(m, sum);
            for (int64_t j = 0; j < len; ++j) y[j * a.y_axis] = from_float<DT>(on(j) ? t_at(j) - off : fill);
        } else {
            const float inv = inv_sum(sum);
            for (int64_t j = 0; j < len; ++j) {
                float e;
                if constexpr (DT == TOPS_DTYPE_F32) e = y[j * a.y_axis];
                else e = on(j) ? std::exp(t_at(j) - m) : 0.0f;
                y[j * a.y_axis] = from_float<DT>(e * inv);
            }
        }
        for (int64_t j = len; j < a.n; ++j) y[j * a.y_axis] = from_float<DT>(fill);
    }
}

TOPS_CPU_INSTANTIATE(SoftmaxStridedKernel<TOPS_DTYPE_F32>, SoftmaxStridedArgs)
TOPS_CPU_INSTANTIATE(SoftmaxStridedKernel<TOPS_DTYPE_F16>, SoftmaxStridedArgs)
TOPS_CPU_INSTANTIATE(SoftmaxStridedKernel<TOPS_DTYPE_BF16>, SoftmaxStridedArgs)

}  // namespace tops::cpu
