// CPU plan of the 2-D convolution. Kernel choice, in order:
//   1. 1x1, stride 1, no padding, groups 1: exactly a GEMM (pixels, C) @
//      (C, K) with the residual as C (beta 1), so it runs the GEMM plan itself
//      (src/cpu/gemm.cpp, conv2d_1x1_<gemm>; src/common/conv_gemm.hpp builds
//      it): f32 in any layout conv_as_gemm accepts (NCHW images as a batch
//      of column-major D, which the GEMM solves as D^T = W X), f16 / bf16
//      when x / y / residual are dense NHWC (the GEMM widens x while packing
//      it). f32 C256 56x56 K64 (docs/performance.md, CPU conv2d): NCHW 1.44
//      -> 1.13 ms on one thread of the 16-core Xeon, 1.60 -> 1.47 on the
//      2-core EPYC; NHWC equal on the Xeon, 1.38 -> 1.21 ms on the EPYC.
//   2. depthwise (C/G = 1, groups > 1, any channel multiplier K/G): a direct
//      kernel vectorized over channels (src/cpu/kernels/conv_depthwise.cpp).
//   3. everything else: the implicit GEMM (src/cpu/kernels/conv_gemm.cpp) on
//      a zero-padded f32 staging of x (NHWC, or NCHW for an NCHW x: a row
//      copy, or x itself when dense f32 and unpadded): pixels_by_channels
//      (filter packed once, channel-contiguous stores) for a channels-last y
//      unless the output pixels (N * P * Q) are few against the filters (K)
//      for the team that runs (ConvGemmByTeamPlan), else channels_by_pixels
//      (blocked im2col packed per task, pixel-contiguous stores: an NCHW y,
//      or few pixels). One thread team per call stages x, packs the filter,
//      and after one barrier runs the GEMM tasks (a static share each, or
//      handed out as threads come where that loses no reuse: execute_on).
// TOPS_CONV_ALGO=direct|pixels_by_channels|channels_by_pixels|depthwise
// forces a path that applies (tests of both orientations, debugging); direct
// is the plain loop of src/cpu/conv_direct.cpp.
// Workspace (sized at create for up to omp_get_max_threads() threads):
// staged input, packed or staged filter, per-thread im2col blocks.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/conv_gemm.hpp"
#include "common/int_math.hpp"
#include "common/status.hpp"
#include "cpu/conv_kernels.hpp"
#include "cpu/conv_stage.hpp"
#include "cpu/isa.hpp"
#include "cpu/ops.hpp"
#include "cpu/parallel.hpp"

namespace tops::cpu {
namespace {

constexpr long kDefaultL2 = 512 * 1024;
constexpr size_t kAlign = 64;
constexpr int64_t kSerialFlops = int64_t(1) << 21;  // below ~2 MFLOP one thread is faster
constexpr int64_t kSharedUnitsPerThread = 4;          // units handed out as threads come (execute_on)
constexpr int64_t kTasksPerThread = 4;               // enough tasks to even out the static split
constexpr int64_t kMaxColsBlock = 512;               // pixels of one packed im2col block

size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

long l2_bytes() {
    const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? v : kDefaultL2;
}

const char* dtype_tag(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F16: return "f16";
        case TOPS_DTYPE_BF16: return "bf16";
        default: return "f32";
    }
}

std::string forced_algo() {
    const char* env = std::getenv("TOPS_CONV_ALGO");
    return env ? env : "";
}

// ------------------------------------------------------------------ direct

class ConvDirectPlan final : public OpPlan {
public:
    explicit ConvDirectPlan(const ConvParams& p) : p_(p), name_(fmt("conv2d_direct_", dtype_tag(p.x.dtype))) {}

    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override { return "direct loops (TOPS_CONV_ALGO=direct)"; }
    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (p_.y.numel() == 0) return Status::ok();
        conv_direct_run(p_, args, ctx.num_threads);
        return Status::ok();
    }

private:
    ConvParams p_;
    std::string name_;
};

