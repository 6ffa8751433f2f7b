// Helper kernels of the cuBLASLt GEMM (src/cuda/gemm.cpp). cuBLASLt does the
// matrix product; these cover what it cannot take directly, all off the hot
// path of dense problems: a strided (batch, rows, cols) copy with an optional
// scale, bias and activation (operand packing, C into D, K = 0), and a
// uniform fill for the autotuner's scratch buffers. One thread per element in
// a grid-stride loop with 64-bit index math: these run only on layouts
// cuBLASLt cannot describe, so simplicity wins over bandwidth here.
// The exception is the in-place activation over a dense D (GELU erf, SiLU
// after a cuBLASLt bias epilogue), which is on the hot path: 16-byte vectors,
// several per thread in flight, paired f16 / bf16 conversions, the
// activation a template parameter (its cost decides whether the pass keeps
// up with L2: GELU erf is the cheap form of activation.cuh), a grid of a few
// waves striding over D right after the GEMM wrote it (much of D is still in
// L2).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cuda/common/activation.cuh"
#include "cuda/common/device.cuh"
#include "cuda/gemm.hpp"
#include "cuda/vec_convert.cuh"

namespace tops::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t(1) << 20;  // grid-stride beyond this
constexpr size_t kVecBytes = 16;
// 16-byte vectors of D a thread of the activation pass has in flight per step.
constexpr int kActVecsPerStep = 4;

template <class T>
__global__ void gemm_strided_epilogue_kernel(const __grid_constant__ GemmStridedParams p) {
    using Tr = ElemTraits<T>;
    const T* src = static_cast<const T*>(p.src);
    const T* bias = static_cast<const T*>(p.bias);
    T* dst = static_cast<T*>(p.dst);
    const int64_t n = p.batch * p.rows * p.cols;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += step) {
        const int64_t j = e % p.cols;
        const int64_t bi = e / p.cols;
        const int64_t i = bi % p.rows;
        const int64_t b = bi / p.rows;
        float v = 0.0f;
        if (src) v = p.scale * Tr::to_float(src[b * p.src_strides[0] + i * p.src_strides[1] + j * p.src_strides[2]]);
        if (bias) v += Tr::to_float(bias[j * p.bias_stride]);
        v = activate<T>(p.act, v);
        dst[b * p.dst_strides[0] + i * p.dst_strides[1] + j * p.dst_strides[2]] = Tr::from_float(v);
    }
}

// splitmix-style hash of the index -> uniform [-1, 1).
template <class T>
__global__ void gemm_fill_uniform_kernel(T* ptr, int64_t n, uint32_t seed) {
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += step) {
        uint64_t h = uint64_t(e) * 0x9e3779b97f4a7c15ull + seed;
        h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
        h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
        h ^= h >> 31;
        constexpr float kInv2Pow23 = 1.0f / 8388608.0f;
        const float u = float(uint32_t(h >> 40)) * kInv2Pow23 - 1.0f;  // 24 bits -> [-1, 1)
        ptr[e] = ElemTraits<T>::from_float(u);
    }
}

// d[i] = act(d[i]) over n elements; d is 16-byte aligned. Each thread takes
// kActVecsPerStep vectors per step, a grid stride apart, and loads them all
// before converting any (more bytes in flight); f16 / bf16 convert in pairs
// and take the 16-bit accuracy tier of the activation (activation.cuh).
template <class T, Activation A>
__global__ void __launch_bounds__(kThreads) gemm_act_dense_vec_kernel(T* d, int64_t n) {
    constexpr int kVec = int(kVecBytes / sizeof(T));
    constexpr int kUnroll = kActVecsPerStep;
    const int64_t nvec = n / kVec;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    const int64_t gtid = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    static_assert(kVec * sizeof(T) == sizeof(uint4), "whole 16-byte vectors");
    for (int64_t i0 = gtid; i0 < nvec; i0 += kUnroll * step) {
        uint4 raw[kUnroll] = {};  // packed until the math: (kUnroll) vectors
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int64_t i = i0 + u * step;
            if (i < nvec) raw[u] = *reinterpret_cast<const uint4*>(d + i * kVec);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int64_t i = i0 + u * step;
            if (i < nvec) {
                Vec<T, kVec> t;
                memcpy(&t, &raw[u], sizeof(t));
                float v[kVec];
                vec_to_f32<T, kVec>(t, v);
#pragma unroll
                for (int e = 0; e < kVec; ++e) v[e] = activate<A, T>(v[e]);
                store_vec_f32<T, kVec>(d + i * kVec, v);
            }
        }
    }
    using Tr = ElemTraits<T>;
    for (int64_t i = nvec * kVec + gtid; i < n; i += step) d[i] = Tr::from_float(activate<A, T>(Tr::to_float(d[i])));
}

