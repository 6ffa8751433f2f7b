// CUDA plan of attention: picks the compiled tile configuration for the head
// dim (attention_configs.cuh; decode tiles when Sq <= kDecodeMaxSq), decides
// at create time whether to split the key range (split-KV: when the query
// tiles alone fill less than one wave of the GPU), and sizes the workspace
// for the f32 partials of the splits: splits * rows * heads * (head_dim + 1)
// floats, O(B * H * Sq), never Sq x Sk. Execute only launches (no allocation,
// no synchronization: capturable in a CUDA graph). cu_seqlens and seqlens_k
// live on the device and are trusted as documented in tops.h (clamped to
// [0, Sk] for seqlens_k). TOPS_ATTENTION_SPLITS=n (n >= 1) overrides the
// split count at create time (tests use it to cover both paths on any GPU).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/attention_configs.cuh"
#include "cuda/attention_params.hpp"
#include "cuda/attention_sm90.hpp"
#include "cuda/ops.hpp"

namespace tops::cuda {
namespace {

using attn::CombineParams;
using attn::FwdParams;
using attn::KernelConfig;

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kSupportedDims[] = {32, 64, 96, 128, 256};
constexpr size_t kWorkspaceAlign = 256;
constexpr int kQkvVecBytes = 16;
constexpr int kOVecBytes = 4;
// Split-KV: aim for this many waves of blocks, and keep >= kMinTilesPerSplit
// key tiles per split so the partial writes stay small next to the K/V reads.
constexpr int kSplitWaves = 2;
constexpr int kMinTilesPerSplit = 2;

size_t align_up(size_t v) { return (v + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// (batch, seq, head, dim) strides of a [B, S, H, D] or varlen [T, H, D]
// tensor; strides of extent-1 dims do not matter and become 0.
void bshd(const TensorLayout& t, int64_t* b, int64_t* s, int64_t* h, int64_t* d) {
    const int first = t.rank - 3;
    auto st = [&](int i) { return t.dims[i] == 1 ? int64_t(0) : t.strides[i]; };
    *b = first == 1 ? st(0) : 0;
    *s = st(first);
    *h = st(first + 1);
    *d = t.dims[first + 2] == 1 ? 1 : t.strides[first + 2];
}

bool vec_strides(int64_t b, int64_t s, int64_t h, int64_t d, int64_t elems) {
    return d == 1 && b % elems == 0 && s % elems == 0 && h % elems == 0;
}

class AttentionPlanCuda final : public OpPlan {
public:
    AttentionPlanCuda(const AttentionParams& ap, const KernelConfig& k, FwdParams base, int64_t grid, size_t ws,
                      bool vec_qkv_strides, bool vec_o_strides, bool vec16_o_strides, bool sm90, int device,
                      std::string why)
        : ap_(ap), k_(k), base_(base), grid_(grid), ws_(ws), vec_qkv_strides_(vec_qkv_strides),
          vec_o_strides_(vec_o_strides), vec16_o_strides_(vec16_o_strides), sm90_(sm90), device_(device),
          why_(std::move(why)) {}

    size_t workspace_size() const override { return ws_; }
    const char* kernel_name() const override {
        return sm90_ ? attn::sm90_kernel_name(ap_.q.dtype, int(ap_.head_dim)) : k_.name;
    }
    std::string reason() const override { return why_; }

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (grid_ == 0) return Status::ok();
        DeviceScope scope(device_);
        TOPS_RETURN_IF_ERROR(scope.status());
        FwdParams p = base_;
        p.q = args.in(TOPS_ARG_Q);
        p.k = args.in(TOPS_ARG_K);
        p.v = args.in(TOPS_ARG_V);
        p.o = args.out(TOPS_ARG_O);
        p.lse = ap_.lse.present() ? static_cast<float*>(args.out(TOPS_ARG_LSE)) : nullptr;
        if (ap_.varlen) {
            p.cu_q = static_cast<const int32_t*>(args.in(TOPS_ARG_CU_SEQLENS_Q));
            p.cu_k = static_cast<const int32_t*>(args.in(TOPS_ARG_CU_SEQLENS_K));
        } else if (ap_.seqlens_k.present()) {
            p.seqlens_k = static_cast<const int32_t*>(args.in(TOPS_ARG_SEQLENS_K));
        }
        const auto stream = static_cast<cudaStream_t>(ctx.stream);
        // The Hopper kernel when TMA can take these pointers (else the
        // mma.sync kernel below, planned alongside).
        if (sm90_ && attn::sm90_pointers_ok(p)) return attn::launch_sm90(p, ap_.q.dtype, int(ap_.head_dim), stream);
        p.vec_qkv = vec_qkv_strides_ && aligned(p.q, kQkvVecBytes) && aligned(p.k, kQkvVecBytes) &&
                    aligned(p.v, kQkvVecBytes);
        p.vec_o = vec_o_strides_ && aligned(p.o, kOVecBytes);
        p.vec16_o = vec16_o_strides_ && aligned(p.o, kQkvVecBytes);
        if (p.splits > 1) {
            const size_t o_bytes = align_up(size_t(p.splits) * size_t(p.part_rows) * size_t(p.heads) *
                                            size_t(ap_.head_dim) * sizeof(float));
            auto* ws = static_cast<unsigned char*>(args.workspace);
            p.part_o = reinterpret_cast<float*>(ws);
            p.part_lse = reinterpret_cast<float*>(ws + o_bytes);
        }
        cudaError_t err = k_.launch_fwd(p, unsigned(grid_), stream);
        if (err != cudaSuccess) return cuda_status(err, k_.name, TOPS_ERROR_DEVICE_LAUNCH);
        if (p.splits > 1) {
            CombineParams c{};
            c.part_o = p.part_o;
            c.part_lse = p.part_lse;
            c.o = p.o;
            c.lse = p.lse;
            c.cu_q = p.cu_q;
            c.o_bs = p.o_bs, c.o_ss = p.o_ss, c.o_hs = p.o_hs, c.o_ds = p.o_ds;
            c.lse_bs = p.lse_bs, c.lse_hs = p.lse_hs, c.lse_ss = p.lse_ss;
            c.part_rows = p.part_rows;
            c.batch = p.batch, c.heads = p.heads, c.seqlen_q = p.seqlen_q;
            c.head_dim = int(ap_.head_dim);
            c.splits = p.splits;
            const int64_t items = int64_t(p.batch) * p.seqlen_q * p.heads;
            const unsigned cgrid = unsigned((items + attn::kCombineWarps - 1) / attn::kCombineWarps);
            err = k_.launch_combine(c, cgrid, stream);
            if (err != cudaSuccess) return cuda_status(err, "attention_combine", TOPS_ERROR_DEVICE_LAUNCH);
        }
        return Status::ok();
    }

private:
    AttentionParams ap_;
    KernelConfig k_;
    FwdParams base_;
    int64_t grid_;
    size_t ws_;
    bool vec_qkv_strides_, vec_o_strides_, vec16_o_strides_;
    bool sm90_;
    int device_;
    std::string why_;
};

std::string supported_dims() {
    std::string s;
    for (int d : kSupportedDims) s += (s.empty() ? "" : ", ") + std::to_string(d);
    return s;
}

}  // namespace

Status plan_attention(const AttentionParams& ap, const DeviceInfo& dev, PlanPtr* out) {
    int count = 0;
    const KernelConfig* table = nullptr;
    if (ap.q.dtype == TOPS_DTYPE_F16) {
        table = attn::kernels_f16(&count);
    } else if (ap.q.dtype == TOPS_DTYPE_BF16) {
        table = attn::kernels_bf16(&count);
    } else {
        return Status(TOPS_ERROR_NOT_SUPPORTED, "attention: dtype f32 is not supported on CUDA (f16, bf16; f32 runs on the CPU)");
    }
    const bool decode = ap.seqlen_q <= attn::kDecodeMaxSq;
    // The best-matching configuration of the head dim: decode flag first,
    // then the row kind (attn::RowKind); TOPS_ATTENTION_CONFIG=<substring of
    // a kernel name> picks another compiled one of the same head dim (tuning).
    // Varlen rows end at each sequence's own length, so like a right bound
    // they cut the last key tile of a row block: the banded tiles waste less.
    const int rows = ap.window_right >= 0 || ap.varlen ? attn::kBanded : attn::kFull;
    const char* forced = std::getenv("TOPS_ATTENTION_CONFIG");
    const KernelConfig* k = nullptr;
    int best = -1;
    for (int i = 0; i < count; ++i) {
        const KernelConfig& c = table[i];
        if (c.head_dim != ap.head_dim) continue;
        if (forced && *forced && std::strstr(c.name, forced)) {
            k = &c;
            break;
        }
        const int score = (c.decode == decode ? 4 : 0) + (c.rows == rows ? 2 : 0) + (c.rows == attn::kAnyRows ? 1 : 0);
        if (score > best) {
            best = score;
            k = &c;
        }
    }
    if (!k) {
        return Status(TOPS_ERROR_NOT_SUPPORTED, fmt("attention: head_dim ", ap.head_dim,
                                                    " not supported on CUDA (supported: ", supported_dims(), ")"));
    }
    if (k->smem_bytes > dev.max_smem_per_block_optin) {
        return Status(TOPS_ERROR_NOT_SUPPORTED, fmt("attention: head_dim ", ap.head_dim, " tiles (", k->name, ") need ",
                                                    k->smem_bytes, " bytes of shared memory per block, device ",
                                                    dev.ordinal, " allows ", dev.max_smem_per_block_optin));
    }
    DeviceScope scope(dev.ordinal);
    TOPS_RETURN_IF_ERROR(scope.status());
    TOPS_RETURN_IF_ERROR(cuda_status(
        cudaFuncSetAttribute(k->fwd, cudaFuncAttributeMaxDynamicSharedMemorySize, k->smem_bytes), k->name));
    int occupancy = 0;
    TOPS_RETURN_IF_ERROR(cuda_status(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occupancy, k->fwd, k->threads, size_t(k->smem_bytes)), k->name));
    occupancy = std::max(occupancy, 1);

