// Op parameter structs: what capi hands a backend after validation. Kernels
// trust these (all shapes, strides and dtypes already checked).
#pragma once

#include <cstdint>

#include "common/tensor.hpp"

namespace tops {

// Softmax along `axis`. Optional tensors are expanded to x's rank: dims equal
// to x.dims and stride 0 in every broadcast dim, so one multi-index addresses
// x, y, mask and lengths alike (lengths has dims[axis] = 1, strides[axis] = 0).
struct SoftmaxParams {
    TensorLayout x;        // f32 | f16 | bf16
    TensorLayout y;        // same dtype and dims as x
    TensorLayout mask;     // u8, optional (present() == false when absent)
    TensorLayout lengths;  // i32, optional
    int axis = 0;          // 0 <= axis < x.rank (x.rank >= 1)
    float scale = 1.0f;
    bool log = false;
};

// y[i] = x[j] with j[perm[k]] = i[k].
struct TransposeParams {
    TensorLayout x;
    TensorLayout y;
    int perm[kMaxRank] = {};
};

}  // namespace tops
