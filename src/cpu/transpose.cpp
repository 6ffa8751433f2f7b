// CPU transpose plan: simplifies the problem (common/transpose_plan.hpp),
// picks a strategy and its blocking, and runs the per-ISA kernels
// (cpu/kernels/transpose_tile.cpp) over OpenMP threads.
//
//   copy     innermost dim contiguous in x and y: wide row copies
//   tile     y's innermost dim is strided in x and another dim is
//            contiguous in x: blocked register-tile transposes. When that
//            dim is shorter than a cache line and x's run continues in a
//            second dim (x [c][w][e=8] -> y [e][w][c]), the panel rows are
//            both dims, in groups (cpu/transpose_kernels.hpp), so line tiles
//            still read whole x lines and write whole y lines
//   strided  anything else (strided or broadcast inputs, padded outputs):
//            blocked element copies
// tile writes a large y (>= kStreamMinBytes) with non-temporal stores, one
// whole 64-byte line at a time from the line tile (its buffer, or its zmm
// registers for 4-byte elements on avx512): no
// read-for-ownership of y, which is a third of the memory traffic with plain
// stores (measured 1.3-1.7x faster on 8192^2, 8000^2, 4096^2 and
// [64,512,512] f32). Smaller outputs stay cached for the next op. Only whole
// lines are streamed (a partly written line leaves a write-combining buffer
// half filled); edge tiles and the copy strategy use plain stores.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

#include "common/int_math.hpp"
#include "common/transpose_plan.hpp"
#include "cpu/isa.hpp"
#include "cpu/ops.hpp"
#include "cpu/parallel.hpp"
#include "cpu/transpose_kernels.hpp"

namespace tops::cpu {
namespace {

enum class Strategy { copy, tile, strided };

// tile: a block reads kTileBlockRowBytes of each x line it visits and
// writes kTileBlockColBytes of each y row. The kernel reads a block's x
// lines a group of one cache line's worth of lines at a time, front to back
// (sequential streams the hardware prefetchers follow), so the piece of each
// x line is one whole 4 KiB page: one page walk per page of x rather than per
// line, as large x strides put every line in its own page. On the idle
// 16-core host, 8192^2 f32 ran about 2x faster than walking 1 KiB pieces
// along y's rows; 2 KiB pieces were slower, 8 KiB no faster, and 512 B of
// each y row a little faster than 128-256 B.
constexpr int64_t kTileBlockRowBytes = 4096;
// The tile kernel's cache-line tiles are this many bytes per side.
constexpr int64_t kCacheLineBytes = 64;
constexpr int64_t kTileBlockColBytes = 512;
constexpr int64_t kStridedBlockElems = 32;    // strided: block edge in elements
constexpr int64_t kCopyUnitBytes = 64 << 10;  // copy: bytes per work unit
// Smallest amount of work (bytes of y) worth a thread of its own.
constexpr int64_t kThreadGrainBytes = 64 << 10;

const char* strategy_name(Strategy s) {
    switch (s) {
        case Strategy::copy: return "copy";
        case Strategy::tile: return "tile";
        default: return "strided";
    }
}

std::string dims_string(const int64_t* v, int n) {
    std::ostringstream os;
    os << '[';
    for (int i = 0; i < n; ++i) os << (i ? "," : "") << v[i];
    os << ']';
    return os.str();
}

class TransposePlan final : public OpPlan {
public:
    TransposePlan(const TransposeProblem& prob, Strategy s, const TransposeKernelArgs& args, std::string name,
                  std::string why)
        : prob_(prob), strategy_(s), args_(args), name_(std::move(name)), why_(std::move(why)) {}

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (prob_.empty()) return Status::ok();
        TransposeKernelArgs a = args_;
        a.x = static_cast<const char*>(args.in(TOPS_ARG_X));
        a.y = static_cast<char*>(args.out(TOPS_ARG_Y));
        const int64_t units = transpose_unit_count(a);
        int threads = pick_threads(ctx.num_threads, prob_.numel * int64_t(prob_.elem_size), kThreadGrainBytes);
        if (threads > units) threads = int(units);
        parallel_for(threads, units, [&](int64_t begin, int64_t end) {
            TransposeKernelArgs t = a;
            t.unit_begin = begin;
            t.unit_end = end;
            switch (strategy_) {
                case Strategy::copy: isa_dispatch(TransposeCopyKernel{}, t); break;
                case Strategy::tile: isa_dispatch(TransposeTileKernel{}, t); break;
                default: isa_dispatch(TransposeStridedKernel{}, t); break;
            }
        });
        return Status::ok();
    }

