// CPU reduce plan: merges the layout to the fewest dims, picks a kernel and
// splits work items across OpenMP threads.
//   row:     a reduced dim has unit stride in x (sum over the last dims,
//            global average pooling);
//   col:     a kept dim has unit stride in x (sum over the leading dims);
//   generic: anything else.
// Long reductions are cut into chunks whose size depends on the shape only;
// each (output, chunk) is an independent item and the chunk partials (f32, in
// the workspace) are combined in chunk order. So results never depend on the
// thread count: bitwise reproducible across runs and thread counts for a
// given ISA (the vector width fixes the lane order).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/env.hpp"
#include "common/half.hpp"
#include "common/int_math.hpp"
#include "common/status.hpp"
#include "cpu/isa.hpp"
#include "cpu/ops.hpp"
#include "cpu/parallel.hpp"
#include "cpu/reduce_kernels.hpp"

namespace tops::cpu {

float reduce_identity(ReduceAcc op) {
    switch (op) {
        case ReduceAcc::max: return -std::numeric_limits<float>::infinity();
        case ReduceAcc::min: return std::numeric_limits<float>::infinity();
        case ReduceAcc::prod: return 1.0f;
        default: return 0.0f;
    }
}

namespace {

// A row reduction longer than this is cut into chunks of about this size.
constexpr int64_t kRowChunkElems = int64_t(1) << 15;
// A column reduction is cut into chunks of this many reduced rows: each output
// then sums at most this many terms in sequence before the ordered combine,
// which bounds the f32 rounding error (and gives threads work on long columns).
constexpr int64_t kColChunkRows = 512;
// Below this many input elements per thread another thread is not worth it.
constexpr int64_t kGrainElements = 32 * 1024;

enum class Strategy { row, col, generic };

const char* dtype_tag(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F16: return "f16";
        case TOPS_DTYPE_BF16: return "bf16";
        default: return "f32";
    }
}

const char* op_name(ReduceOp op) {
    static const char* const names[] = {"sum", "mean", "max", "min", "prod", "sumsq", "norm2"};
    return names[int(op)];
}

ReduceAcc acc_of(ReduceOp op) {
    switch (op) {
        case ReduceOp::max: return ReduceAcc::max;
        case ReduceOp::min: return ReduceAcc::min;
        case ReduceOp::prod: return ReduceAcc::prod;
        case ReduceOp::sumsq:
        case ReduceOp::norm2: return ReduceAcc::sumsq;
        default: return ReduceAcc::sum;
    }
}

float merge(ReduceAcc op, float a, float b) {
    switch (op) {
        case ReduceAcc::prod: return a * b;
        case ReduceAcc::max:
            if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
            return b > a ? b : a;
        case ReduceAcc::min:
            if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<float>::quiet_NaN();
            return b < a ? b : a;
        default: return a + b;
    }
}

void push(ReduceSpace* s, int64_t dim, int64_t xs, int64_t ys) {
    s->dims[s->rank] = dim;
    s->x[s->rank] = xs;
    s->y[s->rank] = ys;
    ++s->rank;
    s->count *= dim;
}

// Removes dim d of s.
ReduceSpace without(const ReduceSpace& s, int d) {
    ReduceSpace r;
    for (int i = 0; i < s.rank; ++i) {
        if (i != d) push(&r, s.dims[i], s.x[i], s.y[i]);
    }
    return r;
}

int find_unit_x(const ReduceSpace& s) {
    for (int i = s.rank - 1; i >= 0; --i) {
        if (s.x[i] == 1) return i;
    }
    return -1;
}

class ReducePlan final : public OpPlan {
public:
    ReducePlan(const ReduceParams& p, Isa isa) : p_(p), isa_(isa), acc_(acc_of(p.op)) {
        // An empty x: its other dims and strides are unbounded (their products
        // may overflow int64) and only y's outputs matter, each the reduction
        // of nothing, so only the kept dims of a non-empty y are merged.
        bool y_empty = false;
        for (int d = 0; d < p.x.rank; ++d) {
            if (p.x.dims[d] != 0) continue;
            empty_ = true;
            if (!((p.axes >> d) & 1u)) y_empty = true;
        }
        // Reduced count over x's dims (size-1 dims included) and the merged spaces.
        int64_t reduced = empty_ ? 0 : 1;
        ReduceSpace kept, red;
        int last = -1;  // 0 kept, 1 reduced: category of the previous merged dim
        for (int d = 0; d < p.x.rank; ++d) {
            const bool is_red = (p.axes >> d) & 1u;
            const int64_t dim = p.x.dims[d];
            if (empty_ && (is_red || y_empty)) continue;
            if (is_red) reduced *= dim;
            if (dim == 1) continue;
            ReduceSpace& s = is_red ? red : kept;
            const int64_t xs = p.x.strides[d], ys = is_red ? 0 : p.y.strides[d];
            const int k = s.rank - 1;
            if (last == int(is_red) && k >= 0 && s.x[k] == xs * dim && s.y[k] == ys * dim) {
                s.dims[k] *= dim;
                s.x[k] = xs;
                s.y[k] = ys;
                s.count *= dim;
            } else {
                push(&s, dim, xs, ys);
            }
            last = int(is_red);
        }
        outputs_ = y_empty ? 0 : kept.count;
        divisor_ = p.op == ReduceOp::mean ? float(reduced) : 1.0f;
        kept_ = kept;
        red_ = red;
        const int r_unit = find_unit_x(red);
        const int k_unit = find_unit_x(kept);
        if (empty_) {
            strategy_ = Strategy::generic;
            why_ = "an empty dim: every output is the reduction of nothing (or there is no output)";
        } else if (r_unit >= 0) {
            strategy_ = Strategy::row;
            n_ = red.dims[r_unit];
            red_ = without(red, r_unit);
            const int64_t total = red_.count * n_;
            chunk_ = total;
            if (total > kRowChunkElems) chunk_ = n_ >= kRowChunkElems ? kRowChunkElems : kRowChunkElems / n_ * n_;
            nchunks_ = chunk_ > 0 ? (total + chunk_ - 1) / chunk_ : 1;
            why_ = fmt("a reduced dim of ", n_, " elements has unit stride in x: contiguous segments through ",
                       "vector accumulators, one output per item");
            // The bytes of x read (outputs x reduced elements each), and of one segment.
            const int64_t esize = int64_t(dtype_size(p.x.dtype));
            const char env = env_flag("TOPS_CPU_REDUCE_STREAM");
            stream_ = env == '1' ||
                      (env != '0' && cpu_is_amd() &&
                       mul_saturated(mul_saturated(total, outputs_), esize) >= kReduceStreamMinBytes &&
                       mul_saturated(n_, esize) >= kReduceStreamMinSegmentBytes &&
                       n_ % (kReduceStreamLineBytes / esize) == 0);
            if (stream_) why_ += "; x is streamed from memory (one accumulator, pages prefetched ahead)";
        } else if (k_unit >= 0) {
            strategy_ = Strategy::col;
            m_ = kept.dims[k_unit];
            y_inner_ = kept.y[k_unit];
            kept_ = without(kept, k_unit);
            tile_ = m_ < kReduceColTile ? m_ : kReduceColTile;
            chunk_ = red.count < kColChunkRows ? red.count : kColChunkRows;
            nchunks_ = (red.count + chunk_ - 1) / chunk_;
            why_ = fmt("a kept dim of ", m_, " elements has unit stride in x: vectorized across tiles of up to ",
                       tile_, " outputs (narrower when the threads need more items), streaming reduced rows over them");
        } else {
            strategy_ = Strategy::generic;
            why_ = "no dim has unit stride in x: scalar odometers";
        }
        if (nchunks_ > 1) {
            why_ += fmt("; the reduction is cut into ", nchunks_,
                        " fixed chunks combined in order (deterministic for any thread count)");
        }
        const char* strat = strategy_ == Strategy::row ? "row" : strategy_ == Strategy::col ? "col" : "generic";
        name_ = fmt("reduce_", op_name(p.op), "_", dtype_tag(p.x.dtype), "_", strat, "_", isa_name(isa));
        // The y offset of output o, in output order (col: kept_outer then the contiguous dim).
        out_space_ = kept_;
        if (strategy_ == Strategy::col) push(&out_space_, m_, 1, y_inner_);
    }

    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override { return fmt(why_, "; isa ", isa_name(isa_), " (TOPS_CPU_ISA / cpuid)"); }
    size_t workspace_size() const override {
        return nchunks_ > 1 ? size_t(out_space_.count * nchunks_) * sizeof(float) : 0;
    }

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        ReduceOut out;
        out.y = args.out(TOPS_ARG_Y);
        out.y_dtype = p_.y.dtype;
        out.divisor = divisor_;
        out.sqrt = p_.op == ReduceOp::norm2;
        out.nchunks = nchunks_;
        out.partial = static_cast<float*>(args.workspace);
        if (empty_) {
            fill_empty(out);
            return Status::ok();
        }
        switch (p_.x.dtype) {
            case TOPS_DTYPE_F16: by_op<TOPS_DTYPE_F16>(ctx, args.in(TOPS_ARG_X), out); break;
            case TOPS_DTYPE_BF16: by_op<TOPS_DTYPE_BF16>(ctx, args.in(TOPS_ARG_X), out); break;
            default: by_op<TOPS_DTYPE_F32>(ctx, args.in(TOPS_ARG_X), out); break;
        }
        if (nchunks_ > 1) combine(ctx, out);
        return Status::ok();
    }

private:
    // Calls f(o, y_offset) for outputs [begin, end) in output order.
    template <class F>
    void for_outputs(int64_t begin, int64_t end, F&& f) const {
        const ReduceSpace& s = out_space_;
        int64_t idx[kMaxRank] = {};
        int64_t off = 0, rest = begin;
        for (int d = s.rank - 1; d >= 0; --d) {
            idx[d] = rest % s.dims[d];
            rest /= s.dims[d];
            off += idx[d] * s.y[d];
        }
        for (int64_t o = begin; o < end; ++o) {
            f(o, off);
            for (int d = s.rank - 1; d >= 0; --d) {
                off += s.y[d];
                if (++idx[d] < s.dims[d]) break;
                off -= s.dims[d] * s.y[d];
                idx[d] = 0;
            }
        }
    }

