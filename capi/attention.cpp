// tops_attention_create: validation of attention descriptors (padded and
// varlen layouts, GQA, causal/windows, key padding, LSE output).
#include <cmath>

#include "capi/internal.hpp"

namespace {

using tops::Status;
using tops::TensorLayout;
using tops::fmt;

Status optional(const char* name, const tops_tensor_desc_t& d, TensorLayout* out) {
    if (d.dtype == TOPS_DTYPE_INVALID) return Status::ok();
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor(fmt("attention: ", name), d));
    *out = tops::layout_from_desc(d);
    return Status::ok();
}

Status check_i32_vector(const char* name, const TensorLayout& t, int64_t n) {
    if (t.dtype != TOPS_DTYPE_I32) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt("attention: ", name, ".dtype ", tops::capi::dtype_name(t.dtype), " must be i32"));
    }
    if (t.rank != 1 || t.dims[0] != n) {
        return Status(TOPS_ERROR_BAD_SHAPE, fmt("attention: ", name, " must be [", n, "] (rank ", t.rank,
                                                t.rank == 1 ? fmt(", dims[0] = ", t.dims[0]) : std::string(), ")"));
    }
    return Status::ok();
}

Status validate(const tops_attention_desc_t& d, tops::AttentionParams* p) {
    TOPS_RETURN_IF_ERROR(tops::capi::check_struct_size("attention", d.struct_size, sizeof(tops_attention_desc_t)));
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("attention: q", d.q));
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("attention: k", d.k));
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("attention: v", d.v));
    TOPS_RETURN_IF_ERROR(tops::capi::check_tensor("attention: o", d.o));
    p->q = tops::layout_from_desc(d.q);
    p->k = tops::layout_from_desc(d.k);
    p->v = tops::layout_from_desc(d.v);
    p->o = tops::layout_from_desc(d.o);
    TOPS_RETURN_IF_ERROR(optional("lse", d.lse, &p->lse));
    TOPS_RETURN_IF_ERROR(optional("seqlens_k", d.seqlens_k, &p->seqlens_k));
    TOPS_RETURN_IF_ERROR(optional("cu_seqlens_q", d.cu_seqlens_q, &p->cu_seqlens_q));
    TOPS_RETURN_IF_ERROR(optional("cu_seqlens_k", d.cu_seqlens_k, &p->cu_seqlens_k));
    if (!tops::is_float_dtype(d.q.dtype)) {
        return Status(TOPS_ERROR_BAD_DTYPE, fmt("attention: q.dtype ", tops::capi::dtype_name(d.q.dtype),
                                                " is not supported (f16, bf16; f32 on the CPU)"));
    }
    const char* names[] = {"k", "v", "o"};
    const TensorLayout* others[] = {&p->k, &p->v, &p->o};
    for (int i = 0; i < 3; ++i) {
        if (others[i]->dtype != p->q.dtype) {
            return Status(TOPS_ERROR_BAD_DTYPE, fmt("attention: ", names[i], ".dtype ", tops::capi::dtype_name(others[i]->dtype),
                                                    " differs from q.dtype ", tops::capi::dtype_name(p->q.dtype)));
        }
    }
    p->varlen = p->cu_seqlens_q.present() || p->cu_seqlens_k.present();
    const int rank = p->varlen ? 3 : 4;
    const char* layout = p->varlen ? "[total, heads, head_dim] (varlen)" : "[batch, seq, heads, head_dim]";
    const TensorLayout* all[] = {&p->q, &p->k, &p->v, &p->o};
    const char* all_names[] = {"q", "k", "v", "o"};
    for (int i = 0; i < 4; ++i) {
        if (all[i]->rank != rank) {
            return Status(TOPS_ERROR_BAD_RANK, fmt("attention: ", all_names[i], ".rank ", all[i]->rank, " must be ", rank, " ", layout));
        }
    }
    const int hd = rank - 1, hh = rank - 2, sd = rank - 3;
    p->head_dim = p->q.dims[hd];
    p->heads = p->q.dims[hh];
    p->kv_heads = p->k.dims[hh];
    for (int i = 1; i < 4; ++i) {
        if (all[i]->dims[hd] != p->head_dim) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt("attention: ", all_names[i], " head_dim ", all[i]->dims[hd],
                                                    " differs from q's ", p->head_dim));
        }
    }
    if (p->o.dims[hh] != p->heads || p->o.dims[sd] != p->q.dims[sd] || (!p->varlen && p->o.dims[0] != p->q.dims[0])) {
        return Status(TOPS_ERROR_BAD_SHAPE, "attention: o's dims must equal q's");
    }
    for (int i = 0; i < rank; ++i) {
        if (p->v.dims[i] != p->k.dims[i]) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt("attention: v.dims[", i, "] = ", p->v.dims[i], " differs from k.dims[",
                                                    i, "] = ", p->k.dims[i]));
        }
    }
    if (p->kv_heads < 1 || p->heads % p->kv_heads != 0) {
        return Status(TOPS_ERROR_BAD_SHAPE, fmt("attention: q heads ", p->heads, " is not a multiple of k/v heads ", p->kv_heads));
    }
    if (p->head_dim < 1) return Status(TOPS_ERROR_BAD_SHAPE, "attention: head_dim must be >= 1");
    if (p->varlen) {
        if (!p->cu_seqlens_q.present() || !p->cu_seqlens_k.present()) {
            return Status(TOPS_ERROR_INVALID_ARGUMENT, "attention: varlen needs both cu_seqlens_q and cu_seqlens_k");
        }
        if (p->cu_seqlens_q.rank != 1 || p->cu_seqlens_q.dims[0] < 1) {
            return Status(TOPS_ERROR_BAD_SHAPE, "attention: cu_seqlens_q must be [batch + 1]");
        }
        p->batch = p->cu_seqlens_q.dims[0] - 1;
        TOPS_RETURN_IF_ERROR(check_i32_vector("cu_seqlens_q", p->cu_seqlens_q, p->batch + 1));
        TOPS_RETURN_IF_ERROR(check_i32_vector("cu_seqlens_k", p->cu_seqlens_k, p->batch + 1));
        if (p->seqlens_k.present()) {
            return Status(TOPS_ERROR_INVALID_ARGUMENT, "attention: seqlens_k is for the padded layout; varlen uses cu_seqlens_k");
        }
        if (d.max_seqlen_q < 0 || d.max_seqlen_k < 0 || d.max_seqlen_q > p->q.dims[0] || d.max_seqlen_k > p->k.dims[0]) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt("attention: max_seqlen_q ", d.max_seqlen_q, " / max_seqlen_k ", d.max_seqlen_k,
                                                    " must be in [0, total_q ", p->q.dims[0], "] / [0, total_k ", p->k.dims[0], "]"));
        }
        p->seqlen_q = d.max_seqlen_q;
        p->seqlen_k = d.max_seqlen_k;
    } else {
        p->batch = p->q.dims[0];
        if (p->k.dims[0] != p->batch) {
            return Status(TOPS_ERROR_BAD_SHAPE, fmt("attention: k batch ", p->k.dims[0], " differs from q batch ", p->batch));
        }
        p->seqlen_q = p->q.dims[1];
        p->seqlen_k = p->k.dims[1];
        if (p->seqlens_k.present()) TOPS_RETURN_IF_ERROR(check_i32_vector("seqlens_k", p->seqlens_k, p->batch));
    }
    if (p->lse.present()) {
        if (p->lse.dtype != TOPS_DTYPE_F32) {
            return Status(TOPS_ERROR_BAD_DTYPE, fmt("attention: lse.dtype ", tops::capi::dtype_name(p->lse.dtype), " must be f32"));
        }
        TensorLayout want;
        want.rank = p->varlen ? 2 : 3;
        if (p->varlen) {
            want.dims[0] = p->heads;
            want.dims[1] = p->q.dims[0];
        } else {
            want.dims[0] = p->batch;
            want.dims[1] = p->heads;
            want.dims[2] = p->seqlen_q;
        }
        TOPS_RETURN_IF_ERROR(tops::capi::check_same_dims("attention: lse", p->lse,
                                                         p->varlen ? "[heads, total_q]" : "[batch, heads, seq_q]", want));
        TOPS_RETURN_IF_ERROR(tops::capi::check_no_self_overlap("attention: lse", p->lse));
    }
    TOPS_RETURN_IF_ERROR(tops::capi::check_no_self_overlap("attention: o", p->o));
    if (d.flags & ~TOPS_ATTN_CAUSAL) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("attention: unknown flags 0x", std::hex, d.flags));
    }
    if (d.window_left < -1 || d.window_right < -1) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("attention: window (", d.window_left, ", ", d.window_right,
                                                       ") must be -1 (unbounded) or >= 0"));
    }
    if (!std::isfinite(d.scale) || d.scale < 0.0f) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("attention: scale ", d.scale, " must be finite and >= 0 (0 = 1/sqrt(head_dim))"));
    }
    p->scale = d.scale > 0.0f ? d.scale : float(1.0 / std::sqrt(double(p->head_dim)));
    p->causal = (d.flags & TOPS_ATTN_CAUSAL) != 0;
    p->window_left = d.window_left;
    p->window_right = p->causal ? 0 : d.window_right;
    return Status::ok();
}

}  // namespace

