// Host interface of the Hopper row-gather transpose (transpose_sm90.cu):
// which canonical problems it takes, and its launch. The plan
// (transpose.cu) asks at create time and keeps the vector gather kernel for
// everything else, and for pointers TMA cannot take (checked at execute).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "common/transpose_plan.hpp"
#include "cuda/common/cuda_status.hpp"
#include "cuda/common/tensor_map.hpp"

namespace tops::cuda {

// The problem in TMA terms: dims innermost first (y's memory order), padded
// to kTmaMaxRank with one-element dims; strides in bytes.
struct TransposeTmaProblem {
    int elem_size = 0;
    int64_t dims[kTmaMaxRank] = {};
    int64_t x_strides[kTmaMaxRank] = {};  // [0] unused (unit)
    int64_t y_strides[kTmaMaxRank] = {};
    int box[kTmaMaxRank] = {};         // elements per tile along each dim
    int tile_count[kTmaMaxRank] = {};  // tiles along each dim
    int tiles = 0;
    int tile_bytes = 0;
    int grid = 0;
};

// "" when the TMA kernel takes `t` (rows contiguous in x and y) on this
// device, with `out` filled; else why not. TOPS_TRANSPOSE_SM90=0 turns it off.
std::string transpose_sm90_plan(const TransposeProblem& t, const DeviceInfo& dev, TransposeTmaProblem* out);

const char* transpose_sm90_kernel_name();

// TMA needs 16-byte aligned base addresses.
bool transpose_sm90_pointers_ok(const void* x, const void* y);

Status launch_transpose_sm90(const TransposeTmaProblem& q, const void* x, void* y, cudaStream_t stream);

}  // namespace tops::cuda