template <class T>
Status launch_act_dense_typed(T* d, int64_t n, Activation act, int grid, cudaStream_t s) {
    switch (act) {
        case Activation::gelu_erf:
            gemm_act_dense_vec_kernel<T, Activation::gelu_erf><<<grid, kThreads, 0, s>>>(d, n);
            break;
        case Activation::silu: gemm_act_dense_vec_kernel<T, Activation::silu><<<grid, kThreads, 0, s>>>(d, n); break;
        default: return Status(TOPS_ERROR_INTERNAL, "gemm_act_dense_vec: unexpected activation");
    }
    return launch_status("gemm_act_dense_vec");
}

int blocks_for(int64_t n) { return int(std::max<int64_t>(1, std::min(kMaxBlocks, (n + kThreads - 1) / kThreads))); }

}  // namespace

Status launch_gemm_strided(const GemmStridedParams& p, tops_dtype_t dtype, cudaStream_t stream) {
    const int64_t n = p.batch * p.rows * p.cols;
    if (n == 0) return Status::ok();
    const int grid = blocks_for(n);
    const char* name = "gemm_strided_epilogue";
    switch (dtype) {
        case TOPS_DTYPE_F32: gemm_strided_epilogue_kernel<float><<<grid, kThreads, 0, stream>>>(p); break;
        case TOPS_DTYPE_F16: gemm_strided_epilogue_kernel<__half><<<grid, kThreads, 0, stream>>>(p); break;
        case TOPS_DTYPE_BF16: gemm_strided_epilogue_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream>>>(p); break;
        default: return Status(TOPS_ERROR_INTERNAL, "gemm_strided_epilogue: unexpected dtype");
    }
    return launch_status(name);
}

Status launch_gemm_act_dense(void* d, int64_t n, Activation act, tops_dtype_t dtype, int max_blocks,
                             cudaStream_t stream) {
    if (n == 0) return Status::ok();
    const int64_t per_thread = int64_t(kActVecsPerStep) * int64_t(kVecBytes / dtype_size(dtype));
    const int grid = std::min(blocks_for(n / per_thread), std::max(max_blocks, 1));
    switch (dtype) {
        case TOPS_DTYPE_F32: return launch_act_dense_typed(static_cast<float*>(d), n, act, grid, stream);
        case TOPS_DTYPE_F16: return launch_act_dense_typed(static_cast<__half*>(d), n, act, grid, stream);
        case TOPS_DTYPE_BF16: return launch_act_dense_typed(static_cast<__nv_bfloat16*>(d), n, act, grid, stream);
        default: return Status(TOPS_ERROR_INTERNAL, "gemm_act_dense_vec: unexpected dtype");
    }
}

Status launch_gemm_fill_uniform(void* ptr, int64_t n, tops_dtype_t dtype, uint32_t seed, cudaStream_t stream) {
    if (n == 0) return Status::ok();
    const int grid = blocks_for(n);
    switch (dtype) {
        case TOPS_DTYPE_F32:
            gemm_fill_uniform_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float*>(ptr), n, seed);
            break;
        case TOPS_DTYPE_F16:
            gemm_fill_uniform_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__half*>(ptr), n, seed);
            break;
        case TOPS_DTYPE_BF16:
            gemm_fill_uniform_kernel<<<grid, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(ptr), n, seed);
            break;
        default: return Status(TOPS_ERROR_INTERNAL, "gemm_fill_uniform: unexpected dtype");
    }
    return launch_status("gemm_fill_uniform");
}

}  // namespace tops::cuda
