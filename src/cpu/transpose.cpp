// Placeholder until the CPU transpose kernels land.
#include "cpu/ops.hpp"

namespace tops::cpu {
Status plan_transpose(const TransposeParams&, PlanPtr*) { return Status(TOPS_ERROR_NOT_SUPPORTED, "transpose: not yet"); }
}  // namespace tops::cpu
