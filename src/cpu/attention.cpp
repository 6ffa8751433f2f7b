// CPU plan of attention: maps the validated AttentionParams onto the flash
// kernel's (batch, seq, head, dim) strides, sizes the per-thread scratch for
// omp_get_max_threads() threads at plan time (O(threads * tile), independent
// of the sequence lengths) and clamps the thread count at execute so the
// workspace always suffices. Varlen offsets (cu_seqlens) and key lengths are
// host pointers here; the plan checks the offsets before the kernel trusts
// them (monotonic, inside the packed tensors, lengths within max_seqlen).
// The ISA is fixed at plan creation, so the reported kernel is the one that
// runs.
#include <omp.h>

#include <algorithm>
#include <limits>
#include <string>

#include "common/status.hpp"
#include "cpu/attention_kernels.hpp"
#include "cpu/isa.hpp"
#include "cpu/ops.hpp"
#include "cpu/parallel.hpp"

namespace tops::cpu {
namespace {

// Below ~4 MFLOP per extra thread, the fork costs more than it saves.
constexpr int64_t kGrainFlops = int64_t(1) << 22;

const char* dtype_tag(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F16: return "f16";
        case TOPS_DTYPE_BF16: return "bf16";
        default: return "f32";
    }
}

// "cu_seqlens_q" offsets: cu[0] >= 0, non-decreasing, cu[batch] <= total,
// every length <= max_len.
Status check_offsets(const char* name, const int32_t* cu, int64_t batch, int64_t total, int64_t max_len,
                     const char* max_name) {
    if (cu[0] < 0) return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("attention: ", name, "[0] = ", cu[0], " is negative"));
    for (int64_t b = 0; b < batch; ++b) {
        const int64_t len = int64_t(cu[b + 1]) - cu[b];
        if (len < 0) {
            return Status(TOPS_ERROR_INVALID_ARGUMENT,
                          fmt("attention: ", name, " decreases at ", b + 1, " (", cu[b], " -> ", cu[b + 1], ")"));
        }
        if (len > max_len) {
            return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("attention: ", name, "[", b + 1, "] - ", name, "[", b, "] = ",
                                                           len, " exceeds ", max_name, " ", max_len));
        }
    }
    if (cu[batch] > total) {
        return Status(TOPS_ERROR_INVALID_ARGUMENT,
                      fmt("attention: ", name, "[", batch, "] = ", cu[batch], " exceeds the packed length ", total));
    }
    return Status::ok();
}

class AttentionPlan final : public OpPlan {
public:
    AttentionPlan(const AttentionParams& p, Isa isa) : p_(p), isa_(isa), tile_(attention_tile(isa)) {
        max_threads_ = std::max(1, omp_get_max_threads());
        layout_ = attention_workspace_layout(tile_, p.head_dim, max_threads_);
        name_ = fmt("attention_", dtype_tag(p.q.dtype), "_flash_", tile_.rows, "x", tile_.nv * tile_.lanes, "_",
                    isa_name(isa));
        why_ = fmt("flash tiles of ", tile_.bq, " queries x ", tile_.bk, " keys with online softmax, S^T register tile ",
                   tile_.rows, "x", tile_.nv * tile_.lanes, ", scratch ", layout_.per_thread,
                   " bytes per thread for up to ", max_threads_, " threads; isa ", isa_name(isa),
                   " (TOPS_CPU_ISA / cpuid)");
    }