// The epilogue arguments of a direct / depthwise kernel: y, residual, bias, act.
void set_epilogue(const ConvParams& p, const ArgTable& args, ConvEpilogueArgs* e) {
    e->y = args.out(TOPS_ARG_Y);
    std::memcpy(e->ys, p.y.strides, sizeof(e->ys));
    if (p.residual.present()) {
        e->res = args.in(TOPS_ARG_RESIDUAL);
        std::memcpy(e->rs, p.residual.strides, sizeof(e->rs));
    }
    if (p.bias.present()) {
        e->bias = args.in(TOPS_ARG_BIAS);
        e->bias_s = p.bias.strides[0];
    }
    e->act = p.act;
}

// ------------------------------------------------------------------ implicit GEMM

// A block size for `extent` that keeps the count of `block`-sized blocks
// and spreads the extent evenly over them, in multiples of `unit`.
int64_t even_block(int64_t extent, int64_t block, int64_t unit) {
    if (extent <= 0 || block <= 0) return block;
    return std::min(block, round_up(ceil_div(extent, ceil_div(extent, block)), unit));
}

class ConvGemmPlan final : public OpPlan {
public:
    ConvGemmPlan(const ConvParams& p, ConvGemmOrientation orient, bool forced)
        : p_(p), isa_(active_isa()), tile_(gemm_tile_shape(isa_)), orient_(orient), st_(conv_staging(p, true)) {
        const int64_t cg = p.in_c_per_group(), kg = p.out_c_per_group();
        kdim_ = p.kernel_h * p.kernel_w * cg;
        max_threads_ = std::max(1, omp_get_max_threads());
        const bool pbc = orient_ == ConvGemmOrientation::pixels_by_channels;
        // Filter rows for channels_by_pixels: the caller's f32 filter when its
        // rows are contiguous in (r, s, c) or (c, r, s) order, else staged (r, s, c).
        const bool f32 = p.w.dtype == TOPS_DTYPE_F32;
        const bool w_krsc = f32 && conv_is_dense_nhwc(p.w), w_kcrs = f32 && conv_is_dense_nchw(p.w);
        w_in_place_ = !pbc && (w_krsc || w_kcrs);
        const bool order_crs = !pbc && w_kcrs && !w_krsc;
        koff_.resize(size_t(kdim_));
        for (int64_t r = 0; r < p.kernel_h; ++r) {
            for (int64_t s = 0; s < p.kernel_w; ++s) {
                for (int64_t c = 0; c < cg; ++c) {
                    const int64_t kk = order_crs ? (c * p.kernel_h + r) * p.kernel_w + s : (r * p.kernel_w + s) * cg + c;
                    koff_[size_t(kk)] = r * p.dilation_h * st_.xp_row + s * p.dilation_w * st_.xp_pix + c * st_.xp_chan;
                }
            }
        }
        // Tap runs for pixels_by_channels on NHWC staging: (r, s) taps of C/G
        // channels each, or (r) taps of S * C channels when consecutive taps
        // are adjacent in xp (dilation_w 1, groups 1).
        if (pbc && st_.xp_chan == 1 && cg > 0) {
            const bool merge = p.dilation_w == 1 && p.groups == 1;
            run_ = merge ? p.kernel_w * cg : cg;
            for (int64_t r = 0; r < p.kernel_h; ++r) {
                for (int64_t s = 0; s < (merge ? 1 : p.kernel_w); ++s) {
                    tap_off_.push_back(r * p.dilation_h * st_.xp_row + s * p.dilation_w * st_.xp_pix);
                }
            }
        }
                // Blocks: the A rows a task walks (pixels_by_channels) or its packed
        // im2col block (channels_by_pixels) fill about half of L2.
        const int64_t pixels = p.out_h * p.out_w;
        const int64_t fit = std::max<int64_t>(1, l2_bytes() / 2 / (std::max<int64_t>(kdim_, 1) * int64_t(sizeof(float))));
        if (pbc) {
            rows_block_ = std::min(round_up(std::max<int64_t>(pixels, 1), tile_.mr),
                                   std::max<int64_t>(tile_.mr, fit / tile_.mr * tile_.mr));
            cols_block_ = round_up(std::max<int64_t>(kg, 1), tile_.nr);
        } else {
            cols_block_ = std::min({round_up(std::max<int64_t>(pixels, 1), tile_.nr), round_up(kMaxColsBlock, tile_.nr),
                                    std::max<int64_t>(tile_.nr, fit / tile_.nr * tile_.nr)});
            rows_block_ = round_up(std::max<int64_t>(kg, 1), tile_.mr);
        }
        // Enough tasks for the largest team: split the dimension that costs no
        // extra packing first (pixels), then the other one.
        const int64_t want = int64_t(max_threads_) * kTasksPerThread;
        auto tasks = [&] {
            return conv_gemm_task_count(orient_, p.batch, p.groups, pixels, kg, rows_block_, cols_block_);
        };
        int64_t& pix_block = pbc ? rows_block_ : cols_block_;
        int64_t& chan_block = pbc ? cols_block_ : rows_block_;
        const int64_t pix_unit = pbc ? tile_.mr : tile_.nr, chan_unit = pbc ? tile_.nr : tile_.mr;
        while (max_threads_ > 1 && tasks() < want && pix_block > pix_unit) {
            pix_block = std::max(pix_unit, round_up(pix_block / 2, pix_unit));
        }
        while (max_threads_ > 1 && tasks() < want && chan_block > chan_unit) {
            chan_block = std::max(chan_unit, round_up(chan_block / 2, chan_unit));
        }
        // The same number of blocks, as equal as the register tile allows: the
        // static split gives each thread whole tasks, and a short last block
        // per image left others a block more (the batch-8 stem at 16 threads:
        // 8 blocks of 1778 pixels per image, the last 98 long, so the busiest
        // thread had 13% more pixels than the mean).
        pix_block = even_block(pixels, pix_block, pix_unit);
        chan_block = even_block(kg, chan_block, chan_unit);
        tasks_ = tasks();
        // The tasks are handed out as the threads come for them, in units
        // that share no packed data (the tasks of one im2col block of
        // channels_by_pixels; single tasks of pixels_by_channels when every
        // task reads the whole filter), where there are enough units to even
        // out (execute_on, against the team that runs): a thread slowed by
        // other work on its core then takes fewer.
        // 16-core Xeon, 16 threads, time against the static split: the NHWC
        // stems 0.79-0.83x (batch 8) and 0.82-0.94x (batch 1), the NCHW stems
        // 0.64-0.85x, the other layers 0.96-1.05x but for two rounds (0.70,
        // 0.82). Otherwise the static split keeps each thread on one channel
        // block, whose filter slivers stay in its L2: handing out the tasks of
        // the C512 7x7 layer there (NHWC, 16 channel blocks) one by one took
        // 1.8-1.9x as long. (An empty y, K = 0, has no tasks and never runs.)
        hand_out_unit_ = pbc ? 1 : std::max<int64_t>(1, ceil_div(kg, rows_block_));
        const bool shares_nothing = !pbc || ceil_div(kg, cols_block_) == 1;
        hand_out_units_ = shares_nothing ? tasks_ / hand_out_unit_ : 0;
        // Workspace: staged x, then the packed filter slivers (pixels_by_channels)
        // or staged filter rows (channels_by_pixels, when needed), then one
        // im2col block per thread.
        size_t off = align_up(st_.floats * sizeof(float));
        filter_offset_ = off;
        if (pbc) {
            off += align_up(size_t(p.groups * ceil_div(kg, tile_.nr) * tile_.nr * kdim_) * sizeof(float));
        } else {
            if (!w_in_place_) off += align_up(size_t(p.out_c * kdim_) * sizeof(float));
            col_buf_floats_ = align_up(size_t(kdim_ * cols_block_) * sizeof(float)) / sizeof(float);
        }
        cols_offset_ = off;
        off += size_t(max_threads_) * col_buf_floats_ * sizeof(float);
        bytes_ = off + kAlign;
        name_ = fmt("conv2d_gemm_", pbc ? "pixels_by_channels" : "channels_by_pixels", "_", dtype_tag(p.x.dtype), "_",
                    tile_.mr, "x", tile_.nr, "_", isa_name(isa_));
        why_ = fmt("implicit GEMM, kdim ", kdim_, ", ", pbc ? "pixels x channels (filter packed once" : "channels x pixels (im2col packed in blocks",
                   forced ? ", TOPS_CONV_ALGO)" : ": N*P*Q vs K picks the smaller operand to pack)", ", input ",
                   st_.in_place ? "read in place" : st_.nchw ? "staged as padded f32 NCHW" : "staged as padded f32 NHWC", ", blocks ", rows_block_, " x ",
                   cols_block_, ", workspace for up to ", max_threads_, " threads");
    }

