// The CPU backend: routes each op to its plan factory in src/cpu/<op>.cpp.
#include "cpu/ops.hpp"

namespace tops {
namespace {

class CpuBackend final : public Backend {
public:
    tops_backend_t kind() const override { return TOPS_BACKEND_CPU; }
    Status open_device(int) override { return Status::ok(); }
    Status plan_softmax(const SoftmaxParams& p, int, PlanPtr* out) override { return cpu::plan_softmax(p, out); }
    Status plan_transpose(const TransposeParams& p, int, PlanPtr* out) override {
        return cpu::plan_transpose(p, out);
    }
    Status plan_gemm(const GemmParams& p, int, PlanPtr* out) override { return cpu::plan_gemm(p, out); }
    Status plan_norm(const NormParams& p, int, PlanPtr* out) override { return cpu::plan_norm(p, out); }
    Status plan_reduce(const ReduceParams& p, int, PlanPtr* out) override { return cpu::plan_reduce(p, out); }
    Status plan_eltwise(const EltwiseParams& p, int, PlanPtr* out) override { return cpu::plan_eltwise(p, out); }
    Status plan_attention(const AttentionParams& p, int, PlanPtr* out) override {
        return cpu::plan_attention(p, out);
    }
    Status plan_conv2d(const ConvParams& p, int, PlanPtr* out) override { return cpu::plan_conv2d(p, out); }
    Status plan_pad(const PadParams& p, int, PlanPtr* out) override { return cpu::plan_pad(p, out); }
};

}  // namespace

Backend& cpu_backend() {
    static CpuBackend b;
    return b;
}

}  // namespace tops
