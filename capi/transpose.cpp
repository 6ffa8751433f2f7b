// tops_transpose_create: validation of the transpose descriptor.
#include "capi/internal.hpp"

namespace {

using tops::Status;
using tops::fmt;

Status validate(const tops_transpose_desc_t& d, tops::TransposeParams* p) {
    TOPS_RETURN_IF_ERROR(tops::capi::check_struct_size("transpose", d.struct_size, sizeof(tops_transpose_desc_t)));
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("transpose: x", d.x));
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("transpose: y", d.y));
    if (d.y.dtype != d.x.dtype) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt("transpose: y.dtype ", tops::capi::dtype_name(d.y.dtype),
                                                " differs from x.dtype ", tops::capi::dtype_name(d.x.dtype)));
    }
    if (d.y.rank != d.x.rank) {
        return Status(TOPS_ERROR_BAD_RANK, fmt("transpose: y.rank ", d.y.rank, " differs from x.rank ", d.x.rank));
    }
    bool used[TOPS_MAX_RANK] = {};
    for (int k = 0; k < d.x.rank; ++k) {
        const int j = d.perm[k];
        if (j < 0 || j >= d.x.rank) {
            return Status(TOPS_ERROR_BAD_AXIS,
                          fmt("transpose: perm[", k, "] = ", j, " is outside [0, ", d.x.rank, ")"));
        }
        if (used[j]) {
            return Status(TOPS_ERROR_BAD_AXIS, fmt("transpose: perm[", k, "] = ", j, " repeats an earlier entry"));
        }
        used[j] = true;
        if (d.y.dims[k] != d.x.dims[j]) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt("transpose: y.dims[", k, "] = ", d.y.dims[k],
                                                    " differs from x.dims[perm[", k, "]] = x.dims[", j,
                                                    "] = ", d.x.dims[j]));
        }
        p->perm[k] = j;
    }
    p->x = tops::layout_from_desc(d.x);
    p->y = tops::layout_from_desc(d.y);
    TOPS_RETURN_IF_ERROR(tops::capi::check_no_self_overlap("transpose: y", p->y));
    return Status::ok();
}

}  // namespace

extern "C" {

TOPS_API tops_transpose_desc_t tops_transpose_desc_default(void) {
    tops_transpose_desc_t d{};
    d.struct_size = sizeof(tops_transpose_desc_t);
    for (int i = 0; i < TOPS_MAX_RANK; ++i) d.perm[i] = i;
    return d;
}

TOPS_API tops_status_t tops_transpose_create(tops_context_t ctx, const tops_transpose_desc_t* desc, tops_op_t* op) {
    TOPS_CAPI_GUARD({
        Status st = tops::capi::check_create_args(ctx, "transpose", desc, op);
        if (!st.is_ok()) return tops::capi::report(st);
        tops::TransposeParams p;
        st = validate(*desc, &p);
        if (!st.is_ok()) return tops::capi::report(st);
        std::string perm;
        for (int k = 0; k < p.x.rank; ++k) perm += fmt(k ? "," : "", p.perm[k]);
        tops::capi::OpSignature sig;
        sig.op_name = "transpose";
        sig.summary = fmt("x:", tops::capi::describe(p.x), " y:", tops::capi::describe(p.y), " perm:(", perm, ")");
        sig.input(TOPS_ARG_X, "x", p.x);
        sig.output(TOPS_ARG_Y, "y", p.y, 0);
        return tops::capi::create_op(ctx, std::move(sig), op, [&](tops::Backend& b, int dev, tops::PlanPtr* out) {
            return b.plan_transpose(p, dev, out);
        });
    })
}

}  // extern "C"
