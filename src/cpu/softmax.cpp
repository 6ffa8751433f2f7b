// CPU softmax plan: reduces the layout to the fewest dims, picks one of three
// kernels and splits rows (or column blocks) across OpenMP threads.
//   lastdim: the axis has unit stride in x and y (rows are contiguous);
//   axis:    another dim has unit stride in x and y: vectorize across it and
//            walk along the strided axis (e.g. softmax over C of NCHW);
//   strided: anything else, scalar.
// The ISA is fixed at plan creation (active_isa()), so the kernel name the op
// reports is the one that runs.
#include <string>

#include "common/int_math.hpp"
#include "common/status.hpp"
#include "cpu/isa.hpp"
#include "cpu/ops.hpp"
#include "cpu/parallel.hpp"
#include "cpu/softmax_kernels.hpp"

namespace tops::cpu {
namespace {

// Below this many elements a row range is not worth another thread.
constexpr int64_t kGrainElements = 32 * 1024;

enum class Strategy { lastdim, axis, strided };

const char* strategy_name(Strategy s) {
    switch (s) {
        case Strategy::lastdim: return "lastdim";
        case Strategy::axis: return "axis";
        default: return "strided";
    }
}

const char* dtype_tag(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F16: return "f16";
        case TOPS_DTYPE_BF16: return "bf16";
        default: return "f32";
    }
}

int float_lanes(Isa isa) {
    switch (isa) {
        case Isa::avx512: return 16;
        case Isa::avx2: return 8;
        default: return 4;
    }
}

// The dims of x other than those in `skip` (size > 1 only), merged where every
// tensor's strides allow it.
SoftmaxRowSpace row_space(const SoftmaxParams& p, int skip_a, int skip_b) {
    SoftmaxRowSpace s;
    if (p.x.numel() == 0) {  // nothing to walk; the other dims may multiply past int64 (fuzz_softmax)
        s.count = 0;
        return s;
    }
    for (int d = 0; d < p.x.rank; ++d) {
        if (d == skip_a || d == skip_b || p.x.dims[d] == 1) continue;
        const int64_t dim = p.x.dims[d];
        const int64_t xs = p.x.strides[d], ys = p.y.strides[d];
        const int64_t ms = p.mask.present() ? p.mask.strides[d] : 0;
        const int64_t ls = p.lengths.present() ? p.lengths.strides[d] : 0;
        const int k = s.rank - 1;
        if (k >= 0 && s.x[k] == xs * dim && s.y[k] == ys * dim && s.mask[k] == ms * dim &&
            s.lengths[k] == ls * dim) {
            s.dims[k] *= dim;
            s.x[k] = xs;
            s.y[k] = ys;
            s.mask[k] = ms;
            s.lengths[k] = ls;
            continue;
        }
        s.dims[s.rank] = dim;
        s.x[s.rank] = xs;
        s.y[s.rank] = ys;
        s.mask[s.rank] = ms;
        s.lengths[s.rank] = ls;
        ++s.rank;
    }
    s.count = 1;
    for (int d = 0; d < s.rank; ++d) s.count *= s.dims[d];
    return s;
}

class SoftmaxPlan final : public OpPlan {
public:
    SoftmaxPlan(const SoftmaxParams& p, Isa isa) : p_(p), isa_(isa) {
        const int ax = p.axis;
        n_ = p.x.dims[ax];
        numel_ = p.x.numel();
        const int64_t mask_axis = p.mask.present() ? p.mask.strides[ax] : 0;
        int inner = -1;
        for (int d = 0; d < p.x.rank; ++d) {
            if (d != ax && p.x.dims[d] > 1 && p.x.strides[d] == 1 && p.y.strides[d] == 1) inner = d;
        }
        const bool unit_axis = p.x.strides[ax] == 1 && p.y.strides[ax] == 1;
        if (unit_axis && (mask_axis == 0 || mask_axis == 1)) {
            strategy_ = Strategy::lastdim;
            rows_ = row_space(p, ax, -1);
            stream_ = mul_saturated(numel_, int64_t(dtype_size(p.y.dtype))) >= kStreamMinBytes;
            why_ = fmt("the softmax axis has unit stride in x and y: contiguous rows; 3 passes per row from cache; ",
                       stream_ ? "non-temporal stores (y >= " : "cached stores (y < ", kStreamMinBytes >> 20, " MiB)");
        } else if (inner >= 0) {
            strategy_ = Strategy::axis;
            inner_ = inner;
            rows_ = row_space(p, ax, inner);
            block_ = int64_t(kSoftmaxAxisVecs) * float_lanes(isa);
            blocks_ = (p.x.dims[inner] + block_ - 1) / block_;
            why_ = fmt("the softmax axis has stride ", p.x.strides[ax], " and dim ", inner,
                       " is contiguous in x and y: vectorized across blocks of ", block_,
                       " columns of dim ", inner, " walking along the axis");
        } else {
            strategy_ = Strategy::strided;
            rows_ = row_space(p, ax, -1);
            why_ = unit_axis ? "the mask is strided along the softmax axis: scalar strided rows"
                             : "no dim has unit stride in both x and y: scalar strided rows";
        }
        name_ = fmt("softmax_", dtype_tag(p.x.dtype), "_", strategy_name(strategy_), "_", isa_name(isa));
    }