    size_t workspace_size() const override { return bytes_; }
    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override { return why_; }

    // Threads an execute with this context runs on.
    int team_size(const ExecContext& ctx) const {
        const int64_t flops = 2 * p_.y.numel() * std::max<int64_t>(kdim_, 1);
        return std::min(max_threads_, pick_threads(ctx.num_threads, flops, kSerialFlops));
    }

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        return execute_on(ctx, args, team_size(ctx));
    }

    // execute on a team of `threads` (team_size(ctx), which the caller has).
    Status execute_on(const ExecContext& ctx, const ArgTable& args, int threads) const {
        if (p_.y.numel() == 0) return Status::ok();
        unsigned char* ws = reinterpret_cast<unsigned char*>(align_up(reinterpret_cast<uintptr_t>(args.workspace)));
        const bool pbc = orient_ == ConvGemmOrientation::pixels_by_channels;
        ConvGemmArgs g;
        g.orientation = orient_;
        g.batch = p_.batch;
        g.groups = p_.groups;
        g.cg = p_.in_c_per_group();
        g.kg = p_.out_c_per_group();
        g.out_h = p_.out_h;
        g.out_w = p_.out_w;
        g.kdim = kdim_;
        g.stride_h = p_.stride_h;
        g.stride_w = p_.stride_w;
        float* xp = reinterpret_cast<float*>(ws);
        g.xp = st_.in_place ? static_cast<const float*>(args.in(TOPS_ARG_X)) : xp;
        g.xp_img = st_.xp_img;
        g.xp_row = st_.xp_row;
        g.xp_pix = st_.xp_pix;
        g.xp_chan = st_.xp_chan;
        g.koff = koff_.data();
        g.tap_off = tap_off_.data();
        g.taps = int64_t(tap_off_.size());
        g.run = run_;
        // The filter operand: packed slivers (pixels_by_channels), the
        // caller's rows, or staged rows (channels_by_pixels).
        float* filt = reinterpret_cast<float*>(ws + filter_offset_);
        int64_t filter_units = 0;
        ConvFilterPacking packing;
        if (pbc) {
            g.wpack = filt;
            packing = conv_filter_packing(p_, tile_.nr, threads);
            filter_units = packing.units;
        } else if (w_in_place_) {
            g.wrows = static_cast<const float*>(args.in(TOPS_ARG_W));
            g.w_row = p_.w.strides[0];
        } else {
            g.wrows = filt;
            g.w_row = kdim_;
            filter_units = p_.out_c;
        }
        set_epilogue(p_, args, &g);
        g.rows_block = rows_block_;
        g.cols_block = cols_block_;
        g.col_bufs = reinterpret_cast<float*>(ws + cols_offset_);
        g.col_buf_floats = col_buf_floats_;
        // One team: each thread stages its share of x's rows and of the
        // filter, then (after one barrier) runs its share of the GEMM tasks.
        // Separate parallel regions cost a fork / join each and left the
        // staging of small tensors on one thread.
        const int64_t x_rows = conv_stage_input_rows(p_, st_);
        const void* x = args.in(TOPS_ARG_X);
        const void* w = args.in(TOPS_ARG_W);
        // Units handed out as threads come, where this team has enough of
        // them to even out (the constructor says why).
        const bool shared_units = threads > 1 && hand_out_units_ >= kSharedUnitsPerThread * threads;
        std::atomic<int64_t> next_unit{0};
        parallel_team(threads, [&](int t, int nt) {
            const Share xs(x_rows, t, nt), fs(filter_units, t, nt);
            if (!xs.empty()) conv_stage_input_range(p_, st_, x, xp, xs.begin, xs.end);
            if (!fs.empty() && pbc) conv_pack_filter_slivers_range(p_, w, packing, filt, fs.begin, fs.end);
            if (!fs.empty() && !pbc) conv_stage_filter_rows_range(p_, w, filt, fs.begin, fs.end);
            if (x_rows > 0 || filter_units > 0) team_barrier();
            const auto run = [&](int64_t begin, int64_t end) {
                isa_dispatch_to(isa_, [&](auto arch) {
                    switch (p_.y.dtype) {
                        case TOPS_DTYPE_F16: ConvGemmKernel<TOPS_DTYPE_F16>{}(arch, g, begin, end, t); break;
                        case TOPS_DTYPE_BF16: ConvGemmKernel<TOPS_DTYPE_BF16>{}(arch, g, begin, end, t); break;
                        default: ConvGemmKernel<TOPS_DTYPE_F32>{}(arch, g, begin, end, t); break;
                    }
                });
            };
            if (!shared_units) {
                const Share ts(tasks_, t, nt);
                if (!ts.empty()) run(ts.begin, ts.end);
                return;
            }
            for (int64_t u = next_unit.fetch_add(1, std::memory_order_relaxed); u < hand_out_units_;
                 u = next_unit.fetch_add(1, std::memory_order_relaxed)) {
                run(u * hand_out_unit_, (u + 1) * hand_out_unit_);
            }
        });
        return Status::ok();
    }