extern "C" {

TOPS_API tops_attention_desc_t tops_attention_desc_default(void) {
    tops_attention_desc_t d{};
    d.struct_size = sizeof(tops_attention_desc_t);
    d.window_left = -1;
    d.window_right = -1;
    return d;
}

TOPS_API tops_status_t tops_attention_create(tops_context_t ctx, const tops_attention_desc_t* desc, tops_op_t* op) {
    TOPS_CAPI_GUARD({
        Status st = tops::capi::check_create_args(ctx, "attention", desc, op);
        if (!st.is_ok()) return tops::capi::report(st);
        tops::AttentionParams p;
        st = validate(*desc, &p);
        if (!st.is_ok()) return tops::capi::report(st);
        tops::capi::OpSignature sig;
        sig.op_name = "attention";
        sig.summary = fmt("q:", tops::capi::describe(p.q), " k:", tops::capi::describe(p.k), " v:",
                          tops::capi::describe(p.v), p.varlen ? " varlen" : "", p.causal ? " causal" : "",
                          " window:(", p.window_left, ",", p.window_right, ") scale:", p.scale,
                          p.seqlens_k.present() ? " seqlens_k" : "", p.lse.present() ? " lse" : "");
        sig.input(TOPS_ARG_Q, "q", p.q);
        sig.input(TOPS_ARG_K, "k", p.k);
        sig.input(TOPS_ARG_V, "v", p.v);
        sig.optional_input(TOPS_ARG_SEQLENS_K, "seqlens_k", p.seqlens_k);
        sig.optional_input(TOPS_ARG_CU_SEQLENS_Q, "cu_seqlens_q", p.cu_seqlens_q);
        sig.optional_input(TOPS_ARG_CU_SEQLENS_K, "cu_seqlens_k", p.cu_seqlens_k);
        sig.output(TOPS_ARG_O, "o", p.o, 0);
        if (p.lse.present()) sig.output(TOPS_ARG_LSE, "lse", p.lse, 0);
        return tops::capi::create_op(ctx, std::move(sig), op, [&](tops::Backend& b, int dev, tops::PlanPtr* out) {
            return b.plan_attention(p, dev, out);
        });
    })
}

}  // extern "C"
