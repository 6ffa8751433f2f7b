// CPU reduce kernels: argument structs and functor declarations. The
// operator() bodies live in src/cpu/kernels/reduce_*.cpp (compiled once per
// ISA); src/cpu/reduce.cpp only sees these declarations.
//
// Every kernel computes, for a range of work items, the f32 accumulator of one
// output over one chunk of its reduced index space, in an order fixed by the
// shape alone (never by the thread split), and hands it to ReduceOut.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/half.hpp"
#include "common/tensor.hpp"

namespace tops::cpu {

// How elements enter the accumulator (mean, norm2 are sum, sumsq plus a
// final step in ReduceOut).
enum class ReduceAcc { sum, sumsq, max, min, prod };

// A set of dims iterated row-major, with the element strides of x and y.
struct ReduceSpace {
    int rank = 0;
    int64_t dims[kMaxRank] = {};
    int64_t x[kMaxRank] = {};
    int64_t y[kMaxRank] = {};
    int64_t count = 1;  // product of dims
};

// Where a finished accumulator goes. With nchunks == 1 it is final: divided
// by `divisor` (mean), square-rooted (norm2), converted to y_dtype and stored
// at y + (y offset of the output). With nchunks > 1 it is a partial result:
// stored as f32 at partial[output * nchunks + chunk] for the plan to combine.
struct ReduceOut {
    void* y = nullptr;
    tops_dtype_t y_dtype = TOPS_DTYPE_F32;
    float divisor = 1.0f;
    bool sqrt = false;
    float* partial = nullptr;
    int64_t nchunks = 1;
};

// Row reduction: the reduced dims end with a unit-stride dim of length n.
// Output o (row-major over `kept`) reduces the flattened space
// (outer reduced index r, j < n) of size red.count * n; chunk c covers
// flattened indices [c * chunk, (c + 1) * chunk). Items: kept.count * nchunks.
struct ReduceRowArgs {
    const void* x = nullptr;
    ReduceOut out;
    ReduceSpace kept;  // x and y strides
    ReduceSpace red;   // reduced dims other than the contiguous one (x strides)
    int64_t n = 0;
    int64_t chunk = 0;
    int64_t item_begin = 0, item_end = 0;
    bool stream = false;  // x comes from memory: one accumulator, pages prefetched ahead
};

// Streamed row reductions need segments of at least this many bytes, and a
// whole number of cache lines (kReduceStreamLineBytes), so that every
// segment starts where the first does relative to a line and the loop's
// line steps load whole lines of a line-aligned x. Zen 4 VM, 1 thread, x of
// 12-64 MiB, time against oneDNN in alternating calls: segments of 4 KiB and
// more 0.92-0.95x -> 1.03-1.11x; whole-line segments of 1-3 KiB too (256,
// 384, 640, 768 f32: 0.93-1.01x -> 1.02-1.09x; 512 0.95x either way); but
// segments that are not whole lines lose (784 bytes 0.90-0.98x ->
// 0.79-0.82x; 2050 and 2056 f32 0.93-0.97x -> 0.80-0.90x). AMD CPUs only: on
// the 16-core Xeon the streamed 4096x4096 row sum took 7.3-7.7 ms against
// 4.9-5.0 at 1 thread and 3.2-3.7 against 2.6-2.9 at 2
// (bench/reduce_ab_onednn.cpp, TOPS_CPU_REDUCE_STREAM=1 / 0).
constexpr int64_t kReduceStreamMinSegmentBytes = 1024;
constexpr int64_t kReduceStreamLineBytes = 64;
// ... and an x of at least this many bytes: past the L2 of two Zen 4 cores,
// where x comes from L3 or memory. From memory the streamed loop wins (cold,
// 1 thread, against oneDNN: 128x4096 and 256x4096 row sums 0.92-0.93x ->
// 0.98-1.02x, 8x64x56x56 global pool 0.91-0.92x -> 0.98-0.99x); from L3 it
// loses to the four accumulators (the pool warm: 0.070 -> 0.082 ms, oneDNN's
// 0.081), so the floor stays above L2.
constexpr int64_t kReduceStreamMinBytes = int64_t(2) << 20;

// Column reduction: a kept dim of length m has unit stride in x. Outputs are
// (kept_outer index, column); an item is (kept_outer index, tile of `tile`
// columns, chunk of `chunk` reduced indices), so output o = ko * m + col and
// items number kept_outer.count * tiles * nchunks (chunk fastest).
struct ReduceColArgs {
    const void* x = nullptr;
    ReduceOut out;
    ReduceSpace kept_outer;  // kept dims other than the contiguous one
    ReduceSpace red;         // reduced dims (x strides)
    int64_t m = 0;
    int64_t y_inner = 0;  // y stride of the contiguous kept dim
    int64_t tile = 0;
    int64_t chunk = 0;
    int64_t item_begin = 0, item_end = 0;
};

// Any strides: scalar, one output per item, no chunking.
struct ReduceGenericArgs {
    const void* x = nullptr;
    ReduceOut out;
    ReduceSpace kept;
    ReduceSpace red;
    int64_t item_begin = 0, item_end = 0;
};

// Column tiles hold at most this many f32 accumulators (stack, 16 KiB, in
// L1): each reduced row is then read in segments of up to 4096 elements. Zen 4
// VM, 4096x4096 f32 over axis 0, 1 / 2 threads: tiles of 1024 columns 18.4-19.3
// / 26.3-31.7 GB/s, 2048 19.9-20.0 / 31.5-32.5, 4096 23.7-23.8 / 33.0-35.0.
constexpr int64_t kReduceColTile = 4096;
// Tiles are narrowed (to no fewer columns than this) until every thread has
// kReduceColItemsPerThread items; the width never changes a result, since
// each column is accumulated over the same rows in the same order.
constexpr int64_t kReduceColMinTile = 1024;
constexpr int64_t kReduceColItemsPerThread = 2;

template <tops_dtype_t DT, ReduceAcc OP>
struct ReduceRowKernel {
    template <class Arch>
    void operator()(Arch, ReduceRowArgs a) const;
};

template <tops_dtype_t DT, ReduceAcc OP>
struct ReduceColKernel {
    template <class Arch>
    void operator()(Arch, ReduceColArgs a) const;
};

template <tops_dtype_t DT, ReduceAcc OP>
struct ReduceGenericKernel {
    template <class Arch>
    void operator()(Arch, ReduceGenericArgs a) const;
};

// Scalar helpers shared by the kernels and the plan (src/cpu/reduce.cpp).
float reduce_identity(ReduceAcc op);
// Stores a final accumulator (divisor, sqrt, dtype) at element offset off of y.
// Inline: the row kernel calls it once per output, every few hundred elements
// for global pooling.
inline __attribute__((always_inline)) void reduce_store_final(const ReduceOut& out, int64_t off, float acc) {
    float v = out.divisor != 1.0f ? acc / out.divisor : acc;
    if (out.sqrt) v = std::sqrt(v);
    switch (out.y_dtype) {
        case TOPS_DTYPE_F16: static_cast<uint16_t*>(out.y)[off] = float_to_f16(v); break;
        case TOPS_DTYPE_BF16: static_cast<uint16_t*>(out.y)[off] = float_to_bf16(v); break;
        default: static_cast<float*>(out.y)[off] = v; break;
    }
}

}  // namespace tops::cpu
