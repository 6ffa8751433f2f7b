// Placeholder until the CPU softmax kernels land.
#include "cpu/ops.hpp"

namespace tops::cpu {
Status plan_softmax(const SoftmaxParams&, PlanPtr*) { return Status(TOPS_ERROR_NOT_SUPPORTED, "softmax: not yet"); }
}  // namespace tops::cpu
