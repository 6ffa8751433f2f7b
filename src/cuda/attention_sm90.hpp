// Host interface of the Hopper attention forward (attention_sm90.cu): which
// problems it takes, and its launch. The plan (attention.cu) asks at create
// time and keeps the mma.sync kernels for everything else.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "common/params.hpp"
#include "cuda/attention_params.hpp"
#include "cuda/common/cuda_status.hpp"

namespace tops::cuda::attn {

// "" when the Hopper kernel takes the problem on this device, else why not.
// `p` is the plan's FwdParams (strides, sizes, scale, window); the kernel
// takes dense (not varlen, no key lengths) f16 / bf16 problems of head dim
// 64 or 128 with unit head-dim stride and 16-byte strides otherwise.
// TOPS_ATTENTION_SM90=0 turns it off; =1 takes it even when its query tiles
// fill less than one wave of the GPU (where the mma.sync kernels split the
// keys instead; tests use =1 to cover small shapes).
std::string sm90_unusable(const AttentionParams& ap, const FwdParams& p, const DeviceInfo& dev);

const char* sm90_kernel_name(tops_dtype_t dtype, int head_dim);

// TMA needs 16-byte aligned base addresses (checked at execute).
bool sm90_pointers_ok(const FwdParams& p);

// p with its q, k, v, o (and lse) pointers set.
Status launch_sm90(const FwdParams& p, tops_dtype_t dtype, int head_dim, cudaStream_t stream);

}  // namespace tops::cuda::attn
