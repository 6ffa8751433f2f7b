// tops_reduce_create: validation of reduce descriptors. y is expanded to x's
// rank (stride 0 on reduced dims) for the backends.
#include "capi/internal.hpp"

namespace {

using tops::Status;
using tops::fmt;

tops::ReduceOp to_op(tops_reduce_op_t op) {
    switch (op) {
        case TOPS_REDUCE_MEAN: return tops::ReduceOp::mean;
        case TOPS_REDUCE_MAX: return tops::ReduceOp::max;
        case TOPS_REDUCE_MIN: return tops::ReduceOp::min;
        case TOPS_REDUCE_PROD: return tops::ReduceOp::prod;
        case TOPS_REDUCE_SUMSQ: return tops::ReduceOp::sumsq;
        case TOPS_REDUCE_NORM2: return tops::ReduceOp::norm2;
        default: return tops::ReduceOp::sum;
    }
}

Status validate(const tops_reduce_desc_t& d, tops::TensorLayout* y_user, tops::ReduceParams* p) {
    TOPS_RETURN_IF_ERROR(tops::capi::check_struct_size("reduce", d.struct_size, sizeof(tops_reduce_desc_t)));
    if (int(d.op) < int(TOPS_REDUCE_SUM) || int(d.op) > int(TOPS_REDUCE_NORM2)) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("reduce: op ", int(d.op), " is not a tops_reduce_op_t"));
    }
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("reduce: x", d.x));
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("reduce: y", d.y));
    if (!tops::is_float_dtype(d.x.dtype)) {
        return Status(TOPS_ERROR_BAD_DTYPE,
                      fmt("reduce: x.dtype ", tops::capi::dtype_name(d.x.dtype), " is not supported (f32, f16, bf16)"));
    }
    if (!tops::is_float_dtype(d.y.dtype)) {
        return Status(TOPS_ERROR_BAD_DTYPE,
                      fmt("reduce: y.dtype ", tops::capi::dtype_name(d.y.dtype), " is not supported (f32, f16, bf16)"));
    }
    if (d.x.rank < 32 && (d.axes >> d.x.rank) != 0) {
        return Status(TOPS_ERROR_BAD_AXIS, fmt("reduce: axes 0x", std::hex, d.axes, std::dec,
                                               " names a dim >= x.rank ", d.x.rank));
    }
    p->x = tops::layout_from_desc(d.x);
    *y_user = tops::layout_from_desc(d.y);
    // Expected y dims.
    int expect_rank = 0;
    int64_t expect[TOPS_MAX_RANK];
    for (int i = 0; i < d.x.rank; ++i) {
        const bool reduced = (d.axes >> i) & 1u;
        if (reduced && !d.keepdims) continue;
        expect[expect_rank++] = reduced ? 1 : d.x.dims[i];
    }
    if (d.y.rank != expect_rank) {
        return Status(TOPS_ERROR_BAD_RANK, fmt("reduce: y.rank ", d.y.rank, " should be ", expect_rank,
                                               d.keepdims ? " (keepdims)" : " (reduced dims removed)"));
    }
    for (int i = 0; i < expect_rank; ++i) {
        if (d.y.dims[i] != expect[i]) {
            return Status(TOPS_ERROR_BAD_SHAPE,
                          fmt("reduce: y.dims[", i, "] = ", d.y.dims[i], " should be ", expect[i]));
        }
    }
    TOPS_RETURN_IF_ERROR(tops::capi::check_no_self_overlap("reduce: y", *y_user));
    // Expand y to x's rank: reduced dims get x's size and stride 0.
    tops::TensorLayout y = p->x;
    y.dtype = d.y.dtype;
    for (int i = 0, j = 0; i < d.x.rank; ++i) {
        const bool reduced = (d.axes >> i) & 1u;
        if (reduced) {
            y.strides[i] = 0;
            if (d.keepdims) ++j;
        } else {
            y.strides[i] = d.y.strides[j++];
        }
    }
    p->y = y;
    p->axes = d.axes;
    p->op = to_op(d.op);
    return Status::ok();
}

}  // namespace

extern "C" {

TOPS_API tops_reduce_desc_t tops_reduce_desc_default(void) {
    tops_reduce_desc_t d{};
    d.struct_size = sizeof(tops_reduce_desc_t);
    d.op = TOPS_REDUCE_SUM;
    return d;
}

TOPS_API tops_status_t tops_reduce_create(tops_context_t ctx, const tops_reduce_desc_t* desc, tops_op_t* op) {
    TOPS_CAPI_GUARD({
        Status st = tops::capi::check_create_args(ctx, "reduce", desc, op);
        if (!st.is_ok()) return tops::capi::report(st);
        tops::ReduceParams p;
        tops::TensorLayout y_user;
        st = validate(*desc, &y_user, &p);
        if (!st.is_ok()) return tops::capi::report(st);
        static const char* const names[] = {"sum", "mean", "max", "min", "prod", "sumsq", "norm2"};
        tops::capi::OpSignature sig;
        sig.op_name = "reduce";
        sig.summary = fmt("op:", names[int(p.op)], " x:", tops::capi::describe(p.x), " y:",
                          tops::capi::describe(y_user), " axes:0x", std::hex, p.axes);
        sig.input(TOPS_ARG_X, "x", p.x);
        sig.output(TOPS_ARG_Y, "y", y_user, 0);
        return tops::capi::create_op(ctx, std::move(sig), op, [&](tops::Backend& b, int dev, tops::PlanPtr* out) {
            return b.plan_reduce(p, dev, out);
        });
    })
}

}  // extern "C"