    const char* kernel_name() const override { return name_.c_str(); }
    std::string reason() const override { return why_; }

private:
    TransposeProblem prob_;
    Strategy strategy_;
    TransposeKernelArgs args_;
    std::string name_;
    std::string why_;
};

// Fills the outer loop nest with every dim except the panel's `a`, `b` and
// row group dim `g` (y order).
void set_outer(const TransposeProblem& p, int a, int b, int g, TransposeKernelArgs* k) {
    const int64_t es = int64_t(p.elem_size);
    k->outer_rank = 0;
    for (int d = 0; d < p.rank; ++d) {
        if (d == a || d == b || d == g) continue;
        k->outer_dims[k->outer_rank] = p.dims[d];
        k->outer_xs[k->outer_rank] = p.xs[d] * es;
        k->outer_ys[k->outer_rank] = p.ys[d] * es;
        ++k->outer_rank;
    }
}

// Sets the panel: rows along dim a (or one row when a < 0), columns along b.
void set_panel(const TransposeProblem& p, int a, int b, TransposeKernelArgs* k) {
    const int64_t es = int64_t(p.elem_size);
    k->rows = a >= 0 ? p.dims[a] : 1;
    k->x_row = a >= 0 ? p.xs[a] * es : 0;
    k->y_row = a >= 0 ? p.ys[a] * es : 0;
    k->cols = b >= 0 ? p.dims[b] : 1;
    k->x_col = b >= 0 ? p.xs[b] * es : es;
    k->y_col = b >= 0 ? p.ys[b] * es : es;
    k->row_group = k->rows;  // one group: y_row_group is never reached (and rows * y_row
    k->y_row_group = 0;      // may overflow for an empty tensor's unbounded strides)
    set_outer(p, a, b, -1, k);
}

// The tile panel's row group dim: when x's unit dim `a` is shorter than a
// cache line (and divides one) and x's run continues into another dim g
// (xs[g] == dims[a]), rows (g, a) are contiguous in x, so a line tile reads
// whole x lines. Returns g, or -1.
int tile_group_dim(const TransposeProblem& p, int a, int b) {
    const int64_t run_bytes = p.dims[a] * int64_t(p.elem_size);
    if (run_bytes >= kCacheLineBytes || kCacheLineBytes % run_bytes != 0) return -1;
    for (int d = 0; d < p.rank; ++d) {
        if (d != a && d != b && p.xs[d] == p.dims[a]) return d;
    }
    return -1;
}

// Tile panel with rows (g, a), a the inner one: dims[g] groups of dims[a].
void set_grouped_panel(const TransposeProblem& p, int a, int g, int b, TransposeKernelArgs* k) {
    const int64_t es = int64_t(p.elem_size);
    set_panel(p, a, b, k);
    k->rows = p.dims[g] * p.dims[a];
    k->row_group = p.dims[a];
    k->y_row_group = p.ys[g] * es;
    set_outer(p, a, b, g, k);
}

}  // namespace