private:
    ConvParams p_;
    Isa isa_;
    GemmTileShape tile_;
    ConvGemmOrientation orient_;
    ConvStaging st_;
    int64_t kdim_ = 0;
    std::vector<int64_t> koff_, tap_off_;
    int64_t run_ = 0;
    bool w_in_place_ = false;
    int64_t rows_block_ = 0, cols_block_ = 0;
    int64_t tasks_ = 0;
    // Tasks per hand-out unit, and the units; 0 units where they would share
    // packed data, so the tasks are always split statically.
    int64_t hand_out_unit_ = 1, hand_out_units_ = 0;
    size_t filter_offset_ = 0, cols_offset_ = 0, col_buf_floats_ = 0, bytes_ = 0;
    int max_threads_ = 1;
    std::string name_, why_;
};

// A channels-last y with few pixels against its filters: which operand to
// pack depends on the team size, known only at execute. pixels_by_channels
// packs the filter once per call, split over the team; channels_by_pixels
// reads the filter in place but every thread packs the im2col blocks it
// works on. So the filter is packed when K <= kPackPerPixelThread * pixels *
// threads. Measured on the 16-core Xeon (f32 batch 1, both forced,
// docs/performance.md): C512 7x7 K512 (49 pixels) 0.98-1.15x oneDNN packing
// pixels vs 0.88-0.93x packing the filter on one thread, 0.71-0.81x vs
// 0.87-0.93x at 16 threads (and 1.22 vs 1.31x at 2 threads on the 2-core
// EPYC); C256 14x14 K256 (196 pixels) packs the filter on any team.
constexpr int64_t kPackPerPixelThread = 6;

