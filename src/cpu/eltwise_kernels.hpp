// CPU fused elementwise kernels (bias + activation, PReLU, weighted sum):
// the argument struct and functor declarations. The operator() bodies live in
// src/cpu/kernels/eltwise_rows.cpp (compiled once per ISA); src/cpu/eltwise.cpp
// only sees these declarations.
#pragma once

#include <cstdint>

#include "common/params.hpp"

namespace tops::cpu {

// y's dims merged by the plan into outer dims and one inner dim of n
// elements. Input i is addressed as in[i] + outer offset + j * in_inner[i].
// Work items are (outer row, block of `block` inner elements), row-major, so
// items number rows * ceil(n / block).
struct EltwiseArgs {
    EltwiseKind kind = EltwiseKind::bias_act;
    Activation act = Activation::none;
    int num_inputs = 0;
    const void* in[kMaxEltwiseInputs] = {};
    float coefs[kMaxEltwiseInputs] = {};
    void* y = nullptr;
    int rank = 0;  // outer dims
    int64_t dims[kMaxRank] = {};
    int64_t y_outer[kMaxRank] = {};
    int64_t in_outer[kMaxEltwiseInputs][kMaxRank] = {};
    int64_t rows = 1;  // product of the outer dims
    int64_t n = 1;
    int64_t y_inner = 1;
    int64_t in_inner[kMaxEltwiseInputs] = {};
    int64_t block = 1;
    int64_t item_begin = 0, item_end = 0;
    bool stream = false;  // rows kernel: y's aligned full vectors with non-temporal stores
};

// y has unit inner stride and every input inner stride 1 (a full row) or 0 (a
// scalar per row: per-channel slope, broadcast bias); bias_act / PReLU need x
// with unit inner stride. Vectorized.
template <tops_dtype_t DT>
struct EltwiseRowsKernel {
    template <class Arch>
    void operator()(Arch, EltwiseArgs a) const;
};

// Any strides: scalar.
template <tops_dtype_t DT>
struct EltwiseStridedKernel {
    template <class Arch>
    void operator()(Arch, EltwiseArgs a) const;
};

}  // namespace tops::cpu
