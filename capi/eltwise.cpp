// Fused elementwise ops: bias + activation, PReLU, weighted sum. All three
// share one backend entry (plan_eltwise) and one broadcast rule: every input
// has y's rank and each dim equal to y's or 1.
#include <cmath>

#include "capi/internal.hpp"

namespace {

using tops::Status;
using tops::fmt;

// Validates one input against y and appends it (expanded) to p->in.
Status add_input(const char* op, const std::string& name, const tops_tensor_desc_t& d, const tops::TensorLayout& y,
                 tops::EltwiseParams* p, tops::TensorLayout* user) {
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor(fmt(op, ": ", name), d));
    if (d.dtype != y.dtype) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt(op, ": ", name, ".dtype ", tops::capi::dtype_name(d.dtype),
                                                " differs from y.dtype ", tops::capi::dtype_name(y.dtype)));
    }
    *user = tops::layout_from_desc(d);
    tops::TensorLayout t = *user;
    TOPS_RETURN_IF_ERROR(tops::capi::expand_broadcast(fmt(op, ": ", name), y, -1, &t));
    p->in[p->num_inputs++] = t;
    return Status::ok();
}

Status check_output(const char* op, const tops_tensor_desc_t& d, tops::TensorLayout* y) {
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor(fmt(op, ": y"), d));
    if (!tops::is_float_dtype(d.dtype)) {
        return Status(TOPS_ERROR_BAD_DTYPE,
                      fmt(op, ": y.dtype ", tops::capi::dtype_name(d.dtype), " is not supported (f32, f16, bf16)"));
    }
    *y = tops::layout_from_desc(d);
    return tops::capi::check_no_self_overlap(fmt(op, ": y"), *y);
}

// x must have y's dims exactly (not broadcast).
Status check_x(const char* op, const tops::TensorLayout& x, const tops::TensorLayout& y) {
    return tops::capi::check_same_dims(fmt(op, ": x"), x, "y", y);
}

template <class PlanInputs>
tops_status_t create(tops_context_t ctx, const char* op_name, const void* desc, tops_op_t* op, PlanInputs fill) {
    Status st = tops::capi::check_create_args(ctx, op_name, desc, op);
    if (!st.is_ok()) return tops::capi::report(st);
    tops::EltwiseParams p;
    tops::capi::OpSignature sig;
    sig.op_name = op_name;
    st = fill(&p, &sig);
    if (!st.is_ok()) return tops::capi::report(st);
    sig.summary += fmt(" y:", tops::capi::describe(p.y));
    return tops::capi::create_op(ctx, std::move(sig), op, [&](tops::Backend& b, int dev, tops::PlanPtr* out) {
        return b.plan_eltwise(p, dev, out);
    });
}

}  // namespace

extern "C" {

TOPS_API tops_bias_act_desc_t tops_bias_act_desc_default(void) {
    tops_bias_act_desc_t d{};
    d.struct_size = sizeof(tops_bias_act_desc_t);
    d.act = TOPS_ACT_NONE;
    return d;
}

TOPS_API tops_status_t tops_bias_act_create(tops_context_t ctx, const tops_bias_act_desc_t* desc, tops_op_t* op) {
    TOPS_CAPI_GUARD({
        return create(ctx, "bias_act", desc, op, [&](tops::EltwiseParams* p, tops::capi::OpSignature* sig) -> Status {
            const tops_bias_act_desc_t& d = *desc;
            TOPS_RETURN_IF_ERROR(tops::capi::check_struct_size("bias_act", d.struct_size, sizeof(tops_bias_act_desc_t)));
            if (int(d.act) < int(TOPS_ACT_NONE) || int(d.act) > int(TOPS_ACT_SILU)) {
                return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("bias_act: act ", int(d.act), " is not a tops_activation_t"));
            }
            TOPS_RETURN_IF_ERROR(check_output("bias_act", d.y, &p->y));
            tops::TensorLayout x, bias;
            TOPS_RETURN_IF_ERROR(add_input("bias_act", "x", d.x, p->y, p, &x));
            TOPS_RETURN_IF_ERROR(check_x("bias_act", x, p->y));
            if (d.bias.dtype != TOPS_DTYPE_INVALID) TOPS_RETURN_IF_ERROR(add_input("bias_act", "bias", d.bias, p->y, p, &bias));
            p->kind = tops::EltwiseKind::bias_act;
            p->act = tops::Activation(int(d.act));
            static const char* const acts[] = {"none", "relu", "gelu_erf", "gelu_tanh", "silu"};
            sig->summary = fmt("x:", tops::capi::describe(x), bias.present() ? " bias:" : "",
                               bias.present() ? tops::capi::describe(bias) : "", " act:", acts[int(d.act)]);
            sig->input(TOPS_ARG_X, "x", x);
            sig->optional_input(TOPS_ARG_BIAS, "bias", bias);
            sig->output(TOPS_ARG_Y, "y", p->y, tops::capi::arg_bit(TOPS_ARG_X));
            return Status::ok();
        });
    })
}

