// tops_softmax_create: validation of the softmax descriptor.
#include <cmath>

#include "capi/internal.hpp"

namespace {

using tops::Status;
using tops::fmt;

Status validate(const tops_softmax_desc_t& d, tops::SoftmaxParams* p) {
    TOPS_RETURN_IF_ERROR(tops::capi::check_struct_size("softmax", d.struct_size, sizeof(tops_softmax_desc_t)));
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("softmax: x", d.x));
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("softmax: y", d.y));
    p->x = tops::layout_from_desc(d.x);
    p->y = tops::layout_from_desc(d.y);
    if (!tops::is_float_dtype(d.x.dtype)) {
        return Status(TOPS_ERROR_BAD_DTYPE,
                      fmt("softmax: x.dtype ", tops::capi::dtype_name(d.x.dtype), " is not supported (f32, f16, bf16)"));
    }
    if (d.y.dtype != d.x.dtype) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt("softmax: y.dtype ", tops::capi::dtype_name(d.y.dtype),
                                                " differs from x.dtype ", tops::capi::dtype_name(d.x.dtype)));
    }
    if (d.x.rank < 1) return Status(TOPS_ERROR_BAD_RANK, "softmax: x.rank 0; softmax needs at least one dim");
    if (d.y.rank != d.x.rank) {
        return Status(TOPS_ERROR_BAD_RANK, fmt("softmax: y.rank ", d.y.rank, " differs from x.rank ", d.x.rank));
    }
    for (int i = 0; i < d.x.rank; ++i) {
        if (d.y.dims[i] != d.x.dims[i]) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt("softmax: y.dims[", i, "] = ", d.y.dims[i],
                                                    " differs from x.dims[", i, "] = ", d.x.dims[i]));
        }
    }
    if (d.axis < -d.x.rank || d.axis >= d.x.rank) {
        return Status(TOPS_ERROR_BAD_AXIS,
                      fmt("softmax: axis ", d.axis, " is outside [", -d.x.rank, ", ", d.x.rank, ")"));
    }
    p->axis = d.axis < 0 ? d.axis + d.x.rank : d.axis;
    if (!std::isfinite(d.scale)) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("softmax: scale ", d.scale, " is not finite"));
    }
    p->scale = d.scale;
    if (d.flags & ~TOPS_SOFTMAX_LOG) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("softmax: unknown flags 0x", std::hex, d.flags));
    }
    p->log = (d.flags & TOPS_SOFTMAX_LOG) != 0;
    TOPS_RETURN_IF_ERROR(tops::capi::check_no_self_overlap("softmax: y", p->y));
    if (d.mask.dtype != TOPS_DTYPE_INVALID) {
        TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("softmax: mask", d.mask));
        if (d.mask.dtype != TOPS_DTYPE_U8) {
            return Status(TOPS_ERROR_BAD_DTYPE, fmt("softmax: mask.dtype ", tops::capi::dtype_name(d.mask.dtype),
                                                    " must be u8 (0 = masked out)"));
        }
        p->mask = tops::layout_from_desc(d.mask);
        TOPS_RETURN_IF_ERROR(tops::capi::expand_broadcast("softmax: mask", p->x, -1, &p->mask));
    }
    if (d.lengths.dtype != TOPS_DTYPE_INVALID) {
        TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("softmax: lengths", d.lengths));
        if (d.lengths.dtype != TOPS_DTYPE_I32) {
            return Status(TOPS_ERROR_BAD_DTYPE, fmt("softmax: lengths.dtype ",
                                                    tops::capi::dtype_name(d.lengths.dtype), " must be i32"));
        }
        p->lengths = tops::layout_from_desc(d.lengths);
        TOPS_RETURN_IF_ERROR(tops::capi::expand_broadcast("softmax: lengths", p->x, p->axis, &p->lengths));
    }
    return Status::ok();
}

}  // namespace

extern "C" {

TOPS_API tops_softmax_desc_t tops_softmax_desc_default(void) {
    tops_softmax_desc_t d{};
    d.struct_size = sizeof(tops_softmax_desc_t);
    d.axis = -1;
    d.scale = 1.0f;
    return d;
}

TOPS_API tops_status_t tops_softmax_create(tops_context_t ctx, const tops_softmax_desc_t* desc, tops_op_t* op) {
    TOPS_CAPI_GUARD({
        Status st = tops::capi::check_create_args(ctx, "softmax", desc, op);
        if (!st.is_ok()) return tops::capi::report(st);
        tops::SoftmaxParams p;
        st = validate(*desc, &p);
        if (!st.is_ok()) return tops::capi::report(st);
        tops::capi::OpSignature sig;
        sig.op_name = "softmax";
        sig.summary = fmt("x:", tops::capi::describe(p.x), " y:", tops::capi::describe(p.y), " axis:", p.axis,
                          " scale:", p.scale, p.log ? " log" : "", p.mask.present() ? " mask" : "",
                          p.lengths.present() ? " lengths" : "");
        sig.input(TOPS_ARG_X, "x", p.x);
        sig.output(TOPS_ARG_Y, "y", p.y, tops::capi::arg_bit(TOPS_ARG_X));
        sig.optional_input(TOPS_ARG_MASK, "mask", p.mask);
        sig.optional_input(TOPS_ARG_LENGTHS, "lengths", p.lengths);
        return tops::capi::create_op(ctx, std::move(sig), op, [&](tops::Backend& b, int dev, tops::PlanPtr* out) {
            return b.plan_softmax(p, dev, out);
        });
    })
}

}  // extern "C"
