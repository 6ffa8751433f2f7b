// CPU plan of GEMM: picks the blocking from the cache sizes, sizes the
// workspace for the largest thread team the op may run with, and runs the
// blocked kernel (src/cpu/kernels/gemm_blocked.cpp) for the active ISA.
//   KC: a packed B sliver (KC, NR) takes about 1/16 of L2 (it streams from
//       L2; a deep KC amortizes each tile's fixed cost: zeroing, the
//       read-modify-write of D between K slabs and its misses);
//   MC: a packed A block (MC, KC) takes about a quarter of L2 (so the B
//       sliver, D tiles and the next A slivers stay beside it);
//   NC: a packed B panel (KC, NC) takes at most a quarter of L3, capped.
// Cache sizes come from sysconf (glibc reads cpuid), with defaults when the
// system does not say. TOPS_GEMM_BLOCKS=mc,kc,nc overrides the blocking
// (rounded to the tile), for tests of the block edges and for tuning.
// Threads: the context's count, clamped to omp_get_max_threads() at plan
// time (the workspace holds packing buffers for up to that many threads),
// and 1 for problems too small to split.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "common/status.hpp"
#include "cpu/gemm_kernels.hpp"
#include "cpu/isa.hpp"
#include "cpu/ops.hpp"
#include "cpu/parallel.hpp"

namespace tops::cpu {
namespace {

constexpr long kDefaultL2 = 1024 * 1024;
constexpr long kDefaultL3 = 8 * 1024 * 1024;
constexpr int64_t kMinKc = 64, kMaxKc = 1024;
constexpr int64_t kMaxNc = 4096;
constexpr long kKcL2Share = 16;  // B sliver (KC, NR): 1/16 of L2
constexpr long kMcL2Share = 4;   // A block (MC, KC): 1/4 of L2
constexpr int64_t kSerialFlops = int64_t(1) << 21;  // below ~2 MFLOP one thread is faster

long cache_bytes(int name, long fallback) {
    const long v = sysconf(name);
    return v > 0 ? v : fallback;
}

int64_t round_down_to(int64_t v, int64_t step) { return std::max(step, v / step * step); }
int64_t round_up_to(int64_t v, int64_t step) { return (v + step - 1) / step * step; }

GemmBlocking default_blocking(GemmTileShape tile) {
    const long l2 = cache_bytes(_SC_LEVEL2_CACHE_SIZE, kDefaultL2);
    const long l3 = cache_bytes(_SC_LEVEL3_CACHE_SIZE, kDefaultL3);
    constexpr int64_t f = int64_t(sizeof(float));
    GemmBlocking b;
    b.kc = std::clamp<int64_t>(round_down_to(l2 / kKcL2Share / (tile.nr * f), 8), kMinKc, kMaxKc);
    b.mc = round_down_to(l2 / kMcL2Share / (b.kc * f), tile.mr);
    b.nc = std::min(kMaxNc, round_down_to(l3 / 4 / (b.kc * f), tile.nr));
    return b;
}

// TOPS_GEMM_BLOCKS=mc,kc,nc (each >= 1).
bool blocking_override(GemmTileShape tile, GemmBlocking* b) {
    const char* env = std::getenv("TOPS_GEMM_BLOCKS");
    long long mc = 0, kc = 0, nc = 0;
    if (!env || std::sscanf(env, "%lld,%lld,%lld", &mc, &kc, &nc) != 3 || mc < 1 || kc < 1 || nc < 1) return false;
    b->mc = round_up_to(mc, tile.mr);
    b->kc = kc;
    b->nc = round_up_to(nc, tile.nr);
    return true;
}

const char* dtype_tag(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F16: return "f16";
        case TOPS_DTYPE_BF16: return "bf16";
        default: return "f32";
    }
}

class GemmPlan final : public OpPlan {
public:
    GemmPlan(const GemmParams& p, Isa isa) : p_(p), isa_(isa), tile_(gemm_tile_shape(isa)) {
        // A column-major D (unit row stride, e.g. a 1x1 convolution of NCHW
        // images) is solved as D^T = B^T A^T, whose D^T has unit column
        // stride: the micro-kernel's tile stores and C loads stay vectors (a
        // per-row bias then follows the rows of D^T).
        transposed_ = p.d.strides[2] != 1 && p.d.strides[1] == 1 && p.n > 1;
        const int64_t m = transposed_ ? p.n : p.m, n = transposed_ ? p.m : p.n;
        const bool overridden = blocking_override(tile_, &blk_);
        if (!overridden) blk_ = default_blocking(tile_);
        // Small problems need no more than they have.
        blk_.kc = std::max<int64_t>(1, std::min(blk_.kc, p.k));
        blk_.mc = std::min(blk_.mc, round_up_to(std::max<int64_t>(m, 1), tile_.mr));
        blk_.nc = std::min(blk_.nc, round_up_to(std::max<int64_t>(n, 1), tile_.nr));
        max_threads_ = std::max(1, omp_get_max_threads());
        // A problem with no output runs nothing (execute returns at once); its
        // dims may be unbounded (an empty batch), so it gets no workspace.
        if (p.batch > 0 && p.m > 0 && p.n > 0) {
            layout_ = gemm_workspace_layout(blk_, tile_, m, n, p.k, max_threads_, p.d.dtype == TOPS_DTYPE_F32);
        }
        const bool mixed = p.d.dtype != p.a.dtype;
        name_ = fmt("gemm_", dtype_tag(p.a.dtype), mixed ? "_f32out" : "", transposed_ ? "_dT" : "", "_", tile_.mr,
                    "x", tile_.nr, "_", isa_name(isa));
        why_ = fmt("packed Goto/BLIS blocking mc ", blk_.mc, " kc ", blk_.kc, " nc ", blk_.nc,
                   overridden ? " (TOPS_GEMM_BLOCKS)" : " (from cache sizes)", ", register tile ", tile_.mr, "x",
                   tile_.nr, ", workspace for up to ", max_threads_, " threads; isa ", isa_name(isa),
                   " (TOPS_CPU_ISA / cpuid)");
    }

