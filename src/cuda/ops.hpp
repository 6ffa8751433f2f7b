// Plan factories of the CUDA backend, one per op family (src/cuda/<op>.cu).
#pragma once

#include "common/backend.hpp"
#include "cuda/common/cuda_status.hpp"

namespace tops::cuda {

Status plan_softmax(const SoftmaxParams& p, const DeviceInfo& dev, PlanPtr* out);
Status plan_transpose(const TransposeParams& p, const DeviceInfo& dev, PlanPtr* out);
Status plan_conv2d(const ConvParams& p, const DeviceInfo& dev, PlanPtr* out);
Status plan_attention(const AttentionParams& p, const DeviceInfo& dev, PlanPtr* out);
Status plan_pad(const PadParams& p, const DeviceInfo& dev, PlanPtr* out);

}  // namespace tops::cuda
