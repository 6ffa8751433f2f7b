// CUDA Conv2d plan: adapts the validated ConvParams to the kernels' one
// parameter struct and picks the kernel once, at op creation.
//
//   depthwise (C per group 1, groups > 1)    -> conv_depthwise (direct)
//   f16/bf16, channels-last x and w with
//   C per group % 8 == 0 and 8-element strides -> conv_igemm (tensor cores)
//   everything else (f32, NCHW, odd strides)  -> conv_simt (f32 FMA)
//
// Pointer alignment is only known at execute: a tensor-core plan whose x or w
// pointer is not 16-byte aligned runs the SIMT kernel instead, and the 16-byte
// epilogue is used only when y (and residual) are aligned. f32 always runs
// exact f32 arithmetic (TOPS_CONV_ALLOW_TF32 allows TF32 but does not require it).
// TOPS_CONV_IGEMM_CONFIG=<config name> forces a tensor-core tile config
// (benchmarking the tile choice).
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "cuda/conv.hpp"
#include "cuda/ops.hpp"

namespace tops::cuda {
namespace {

constexpr int kVecElems = 8;       // 16 bytes of f16 / bf16
constexpr int kMaxMaskTaps = 32;   // igemm keeps one bit per filter row / column
constexpr size_t kVecBytes = 16;

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

// Tile config for the tensor-core kernel: fewest estimated SM-waves of work,
// weighting each config's per-tile cost by its relative throughput.
IgemmConfig choose_igemm(const ConvKernelParams& kp, const DeviceInfo& dev, std::string* why) {
    const char* env = std::getenv("TOPS_CONV_IGEMM_CONFIG");
    if (env && env[0]) {
        for (int c = 0; c < int(IgemmConfig::count); ++c) {
            if (std::strcmp(env, igemm_config_name(IgemmConfig(c))) == 0) {
                *why = "forced by TOPS_CONV_IGEMM_CONFIG";
                return IgemmConfig(c);
            }
        }
    }
    struct Cand {
        IgemmConfig cfg;
        int bm, bn;
        double rel_speed;  // throughput per SM relative to 128x128 (bigger tiles reuse more)
    };
    const Cand cands[] = {{IgemmConfig::k128x128, 128, 128, 1.0},
                          {IgemmConfig::k128x64, 128, 64, 0.85},
                          {IgemmConfig::k64x64, 64, 64, 0.7}};
    const int64_t m = int64_t(kp.n) * kp.p * kp.q;
    const int sms = dev.sm_count > 0 ? dev.sm_count : 1;
    double best = -1.0;
    IgemmConfig pick = IgemmConfig::k128x128;
    for (const Cand& c : cands) {
        // A tile whose N extent is mostly padding wastes its MMAs.
        if (c.bn > kp.k && c.bn > 64) continue;
        const int64_t tiles = (m + c.bm - 1) / c.bm * ((kp.k + c.bn - 1) / c.bn) * kp.groups;
        const int64_t waves = (tiles + sms - 1) / sms;
        const double cost = double(waves) * c.bm * c.bn / c.rel_speed;
        if (best < 0 || cost < best) {
            best = cost;
            pick = c.cfg;
        }
    }
    *why = "fewest estimated SM waves";
    return pick;
}

class ConvPlanCuda final : public OpPlan {
public:
    ConvPlanCuda(const ConvKernelParams& kp, tops_dtype_t dt, int device) : kp_(kp), dtype_(dt), device_(device) {}