Status plan_transpose(const TransposeParams& params, PlanPtr* out) {
    const TransposeProblem p = simplify_transpose(params);
    const int64_t es = int64_t(p.elem_size);
    const int b = p.rank - 1;  // y's innermost dim (-1 for a single element)
    const TransposeTileShape tile = isa_dispatch(TransposeTileEdge{}, es);

    Strategy s = Strategy::strided;
    TransposeKernelArgs k;
    k.elem_size = es;
    std::ostringstream why;
    why << "canonical dims " << dims_string(p.dims, p.rank) << " x strides " << dims_string(p.xs, p.rank)
        << " y strides " << dims_string(p.ys, p.rank) << "; ";

    const int xa = p.x_unit_dim();
    const int xg = xa >= 0 && b >= 0 ? tile_group_dim(p, xa, b) : -1;
    const int64_t tile_rows = xa < 0 ? 0 : xg >= 0 ? p.dims[xg] * p.dims[xa] : p.dims[xa];
    if (p.empty()) {
        s = Strategy::copy;
        why << "empty tensor: nothing to do";
    } else if (p.rank == 0 || p.inner_contiguous()) {
        // Rows of the innermost dim are contiguous in both: group whole rows
        // (or cut long rows) into units of about kCopyUnitBytes.
        s = Strategy::copy;
        const int a = b >= 1 ? b - 1 : -1;
        set_panel(p, a, b, &k);
        const int64_t row_bytes = k.cols * es;
        k.block_cols = row_bytes > kCopyUnitBytes ? kCopyUnitBytes / es : k.cols;
        k.block_rows = row_bytes >= kCopyUnitBytes ? 1 : std::max<int64_t>(1, kCopyUnitBytes / row_bytes);
        why << "innermost dim contiguous in x and y: row copies of " << row_bytes << " bytes";
    } else if (p.ys[b] == 1 && xa >= 0 && tile_rows >= tile.rows && p.dims[b] >= tile.cols) {
        s = Strategy::tile;
        if (xg >= 0) set_grouped_panel(p, xa, xg, b, &k);
        else set_panel(p, xa, b, &k);
        k.block_rows = std::max<int64_t>(tile.rows, kTileBlockRowBytes / es / tile.rows * tile.rows);
        if (xg >= 0) k.block_rows = (k.block_rows + k.row_group - 1) / k.row_group * k.row_group;  // whole groups
        k.block_cols = std::max<int64_t>(tile.cols, kTileBlockColBytes / es / tile.cols * tile.cols);
        k.stream = mul_saturated(p.numel, es) >= kStreamMinBytes;
        why << "y's innermost dim " << b << " is strided in x, dim " << xa << " is contiguous in x";
        if (xg >= 0) {
            why << " for " << p.dims[xa] * es << " bytes and continues in dim " << xg << ": rows (" << xg << ","
                << xa << ") in groups of " << p.dims[xa];
        }
        why << ": " << kCacheLineBytes / es << "x" << kCacheLineBytes / es << " cache-line tiles ";
        if (tile.line_in_registers) why << "in registers";
        else why << "of " << tile.rows << "x" << tile.cols << " register tiles";
        why << ", read along x's lines, in " << k.block_rows << "x" << k.block_cols << " blocks, "
            << (k.stream ? "non-temporal stores of whole y lines (y >= " : "cached stores (y < ")
            << (kStreamMinBytes >> 20) << " MiB)";
    } else {
        // Rows along the dim with the smallest x stride keep reads local.
        int a = -1;
        for (int d = 0; d < b; ++d) {
            if (p.xs[d] > 0 && (a < 0 || p.xs[d] < p.xs[a])) a = d;
        }
        set_panel(p, a, b, &k);
        k.block_rows = kStridedBlockElems;
        k.block_cols = kStridedBlockElems;
        why << "no contiguous tile (innermost y stride " << (b >= 0 ? p.ys[b] : 1)
            << "): blocked element copies of " << kStridedBlockElems << "x" << kStridedBlockElems;
    }

    std::ostringstream name;
    name << "transpose_b" << es << '_' << strategy_name(s);
    if (s == Strategy::tile) {
        const int64_t line = kCacheLineBytes / es;  // a register line tile is square, one line per side
        if (tile.line_in_registers) name << line << 'x' << line;
        else name << tile.rows << 'x' << tile.cols;
        if (k.row_group < k.rows) name << "_g" << k.row_group;
        name << (k.stream ? "_nt" : "");
    }
    name << '_' << isa_name(active_isa());
    *out = std::make_unique<TransposePlan>(p, s, k, name.str(), why.str());
    return Status::ok();
}

}  // namespace tops::cpu
