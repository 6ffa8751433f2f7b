// CPU plan of the 2-D convolution: picks the kernel for the validated params.
#include <string>

#include "common/status.hpp"
#include "cpu/conv_kernels.hpp"
#include "cpu/ops.hpp"

namespace tops::cpu {
namespace {

const char* dtype_tag(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F16: return "f16";
        case TOPS_DTYPE_BF16: return "bf16";
        default: return "f32";
    }
}

class ConvDirectPlan final : public OpPlan {
public:
    explicit ConvDirectPlan(const ConvParams& p) : p_(p), name_(fmt("conv2d_direct_", dtype_tag(p.x.dtype))) {}

    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override { return "direct loops (any strides, any dtype)"; }
    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (p_.y.numel() == 0) return Status::ok();
        conv_direct_run(p_, args, ctx.num_threads);
        return Status::ok();
    }

private:
    ConvParams p_;
    std::string name_;
};

}  // namespace

Status plan_conv2d(const ConvParams& p, PlanPtr* out) {
    out->reset(new ConvDirectPlan(p));
    return Status::ok();
}

}  // namespace tops::cpu
