// CPU plan of the fused elementwise ops. Merges y's dims (and every input's,
// in lockstep) to the fewest, takes the last merged dim as the inner row and
// picks one of two kernels:
//   rows:    y has unit inner stride and each input inner stride 1 or 0
//            (contiguous tensors, a row-vector bias, a per-channel slope or
//            bias): vectorized streams;
//   strided: anything else, scalar.
// Work items are (row, block of kBlockElems inner elements), split across
// OpenMP threads; every element is computed independently, so the result
// does not depend on the split.
#include <string>

#include "common/int_math.hpp"
#include "common/status.hpp"
#include "cpu/eltwise_kernels.hpp"
#include "cpu/isa.hpp"
#include "cpu/ops.hpp"
#include "cpu/parallel.hpp"

namespace tops::cpu {
namespace {

constexpr int64_t kBlockElems = 16 * 1024;   // inner elements per work item
constexpr int64_t kGrainElements = 32 * 1024;

const char* dtype_tag(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F16: return "f16";
        case TOPS_DTYPE_BF16: return "bf16";
        default: return "f32";
    }
}

const char* op_tag(const EltwiseParams& p) {
    switch (p.kind) {
        case EltwiseKind::prelu: return "prelu";
        case EltwiseKind::weighted_sum: return "weighted_sum";
        default: break;
    }
    switch (p.act) {
        case Activation::relu: return "bias_relu";
        case Activation::gelu_erf: return "bias_gelu_erf";
        case Activation::gelu_tanh: return "bias_gelu_tanh";
        case Activation::silu: return "bias_silu";
        default: return "bias";
    }
}

// Dims of y (size > 1) merged where y and every input allow it; the last one
// becomes the inner row.
EltwiseArgs geometry(const EltwiseParams& p) {
    EltwiseArgs a;
    a.kind = p.kind;
    a.act = p.act;
    a.num_inputs = p.num_inputs;
    for (int i = 0; i < p.num_inputs; ++i) a.coefs[i] = p.coefs[i];
    // An empty y writes nothing (execute returns at once); its other dims may
    // multiply past int64, so they are not merged.
    if (p.y.numel() == 0) return a;
    int rank = 0;
    int64_t dims[kMaxRank], ys[kMaxRank], xs[kMaxEltwiseInputs][kMaxRank];
    for (int d = 0; d < p.y.rank; ++d) {
        const int64_t dim = p.y.dims[d];
        if (dim == 1) continue;
        bool mergeable = rank > 0 && product_equals(p.y.strides[d], dim, ys[rank - 1]);
        for (int i = 0; i < p.num_inputs && mergeable; ++i) {
            mergeable = product_equals(p.in[i].strides[d], dim, xs[i][rank - 1]);
        }
        const int k = mergeable ? rank - 1 : rank++;
        dims[k] = mergeable ? dims[k] * dim : dim;
        ys[k] = p.y.strides[d];
        for (int i = 0; i < p.num_inputs; ++i) xs[i][k] = p.in[i].strides[d];
    }
    if (rank == 0) {  // a single element
        dims[0] = 1;
        ys[0] = 1;
        for (int i = 0; i < p.num_inputs; ++i) xs[i][0] = 0;
        rank = 1;
    }
    a.n = dims[rank - 1];
    a.y_inner = ys[rank - 1];
    for (int i = 0; i < p.num_inputs; ++i) a.in_inner[i] = xs[i][rank - 1];
    a.rank = rank - 1;
    a.rows = 1;
    for (int d = 0; d < a.rank; ++d) {
        a.dims[d] = dims[d];
        a.y_outer[d] = ys[d];
        for (int i = 0; i < p.num_inputs; ++i) a.in_outer[i][d] = xs[i][d];
        a.rows *= dims[d];
    }
    a.block = a.n < kBlockElems ? a.n : kBlockElems;
    return a;
}

bool vectorizable(const EltwiseArgs& a) {
    if (a.y_inner != 1 && a.n > 1) return false;
    for (int i = 0; i < a.num_inputs; ++i) {
        if (a.in_inner[i] != 0 && a.in_inner[i] != 1) return false;
    }
    // bias_act and PReLU stream x (input 0).
    return a.kind == EltwiseKind::weighted_sum || a.in_inner[0] == 1 || a.n == 1;
}

class EltwisePlan final : public OpPlan {
public:
    EltwisePlan(const EltwiseParams& p, Isa isa) : p_(p), isa_(isa), geo_(geometry(p)) {
        numel_ = p.y.numel();
        if (geo_.n == 1) {  // one element per row: unit inner stride is moot
            geo_.y_inner = 1;
            for (int i = 0; i < geo_.num_inputs; ++i) geo_.in_inner[i] = 0;
        }
        vectorized_ = vectorizable(geo_);
        geo_.stream = vectorized_ && mul_saturated(numel_, int64_t(dtype_size(p.y.dtype))) >= kStreamMinBytes;
        name_ = fmt("eltwise_", op_tag(p), "_", dtype_tag(p.y.dtype), vectorized_ ? "_rows_" : "_strided_",
                    isa_name(isa));
        why_ = vectorized_ ? fmt("rows of ", geo_.n, " contiguous y elements, each input a contiguous row or one "
                                 "value per row: vector streams",
                                 geo_.stream ? "; non-temporal stores of y (y >= " : "; cached stores (y < ",
                                 kStreamMinBytes >> 20, " MiB)")
                           : fmt("inner stride of y or an input is not 0 or 1 (y ", geo_.y_inner,
                                 "): scalar strided loop");
    }

    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override { return fmt(why_, "; isa ", isa_name(isa_), " (TOPS_CPU_ISA / cpuid)"); }

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (numel_ == 0) return Status::ok();
        EltwiseArgs a = geo_;
        a.y = args.out(TOPS_ARG_Y);
        for (int i = 0; i < a.num_inputs; ++i) a.in[i] = args.in(input_arg(i));
        switch (p_.y.dtype) {
            case TOPS_DTYPE_F16: run<TOPS_DTYPE_F16>(ctx, a); break;
            case TOPS_DTYPE_BF16: run<TOPS_DTYPE_BF16>(ctx, a); break;
            default: run<TOPS_DTYPE_F32>(ctx, a); break;
        }
        return Status::ok();
    }

private:
    tops_arg_kind_t input_arg(int i) const {
        switch (p_.kind) {
            case EltwiseKind::weighted_sum: return tops_arg_kind_t(TOPS_ARG_INPUT0 + i);
            case EltwiseKind::prelu: return i == 0 ? TOPS_ARG_X : TOPS_ARG_SLOPE;
            default: return i == 0 ? TOPS_ARG_X : TOPS_ARG_BIAS;
        }
    }

    template <tops_dtype_t DT>
    void run(const ExecContext& ctx, const EltwiseArgs& a) const {
        const int64_t items = a.rows * ((a.n + a.block - 1) / a.block);
        const int threads = pick_threads(ctx.num_threads, numel_, kGrainElements);
        parallel_for(threads, items, [&](int64_t begin, int64_t end) {
            EltwiseArgs t = a;
            t.item_begin = begin;
            t.item_end = end;
            if (vectorized_) dispatch(EltwiseRowsKernel<DT>{}, t);
            else dispatch(EltwiseStridedKernel<DT>{}, t);
        });
    }

    template <class F>
    void dispatch(F f, const EltwiseArgs& a) const {
        isa_dispatch_to(isa_, f, a);
    }

    EltwiseParams p_;
    Isa isa_;
    EltwiseArgs geo_;
    int64_t numel_ = 0;
    bool vectorized_ = false;
    std::string name_, why_;
};

}  // namespace

Status plan_eltwise(const EltwiseParams& p, PlanPtr* out) {
    out->reset(new EltwisePlan(p, active_isa()));
    return Status::ok();
}

}  // namespace tops::cpu
