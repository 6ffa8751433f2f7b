// tops_norm_create: validation of LayerNorm / RMSNorm descriptors and their
// canonical rows x cols form (src/common/params.hpp NormParams).
#include <cmath>

#include "capi/internal.hpp"

namespace {

using tops::Status;
using tops::TensorLayout;
using tops::fmt;

// Dims [begin, end) of t as one dim: which dims ("leading" / "normalized") and what they
// must collapse to ("row" / "column") name them in the errors.
Status collapse(const char* name, const TensorLayout& t, int begin, int end, const char* which, const char* to,
                int64_t* size, int64_t* stride) {
    switch (tops::capi::collapse_dims(t, begin, end, size, stride)) {
        case tops::capi::Collapse::ok: return Status::ok();
        case tops::capi::Collapse::too_large:
            return Status(TOPS_ERROR_BAD_SHAPE, fmt("norm: the ", which, " dims of ", name, " ",
                                                    tops::capi::describe(t), " hold more than 2^63 - 1 elements"));
        default:
            return Status(TOPS_ERROR_NOT_SUPPORTED, fmt("norm: the ", which, " dims of ", name, " ",
                                                        tops::capi::describe(t), " do not collapse to one ", to,
                                                        " stride"));
    }
}

// x-shaped tensor -> (rows, cols).
Status to_rows(const char* name, const TensorLayout& t, int k, TensorLayout* out) {
    int64_t rows, row_stride, cols, col_stride;
    TOPS_RETURN_IF_ERROR(collapse(name, t, 0, t.rank - k, "leading", "row", &rows, &row_stride));
    TOPS_RETURN_IF_ERROR(collapse(name, t, t.rank - k, t.rank, "normalized", "column", &cols, &col_stride));
    *out = t;
    out->rank = 2;
    out->dims[0] = rows;
    out->dims[1] = cols;
    out->strides[0] = row_stride;
    out->strides[1] = col_stride;
    return Status::ok();
}

// Any-shaped tensor -> rank 1.
TensorLayout to_vector(const TensorLayout& t) {
    TensorLayout v = t;
    int64_t n, stride;
    // Callers check dims first; a non-collapsible vector keeps the failure visible.
    if (tops::capi::collapse_dims(t, 0, t.rank, &n, &stride) != tops::capi::Collapse::ok) return TensorLayout{};
    v.rank = 1;
    v.dims[0] = n;
    v.strides[0] = stride;
    return v;
}

Status optional_tensor(const char* name, const tops_tensor_desc_t& d, TensorLayout* out) {
    if (d.dtype == TOPS_DTYPE_INVALID) return Status::ok();
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor(fmt("norm: ", name), d));
    *out = tops::layout_from_desc(d);
    return Status::ok();
}

// gamma / beta / bias: x's trailing k dims, x's dtype or f32.
Status check_param_vector(const char* name, const TensorLayout& t, const TensorLayout& x, int k,
                          TensorLayout* out) {
    if (!t.present()) return Status::ok();
    if (t.dtype != x.dtype && t.dtype != TOPS_DTYPE_F32) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt("norm: ", name, ".dtype ", tops::capi::dtype_name(t.dtype),
                                                " must be x's dtype (", tops::capi::dtype_name(x.dtype), ") or f32"));
    }
    TensorLayout tail = x;
    tail.rank = k;
    for (int i = 0; i < k; ++i) tail.dims[i] = x.dims[x.rank - k + i];
    TOPS_RETURN_IF_ERROR(tops::capi::check_same_dims(fmt("norm: ", name), t, "x's normalized dims", tail));
    *out = to_vector(t);
    if (!out->present()) {
        return Status(TOPS_ERROR_NOT_SUPPORTED, fmt("norm: ", name, " does not collapse to one stride"));
    }
    return Status::ok();
}

