// Plan factories of the CPU backend, one per op family (src/cpu/<op>.cpp).
#pragma once

#include "common/backend.hpp"

namespace tops::cpu {

Status plan_softmax(const SoftmaxParams& p, PlanPtr* out);
Status plan_transpose(const TransposeParams& p, PlanPtr* out);
Status plan_gemm(const GemmParams& p, PlanPtr* out);
Status plan_norm(const NormParams& p, PlanPtr* out);
Status plan_reduce(const ReduceParams& p, PlanPtr* out);
Status plan_eltwise(const EltwiseParams& p, PlanPtr* out);
Status plan_attention(const AttentionParams& p, PlanPtr* out);
Status plan_conv2d(const ConvParams& p, PlanPtr* out);
Status plan_pad(const PadParams& p, PlanPtr* out);

}  // namespace tops::cpu