    enum class Path { empty, depthwise, igemm, simt };

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
        if (path_ == Path::igemm && aligned(p.x, kVecBytes) && aligned(p.w, kVecBytes)) {
            p.vec_out = vec_out_strides_ && aligned(p.y, kVecBytes) && (!p.residual || aligned(p.residual, kVecBytes));
            return launch_conv_igemm(p, igemm_cfg_, dtype_, stream);
        }
        return launch_conv_simt(p, simt_cfg_, dtype_, stream);
    }

    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override { return why_; }

private:
    ConvKernelParams kp_;
    tops_dtype_t dtype_;
    int device_;
    Path path_ = Path::simt;
    IgemmConfig igemm_cfg_ = IgemmConfig::k128x128;
    SimtConfig simt_cfg_ = SimtConfig::k128x128;
    bool vec_out_strides_ = false;
    bool bias_ = false, residual_ = false;
    std::string name_, why_;
};

Status ConvPlanCuda::build(const ConvParams& cp, const DeviceInfo& dev) {
    bias_ = cp.bias.present();
    residual_ = cp.residual.present();
    const char* dt = dtype_tag(dtype_);
    const int64_t m = int64_t(kp_.n) * kp_.p * kp_.q;
    if (m == 0 || kp_.k == 0) {
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

    const bool half = dtype_ == TOPS_DTYPE_F16 || dtype_ == TOPS_DTYPE_BF16;
    std::string no_tc;
    if (!half) no_tc = "f32 (exact f32 FMA)";
    else if (kp_.c % kVecElems != 0) no_tc = fmt("channels per group ", kp_.c, " % 8 != 0");
    else if (kp_.xs[1] != 1 || kp_.ws[1] != 1) no_tc = "x or w not channels-last";
    else if (!strides_multiple(kp_.xs, 1, kVecElems) || !strides_multiple(kp_.ws, 1, kVecElems))
        no_tc = "x or w strides not multiples of 8";
    else if (kp_.r > kMaxMaskTaps || kp_.s > kMaxMaskTaps) no_tc = "filter larger than 32 taps";
    if (!no_tc.empty()) {
        path_ = Path::simt;
        name_ = simt_name;
        why_ = fmt("SIMT implicit GEMM: ", no_tc);
        return Status::ok();
    }
    path_ = Path::igemm;
    std::string cfg_why;
    igemm_cfg_ = choose_igemm(kp_, dev, &cfg_why);
    vec_out_strides_ = kp_.ys[1] == 1 && kp_.k % kVecElems == 0 && strides_multiple(kp_.ys, 1, kVecElems) &&
                       (!residual_ || (kp_.res[1] == 1 && strides_multiple(kp_.res, 1, kVecElems)));
    {
        DeviceScope scope(device_);
        TOPS_RETURN_IF_ERROR(scope.status());
        TOPS_RETURN_IF_ERROR(igemm_prepare(igemm_cfg_, dtype_));
    }
    name_ = fmt("conv2d_", dt, "_igemm_nhwc_", igemm_config_name(igemm_cfg_), "_mma16816");
    why_ = fmt("tensor-core implicit GEMM M=", m, " N=", kp_.k, " K=", int64_t(kp_.r) * kp_.s * kp_.c, " groups ",
               kp_.groups, ", tile ", igemm_config_name(igemm_cfg_), " (", cfg_why, "), epilogue ",
               vec_out_strides_ ? "16-byte vectors when y/residual are aligned" : "scalar (y strides)",
               "; unaligned x/w pointers run ", simt_name);
    return Status::ok();
}

}  // namespace

Status plan_conv2d(const ConvParams& cp, const DeviceInfo& dev, PlanPtr* out) {
    const int64_t kg = cp.out_c_per_group(), cg = cp.in_c_per_group();
    const int64_t m = cp.batch * cp.out_h * cp.out_w;
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
    std::unique_ptr<ConvPlanCuda> plan(new (std::nothrow) ConvPlanCuda(kp, cp.x.dtype, dev.ordinal));
    if (!plan) return Status(TOPS_ERROR_OUT_OF_MEMORY, "conv2d: out of host memory");
    TOPS_RETURN_IF_ERROR(plan->build(cp, dev));
    *out = std::move(plan);
    return Status::ok();
}

}  // namespace tops::cuda
