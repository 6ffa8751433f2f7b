// CUDA Conv2d plan: adapts the validated ConvParams to the kernels' one
// parameter struct and picks the kernel once, at op creation.
//
//   1x1, stride 1, no padding, groups 1, pixels with one stride -> the cuBLASLt
//     GEMM plan (common/conv_gemm.hpp): (pixels, C) @ (C, K), batched over
//     images unless they continue each other (NHWC)
//   depthwise (C per group 1, groups > 1)    -> conv_depthwise (direct)
//   f16 / bf16, groups 1, fewer channels than a 16-byte chunk (the stem)
//                                             -> conv_smallc (tensor cores on
//     an input window staged in shared memory; the filter packed per call)
//   f32 on sm_90, groups 1, stride 1, no residual, K >= 64
//                                             -> conv_sm90_3xtf32 (TMA + wgmma;
//     x and w repacked into TF32 big and small planes; TF32 where allowed)
//   otherwise                                 -> conv_igemm (tensor cores; f32 as
//     3xTF32); x and w that are not channels-last with C per group a multiple
//     of a 16-byte chunk (8 f16 / bf16, 4 f32) and chunk-multiple strides are
//     first repacked into the workspace as dense NHWC / KRSC with channels
//     zero-padded to a chunk (NCHW, the 3-channel stem, odd strides); where
//     channels per tap are not a whole chunk, the taps of a filter row are
//     folded into the channels first (fold_taps: the f16 stem's reduction
//     drops from 49 chunks per pixel to 21)
//   grouped with C per group not a chunk multiple, filters over 32 taps
//                                             -> conv_simt (f32 FMA)
//
// Pointer alignment is only known at execute: a tensor-core plan whose x or w
// pointer (or workspace) is not 16-byte aligned runs the SIMT kernel instead, and the 16-byte
// epilogue is used only when y (and residual) are aligned. f32 keeps f32
// accuracy on either path (3xTF32 or FMA) unless TOPS_CONV_ALLOW_TF32 asks
// for one TF32 product per step (the FMA fallback stays exact).
// TOPS_CONV_IGEMM_CONFIG=<config name> forces a tensor-core tile config
// (benchmarking the tile choice).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>

#include "common/conv_gemm.hpp"
#include "common/env.hpp"
#include "common/int_math.hpp"
#include "cuda/conv.hpp"
#include "cuda/gemm.hpp"
#include "cuda/ops.hpp"