    size_t workspace_size() const override { return layout_.bytes; }
    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override { return why_; }

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (p_.batch == 0 || p_.m == 0 || p_.n == 0) return Status::ok();
        GemmArgs g;
        g.a = args.in(TOPS_ARG_A);
        g.b = args.in(TOPS_ARG_B);
        g.c = p_.c.present() && p_.beta != 0.0f ? args.in(TOPS_ARG_C) : nullptr;
        g.bias = p_.bias.present() ? args.in(TOPS_ARG_BIAS) : nullptr;
        g.d = args.out(TOPS_ARG_D);
        g.batch = p_.batch;
        g.m = p_.m;
        g.n = p_.n;
        g.k = p_.k;
        g.a_bs = p_.a.strides[0], g.a_rs = p_.a.strides[1], g.a_cs = p_.a.strides[2];
        g.b_bs = p_.b.strides[0], g.b_rs = p_.b.strides[1], g.b_cs = p_.b.strides[2];
        if (g.c) g.c_bs = p_.c.strides[0], g.c_rs = p_.c.strides[1], g.c_cs = p_.c.strides[2];
        g.d_bs = p_.d.strides[0], g.d_rs = p_.d.strides[1], g.d_cs = p_.d.strides[2];
        if (g.bias) g.bias_s = p_.bias.strides[0];
        if (transposed_) {
            // D^T (n, m) = B^T (n, k) A^T (k, m): swap the operands and every row / column stride.
            std::swap(g.a, g.b);
            std::swap(g.a_bs, g.b_bs);
            g.a_rs = p_.b.strides[2], g.a_cs = p_.b.strides[1];
            g.b_rs = p_.a.strides[2], g.b_cs = p_.a.strides[1];
            std::swap(g.c_rs, g.c_cs);
            std::swap(g.d_rs, g.d_cs);
            std::swap(g.m, g.n);
            g.bias_rows = true;
        }
        g.alpha = p_.alpha;
        g.beta = p_.beta;
        g.act = p_.act;
        g.blk = blk_;
        g.tile = tile_;
        g.ws_layout = layout_;
        const auto base = reinterpret_cast<uintptr_t>(args.workspace);
        g.ws = reinterpret_cast<unsigned char*>(gemm_align_up(size_t(base)));
        const int64_t flops = 2 * p_.batch * p_.m * p_.n * std::max<int64_t>(p_.k, 1);
        g.threads = std::min(max_threads_, pick_threads(ctx.num_threads, flops, kSerialFlops));
        switch (p_.a.dtype) {
            case TOPS_DTYPE_F16:
                if (p_.d.dtype == TOPS_DTYPE_F32) run(GemmBlockedKernel<TOPS_DTYPE_F16, TOPS_DTYPE_F32>{}, g);
                else run(GemmBlockedKernel<TOPS_DTYPE_F16, TOPS_DTYPE_F16>{}, g);
                break;
            case TOPS_DTYPE_BF16:
                if (p_.d.dtype == TOPS_DTYPE_F32) run(GemmBlockedKernel<TOPS_DTYPE_BF16, TOPS_DTYPE_F32>{}, g);
                else run(GemmBlockedKernel<TOPS_DTYPE_BF16, TOPS_DTYPE_BF16>{}, g);
                break;
            default: run(GemmBlockedKernel<TOPS_DTYPE_F32, TOPS_DTYPE_F32>{}, g); break;
        }
        return Status::ok();
    }

private:
    template <class F>
    void run(F f, const GemmArgs& g) const {
        isa_dispatch_to(isa_, f, g);
    }

    GemmParams p_;
    Isa isa_;
    GemmTileShape tile_;
    GemmBlocking blk_;
    GemmWorkspaceLayout layout_;
    bool transposed_ = false;  // solved as D^T = B^T A^T
    int max_threads_ = 1;
    std::string name_, why_;
};

}  // namespace

Status plan_gemm(const GemmParams& p, PlanPtr* out) {
    out->reset(new GemmPlan(p, active_isa()));
    return Status::ok();
}

}  // namespace tops::cpu