// mean / rstd: f32, x's leading dims.
Status check_stat_vector(const char* name, const TensorLayout& t, const TensorLayout& x, int k,
                         TensorLayout* out) {
    if (!t.present()) return Status::ok();
    if (t.dtype != TOPS_DTYPE_F32) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt("norm: ", name, ".dtype ", tops::capi::dtype_name(t.dtype), " must be f32"));
    }
    TensorLayout lead = x;
    lead.rank = x.rank - k;
    TOPS_RETURN_IF_ERROR(tops::capi::check_same_dims(fmt("norm: ", name), t, "x's leading dims", lead));
    TOPS_RETURN_IF_ERROR(tops::capi::check_no_self_overlap(fmt("norm: ", name), t));
    *out = to_vector(t);
    if (!out->present()) {
        return Status(TOPS_ERROR_NOT_SUPPORTED, fmt("norm: ", name, " does not collapse to one stride"));
    }
    return Status::ok();
}

// x-shaped tensor: x's dtype and dims.
Status check_row_tensor(const char* name, const TensorLayout& t, const TensorLayout& x, bool output) {
    if (t.dtype != x.dtype) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt("norm: ", name, ".dtype ", tops::capi::dtype_name(t.dtype),
                                                " differs from x.dtype ", tops::capi::dtype_name(x.dtype)));
    }
    TOPS_RETURN_IF_ERROR(tops::capi::check_same_dims(fmt("norm: ", name), t, "x", x));
    if (output) TOPS_RETURN_IF_ERROR(tops::capi::check_no_self_overlap(fmt("norm: ", name), t));
    return Status::ok();
}

struct Raw {
    TensorLayout x, y, gamma, beta, bias, residual, prenorm, mean, rstd;
};

Status validate(const tops_norm_desc_t& d, Raw* r, tops::NormParams* p) {
    TOPS_RETURN_IF_ERROR(tops::capi::check_struct_size("norm", d.struct_size, sizeof(tops_norm_desc_t)));
    if (d.kind != TOPS_NORM_LAYER && d.kind != TOPS_NORM_RMS) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("norm: kind ", int(d.kind), " is not a tops_norm_kind_t"));
    }
    const bool rms = d.kind == TOPS_NORM_RMS;
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("norm: x", d.x));
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("norm: y", d.y));
    r->x = tops::layout_from_desc(d.x);
    r->y = tops::layout_from_desc(d.y);
    if (!tops::is_float_dtype(d.x.dtype)) {
        return Status(TOPS_ERROR_BAD_DTYPE,
                      fmt("norm: x.dtype ", tops::capi::dtype_name(d.x.dtype), " is not supported (f32, f16, bf16)"));
    }
    const int k = d.normalized_rank;
    if (k < 1 || k > d.x.rank) {
        return Status(TOPS_ERROR_BAD_AXIS,
                      fmt("norm: normalized_rank ", k, " is outside [1, x.rank = ", d.x.rank, "]"));
    }
    if (!(d.eps >= 0.0f) || !std::isfinite(d.eps)) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("norm: eps ", d.eps, " must be finite and >= 0"));
    }
    TOPS_RETURN_IF_ERROR(check_row_tensor("y", r->y, r->x, true));
    TOPS_RETURN_IF_ERROR(optional_tensor("gamma", d.gamma, &r->gamma));
    TOPS_RETURN_IF_ERROR(optional_tensor("beta", d.beta, &r->beta));
    TOPS_RETURN_IF_ERROR(optional_tensor("bias", d.bias, &r->bias));
    TOPS_RETURN_IF_ERROR(optional_tensor("residual", d.residual, &r->residual));
    TOPS_RETURN_IF_ERROR(optional_tensor("prenorm", d.prenorm, &r->prenorm));
    TOPS_RETURN_IF_ERROR(optional_tensor("mean", d.mean, &r->mean));
    TOPS_RETURN_IF_ERROR(optional_tensor("rstd", d.rstd, &r->rstd));
    if (rms && r->beta.present()) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, "norm: beta is given but RMSNorm has no shift");
    }
    if (rms && r->mean.present()) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, "norm: mean is requested but RMSNorm computes no mean");
    }
    if (r->residual.present()) TOPS_RETURN_IF_ERROR(check_row_tensor("residual", r->residual, r->x, false));
    if (r->prenorm.present()) TOPS_RETURN_IF_ERROR(check_row_tensor("prenorm", r->prenorm, r->x, true));
    TOPS_RETURN_IF_ERROR(check_param_vector("gamma", r->gamma, r->x, k, &p->gamma));
    TOPS_RETURN_IF_ERROR(check_param_vector("beta", r->beta, r->x, k, &p->beta));
    TOPS_RETURN_IF_ERROR(check_param_vector("bias", r->bias, r->x, k, &p->bias));
    TOPS_RETURN_IF_ERROR(check_stat_vector("mean", r->mean, r->x, k, &p->mean));
    TOPS_RETURN_IF_ERROR(check_stat_vector("rstd", r->rstd, r->x, k, &p->rstd));
    TOPS_RETURN_IF_ERROR(to_rows("x", r->x, k, &p->x));
    TOPS_RETURN_IF_ERROR(to_rows("y", r->y, k, &p->y));
    if (r->residual.present()) TOPS_RETURN_IF_ERROR(to_rows("residual", r->residual, k, &p->residual));
    if (r->prenorm.present()) TOPS_RETURN_IF_ERROR(to_rows("prenorm", r->prenorm, k, &p->prenorm));
    p->rms = rms;
    p->eps = d.eps;
    return Status::ok();
}

}  // namespace