namespace tops::cuda {
namespace {

constexpr int kMaxMaskTaps = 32;   // igemm keeps one bit per filter row / column
constexpr size_t kVecBytes = 16;
constexpr size_t kWorkspaceAlign = 256;
// Split-K heuristic: 64x64 tiles, 4 resident CTAs per SM, 4 channel chunks
// (BK = 32) per reduction tile, at most 4 splits of at least 8 tiles each.
constexpr int64_t kSplitTile = 64;
constexpr int64_t kBigTile = 128;  // the 128x128 / 128x64 configs
constexpr int64_t kSplitCtasPerSm = 4;
constexpr int64_t kSplitChunksPerTile = 4;
constexpr int64_t kMaxSplits = 4;
constexpr int64_t kMinTilesPerSplit = 8;

const char* dtype_tag(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F16: return "f16";
        case TOPS_DTYPE_BF16: return "bf16";
        default: return "f32";
    }
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

bool strides_multiple(const int64_t (&s)[4], int skip, int64_t v) {
    for (int i = 0; i < 4; ++i) {
        if (i != skip && s[i] % v != 0) return false;
    }
    return true;
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// Tap folding: with channels per tap not a whole 16-byte chunk, every tap
// pads them to one (the 3-channel f16 stem: 3 of 8 lanes carry data, 49 chunks
// per pixel for 147 products). Folding a filter row's S taps into the
// channels (x repacked as (N, H, Q, S*C) read at each tap's column, w as
// (K, R, 1, S*C)) pads once per row: 7 x 3 chunks for the stem. Taken when
// it saves at least a quarter of the chunks (the folded x is S / stride_w
// times x's size); TOPS_CONV_FOLD_TAPS=0 turns it off, =1 takes it wherever
// it applies.
constexpr int64_t kFoldMinSavingDen = 4;
bool fold_taps(const ConvKernelParams& kp, int64_t vec) {
    const char env = env_flag("TOPS_CONV_FOLD_TAPS");
    if (kp.groups != 1 || kp.c % vec == 0 || kp.s == 1 || env == '0') return false;
    if (env == '1') return true;
    const int64_t per_tap = int64_t(kp.s) * round_up(kp.c, vec), folded = round_up(int64_t(kp.s) * kp.c, vec);
    return folded * kFoldMinSavingDen <= per_tap * (kFoldMinSavingDen - 1);
}

// Tile config for the tensor-core kernel.
IgemmConfig choose_igemm(const ConvKernelParams& kp, tops_dtype_t dtype, const DeviceInfo& dev, std::string* why) {
    const char* env = std::getenv("TOPS_CONV_IGEMM_CONFIG");
    if (env && env[0]) {
        for (int c = 0; c < int(IgemmConfig::count); ++c) {
            if (igemm_config_name(IgemmConfig(c), dtype) == env) {
                *why = "forced by TOPS_CONV_IGEMM_CONFIG";
                return IgemmConfig(c);
            }
        }
    }
    // Measured on the six ResNet layers (H100, docs/performance.md): 64x64x32
    // (4 CTAs per SM) is fastest on the four layers with many pixel tiles;
    // where its CTAs fill less than one wave of resident slots, bigger tiles
    // win: 128x128 on 14x14 K256 (192 vs 176 TFLOP/s), 128x64 on 7x7 K512
    // (149 vs 141; 128x128 would leave 80 of 132 SMs idle there). Problems
    // with fewer 64x64 CTAs than SMs stay on 64x64 and split K instead.
    const int64_t m = int64_t(kp.n) * kp.p * kp.q;
    if (dtype == TOPS_DTYPE_F32) {
        // f32 (3xTF32, 3 CTAs per SM): 64x64x16 ran fastest or within 2% on
        // all five implicit-GEMM ResNet layers (14x14 K256 0.256 ms against
        // 0.299 at 128x128, 7x7 K512 0.344 against 0.360 at 128x64).
        *why = "64x64x16: the f32 tile";
        return IgemmConfig::k64x64k32;
    }
    auto ctas = [&](int64_t bm, int64_t bn) { return (m + bm - 1) / bm * ((kp.k + bn - 1) / bn) * kp.groups; };
    const int64_t slots = int64_t(dev.sm_count) * kSplitCtasPerSm;
    const int64_t small = ctas(kSplitTile, kSplitTile);
    IgemmConfig pick = IgemmConfig::k64x64k32;
    *why = "64x64x32: at least one full wave of 4 CTAs per SM";
    if (small * kSplitCtasPerSm > slots && small < slots) {
        const bool wide = ctas(kBigTile, kBigTile) * 2 >= dev.sm_count;
        pick = wide ? IgemmConfig::k128x128 : IgemmConfig::k128x64;
        *why = wide ? "128x128: 64x64 tiles fill less than one wave" : "128x64: 64x64 tiles fill less than one wave";
    } else if (small * kSplitCtasPerSm <= slots) {
        *why = "64x64x32: fewer tiles than SMs";
    }
    return pick;
}

class ConvPlanCuda final : public OpPlan {
public:
    ConvPlanCuda(const ConvKernelParams& kp, tops_dtype_t dt, int device) : kp_(kp), dtype_(dt), device_(device) {}

    enum class Path { empty, depthwise, smallc, igemm, simt };

    Status build(const ConvParams& cp, const DeviceInfo& dev);

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (path_ == Path::empty) return Status::ok();
        DeviceScope scope(device_);
        TOPS_RETURN_IF_ERROR(scope.status());
        const cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
        ConvKernelParams p = kp_;
        p.x = args.in(TOPS_ARG_X);
        p.w = args.in(TOPS_ARG_W);
        p.y = args.out(TOPS_ARG_Y);
        p.bias = bias_ ? args.in(TOPS_ARG_BIAS) : nullptr;
        p.residual = residual_ ? args.in(TOPS_ARG_RESIDUAL) : nullptr;
        if (path_ == Path::depthwise) return launch_conv_depthwise(p, dtype_, stream);
        if (path_ == Path::smallc && aligned(args.workspace, kVecBytes)) {
            p.vec_out = vec_out_ok(p);
            return launch_conv_smallc(p, smallc_, args.workspace, dtype_, stream);
        }
        if (path_ == Path::igemm && sm90_ && conv_sm90_pointers_ok(p.x, p.w, p.y)) {
            return launch_conv_sm90(sm90q_, p.x, p.w, p.y, p.bias, sm_count_, stream);
        }
        if (path_ == Path::igemm && tf32_planes_) {  // x's repack is in the form only this kernel reads
            if (!aligned(args.workspace, kVecBytes)) return launch_conv_simt(p, simt_cfg_, dtype_, stream);
            char* ws = static_cast<char*>(args.workspace);
            TOPS_RETURN_IF_ERROR(launch_conv_repack(repack(wr_, p.w, ws + off_w_), dtype_, stream, false));
            TOPS_RETURN_IF_ERROR(launch_conv_repack(repack(xr_, p.x, ws + off_x_), dtype_, stream, pdl_));
            return launch_conv_sm90_tf32(tf32q_, ws + off_x_, ws + off_w_, p.y, p.bias, sm_count_, stream);
        }
        if (path_ == Path::igemm) {
            ConvKernelParams ip = ikp_;
            ip.x = p.x;
            ip.w = p.w;
            ip.y = p.y;
            ip.bias = p.bias;
            ip.residual = p.residual;
            char* ws = static_cast<char*>(args.workspace);
            if (repack_x_) ip.x = ws + off_x_;
            if (repack_w_) ip.w = ws + off_w_;
            if (ip.splits > 1) ip.partial = reinterpret_cast<float*>(ws + off_partial_);
            if (aligned(ip.x, kVecBytes) && aligned(ip.w, kVecBytes)) {
                // w's repack first; on sm_90 x's repack is its programmatic
                // dependent and overlaps it (conv_repack.cu). The conv is not
                // one: its CTAs would take the SMs as the repacks drain them,
                // unevenly (the 200 CTAs of C512 7x7 f32 then ran 0.25 -> 0.32 ms).
                if (repack_w_) {
                    TOPS_RETURN_IF_ERROR(launch_conv_repack(repack(wr_, p.w, ws + off_w_), dtype_, stream, false));
                }
                if (repack_x_) {
                    TOPS_RETURN_IF_ERROR(
                        launch_conv_repack(repack(xr_, p.x, ws + off_x_), dtype_, stream, pdl_ && repack_w_));
                }
                ip.vec_out = vec_out_ok(ip);
                return launch_conv_igemm(ip, igemm_cfg_, dtype_, stream);
            }
        }
        return launch_conv_simt(p, simt_cfg_, dtype_, stream);
    }

    size_t workspace_size() const override { return workspace_; }

    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override { return why_; }

private:
    // The 16-byte epilogue: y's (and the residual's) strides allow it and the pointers are aligned.
    bool vec_out_ok(const ConvKernelParams& p) const {
        return vec_out_strides_ && aligned(p.y, kVecBytes) && (!p.residual || aligned(p.residual, kVecBytes));
    }

    static ConvRepackParams repack(ConvRepackParams r, const void* src, void* dst) {
        r.src = src;
        r.dst = dst;
        return r;
    }

    ConvKernelParams kp_;   // the caller's layout (SIMT, depthwise)
    ConvKernelParams ikp_;  // the tensor-core kernel's view (repacked operands: dense NHWC / KRSC)
    bool repack_x_ = false, repack_w_ = false;
    ConvRepackParams xr_, wr_;
    size_t off_x_ = 0, off_w_ = 0, off_partial_ = 0, workspace_ = 0;
    tops_dtype_t dtype_;
    int device_;
    Path path_ = Path::simt;
    IgemmConfig igemm_cfg_ = IgemmConfig::k128x128;
    SimtConfig simt_cfg_ = SimtConfig::k128x128;
    bool vec_out_strides_ = false;
    bool bias_ = false, residual_ = false;
    bool pdl_ = false;   // x's repack runs as a programmatic dependent of w's (sm_90)
    bool sm90_ = false;  // the Hopper kernel, when the pointers allow (else the tensor-core path below)
    ConvSm90Problem sm90q_;
    bool tf32_planes_ = false;  // f32 on the Hopper TF32 kernel: x and w repacked as its planes
    ConvTf32Problem tf32q_;
    ConvSmallcTile smallc_;
    int sm_count_ = 0;
    std::string name_, why_;
};

Status ConvPlanCuda::build(const ConvParams& cp, const DeviceInfo& dev) {
    bias_ = cp.bias.present();
    residual_ = cp.residual.present();
    const char* dt = dtype_tag(dtype_);
    const int64_t m = int64_t(kp_.n) * kp_.p * kp_.q;
    if (cp.output_empty()) {
        path_ = Path::empty;
        name_ = fmt("conv2d_", dt, "_empty");
        why_ = "empty output";
        return Status::ok();
    }
    if (cp.depthwise()) {
        path_ = Path::depthwise;
        name_ = fmt("conv2d_", dt, "_depthwise_direct");
        why_ = fmt("groups ", kp_.groups, " == input channels: direct kernel, ",
                   kp_.ys[1] == 1 ? "channels" : "output columns", " across threads");
        return Status::ok();
    }
    // SIMT tile: 128x128 unless that leaves SMs idle.
    const int64_t simt_tiles = (m + 127) / 128 * ((kp_.k + 127) / 128) * kp_.groups;
    simt_cfg_ = simt_tiles < dev.sm_count ? SimtConfig::k64x64 : SimtConfig::k128x128;
    const std::string simt_name = fmt("conv2d_", dt, "_simt_", simt_config_name(simt_cfg_));

    // Channels per 16-byte chunk: the tensor-core kernels' unit of x and w.
    const int vec = int(kVecBytes / dtype_size(dtype_));
    vec_out_strides_ = kp_.ys[1] == 1 && kp_.k % kConvEpiChannels == 0 && strides_multiple(kp_.ys, 1, vec) &&
                       (!residual_ || (kp_.res[1] == 1 && strides_multiple(kp_.res, 1, vec)));
    std::string smallc_why;
    {
        DeviceScope scope(device_);
        TOPS_RETURN_IF_ERROR(scope.status());
        smallc_why = conv_smallc_plan(kp_, dtype_, dev, &smallc_);
    }
    if (smallc_why.empty()) {
        path_ = Path::smallc;
        workspace_ = conv_smallc_workspace(kp_, smallc_);
        name_ = conv_smallc_kernel_name(smallc_, dtype_);
        why_ = fmt(kp_.c, " channels: tensor-core kernel on an input window of ", smallc_.cp,
                   " channels per pixel (", smallc_.xrows, "x", smallc_.xcols, " pixels per CTA, ", smallc_.smem,
                   " bytes of shared memory), the filter packed into the workspace per call; epilogue ",
                   vec_out_strides_ ? "16-byte vectors when y/residual are aligned" : "per element (y strides)",
                   "; a workspace not 16-byte aligned runs ", simt_name);
        return Status::ok();
    }
    auto operand_ok = [&](const int64_t (&st)[4]) {
        return kp_.c % vec == 0 && st[1] == 1 && strides_multiple(st, 1, vec);
    };
    // f32 always repacks w: the repack writes its TF32 big and small parts.
    const bool f32 = dtype_ == TOPS_DTYPE_F32;
    const bool fold = fold_taps(kp_, vec);
    repack_x_ = fold || !operand_ok(kp_.xs);
    repack_w_ = fold || f32 || !operand_ok(kp_.ws);
    // f32 on Hopper: the TF32 wgmma kernel (3xTF32, or TF32 where allowed),
    // which reads x as the repack writes it (split, or rounded to TF32).
    std::string tf32_why = "not f32";
    if (f32) {
        DeviceScope scope(device_);
        TOPS_RETURN_IF_ERROR(scope.status());
        tf32_why = fold ? "taps folded" : std::getenv("TOPS_CONV_IGEMM_CONFIG")
                                              ? "TOPS_CONV_IGEMM_CONFIG forces the mma.sync tiles"
                                              : conv_sm90_tf32_plan(kp_, residual_, !cp.allow_tf32, dev, &tf32q_);
    }
    tf32_planes_ = tf32_why.empty();
    if (tf32_planes_) repack_x_ = true;
    std::string no_tc;
    if (kp_.r > kMaxMaskTaps || kp_.s > kMaxMaskTaps) no_tc = "filter larger than 32 taps";
    else if ((repack_x_ || repack_w_) && kp_.groups > 1 && kp_.c % vec != 0)
        no_tc = fmt("grouped, channels per group ", kp_.c, " % ", vec, " != 0");
    if (!no_tc.empty()) {
        path_ = Path::simt;
        name_ = simt_name;
        why_ = fmt("SIMT implicit GEMM: ", no_tc);
        return Status::ok();
    }
    // Operands that are not dense-enough channels-last are rewritten into the
    // workspace as dense NHWC / KRSC, channels zero-padded to a whole chunk
    // (with tap folding: a filter row's taps and channels as one channel dim,
    // the input columns as the output's Q, filters one tap wide).
    ikp_ = kp_;
    const int64_t cpad_g = round_up(fold ? int64_t(kp_.s) * kp_.c : kp_.c, vec);
    const int64_t cx = cpad_g * kp_.groups;
    if (fold) {
        ikp_.w_in = kp_.q;
        ikp_.s = 1;
        ikp_.stride_w = ikp_.dil_w = 1;
        ikp_.pad_w = 0;
        xr_.fold = wr_.fold = kp_.s;
        xr_.out3 = kp_.q;
        xr_.step3 = kp_.stride_w;
        xr_.dil3 = kp_.dil_w;
        xr_.pad3 = kp_.pad_w;
        wr_.out3 = 1;
        wr_.dil3 = 1;
    }
    size_t off = 0;
    auto reserve = [&](int64_t elems, size_t elem_bytes) {
        const size_t at = off;
        off += (size_t(elems) * elem_bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
        return at;
    };
    if (repack_x_ || repack_w_) ikp_.c = int(cpad_g);
    if (repack_x_) {
        xr_.dims[0] = kp_.n;
        xr_.dims[1] = int64_t(kp_.c) * kp_.groups;
        xr_.dims[2] = kp_.h;
        xr_.dims[3] = kp_.w_in;
        for (int i = 0; i < 4; ++i) xr_.strides[i] = kp_.xs[i];
        xr_.cpad = cx;
        const int64_t xs[4] = {int64_t(kp_.h) * ikp_.w_in * cx, 1, int64_t(ikp_.w_in) * cx, cx};
        for (int i = 0; i < 4; ++i) ikp_.xs[i] = xs[i];
        const int64_t x_elems = int64_t(kp_.n) * kp_.h * ikp_.w_in * cx;
        const bool split_x = tf32_planes_ && tf32q_.split;
        off_x_ = reserve(x_elems * (split_x ? 2 : 1), dtype_size(dtype_));
        if (split_x) xr_.plane = x_elems;
        xr_.round_tf32 = tf32_planes_ && !tf32q_.split;
    }
    if (repack_w_) {
        wr_.dims[0] = int64_t(kp_.k) * kp_.groups;
        wr_.dims[1] = kp_.c;
        wr_.dims[2] = kp_.r;
        wr_.dims[3] = kp_.s;
        for (int i = 0; i < 4; ++i) wr_.strides[i] = kp_.ws[i];
        wr_.cpad = cpad_g;
        const int64_t ws[4] = {int64_t(kp_.r) * ikp_.s * cpad_g, 1, int64_t(ikp_.s) * cpad_g, cpad_g};
        for (int i = 0; i < 4; ++i) ikp_.ws[i] = ws[i];
        const int64_t w_elems = wr_.dims[0] * kp_.r * ikp_.s * cpad_g;
        off_w_ = reserve(w_elems * (f32 ? 2 : 1), dtype_size(dtype_));
        if (f32) wr_.plane = ikp_.w_plane = w_elems;
    }
    path_ = Path::igemm;
    ikp_.tf32 = f32 && cp.allow_tf32;
    std::string cfg_why;
    igemm_cfg_ = choose_igemm(kp_, dtype_, dev, &cfg_why);
    // Split-K only when the 64x64 tiles leave SMs without any CTA (fewer CTAs
    // than SMs, e.g. batch-1 7x7 layers). Measured on H100: splitting ResNet
    // layer 4 (200 CTAs, 0.38 of the resident slots) in 2 ran it at 122
    // instead of 140 TFLOP/s (the f32 partials and the extra pass cost more
    // than the added CTAs gain), so partially filled waves are not split.
    const int64_t ctas = (m + kSplitTile - 1) / kSplitTile * ((kp_.k + kSplitTile - 1) / kSplitTile) * kp_.groups;
    const int64_t slots = int64_t(dev.sm_count) * kSplitCtasPerSm;
    const int64_t k_tiles = (int64_t(ikp_.r) * ikp_.s * (ikp_.c / vec) + kSplitChunksPerTile - 1) /
                            kSplitChunksPerTile;
    if (ctas * kSplitCtasPerSm <= slots && !tf32_planes_) {
        ikp_.splits = int(std::max<int64_t>(
            1, std::min<int64_t>({kMaxSplits, slots / std::max<int64_t>(ctas, 1), k_tiles / kMinTilesPerSplit})));
    }
    if (ikp_.splits > 1) off_partial_ = reserve(int64_t(ikp_.splits) * m * kp_.k * kp_.groups, sizeof(float));
    workspace_ = off;
    {
        DeviceScope scope(device_);
        TOPS_RETURN_IF_ERROR(scope.status());
        TOPS_RETURN_IF_ERROR(igemm_prepare(igemm_cfg_, dtype_, ikp_.tf32));
        pdl_ = conv_repack_pdl_ok(dev);
    }
    const std::string cfg_name = igemm_config_name(igemm_cfg_, dtype_);
    name_ = fmt("conv2d_", dt, "_igemm_nhwc_", cfg_name,
                !f32 ? "_mma16816" : ikp_.tf32 ? "_mma1688_tf32" : "_mma1688_3xtf32",
                repack_x_ || repack_w_ ? "_repack" : "", fold ? "_fold" : "");
    const std::string sm90_why = std::getenv("TOPS_CONV_IGEMM_CONFIG")
                                     ? std::string("TOPS_CONV_IGEMM_CONFIG forces the mma.sync tiles")
                                     : conv_sm90_plan(kp_, dtype_, residual_, dev, &sm90q_);
    sm90_ = sm90_why.empty();
    sm_count_ = dev.sm_count;
    why_ = fmt("tensor-core implicit GEMM M=", m, " N=", kp_.k, " K=", int64_t(kp_.r) * kp_.s * kp_.c, " groups ",
               kp_.groups, ", tile ", cfg_name, " (", cfg_why, "), epilogue ",
               vec_out_strides_ ? "16-byte vectors when y/residual are aligned" : "scalar (y strides)",
               repack_x_ ? "; x repacked to dense NHWC" : "", repack_w_ ? "; w repacked to dense KRSC" : "",
               !f32            ? ""
               : ikp_.tf32     ? "; f32 as TF32 (TOPS_CONV_ALLOW_TF32)"
                               : "; f32 as 3xTF32 (w split into TF32 big and small parts by the repack)",
               repack_x_ || repack_w_ ? fmt(" (channels padded to ", cpad_g, ")") : std::string(),
               fold ? fmt("; the ", kp_.s, " taps of a filter row folded into ", int64_t(kp_.s) * kp_.c,
                          " channels (", int64_t(kp_.r) * (cpad_g / vec), " chunks per pixel instead of ",
                          int64_t(kp_.r) * kp_.s * round_up(kp_.c, vec) / vec, ")")
                    : std::string(),
               ikp_.splits > 1 ? fmt("; split-K ", ikp_.splits, " (f32 partials in the workspace)") : std::string(),
               "; unaligned x/w pointers run ", simt_name, "; window kernel not used: ", smallc_why);
    if (tf32_planes_) {
        if ((tf32q_.split && xr_.plane != tf32q_.x_plane) || wr_.plane != tf32q_.w_plane) {
            return Status(TOPS_ERROR_INTERNAL, "conv2d: the 3xTF32 kernel's planes differ from the repack's");
        }
        why_ = fmt("Hopper TMA + wgmma implicit GEMM ",
                   tf32q_.split ? "as 3xTF32, x and w repacked into TF32 big and small planes"
                                : "as TF32 (TOPS_CONV_ALLOW_TF32), x repacked rounded to TF32, w's big plane",
                   " (channels padded to ", cpad_g, "), pixel box ", tf32q_.bn, "x", tf32q_.bp, "x", tf32q_.bq, ", ",
                   tf32q_.tiles, " tiles of ", tf32q_.block_m,
                   " channels x 128 pixels; a workspace not 16-byte aligned runs ", simt_name);
        name_ = conv_sm90_tf32_kernel_name(tf32q_);
    } else if (sm90_) {
        why_ = fmt("Hopper TMA + wgmma implicit GEMM, pixel box ", sm90q_.bn, "x", sm90q_.bp, "x", sm90q_.bq, ", ",
                   sm90q_.block_n, " channels per tile, ", sm90q_.tiles, " tiles; x/w/y pointers TMA cannot take run: ",
                   name_, " (", why_, ")");
        name_ = conv_sm90_kernel_name(sm90q_);
    } else {
        why_ += fmt("; Hopper kernel not used: ", sm90_why, f32 ? fmt("; TF32 Hopper kernel not used: ", tf32_why)
                                                                   : std::string());
    }
    return Status::ok();
}

Status build_plan(const ConvKernelParams& kp, const ConvParams& cp, const DeviceInfo& dev, PlanPtr* out) {
    std::unique_ptr<ConvPlanCuda> plan(new (std::nothrow) ConvPlanCuda(kp, cp.x.dtype, dev.ordinal));
    if (!plan) return Status(TOPS_ERROR_OUT_OF_MEMORY, "conv2d: out of host memory");
    TOPS_RETURN_IF_ERROR(plan->build(cp, dev));
    *out = std::move(plan);
    return Status::ok();
}

}  // namespace

Status plan_conv2d(const ConvParams& cp, const DeviceInfo& dev, PlanPtr* out) {
    if (cp.output_empty()) {
        return build_plan(ConvKernelParams{}, cp, dev, out);
    }
    if (!std::getenv("TOPS_CONV_IGEMM_CONFIG")) {  // a forced tile config benchmarks the implicit GEMM
        bool planned = false;
        TOPS_RETURN_IF_ERROR(plan_conv_as_gemm(
            cp, [&](const GemmParams& g, PlanPtr* gemm) { return plan_gemm(g, dev, gemm); }, out, &planned));
        if (planned) return Status::ok();
    }
    const int64_t kg = cp.out_c_per_group(), cg = cp.in_c_per_group();
    const int64_t m = cp.output_pixels();
    const int64_t ints[] = {cp.batch, cp.in_h, cp.in_w, cg, kg, cp.groups, cp.kernel_h, cp.kernel_w, cp.out_h,
                            cp.out_w, cp.stride_h, cp.stride_w, cp.pad_top, cp.pad_left, cp.dilation_h,
                            cp.dilation_w, m, cp.out_c, cp.in_c};
    for (int64_t v : ints) {
        if (!fits_int(v)) {
            return Status(TOPS_ERROR_NOT_SUPPORTED,
                          fmt("conv2d: a size of ", v, " exceeds the CUDA kernels' 32-bit index range (N*P*Q = ", m,
                              ")"));
        }
    }
    if (int64_t(cp.kernel_h - 1) * cp.dilation_h > INT_MAX - int64_t(cp.in_h) - cp.pad_top ||
        int64_t(cp.kernel_w - 1) * cp.dilation_w > INT_MAX - int64_t(cp.in_w) - cp.pad_left ||
        (cp.out_h - 1) * cp.stride_h > INT_MAX || (cp.out_w - 1) * cp.stride_w > INT_MAX) {
        return Status(TOPS_ERROR_NOT_SUPPORTED, "conv2d: input coordinates exceed the CUDA kernels' 32-bit range");
    }
    ConvKernelParams kp;
    kp.n = int(cp.batch);
    kp.h = int(cp.in_h);
    kp.w_in = int(cp.in_w);
    kp.c = int(cg);
    kp.k = int(kg);
    kp.groups = int(cp.groups);
    kp.r = int(cp.kernel_h);
    kp.s = int(cp.kernel_w);
    kp.p = int(cp.out_h);
    kp.q = int(cp.out_w);
    kp.stride_h = int(cp.stride_h);
    kp.stride_w = int(cp.stride_w);
    kp.pad_h = int(cp.pad_top);
    kp.pad_w = int(cp.pad_left);
    kp.dil_h = int(cp.dilation_h);
    kp.dil_w = int(cp.dilation_w);
    for (int i = 0; i < 4; ++i) {
        kp.xs[i] = cp.x.strides[i];
        kp.ws[i] = cp.w.strides[i];
        kp.ys[i] = cp.y.strides[i];
        kp.res[i] = cp.residual.present() ? cp.residual.strides[i] : 0;
    }
    kp.bias_stride = cp.bias.present() ? cp.bias.strides[0] : 0;
    kp.bias_f32 = false;  // bias shares x's dtype
    kp.act = cp.act;
    return build_plan(kp, cp, dev, out);
}

}  // namespace tops::cuda
