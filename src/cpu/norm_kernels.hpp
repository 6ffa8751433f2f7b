// CPU LayerNorm / RMSNorm kernels: the argument struct and functor
// declarations. The operator() bodies live in src/cpu/kernels/norm_rows.cpp
// (compiled once per ISA); src/cpu/norm.cpp only sees these declarations.
// Every kernel handles rows [row_begin, row_end) so the caller can split rows
// across OpenMP threads.
#pragma once

#include <cstdint>

#include "common/tensor.hpp"

namespace tops::cpu {

// s = x [+ bias] [+ residual]; LayerNorm: y = (s - mean) * rstd * gamma + beta,
// RMSNorm: y = s * rstd * gamma. Row tensors (x, y, residual, prenorm) share
// the kernel's dtype and are addressed as base + row * row_stride + col *
// col_stride. gamma, beta, bias are f32 with unit stride (the plan converts
// other dtypes and strides into its workspace); absent = nullptr.
struct NormArgs {
    const void* x = nullptr;
    void* y = nullptr;
    const void* residual = nullptr;  // optional
    void* prenorm = nullptr;         // optional output: s
    int64_t x_rs = 0, y_rs = 0, res_rs = 0, pre_rs = 0;  // row strides
    int64_t x_cs = 1, y_cs = 1, res_cs = 1, pre_cs = 1;  // column strides (strided kernel)
    const float* gamma = nullptr;
    const float* beta = nullptr;
    const float* bias = nullptr;
    float* mean = nullptr;  // optional output (f32), one per row
    float* rstd = nullptr;  // optional output (f32), one per row
    int64_t mean_stride = 0, rstd_stride = 0;
    int64_t cols = 0;
    float eps = 0.0f;
    bool rms = false;
    bool stream = false;  // y is too large to stay cached: non-temporal stores (rows kernel)
    int64_t row_begin = 0, row_end = 0;
};

// Every row tensor has unit column stride: vectorized, rows from L1/L2.
template <tops_dtype_t DT>
struct NormRowsKernel {
    template <class Arch>
    void operator()(Arch, NormArgs a) const;
};

// Any column strides: the same three passes, scalar.
template <tops_dtype_t DT>
struct NormStridedKernel {
    template <class Arch>
    void operator()(Arch, NormArgs a) const;
};

}  // namespace tops::cpu