// Saturated: the output pixels times kPackPerPixelThread may pass int64.
int64_t min_filter_packing_threads(const ConvParams& p) {
    return ceil_div(p.out_c, mul_saturated(kPackPerPixelThread, std::max<int64_t>(1, p.output_pixels())));
}

class ConvGemmByTeamPlan final : public OpPlan {
public:
    ConvGemmByTeamPlan(const ConvParams& p, int64_t min_pbc_threads)
        : pbc_(p, ConvGemmOrientation::pixels_by_channels, false),
          cbp_(p, ConvGemmOrientation::channels_by_pixels, false),
          min_pbc_threads_(min_pbc_threads),
          name_(fmt(cbp_.kernel_name(), "_below_", min_pbc_threads_, "_threads_else_pixels_by_channels")) {}

    size_t workspace_size() const override { return std::max(pbc_.workspace_size(), cbp_.workspace_size()); }
    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override {
        return fmt("few pixels against the filters: below ", min_pbc_threads_, " threads ", cbp_.reason(), "; else ",
                   pbc_.reason());
    }
    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        const int threads = pbc_.team_size(ctx);  // the same for both orientations
        return threads >= min_pbc_threads_ ? pbc_.execute_on(ctx, args, threads) : cbp_.execute_on(ctx, args, threads);
    }