    // Some dim is 0: outputs (if any) are the reduction of an empty set.
    void fill_empty(const ReduceOut& out) const {
        if (outputs_ == 0) return;
        const float v = reduce_identity(acc_);
        ReduceOut final_out = out;
        final_out.nchunks = 1;
        for_outputs(0, out_space_.count, [&](int64_t, int64_t off) { reduce_store_final(final_out, off, v); });
    }

    void combine(const ExecContext& ctx, const ReduceOut& out) const {
        const int64_t n = out_space_.count;
        const int threads = pick_threads(ctx.num_threads, n * nchunks_, kGrainElements);
        parallel_for(threads, n, [&](int64_t begin, int64_t end) {
            for_outputs(begin, end, [&](int64_t o, int64_t off) {
                const float* part = out.partial + o * nchunks_;
                float acc = part[0];
                for (int64_t c = 1; c < nchunks_; ++c) acc = merge(acc_, acc, part[c]);
                reduce_store_final(out, off, acc);
            });
        });
    }

    template <tops_dtype_t DT>
    void by_op(const ExecContext& ctx, const void* x, const ReduceOut& out) const {
        switch (acc_) {
            case ReduceAcc::sumsq: run<DT, ReduceAcc::sumsq>(ctx, x, out); break;
            case ReduceAcc::max: run<DT, ReduceAcc::max>(ctx, x, out); break;
            case ReduceAcc::min: run<DT, ReduceAcc::min>(ctx, x, out); break;
            case ReduceAcc::prod: run<DT, ReduceAcc::prod>(ctx, x, out); break;
            default: run<DT, ReduceAcc::sum>(ctx, x, out); break;
        }
    }

