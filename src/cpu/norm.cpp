// CPU LayerNorm / RMSNorm plan. capi hands over the canonical rows x cols
// form (NormParams); the plan picks one of two kernels and splits rows across
// OpenMP threads (one row is the unit of work: its statistics need all of it).
//   rows:    x, y, residual and prenorm have unit column stride: vectorized;
//   strided: any other column stride: scalar.
// gamma, beta and bias reach the kernels as f32 with unit stride: parameters
// of another dtype or stride are converted into the workspace at execute (a
// read of cols elements, negligible next to rows x cols).
#include <string>

#include "common/env.hpp"
#include "common/half.hpp"
#include "common/int_math.hpp"
#include "common/status.hpp"
#include "cpu/isa.hpp"
#include "cpu/norm_kernels.hpp"
#include "cpu/ops.hpp"
#include "cpu/parallel.hpp"

namespace tops::cpu {
namespace {

// Below this many elements a row range is not worth another thread.
constexpr int64_t kGrainElements = 16 * 1024;

const char* dtype_tag(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F16: return "f16";
        case TOPS_DTYPE_BF16: return "bf16";
        default: return "f32";
    }
}

// A gamma / beta / bias vector the kernel can read directly.
bool direct_f32(const TensorLayout& t) {
    return !t.present() || (t.dtype == TOPS_DTYPE_F32 && (t.dims[0] <= 1 || t.strides[0] == 1));
}

float param_value(const void* base, const TensorLayout& t, int64_t i) {
    const int64_t off = i * t.strides[0];
    switch (t.dtype) {
        case TOPS_DTYPE_F16: return f16_to_float(static_cast<const uint16_t*>(base)[off]);
        case TOPS_DTYPE_BF16: return bf16_to_float(static_cast<const uint16_t*>(base)[off]);
        default: return static_cast<const float*>(base)[off];
    }
}

bool unit_cols(const TensorLayout& t) { return !t.present() || t.dims[1] <= 1 || t.strides[1] == 1; }

class NormPlan final : public OpPlan {
public:
    NormPlan(const NormParams& p, Isa isa) : p_(p), isa_(isa) {
        rows_ = p.x.dims[0];
        cols_ = p.x.dims[1];
        vectorized_ = unit_cols(p.x) && unit_cols(p.y) && unit_cols(p.residual) && unit_cols(p.prenorm);
        const TensorLayout* params[] = {&p_.gamma, &p_.beta, &p_.bias};
        for (const TensorLayout* t : params) {
            if (!direct_f32(*t)) ++converted_;
        }
        name_ = fmt(p.rms ? "rmsnorm_" : "layernorm_", dtype_tag(p.x.dtype), vectorized_ ? "_rows_" : "_strided_",
                    isa_name(isa));
        why_ = vectorized_ ? "every row tensor has unit column stride: one row per task, three vector passes "
                             "over the row from L1/L2 (sum, centered sum of squares, normalize)"
                           : "a row tensor has a non-unit column stride: scalar strided rows, same three passes";
        if (converted_ > 0) why_ += fmt("; ", converted_, " parameter vector(s) converted to f32 in the workspace");
        // TOPS_CPU_NORM_STREAM=0 keeps cached stores (for comparisons).
        const int64_t y_bytes = mul_saturated(mul_saturated(rows_, cols_), int64_t(dtype_size(p.y.dtype)));
        stream_ = vectorized_ && y_bytes >= kStreamMinBytes && !env_switched_off("TOPS_CPU_NORM_STREAM");
        if (stream_) why_ += fmt("; non-temporal stores of y (y >= ", kStreamMinBytes >> 20, " MiB)");
    }

    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override { return fmt(why_, "; isa ", isa_name(isa_), " (TOPS_CPU_ISA / cpuid)"); }
    size_t workspace_size() const override { return size_t(converted_) * size_t(cols_) * sizeof(float); }

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (rows_ == 0) return Status::ok();
        // Rows of no columns: only the optional per-row statistics are written.
        if (cols_ == 0 && !p_.mean.present() && !p_.rstd.present()) return Status::ok();
        NormArgs a;
        a.x = args.in(TOPS_ARG_X);
        a.y = args.out(TOPS_ARG_Y);
        a.residual = p_.residual.present() ? args.in(TOPS_ARG_RESIDUAL) : nullptr;
        a.prenorm = p_.prenorm.present() ? args.out(TOPS_ARG_PRENORM) : nullptr;
        a.x_rs = p_.x.strides[0];
        a.y_rs = p_.y.strides[0];
        a.x_cs = p_.x.strides[1];
        a.y_cs = p_.y.strides[1];
        if (a.residual) {
            a.res_rs = p_.residual.strides[0];
            a.res_cs = p_.residual.strides[1];
        }
        if (a.prenorm) {
            a.pre_rs = p_.prenorm.strides[0];
            a.pre_cs = p_.prenorm.strides[1];
        }
        if (cols_ == 0) {
            // Rows of no columns read and write no element, and an empty
            // tensor's row stride is unbounded: keep it out of the row pointers.
            a.x_rs = a.y_rs = a.res_rs = a.pre_rs = 0;
        }
        float* ws = static_cast<float*>(args.workspace);
        a.gamma = param(args.in(TOPS_ARG_GAMMA), p_.gamma, &ws);
        a.beta = param(args.in(TOPS_ARG_BETA), p_.beta, &ws);
        a.bias = param(args.in(TOPS_ARG_BIAS), p_.bias, &ws);
        if (p_.mean.present()) {
            a.mean = static_cast<float*>(args.out(TOPS_ARG_MEAN));
            a.mean_stride = p_.mean.strides[0];
        }
        if (p_.rstd.present()) {
            a.rstd = static_cast<float*>(args.out(TOPS_ARG_RSTD));
            a.rstd_stride = p_.rstd.strides[0];
        }
        a.cols = cols_;
        a.eps = p_.eps;
        a.rms = p_.rms;
        a.stream = stream_;
        switch (p_.x.dtype) {
            case TOPS_DTYPE_F16: run<TOPS_DTYPE_F16>(ctx, a); break;
            case TOPS_DTYPE_BF16: run<TOPS_DTYPE_BF16>(ctx, a); break;
            default: run<TOPS_DTYPE_F32>(ctx, a); break;
        }
        return Status::ok();
    }

private:
    // The kernel's view of an optional parameter vector: the caller's pointer
    // when it is f32 with unit stride, else a converted copy in *ws.
    const float* param(const void* ptr, const TensorLayout& t, float** ws) const {
        if (!t.present()) return nullptr;
        if (direct_f32(t)) return static_cast<const float*>(ptr);
        float* dst = *ws;
        *ws += cols_;
        for (int64_t i = 0; i < cols_; ++i) dst[i] = param_value(ptr, t, i);
        return dst;
    }

    template <tops_dtype_t DT>
    void run(const ExecContext& ctx, const NormArgs& a) const {
        const int threads = pick_threads(ctx.num_threads, rows_ * (cols_ > 0 ? cols_ : 1), kGrainElements);
        parallel_for(threads, rows_, [&](int64_t begin, int64_t end) {
            NormArgs t = a;
            t.row_begin = begin;
            t.row_end = end;
            if (vectorized_) dispatch(NormRowsKernel<DT>{}, t);
            else dispatch(NormStridedKernel<DT>{}, t);
        });
    }

    template <class F>
    void dispatch(F f, const NormArgs& a) const {
        isa_dispatch_to(isa_, f, a);
    }

    NormParams p_;
    Isa isa_;
    int64_t rows_ = 0, cols_ = 0;
    bool vectorized_ = false;
    bool stream_ = false;
    int converted_ = 0;
    std::string name_, why_;
};

}  // namespace

Status plan_norm(const NormParams& p, PlanPtr* out) {
    out->reset(new NormPlan(p, active_isa()));
    return Status::ok();
}

}  // namespace tops::cpu
