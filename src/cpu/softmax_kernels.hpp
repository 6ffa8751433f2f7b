// CPU softmax kernels: parameter structs and functor declarations. The
// operator() bodies live in src/cpu/kernels/softmax_*.cpp (compiled once per
// ISA); src/cpu/softmax.cpp only sees these declarations and dispatches with
// isa_dispatch. Every kernel handles rows [begin, end) of its row space so the
// caller can split the work across OpenMP threads.
#pragma once

#include <cstdint>

#include "common/tensor.hpp"

namespace tops::cpu {

// The dims a kernel iterates over outside the softmax axis (and outside the
// vectorized inner dim for the axis kernel), with the element strides of every
// tensor. Row r is the row-major multi-index r over `dims`. Absent mask or
// lengths tensors have zero strides.
struct SoftmaxRowSpace {
    int rank = 0;
    int64_t dims[kMaxRank] = {};
    int64_t x[kMaxRank] = {};
    int64_t y[kMaxRank] = {};
    int64_t mask[kMaxRank] = {};
    int64_t lengths[kMaxRank] = {};
    int64_t count = 1;  // product of dims
};

// What every softmax kernel needs besides its geometry.
struct SoftmaxCommon {
    const void* x = nullptr;         // dtype of the kernel
    void* y = nullptr;               // dtype of the kernel
    const uint8_t* mask = nullptr;   // optional; 0 = masked out
    const int32_t* lengths = nullptr;  // optional; one per row
    float scale = 1.0f;
    bool log = false;
};

// The softmax axis has unit stride in x and y: each row is n contiguous
// elements. The mask's axis stride is 1 or 0 (0: one byte for the whole row).
struct SoftmaxLastDimArgs {
    SoftmaxCommon io;
    SoftmaxRowSpace rows;
    int64_t n = 0;
    int64_t mask_axis_stride = 0;
    bool stream = false;  // y is too large to stay cached: non-temporal stores
    int64_t row_begin = 0, row_end = 0;
};

// The softmax axis is strided but another dim ("inner") has unit stride in x
// and y: the kernel vectorizes across a block of inner columns and walks along
// the axis. Work items are (outer row, column block) pairs.
struct SoftmaxAxisArgs {
    SoftmaxCommon io;
    SoftmaxRowSpace outer;  // dims other than axis and inner
    int64_t n = 0;          // softmax axis length
    int64_t inner = 0;      // contiguous dim length
    int64_t x_axis = 0, y_axis = 0, mask_axis = 0;  // strides along the axis
    int64_t mask_inner = 0, lengths_inner = 0;      // strides along the inner dim
    int64_t item_begin = 0, item_end = 0;           // over outer.count * blocks(inner)
};

// Any strides: scalar loops, one row (all dims but the axis) at a time.
struct SoftmaxStridedArgs {
    SoftmaxCommon io;
    SoftmaxRowSpace rows;
    int64_t n = 0;
    int64_t x_axis = 0, y_axis = 0, mask_axis = 0;
    int64_t row_begin = 0, row_end = 0;
};

// An axis-kernel work item covers kSoftmaxAxisVecs SIMD vectors of inner
// columns: 4 x (4 | 8 | 16) floats for sse4 | avx2 | avx512.
constexpr int kSoftmaxAxisVecs = 4;

template <tops_dtype_t DT>
struct SoftmaxLastDimKernel {
    template <class Arch>
    void operator()(Arch, SoftmaxLastDimArgs a) const;
};

template <tops_dtype_t DT>
struct SoftmaxAxisKernel {
    template <class Arch>
    void operator()(Arch, SoftmaxAxisArgs a) const;
};

template <tops_dtype_t DT>
struct SoftmaxStridedKernel {
    template <class Arch>
    void operator()(Arch, SoftmaxStridedArgs a) const;
};

}  // namespace tops::cpu