extern "C" {

TOPS_API tops_norm_desc_t tops_norm_desc_default(void) {
    tops_norm_desc_t d{};
    d.struct_size = sizeof(tops_norm_desc_t);
    d.kind = TOPS_NORM_LAYER;
    d.normalized_rank = 1;
    d.eps = 1e-5f;
    return d;
}

TOPS_API tops_status_t tops_norm_create(tops_context_t ctx, const tops_norm_desc_t* desc, tops_op_t* op) {
    TOPS_CAPI_GUARD({
        Status st = tops::capi::check_create_args(ctx, "norm", desc, op);
        if (!st.is_ok()) return tops::capi::report(st);
        Raw r;
        tops::NormParams p;
        st = validate(*desc, &r, &p);
        if (!st.is_ok()) return tops::capi::report(st);
        tops::capi::OpSignature sig;
        sig.op_name = p.rms ? "rmsnorm" : "layernorm";
        sig.summary = fmt("x:", tops::capi::describe(r.x), " y:", tops::capi::describe(r.y),
                          " normalized_rank:", desc->normalized_rank, " eps:", p.eps,
                          r.gamma.present() ? " gamma" : "", r.beta.present() ? " beta" : "",
                          r.bias.present() ? " bias" : "", r.residual.present() ? " residual" : "",
                          r.prenorm.present() ? " prenorm" : "", r.mean.present() ? " mean" : "",
                          r.rstd.present() ? " rstd" : "");
        // Aliasing is checked on the caller's shapes (the canonical 2-D forms span the same bytes).
        sig.input(TOPS_ARG_X, "x", r.x);
        sig.optional_input(TOPS_ARG_RESIDUAL, "residual", r.residual);
        sig.optional_input(TOPS_ARG_GAMMA, "gamma", r.gamma);
        sig.optional_input(TOPS_ARG_BETA, "beta", r.beta);
        sig.optional_input(TOPS_ARG_BIAS, "bias", r.bias);
        using tops::capi::arg_bit;
        const uint64_t row_inputs = arg_bit(TOPS_ARG_X) | arg_bit(TOPS_ARG_RESIDUAL);
        sig.output(TOPS_ARG_Y, "y", r.y, row_inputs);
        if (r.prenorm.present()) sig.output(TOPS_ARG_PRENORM, "prenorm", r.prenorm, row_inputs);
        if (r.mean.present()) sig.output(TOPS_ARG_MEAN, "mean", r.mean, 0);
        if (r.rstd.present()) sig.output(TOPS_ARG_RSTD, "rstd", r.rstd, 0);
        return tops::capi::create_op(ctx, std::move(sig), op, [&](tops::Backend& b, int dev, tops::PlanPtr* out) {
            return b.plan_norm(p, dev, out);
        });
    })
}

}  // extern "C"
