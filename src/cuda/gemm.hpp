// The CUDA GEMM (src/cuda/gemm.cpp: cuBLASLt plans) and the few helper
// kernels it launches around cuBLASLt (src/cuda/gemm_kernels.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

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

// The fused Hopper GEMM (src/cuda/gemm_sm90.cu): D = act(alpha * A B + bias)
// with A (batch, M, K) and B^T (batch, N, K) K-contiguous, D (batch, M, N)
// with unit column stride, one 16-bit dtype throughout, act gelu_erf or silu.
// Leading dimensions and batch strides in elements (batch stride 0: shared).
struct GemmSm90Problem {
    tops_dtype_t dtype = TOPS_DTYPE_INVALID;
    Activation act = Activation::none;
    int64_t m = 0, n = 0, k = 0, batch = 1;
    int64_t lda = 0, a_batch_stride = 0;
    int64_t ldb = 0, b_batch_stride = 0;
    int64_t ldd = 0, d_batch_stride = 0;
    int64_t bias_stride = 0;
    float alpha = 1.0f;
};

// Maps a GEMM to the fused kernel's problem: empty when it runs there on
// `dev` (the kernel's shared-memory opt-in is then set), else why not.
std::string gemm_sm90_plan(const GemmParams& p, const DeviceInfo& dev, GemmSm90Problem* out);
// The same for a problem already mapped.
std::string gemm_sm90_unusable(const GemmSm90Problem& q, const DeviceInfo& dev);
const char* gemm_sm90_kernel_name();
// Whether the execute-time pointers meet TMA's 16-byte alignment.
bool gemm_sm90_pointers_ok(const void* a, const void* b, const void* d);
Status launch_gemm_sm90(const GemmSm90Problem& q, const void* a, const void* b, void* d, const void* bias,
                        int sm_count, cudaStream_t stream);

// Fills n elements with uniform values in [-1, 1) from `seed` (autotuning
// scratch: timing on zeros would flatter the tensor cores).
Status launch_gemm_fill_uniform(void* ptr, int64_t n, tops_dtype_t dtype, uint32_t seed, cudaStream_t stream);

}  // namespace tops::cuda