private:
    ConvGemmPlan pbc_, cbp_;
    int64_t min_pbc_threads_;
    std::string name_;
};

// ------------------------------------------------------------------ depthwise

class ConvDepthwisePlan final : public OpPlan {
public:
    explicit ConvDepthwisePlan(const ConvParams& p) : p_(p), isa_(active_isa()), st_(conv_staging(p, false)) {
        for (int64_t r = 0; r < p.kernel_h; ++r) {
            for (int64_t s = 0; s < p.kernel_w; ++s) {
                tap_off_.push_back(r * p.dilation_h * st_.xp_row + s * p.dilation_w * st_.xp_pix);
            }
        }
        filter_offset_ = align_up(st_.floats * sizeof(float));
        bytes_ = filter_offset_ + align_up(size_t(p.kernel_h * p.kernel_w * p.out_c) * sizeof(float)) + kAlign;
        name_ = fmt("conv2d_depthwise_", dtype_tag(p.x.dtype), "_", isa_name(isa_));
    }

    size_t workspace_size() const override { return bytes_; }
    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override {
        return fmt("depthwise (C/G = 1, multiplier ", p_.out_c_per_group(), "): direct, vectorized over channels, input ",
                   st_.in_place ? "read in place" : "staged as padded f32 NHWC", ", filter staged tap-major");
    }

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (p_.y.numel() == 0) return Status::ok();
        unsigned char* ws = reinterpret_cast<unsigned char*>(align_up(reinterpret_cast<uintptr_t>(args.workspace)));
        const int64_t flops = 2 * p_.y.numel() * p_.kernel_h * p_.kernel_w;
        const int threads = pick_threads(ctx.num_threads, flops, kSerialFlops);
        ConvDepthwiseArgs g;
        g.batch = p_.batch;
        g.k = p_.out_c;
        g.mult = p_.out_c_per_group();
        g.out_h = p_.out_h;
        g.out_w = p_.out_w;
        g.stride_h = p_.stride_h;
        g.stride_w = p_.stride_w;
        if (st_.in_place) {
            g.xp = static_cast<const float*>(args.in(TOPS_ARG_X));
        } else {
            float* xp = reinterpret_cast<float*>(ws);
            conv_stage_input(p_, st_, args.in(TOPS_ARG_X), xp, threads);
            g.xp = xp;
        }
        g.xp_img = st_.xp_img;
        g.xp_row = st_.xp_row;
        g.xp_pix = st_.xp_pix;
        g.tap_off = tap_off_.data();
        g.taps = int64_t(tap_off_.size());
        float* wt = reinterpret_cast<float*>(ws + filter_offset_);
        conv_stage_filter_taps(p_, args.in(TOPS_ARG_W), wt, threads);
        g.wt = wt;
        set_epilogue(p_, args, &g);
        g.threads = threads;
        isa_dispatch_to(isa_, [&](auto arch) {
            switch (p_.y.dtype) {
                case TOPS_DTYPE_F16: ConvDepthwiseKernel<TOPS_DTYPE_F16>{}(arch, g); break;
                case TOPS_DTYPE_BF16: ConvDepthwiseKernel<TOPS_DTYPE_BF16>{}(arch, g); break;
                default: ConvDepthwiseKernel<TOPS_DTYPE_F32>{}(arch, g); break;
            }
        });
        return Status::ok();
    }

private:
    ConvParams p_;
    Isa isa_;
    ConvStaging st_;
    std::vector<int64_t> tap_off_;
    size_t filter_offset_ = 0, bytes_ = 0;
    std::string name_;
};

// An empty y: nothing to compute, whatever the other dims (their products,
// the staging's among them, may pass int64).
class ConvEmptyPlan final : public OpPlan {
public:
    Status execute(const ExecContext&, const ArgTable&) const override { return Status::ok(); }
    const char* kernel_name() const override { return "conv2d_empty"; }
    std::string reason() const override { return "empty output"; }
};

}  // namespace

