// tops_unpad_create / tops_pad_create: validation of the padding-removal
// descriptor and its canonical form (padded (B, S, F), packed (total, F)).
#include <climits>

#include "capi/internal.hpp"

namespace {

using tops::Status;
using tops::TensorLayout;
using tops::fmt;

Status check_i32_vector(const char* op, const char* name, const TensorLayout& t, int64_t n, const char* shape) {
    if (t.dtype != TOPS_DTYPE_I32) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt(op, ": ", name, ".dtype ", tops::capi::dtype_name(t.dtype), " must be i32"));
    }
    if (t.rank != 1 || t.dims[0] != n) {
        return Status(TOPS_ERROR_BAD_SHAPE, fmt(op, ": ", name, " must be ", shape, " = [", n, "] (rank ", t.rank,
                                                t.rank == 1 ? fmt(", dims[0] = ", t.dims[0]) : std::string(), ")"));
    }
    return Status::ok();
}

// Collapses dims [begin, rank) of t into one feature dim; `out` becomes rank
// begin + 1 with the leading dims unchanged.
Status collapse_features(const char* op, const char* name, const TensorLayout& t, int begin, TensorLayout* out) {
    int64_t size = 0, stride = 0;
    const std::string dims = fmt(op, ": ", name, " ", tops::capi::describe(t), ": the feature dims [", begin, ", ",
                                 t.rank, ")");
    switch (tops::capi::collapse_dims(t, begin, t.rank, &size, &stride)) {
        case tops::capi::Collapse::ok: break;
        case tops::capi::Collapse::too_large:
            return Status(TOPS_ERROR_BAD_SHAPE, fmt(dims, " hold more than 2^63 - 1 elements"));
        default:
            return Status(TOPS_ERROR_BAD_STRIDE, fmt(dims, " do not collapse to one dim of a single stride"));
    }
    *out = t;
    out->rank = begin + 1;
    out->dims[begin] = size;
    out->strides[begin] = stride;
    for (int i = begin + 1; i < tops::kMaxRank; ++i) out->dims[i] = out->strides[i] = 0;
    return Status::ok();
}

Status validate(const char* op, bool unpad, const tops_pad_desc_t& d, tops::PadParams* p) {
    TOPS_RETURN_IF_ERROR(tops::capi::check_struct_size(op, d.struct_size, sizeof(tops_pad_desc_t)));
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor(fmt(op, ": padded"), d.padded));
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor(fmt(op, ": packed"), d.packed));
    if (d.cu_seqlens.dtype == TOPS_DTYPE_INVALID) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt(op, ": cu_seqlens is required (i32 [batch + 1])"));
    }
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor(fmt(op, ": cu_seqlens"), d.cu_seqlens));
    if (unpad) {
        if (d.lengths.dtype == TOPS_DTYPE_INVALID) {
            return Status(TOPS_ERROR_INVALID_ARGUMENT, "unpad: lengths is required (i32 [batch])");
        }
        TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("unpad: lengths", d.lengths));
    } else if (d.lengths.dtype != TOPS_DTYPE_INVALID) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, "pad: lengths must be absent (pad reads the offsets from cu_seqlens)");
    }
    const TensorLayout padded = tops::layout_from_desc(d.padded);
    const TensorLayout packed = tops::layout_from_desc(d.packed);
    if (padded.rank < 2) {
        return Status(TOPS_ERROR_BAD_RANK, fmt(op, ": padded.rank ", padded.rank, " must be >= 2 ([batch, seq, features...])"));
    }
    if (packed.rank != padded.rank - 1) {
        return Status(TOPS_ERROR_BAD_RANK, fmt(op, ": packed.rank ", packed.rank, " must be padded.rank - 1 = ", padded.rank - 1,
                                               " ([total, features...])"));
    }
    if (packed.dtype != padded.dtype) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt(op, ": packed.dtype ", tops::capi::dtype_name(packed.dtype),
                                                " differs from padded.dtype ", tops::capi::dtype_name(padded.dtype)));
    }
    for (int i = 2; i < padded.rank; ++i) {
        if (packed.dims[i - 1] != padded.dims[i]) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt(op, ": packed.dims[", i - 1, "] = ", packed.dims[i - 1],
                                                    " differs from padded.dims[", i, "] = ", padded.dims[i]));
        }
    }
    if (packed.dims[0] > INT32_MAX) {
        return Status(TOPS_ERROR_BAD_SHAPE, fmt(op, ": packed.dims[0] = ", packed.dims[0],
                                                " does not fit the i32 cu_seqlens (at most ", INT32_MAX, ")"));
    }
    p->unpad = unpad;
    p->batch = padded.dims[0];
    p->seqlen = padded.dims[1];
    p->total = packed.dims[0];
    TOPS_RETURN_IF_ERROR(collapse_features(op, "padded", padded, 2, &p->padded));
    TOPS_RETURN_IF_ERROR(collapse_features(op, "packed", packed, 1, &p->packed));
    p->features = p->padded.dims[2];
    p->cu_seqlens = tops::layout_from_desc(d.cu_seqlens);
    TOPS_RETURN_IF_ERROR(check_i32_vector(op, "cu_seqlens", p->cu_seqlens, p->batch + 1, "[batch + 1]"));
    if (unpad) {
        p->lengths = tops::layout_from_desc(d.lengths);
        TOPS_RETURN_IF_ERROR(check_i32_vector(op, "lengths", p->lengths, p->batch, "[batch]"));
        TOPS_RETURN_IF_ERROR(tops::capi::check_no_self_overlap("unpad: packed", p->packed));
        TOPS_RETURN_IF_ERROR(tops::capi::check_no_self_overlap("unpad: cu_seqlens", p->cu_seqlens));
    } else {
        TOPS_RETURN_IF_ERROR(tops::capi::check_no_self_overlap("pad: padded", p->padded));
    }
    return Status::ok();
}