    FwdParams p{};
    bshd(ap.q, &p.q_bs, &p.q_ss, &p.q_hs, &p.q_ds);
    bshd(ap.k, &p.k_bs, &p.k_ss, &p.k_hs, &p.k_ds);
    bshd(ap.v, &p.v_bs, &p.v_ss, &p.v_hs, &p.v_ds);
    bshd(ap.o, &p.o_bs, &p.o_ss, &p.o_hs, &p.o_ds);
    if (ap.lse.present()) {
        if (ap.varlen) {
            p.lse_hs = ap.lse.strides[0];
            p.lse_ss = ap.lse.strides[1];
        } else {
            p.lse_bs = ap.lse.strides[0];
            p.lse_hs = ap.lse.strides[1];
            p.lse_ss = ap.lse.strides[2];
        }
    }
    const int64_t elems16 = kQkvVecBytes / 2;  // f16 / bf16 elements per 16 bytes
    const bool vec_qkv = vec_strides(p.q_bs, p.q_ss, p.q_hs, p.q_ds, elems16) &&
                         vec_strides(p.k_bs, p.k_ss, p.k_hs, p.k_ds, elems16) &&
                         vec_strides(p.v_bs, p.v_ss, p.v_hs, p.v_ds, elems16);
    const bool vec_o = vec_strides(p.o_bs, p.o_ss, p.o_hs, p.o_ds, 2);
    const bool vec16_o = vec_strides(p.o_bs, p.o_ss, p.o_hs, p.o_ds, elems16);

