// tops_gemm_create: validation of GEMM descriptors; transposes are folded into
// strides and every matrix is given rank 3 (src/common/params.hpp GemmParams).
#include <cmath>

#include "capi/internal.hpp"

namespace {

using tops::Status;
using tops::TensorLayout;
using tops::fmt;

// A rank-2 or rank-3 matrix desc -> (batch, rows, cols) with op() applied.
Status to_batched(const char* name, const tops_tensor_desc_t& d, bool trans, TensorLayout* out) {
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor(fmt("gemm: ", name), d));
    if (d.rank != 2 && d.rank != 3) {
        return Status(TOPS_ERROR_BAD_RANK, fmt("gemm: ", name, ".rank ", d.rank, " must be 2 or 3 ([batch,] rows, cols)"));
    }
    const int r = d.rank - 2;
    TensorLayout t;
    t.dtype = d.dtype;
    t.rank = 3;
    t.dims[0] = d.rank == 3 ? d.dims[0] : 1;
    t.strides[0] = d.rank == 3 ? d.strides[0] : 0;
    const int rows = trans ? r + 1 : r;
    const int cols = trans ? r : r + 1;
    t.dims[1] = d.dims[rows];
    t.strides[1] = d.strides[rows];
    t.dims[2] = d.dims[cols];
    t.strides[2] = d.strides[cols];
    *out = t;
    return Status::ok();
}

Status check_batch(const char* name, TensorLayout* t, int64_t batch) {
    if (t->dims[0] == batch) return Status::ok();
    if (t->dims[0] != 1) {
        return Status(TOPS_ERROR_BAD_SHAPE,
                      fmt("gemm: ", name, " batch ", t->dims[0], " is neither 1 nor d's batch ", batch));
    }
    t->dims[0] = batch;
    t->strides[0] = 0;
    return Status::ok();
}