    size_t workspace_size() const override { return layout_.bytes; }
    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override { return why_; }

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        AttentionArgs a;
        a.q = args.in(TOPS_ARG_Q);
        a.k = args.in(TOPS_ARG_K);
        a.v = args.in(TOPS_ARG_V);
        a.o = args.out(TOPS_ARG_O);
        a.lse = p_.lse.present() ? static_cast<float*>(args.out(TOPS_ARG_LSE)) : nullptr;
        a.batch = p_.batch;
        a.heads = p_.heads;
        a.kv_heads = p_.kv_heads;
        a.head_dim = p_.head_dim;
        a.seqlen_q = p_.seqlen_q;
        a.seqlen_k = p_.seqlen_k;
        bshd_strides(p_.q, &a.q_bs, &a.q_ss, &a.q_hs, &a.q_ds);
        bshd_strides(p_.k, &a.k_bs, &a.k_ss, &a.k_hs, &a.k_ds);
        bshd_strides(p_.v, &a.v_bs, &a.v_ss, &a.v_hs, &a.v_ds);
        bshd_strides(p_.o, &a.o_bs, &a.o_ss, &a.o_hs, &a.o_ds);
        if (p_.varlen) {
            a.cu_seqlens_q = static_cast<const int32_t*>(args.in(TOPS_ARG_CU_SEQLENS_Q));
            a.cu_seqlens_k = static_cast<const int32_t*>(args.in(TOPS_ARG_CU_SEQLENS_K));
            TOPS_RETURN_IF_ERROR(
                check_offsets("cu_seqlens_q", a.cu_seqlens_q, p_.batch, p_.q.dims[0], p_.seqlen_q, "max_seqlen_q"));
            TOPS_RETURN_IF_ERROR(
                check_offsets("cu_seqlens_k", a.cu_seqlens_k, p_.batch, p_.k.dims[0], p_.seqlen_k, "max_seqlen_k"));
            if (a.lse) {
                a.lse_hs = p_.lse.strides[0];
                a.lse_ss = p_.lse.strides[1];
            }
        } else {
            if (p_.seqlens_k.present()) a.seqlens_k = static_cast<const int32_t*>(args.in(TOPS_ARG_SEQLENS_K));
            if (a.lse) {
                a.lse_bs = p_.lse.strides[0];
                a.lse_hs = p_.lse.strides[1];
                a.lse_ss = p_.lse.strides[2];
            }
        }
        a.scale = p_.scale;
        a.window_left = p_.window_left;
        a.window_right = p_.window_right;
        a.ws_layout = layout_;
        const auto base = reinterpret_cast<uintptr_t>(args.workspace);
        a.ws = reinterpret_cast<unsigned char*>(attention_align_up(size_t(base)));
        // In double: the product of valid dims may exceed int64 (only the thread count depends on it).
        const double flops_f = 4.0 * double(p_.batch) * double(p_.heads) * double(p_.seqlen_q) *
                               double(std::max<int64_t>(p_.seqlen_k, 1)) * double(p_.head_dim);
        const int64_t flops = flops_f < 9.0e18 ? int64_t(flops_f) : std::numeric_limits<int64_t>::max();
        a.threads = std::min(max_threads_, pick_threads(ctx.num_threads, flops, kGrainFlops));
        switch (p_.q.dtype) {
            case TOPS_DTYPE_F16: run(AttentionFlashKernel<TOPS_DTYPE_F16>{}, a); break;
            case TOPS_DTYPE_BF16: run(AttentionFlashKernel<TOPS_DTYPE_BF16>{}, a); break;
            default: run(AttentionFlashKernel<TOPS_DTYPE_F32>{}, a); break;
        }
        return Status::ok();
    }

private:
    // (batch, seq, head, dim) strides of a [B, S, H, D] tensor, or of a
    // varlen [total, H, D] one (batch stride 0).
    static void bshd_strides(const TensorLayout& t, int64_t* b, int64_t* s, int64_t* h, int64_t* d) {
        const int first = t.rank - 3;
        *b = first == 1 ? t.strides[0] : 0;
        *s = t.strides[first];
        *h = t.strides[first + 1];
        *d = t.strides[first + 2];
    }

    template <class F>
    void run(F f, const AttentionArgs& a) const {
        isa_dispatch_to(isa_, f, a);
    }

    AttentionParams p_;
    Isa isa_;
    AttentionTile tile_;
    AttentionWorkspaceLayout layout_;
    int max_threads_ = 1;
    std::string name_, why_;
};

}  // namespace

Status plan_attention(const AttentionParams& p, PlanPtr* out) {
    out->reset(new AttentionPlan(p, active_isa()));
    return Status::ok();
}

}  // namespace tops::cpu