    p.batch = int(ap.batch);
    p.heads = int(ap.heads);
    p.group = int(ap.heads / ap.kv_heads);
    p.seqlen_q = int(ap.seqlen_q);
    p.seqlen_k = int(ap.seqlen_k);
    p.scale_log2 = ap.scale * kLog2e;
    p.window_left = ap.window_left;
    p.window_right = ap.window_right;
    p.part_rows = ap.varlen ? ap.q.dims[0] : ap.batch * ap.seqlen_q;
    p.m_blocks = int((ap.seqlen_q + k->block_m - 1) / k->block_m);
    const int64_t base_blocks = ap.batch * ap.heads * p.m_blocks;
    const int64_t n_tiles = (ap.seqlen_k + k->block_n - 1) / k->block_n;
    const int64_t slots = int64_t(dev.sm_count) * occupancy;
    int64_t splits = 1;
    if (base_blocks > 0 && base_blocks < slots) {
        splits = (kSplitWaves * slots + base_blocks - 1) / base_blocks;
        splits = std::min<int64_t>({splits, n_tiles / kMinTilesPerSplit, attn::kMaxSplits});
        splits = std::max<int64_t>(splits, 1);
    }
    if (const char* env = std::getenv("TOPS_ATTENTION_SPLITS")) {
        const long forced = std::strtol(env, nullptr, 10);
        if (forced >= 1) splits = std::clamp<int64_t>(forced, 1, std::min<int64_t>(attn::kMaxSplits, std::max<int64_t>(n_tiles, 1)));
    }
    p.splits = int(splits);
    const int64_t grid = base_blocks * splits;
    if (grid > int64_t(0x7fffffff) || ap.seqlen_q > 0x7fffffff || ap.seqlen_k > 0x7fffffff) {
        return Status(TOPS_ERROR_NOT_SUPPORTED, fmt("attention: ", grid, " thread blocks exceed the CUDA grid limit"));
    }
    size_t ws = 0;
    if (splits > 1) {
        const size_t rows = size_t(splits) * size_t(p.part_rows) * size_t(ap.heads);
        ws = align_up(rows * size_t(ap.head_dim) * sizeof(float)) + align_up(rows * sizeof(float));
    }
    const std::string sm90_why = attn::sm90_unusable(ap, p, dev);
    const bool sm90 = sm90_why.empty();
    std::string why = fmt(sm90 ? "Hopper TMA + wgmma kernel (falls back to: " : "", "head_dim ", ap.head_dim,
                          decode ? " decode" : "", " tiles ", k->block_m, "x", k->block_n,
                          ", ", k->threads, " threads, ", k->smem_bytes, " B shared, ", occupancy,
                          " blocks/SM; grid ", grid, " = ", base_blocks, " query tiles x ", splits, " key split(s)",
                          vec_qkv ? "" : "; q/k/v strides rule out 16-byte loads (element loads)",
                          sm90 ? ")" : "", sm90 ? "" : "; Hopper kernel not used: ", sm90_why);
    out->reset(
        new AttentionPlanCuda(ap, *k, p, grid, ws, vec_qkv, vec_o, vec16_o, sm90, dev.ordinal, std::move(why)));
    return Status::ok();
}

}  // namespace tops::cuda