Status validate(const tops_gemm_desc_t& desc, tops::GemmParams* p, std::string* summary) {
    TOPS_RETURN_IF_ERROR(tops::capi::check_struct_size("gemm", desc.struct_size, sizeof(tops_gemm_desc_t)));
    TOPS_RETURN_IF_ERROR(to_batched("a", desc.a, desc.trans_a != 0, &p->a));
    TOPS_RETURN_IF_ERROR(to_batched("b", desc.b, desc.trans_b != 0, &p->b));
    TOPS_RETURN_IF_ERROR(to_batched("d", desc.d, false, &p->d));
    const tops_dtype_t in = desc.a.dtype;
    if (!tops::is_float_dtype(in)) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt("gemm: a.dtype ", tops::capi::dtype_name(in), " is not supported (f32, f16, bf16)"));
    }
    if (desc.b.dtype != in) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt("gemm: b.dtype ", tops::capi::dtype_name(desc.b.dtype),
                                                " differs from a.dtype ", tops::capi::dtype_name(in)));
    }
    const tops_dtype_t out = desc.d.dtype;
    if (!(out == in || (out == TOPS_DTYPE_F32 && in != TOPS_DTYPE_F32))) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt("gemm: d.dtype ", tops::capi::dtype_name(out), " is not supported for ",
                                                tops::capi::dtype_name(in), " inputs (", tops::capi::dtype_name(in),
                                                in == TOPS_DTYPE_F32 ? "" : " or f32", ")"));
    }
    const int64_t batch = p->d.dims[0], m = p->d.dims[1], n = p->d.dims[2], k = p->a.dims[2];
    TOPS_RETURN_IF_ERROR(check_batch("a", &p->a, batch));
    TOPS_RETURN_IF_ERROR(check_batch("b", &p->b, batch));
    if (p->a.dims[1] != m) {
        return Status(TOPS_ERROR_BAD_SHAPE, fmt("gemm: op(a) has ", p->a.dims[1], " rows but d has ", m));
    }
    if (p->b.dims[2] != n) {
        return Status(TOPS_ERROR_BAD_SHAPE, fmt("gemm: op(b) has ", p->b.dims[2], " columns but d has ", n));
    }
    if (p->b.dims[1] != k) {
        return Status(TOPS_ERROR_BAD_SHAPE, fmt("gemm: op(a) has ", k, " columns but op(b) has ", p->b.dims[1], " rows"));
    }
    TOPS_RETURN_IF_ERROR(tops::capi::check_no_self_overlap("gemm: d", p->d));
    if (!std::isfinite(desc.alpha) || !std::isfinite(desc.beta)) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("gemm: alpha ", desc.alpha, " and beta ", desc.beta, " must be finite"));
    }
    if (int(desc.act) < int(TOPS_ACT_NONE) || int(desc.act) > int(TOPS_ACT_SILU)) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("gemm: act ", int(desc.act), " is not a tops_activation_t"));
    }
    if (desc.flags & ~TOPS_GEMM_ALLOW_TF32) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("gemm: unknown flags 0x", std::hex, desc.flags));
    }
    if (desc.beta != 0.0f) {
        if (desc.c.dtype == TOPS_DTYPE_INVALID) {
            return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("gemm: beta = ", desc.beta, " but c is absent"));
        }
        TOPS_RETURN_IF_ERROR(to_batched("c", desc.c, false, &p->c));
        if (desc.c.dtype != out) {
            return Status(TOPS_ERROR_BAD_DTYPE, fmt("gemm: c.dtype ", tops::capi::dtype_name(desc.c.dtype),
                                                    " differs from d.dtype ", tops::capi::dtype_name(out)));
        }
        TOPS_RETURN_IF_ERROR(check_batch("c", &p->c, batch));
        if (p->c.dims[1] != m || p->c.dims[2] != n) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt("gemm: c is ", p->c.dims[1], "x", p->c.dims[2], " but d is ", m, "x", n));
        }
    }
    if (desc.bias.dtype != TOPS_DTYPE_INVALID) {
        TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("gemm: bias", desc.bias));
        if (desc.bias.dtype != out) {
            return Status(TOPS_ERROR_BAD_DTYPE, fmt("gemm: bias.dtype ", tops::capi::dtype_name(desc.bias.dtype),
                                                    " differs from d.dtype ", tops::capi::dtype_name(out)));
        }
        if (desc.bias.rank != 1 || desc.bias.dims[0] != n) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt("gemm: bias must be [N] = [", n, "] (rank ", desc.bias.rank, ")"));
        }
        p->bias = tops::layout_from_desc(desc.bias);
    }
    p->alpha = desc.alpha;
    p->beta = desc.beta;
    p->act = tops::Activation(int(desc.act));
    p->allow_tf32 = (desc.flags & TOPS_GEMM_ALLOW_TF32) != 0;
    p->batch = batch;
    p->m = m;
    p->n = n;
    p->k = k;
    static const char* const acts[] = {"none", "relu", "gelu_erf", "gelu_tanh", "silu"};
    *summary = fmt("a:", tops::capi::describe(tops::layout_from_desc(desc.a)), desc.trans_a ? "^T" : "",
                   " b:", tops::capi::describe(tops::layout_from_desc(desc.b)), desc.trans_b ? "^T" : "",
                   " d:", tops::capi::describe(tops::layout_from_desc(desc.d)), " batch:", batch, " m:", m,
                   " n:", n, " k:", k, " alpha:", desc.alpha, " beta:", desc.beta, p->bias.present() ? " bias" : "",
                   " act:", acts[int(desc.act)], p->allow_tf32 ? " tf32" : "");
    return Status::ok();
}

}  // namespace

extern "C" {

TOPS_API tops_gemm_desc_t tops_gemm_desc_default(void) {
    tops_gemm_desc_t d{};
    d.struct_size = sizeof(tops_gemm_desc_t);
    d.alpha = 1.0f;
    d.act = TOPS_ACT_NONE;
    return d;
}

TOPS_API tops_status_t tops_gemm_create(tops_context_t ctx, const tops_gemm_desc_t* desc, tops_op_t* op) {
    TOPS_CAPI_GUARD({
        Status st = tops::capi::check_create_args(ctx, "gemm", desc, op);
        if (!st.is_ok()) return tops::capi::report(st);
        tops::GemmParams p;
        tops::capi::OpSignature sig;
        st = validate(*desc, &p, &sig.summary);
        if (!st.is_ok()) return tops::capi::report(st);
        sig.op_name = "gemm";
        // Aliasing on the caller's layouts (rank 3 views span the same bytes).
        sig.input(TOPS_ARG_A, "a", p.a);
        sig.input(TOPS_ARG_B, "b", p.b);
        sig.optional_input(TOPS_ARG_C, "c", p.c);
        sig.optional_input(TOPS_ARG_BIAS, "bias", p.bias);
        // D may be exactly C (the classic in-place beta update): each element
        // of C is read once, right before the same element of D is written.
        sig.output(TOPS_ARG_D, "d", p.d, tops::capi::arg_bit(TOPS_ARG_C));
        return tops::capi::create_op(ctx, std::move(sig), op, [&](tops::Backend& b, int dev, tops::PlanPtr* out) {
            return b.plan_gemm(p, dev, out);
        });
    })
}

}  // extern "C"
