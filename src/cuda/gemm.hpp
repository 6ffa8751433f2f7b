// The CUDA GEMM (src/cuda/gemm.cpp: cuBLASLt plans) and the few helper
// kernels it launches around cuBLASLt (src/cuda/gemm_kernels.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/backend.hpp"
#include "cuda/common/cuda_status.hpp"

namespace tops::cuda {

Status plan_gemm(const GemmParams& p, const DeviceInfo& dev, PlanPtr* out);

// dst(b, i, j) = act(scale * src(b, i, j) + bias(j)) over a (batch, rows, cols)
// box with any element strides; src and bias may be absent (nullptr). src,
// dst and bias share one dtype; math in f32, so a plain copy (scale 1, no
// bias, no act) is exact. Used to pack operands without a unit stride into
// the workspace, to copy C into D, to unpack D, and for K = 0.
struct GemmStridedParams {
    const void* src = nullptr;
    void* dst = nullptr;
    const void* bias = nullptr;
    int64_t batch = 0, rows = 0, cols = 0;
    int64_t src_strides[3] = {};
    int64_t dst_strides[3] = {};
    int64_t bias_stride = 0;
    float scale = 1.0f;
    Activation act = Activation::none;
};

Status launch_gemm_strided(const GemmStridedParams& p, tops_dtype_t dtype, cudaStream_t stream);

// d[i] = act(d[i]) over a dense, 16-byte aligned D of n elements (act is
// gelu_erf or silu, the activations cuBLASLt has no epilogue for).
Status launch_gemm_act_dense(void* d, int64_t n, Activation act, tops_dtype_t dtype, int max_blocks,
                             cudaStream_t stream);

// Fills n elements with uniform values in [-1, 1) from `seed` (autotuning
// scratch: timing on zeros would flatter the tensor cores).
Status launch_gemm_fill_uniform(void* ptr, int64_t n, tops_dtype_t dtype, uint32_t seed, cudaStream_t stream);

}  // namespace tops::cuda
