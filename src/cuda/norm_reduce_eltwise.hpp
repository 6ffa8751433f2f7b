// Plan factories of the CUDA norm, reduce and fused elementwise ops
// (src/cuda/norm.cu, reduce.cu, eltwise.cu).
#pragma once

#include "common/backend.hpp"
#include "cuda/common/cuda_status.hpp"

namespace tops::cuda {

Status plan_norm(const NormParams& p, const DeviceInfo& dev, PlanPtr* out);
Status plan_reduce(const ReduceParams& p, const DeviceInfo& dev, PlanPtr* out);
Status plan_eltwise(const EltwiseParams& p, const DeviceInfo& dev, PlanPtr* out);

}  // namespace tops::cuda