    template <tops_dtype_t DT, ReduceAcc OP>
    void run(const ExecContext& ctx, const void* x, const ReduceOut& out) const {
        const int64_t numel = p_.x.numel();
        if (strategy_ == Strategy::row) {
            ReduceRowArgs a;
            a.x = x;
            a.out = out;
            a.kept = kept_;
            a.red = red_;
            a.n = n_;
            a.chunk = chunk_;
            a.stream = stream_;
            const int64_t items = outputs_ * nchunks_;
            const int threads = pick_threads(ctx.num_threads, numel, kGrainElements);
            parallel_for(threads, items, [&](int64_t begin, int64_t end) {
                ReduceRowArgs t = a;
                t.item_begin = begin;
                t.item_end = end;
                dispatch(ReduceRowKernel<DT, OP>{}, t);
            });
        } else if (strategy_ == Strategy::col) {
            ReduceColArgs a;
            a.x = x;
            a.out = out;
            a.kept_outer = kept_;
            a.red = red_;
            a.m = m_;
            a.y_inner = y_inner_;
            a.chunk = chunk_;
            const int threads = pick_threads(ctx.num_threads, numel, kGrainElements);
            a.tile = tile_;
            while (a.tile > kReduceColMinTile &&
                   kept_.count * ceil_div(m_, a.tile) * nchunks_ < int64_t(threads) * kReduceColItemsPerThread) {
                a.tile = std::max(kReduceColMinTile, round_up(ceil_div(a.tile, int64_t(2)), int64_t(16)));
            }
            const int64_t items = kept_.count * ceil_div(m_, a.tile) * nchunks_;
            parallel_for(threads, items, [&](int64_t begin, int64_t end) {
                ReduceColArgs t = a;
                t.item_begin = begin;
                t.item_end = end;
                dispatch(ReduceColKernel<DT, OP>{}, t);
            });
        } else {
            ReduceGenericArgs a;
            a.x = x;
            a.out = out;
            a.kept = kept_;
            a.red = red_;
            const int threads = pick_threads(ctx.num_threads, numel, kGrainElements);
            parallel_for(threads, outputs_, [&](int64_t begin, int64_t end) {
                ReduceGenericArgs t = a;
                t.item_begin = begin;
                t.item_end = end;
                dispatch(ReduceGenericKernel<DT, OP>{}, t);
            });
        }
    }

    template <class F, class Args>
    void dispatch(F f, const Args& a) const {
        isa_dispatch_to(isa_, f, a);
    }

    ReduceParams p_;
    Isa isa_;
    ReduceAcc acc_;
    Strategy strategy_ = Strategy::generic;
    bool empty_ = false;
    ReduceSpace kept_, red_, out_space_;
    int64_t outputs_ = 0;
    float divisor_ = 1.0f;
    int64_t n_ = 0, m_ = 0, y_inner_ = 0, tile_ = 0;
    int64_t chunk_ = 0, nchunks_ = 1;
    bool stream_ = false;
    std::string name_, why_;
};

}  // namespace

Status plan_reduce(const ReduceParams& p, PlanPtr* out) {
    out->reset(new ReducePlan(p, active_isa()));
    return Status::ok();
}

}  // namespace tops::cpu