tops_status_t create(const char* op_name, bool unpad, tops_context_t ctx, const tops_pad_desc_t* desc, tops_op_t* op) {
    Status st = tops::capi::check_create_args(ctx, op_name, desc, op);
    if (!st.is_ok()) return tops::capi::report(st);
    tops::PadParams p;
    st = validate(op_name, unpad, *desc, &p);
    if (!st.is_ok()) return tops::capi::report(st);
    tops::capi::OpSignature sig;
    sig.op_name = op_name;
    sig.summary = fmt("padded:", tops::capi::describe(p.padded), " packed:", tops::capi::describe(p.packed),
                      " cu_seqlens:", tops::capi::describe(p.cu_seqlens));
    if (unpad) {
        sig.input(TOPS_ARG_X, "padded", p.padded);
        sig.input(TOPS_ARG_LENGTHS, "lengths", p.lengths);
        sig.output(TOPS_ARG_Y, "packed", p.packed, 0);
        sig.output(TOPS_ARG_CU_SEQLENS, "cu_seqlens", p.cu_seqlens, 0);
    } else {
        sig.input(TOPS_ARG_X, "packed", p.packed);
        sig.input(TOPS_ARG_CU_SEQLENS, "cu_seqlens", p.cu_seqlens);
        sig.output(TOPS_ARG_Y, "padded", p.padded, 0);
    }
    return tops::capi::create_op(ctx, std::move(sig), op, [&](tops::Backend& b, int dev, tops::PlanPtr* out) {
        return b.plan_pad(p, dev, out);
    });
}

}  // namespace

extern "C" {

TOPS_API tops_pad_desc_t tops_pad_desc_default(void) {
    tops_pad_desc_t d{};
    d.struct_size = sizeof(tops_pad_desc_t);
    return d;
}

TOPS_API tops_status_t tops_unpad_create(tops_context_t ctx, const tops_pad_desc_t* desc, tops_op_t* op) {
    TOPS_CAPI_GUARD({ return create("unpad", true, ctx, desc, op); })
}

TOPS_API tops_status_t tops_pad_create(tops_context_t ctx, const tops_pad_desc_t* desc, tops_op_t* op) {
    TOPS_CAPI_GUARD({ return create("pad", false, ctx, desc, op); })
}

}  // extern "C"