// The zero-padded f32 staging of x (N * (H + pads) * (W + pads) * C floats)
// fits in int64 bytes; a valid descriptor with huge dims (an empty x among
// them) may exceed that.
static bool conv_sizes_fit(const ConvParams& p) {
    // One padded image first (the staging strides), then the batch.
    int64_t hp = 0, wp = 0, img = 0, n = 0;
    return !__builtin_add_overflow(p.in_h, int64_t(p.pad_top) + p.pad_bottom, &hp) &&
           !__builtin_add_overflow(p.in_w, int64_t(p.pad_left) + p.pad_right, &wp) &&
           !__builtin_mul_overflow(hp, wp, &img) && !__builtin_mul_overflow(img, p.in_c, &img) &&
           !__builtin_mul_overflow(img, int64_t(sizeof(float)), &img) && !__builtin_mul_overflow(p.batch, img, &n);
}

Status plan_conv2d(const ConvParams& p, PlanPtr* out) {
    if (p.output_empty()) {
        out->reset(new ConvEmptyPlan());
        return Status::ok();
    }
    if (!conv_sizes_fit(p)) {
        return Status(TOPS_ERROR_OUT_OF_MEMORY,
                      "conv2d: the padded input staging overflows int64 bytes");
    }
    const std::string algo = forced_algo();
    if (algo == "direct") {
        out->reset(new ConvDirectPlan(p));
        return Status::ok();
    }
    const bool forced_pbc = algo == "pixels_by_channels", forced_cbp = algo == "channels_by_pixels";
    const bool dense_nhwc = conv_is_dense_nhwc(p.x) && conv_is_dense_nhwc(p.y) &&
                            (!p.residual.present() || conv_is_dense_nhwc(p.residual));
    if (!forced_pbc && !forced_cbp && (p.x.dtype == TOPS_DTYPE_F32 || dense_nhwc)) {
        bool planned = false;
        TOPS_RETURN_IF_ERROR(plan_conv_as_gemm(
            p, [](const GemmParams& g, PlanPtr* gemm) { return plan_gemm(g, gemm); }, out, &planned));
        if (planned) return Status::ok();
    }
    if ((algo == "depthwise" || (!forced_pbc && !forced_cbp)) && p.in_c_per_group() == 1 && p.groups > 1) {
        out->reset(new ConvDepthwisePlan(p));
        return Status::ok();
    }
    // channels_by_pixels writes tile rows along pixels (vector stores into
    // NCHW y). A channels-last y packs the filter (pixels_by_channels) when
    // the pixels are at least the filters, or when a vector-transposable
    // filter is worth packing on the team that runs (ConvGemmByTeamPlan).
    // Other filters pack element by element: pixels_by_channels only with
    // at least as many pixels as filters, as before the vector packing.
    const bool y_channels_last = p.y.strides[1] == 1 || p.out_c == 1;
    const int64_t pixels = p.output_pixels();
    const bool fast_pack = conv_filter_packs_by_transpose(p, gemm_tile_shape(active_isa()).nr);
    const int64_t min_pbc_threads = fast_pack ? min_filter_packing_threads(p) : INT64_MAX;
    if (!forced_pbc && !forced_cbp && y_channels_last && pixels < p.out_c && min_pbc_threads > 1 &&
        min_pbc_threads <= omp_get_max_threads()) {
        out->reset(new ConvGemmByTeamPlan(p, min_pbc_threads));
        return Status::ok();
    }
    ConvGemmOrientation orient = y_channels_last && (pixels >= p.out_c || min_pbc_threads <= 1)
                                     ? ConvGemmOrientation::pixels_by_channels
                                     : ConvGemmOrientation::channels_by_pixels;
    if (forced_pbc) orient = ConvGemmOrientation::pixels_by_channels;
    if (forced_cbp) orient = ConvGemmOrientation::channels_by_pixels;
    out->reset(new ConvGemmPlan(p, orient, forced_pbc || forced_cbp));
    return Status::ok();
}

}  // namespace tops::cpu