    const char* kernel_name() const override { return name_.c_str(); }

    std::string reason() const override {
        return fmt(why_, "; isa ", isa_name(isa_), " (TOPS_CPU_ISA / cpuid)");
    }

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (numel_ == 0) return Status::ok();
        SoftmaxCommon io;
        io.x = args.in(TOPS_ARG_X);
        io.y = args.out(TOPS_ARG_Y);
        io.mask = static_cast<const uint8_t*>(args.in(TOPS_ARG_MASK));
        io.lengths = static_cast<const int32_t*>(args.in(TOPS_ARG_LENGTHS));
        io.scale = p_.scale;
        io.log = p_.log;
        switch (p_.x.dtype) {
            case TOPS_DTYPE_F16: run<TOPS_DTYPE_F16>(ctx, io); break;
            case TOPS_DTYPE_BF16: run<TOPS_DTYPE_BF16>(ctx, io); break;
            default: run<TOPS_DTYPE_F32>(ctx, io); break;
        }
        return Status::ok();
    }

private:
    template <tops_dtype_t DT>
    void run(const ExecContext& ctx, const SoftmaxCommon& io) const {
        const int ax = p_.axis;
        if (strategy_ == Strategy::axis) {
            SoftmaxAxisArgs a;
            a.io = io;
            a.outer = rows_;
            a.n = n_;
            a.inner = p_.x.dims[inner_];
            a.x_axis = p_.x.strides[ax];
            a.y_axis = p_.y.strides[ax];
            a.mask_axis = p_.mask.present() ? p_.mask.strides[ax] : 0;
            a.mask_inner = p_.mask.present() ? p_.mask.strides[inner_] : 0;
            a.lengths_inner = p_.lengths.present() ? p_.lengths.strides[inner_] : 0;
            const int64_t items = rows_.count * blocks_;
            const int threads = pick_threads(ctx.num_threads, numel_, kGrainElements);
            parallel_for(threads, items, [&](int64_t begin, int64_t end) {
                SoftmaxAxisArgs t = a;
                t.item_begin = begin;
                t.item_end = end;
                dispatch(SoftmaxAxisKernel<DT>{}, t);
            });
            return;
        }
        const int threads = pick_threads(ctx.num_threads, numel_, kGrainElements);
        if (strategy_ == Strategy::lastdim) {
            SoftmaxLastDimArgs a;
            a.io = io;
            a.rows = rows_;
            a.n = n_;
            a.mask_axis_stride = p_.mask.present() ? p_.mask.strides[ax] : 0;
            a.stream = stream_;
            parallel_for(threads, rows_.count, [&](int64_t begin, int64_t end) {
                SoftmaxLastDimArgs t = a;
                t.row_begin = begin;
                t.row_end = end;
                dispatch(SoftmaxLastDimKernel<DT>{}, t);
            });
            return;
        }
        SoftmaxStridedArgs a;
        a.io = io;
        a.rows = rows_;
        a.n = n_;
        a.x_axis = p_.x.strides[ax];
        a.y_axis = p_.y.strides[ax];
        a.mask_axis = p_.mask.present() ? p_.mask.strides[ax] : 0;
        parallel_for(threads, rows_.count, [&](int64_t begin, int64_t end) {
            SoftmaxStridedArgs t = a;
            t.row_begin = begin;
            t.row_end = end;
            dispatch(SoftmaxStridedKernel<DT>{}, t);
        });
    }

    // The ISA chosen at plan creation (active_isa() cannot change later, but
    // the plan keeps its own copy so the name it reports is what runs).
    template <class F, class Args>
    void dispatch(F f, const Args& a) const {
        isa_dispatch_to(isa_, f, a);
    }

    SoftmaxParams p_;
    Isa isa_;
    Strategy strategy_ = Strategy::strided;
    SoftmaxRowSpace rows_;
    int64_t n_ = 0;
    int64_t numel_ = 0;
    int inner_ = -1;
    bool stream_ = false;
    int64_t block_ = 0;
    int64_t blocks_ = 0;
    std::string name_;
    std::string why_;
};

}  // namespace

Status plan_softmax(const SoftmaxParams& p, PlanPtr* out) {
    out->reset(new SoftmaxPlan(p, active_isa()));
    return Status::ok();
}

}  // namespace tops::cpu