TOPS_API tops_prelu_desc_t tops_prelu_desc_default(void) {
    tops_prelu_desc_t d{};
    d.struct_size = sizeof(tops_prelu_desc_t);
    return d;
}

TOPS_API tops_status_t tops_prelu_create(tops_context_t ctx, const tops_prelu_desc_t* desc, tops_op_t* op) {
    TOPS_CAPI_GUARD({
        return create(ctx, "prelu", desc, op, [&](tops::EltwiseParams* p, tops::capi::OpSignature* sig) -> Status {
            const tops_prelu_desc_t& d = *desc;
            TOPS_RETURN_IF_ERROR(tops::capi::check_struct_size("prelu", d.struct_size, sizeof(tops_prelu_desc_t)));
            TOPS_RETURN_IF_ERROR(check_output("prelu", d.y, &p->y));
            tops::TensorLayout x, slope;
            TOPS_RETURN_IF_ERROR(add_input("prelu", "x", d.x, p->y, p, &x));
            TOPS_RETURN_IF_ERROR(check_x("prelu", x, p->y));
            TOPS_RETURN_IF_ERROR(add_input("prelu", "slope", d.slope, p->y, p, &slope));
            p->kind = tops::EltwiseKind::prelu;
            sig->summary = fmt("x:", tops::capi::describe(x), " slope:", tops::capi::describe(slope));
            sig->input(TOPS_ARG_X, "x", x);
            sig->input(TOPS_ARG_SLOPE, "slope", slope);
            sig->output(TOPS_ARG_Y, "y", p->y, tops::capi::arg_bit(TOPS_ARG_X));
            return Status::ok();
        });
    })
}

TOPS_API tops_weighted_sum_desc_t tops_weighted_sum_desc_default(void) {
    tops_weighted_sum_desc_t d{};
    d.struct_size = sizeof(tops_weighted_sum_desc_t);
    for (int i = 0; i < TOPS_MAX_SUM_INPUTS; ++i) d.coefs[i] = 1.0f;
    return d;
}

TOPS_API tops_status_t tops_weighted_sum_create(tops_context_t ctx, const tops_weighted_sum_desc_t* desc,
                                                tops_op_t* op) {
    TOPS_CAPI_GUARD({
        return create(ctx, "weighted_sum", desc, op, [&](tops::EltwiseParams* p, tops::capi::OpSignature* sig) -> Status {
            const tops_weighted_sum_desc_t& d = *desc;
            TOPS_RETURN_IF_ERROR(
                tops::capi::check_struct_size("weighted_sum", d.struct_size, sizeof(tops_weighted_sum_desc_t)));
            if (d.num_inputs < 1 || d.num_inputs > TOPS_MAX_SUM_INPUTS) {
                return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("weighted_sum: num_inputs ", d.num_inputs,
                                                               " is outside [1, ", TOPS_MAX_SUM_INPUTS, "]"));
            }
            TOPS_RETURN_IF_ERROR(check_output("weighted_sum", d.y, &p->y));
            static const char* const names[] = {"inputs[0]", "inputs[1]", "inputs[2]", "inputs[3]",
                                                "inputs[4]", "inputs[5]", "inputs[6]", "inputs[7]"};
            sig->summary = fmt("n:", d.num_inputs);
            for (int i = 0; i < d.num_inputs; ++i) {
                if (!std::isfinite(d.coefs[i])) {
                    return Status(TOPS_ERROR_INVALID_ARGUMENT,
                                  fmt("weighted_sum: coefs[", i, "] = ", d.coefs[i], " is not finite"));
                }
                tops::TensorLayout in;
                TOPS_RETURN_IF_ERROR(add_input("weighted_sum", names[i], d.inputs[i], p->y, p, &in));
                p->coefs[i] = d.coefs[i];
                sig->input(tops_arg_kind_t(TOPS_ARG_INPUT0 + i), names[i], in);
            }
            p->kind = tops::EltwiseKind::weighted_sum;
            uint64_t inputs = 0;
            for (int i = 0; i < d.num_inputs; ++i) inputs |= tops::capi::arg_bit(tops_arg_kind_t(TOPS_ARG_INPUT0 + i));
            sig->output(TOPS_ARG_Y, "y", p->y, inputs);
            return Status::ok();
        });
    })
}

}  // extern "C"
