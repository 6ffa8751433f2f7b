// CPU GEMM (Goto/BLIS blocking): the argument struct, the per-ISA register
// tile shapes and the kernel functor declaration. The operator() body lives in
// src/cpu/kernels/gemm_blocked.cpp (compiled once per ISA); src/cpu/gemm.cpp
// plans the blocking and the workspace and only sees these declarations.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/int_math.hpp"
#include "common/params.hpp"
#include "cpu/isa.hpp"

namespace tops::cpu {

// Register tile of the micro-kernel: mr rows of A times nr columns of B
// (nr = two SIMD vectors) accumulate in mr * 2 vector registers.
struct GemmTileShape {
    int mr;
    int nr;
};

// sse4: 6x8 (12 of 16 xmm), avx2: 6x16 (12 of 16 ymm), avx512: 14x32
// (28 of 32 zmm; the other four hold two B vectors and the A broadcast).
constexpr GemmTileShape gemm_tile_shape(Isa isa) {
    return isa == Isa::avx512 ? GemmTileShape{14, 32} : isa == Isa::avx2 ? GemmTileShape{6, 16} : GemmTileShape{6, 8};
}

// Cache blocking, all in elements: kc rows of packed B (KC), mc rows of packed
// A (MC, a multiple of mr), nc columns of packed B (NC, a multiple of nr).
struct GemmBlocking {
    int64_t mc = 0, kc = 0, nc = 0;
};

// Threads split D statically into a grid of tm x tn rectangles (rows in
// whole MR slivers, columns in whole NR slivers); each thread runs the whole
// blocked algorithm on its rectangle with its own packing buffers, so the
// threads never wait for each other (no barriers: on a shared machine a
// descheduled thread would stall the whole team at every K slab). The grid
// minimizes the largest rectangle, then its perimeter (the packing work);
// but grids within kGemmGridAreaSlack of the smallest area count as equal,
// and among those one whose threads hold at least kGemmMinSliversPerThread
// slivers of B each (all of them, if B has fewer) wins: a thread packs all
// of its rows of A whatever its columns, and few columns serve each packed
// sliver of A to few tiles.
struct GemmGrid {
    int tm = 1, tn = 1;
    int64_t rows = 0, cols = 0;  // largest rectangle
};

// The 2-core Zen 3 VM, two threads, the 1x1 convolution 256 -> 64 over 56x56
// (NHWC: m 3136, n 64, k 256, tile 6x16): by area alone two column halves
// (100416 against 100608 for two row halves), so each thread packed all of
// x for two slivers of B; this rule's row halves took 0.85x the time
// (bench/conv_ab_libs.c). A cost model weighing all packing instead moved
// square problems too, and 2048^3 on 8 Xeon threads (rows 4 x columns 2 in
// place of 1 x 8) took 1.2-1.3x as long: a wider B panel leaves L2.
constexpr double kGemmGridAreaSlack = 0.01;
constexpr int64_t kGemmMinSliversPerThread = 4;

inline GemmGrid gemm_grid(int64_t m, int64_t n, int threads, GemmTileShape tile) {
    const int64_t mslivers = ceil_div(m, tile.mr), nslivers = ceil_div(n, tile.nr);
    auto grid = [&](int tm) {
        GemmGrid g;
        g.tm = tm;
        g.tn = threads / tm;
        g.rows = ceil_div(mslivers, tm) * tile.mr;
        g.cols = ceil_div(nslivers, g.tn) * tile.nr;
        return g;
    };
    // Areas in double: the dims of an empty problem (batch 0) are unbounded.
    auto area = [](const GemmGrid& g) { return double(g.rows) * double(g.cols); };
    double least = 0.0;
    for (int tm = 1; tm <= threads; ++tm) {
        if (threads % tm != 0) continue;
        const double a = area(grid(tm));
        if (tm == 1 || a < least) least = a;
    }
    const int64_t wide_cols = std::min(nslivers, kGemmMinSliversPerThread) * tile.nr;
    auto wide = [&](const GemmGrid& g) { return g.cols >= wide_cols; };
    GemmGrid best;
    for (int tm = 1; tm <= threads; ++tm) {
        if (threads % tm != 0) continue;
        const GemmGrid g = grid(tm);
        if (area(g) > least * (1.0 + kGemmGridAreaSlack)) continue;
        const bool smaller = area(g) < area(best) ||
                             (area(g) == area(best) && g.rows + g.cols < best.rows + best.cols);
        if (best.rows == 0 || (wide(g) && !wide(best)) || (wide(g) == wide(best) && smaller)) best = g;
    }
    return best;
}

constexpr size_t kGemmAlign = 64;

inline size_t gemm_align_up(size_t v) { return (v + kGemmAlign - 1) / kGemmAlign * kGemmAlign; }

// One thread's packing buffers for a grid: B panel (kc, NC or fewer columns)
// in NR-wide slivers, then A block (MC or fewer rows, kc) in MR-tall slivers.
struct GemmThreadBuffers {
    size_t b_bytes = 0, a_bytes = 0;
    size_t stride() const { return b_bytes + a_bytes; }
};

inline GemmThreadBuffers gemm_thread_buffers(const GemmBlocking& blk, const GemmGrid& grid) {
    GemmThreadBuffers t;
    t.b_bytes = gemm_align_up(size_t(blk.kc * std::min(blk.nc, grid.cols)) * sizeof(float));
    t.a_bytes = gemm_align_up(size_t(blk.kc * std::min(blk.mc, grid.rows)) * sizeof(float));
    return t;
}

// Workspace: the threads' buffers (sized for the worst thread count up to
// max_threads), then for f16 / bf16 output with K > kc an f32 accumulator
// (m, n) row-major, so partial sums across K slabs are never rounded.
struct GemmWorkspaceLayout {
    size_t acc_offset = 0, bytes = 0;
    bool has_acc = false;
};

inline GemmWorkspaceLayout gemm_workspace_layout(const GemmBlocking& blk, GemmTileShape tile, int64_t m, int64_t n,
                                                 int64_t k, int max_threads, bool f32_out) {
    GemmWorkspaceLayout w;
    for (int t = 1; t <= max_threads; ++t) {
        w.acc_offset = std::max(w.acc_offset, size_t(t) * gemm_thread_buffers(blk, gemm_grid(m, n, t, tile)).stride());
    }
    w.has_acc = !f32_out && k > blk.kc;
    size_t off = w.acc_offset;
    if (w.has_acc) off += gemm_align_up(size_t(m * n) * sizeof(float));
    w.bytes = off + kGemmAlign;  // the caller's pointer is aligned up first
    return w;
}

// One batched GEMM problem, strides in elements. A is (batch, m, k), B
// (batch, k, n), C / D (batch, m, n), bias (n, or m with bias_rows); any strides
// (0 = shared).
struct GemmArgs {
    const void* a = nullptr;
    const void* b = nullptr;
    const void* c = nullptr;     // nullptr when beta == 0
    const void* bias = nullptr;  // nullptr when absent
    void* d = nullptr;
    int64_t batch = 1, m = 0, n = 0, k = 0;
    int64_t a_bs = 0, a_rs = 0, a_cs = 0;
    int64_t b_bs = 0, b_rs = 0, b_cs = 0;
    int64_t c_bs = 0, c_rs = 0, c_cs = 0;
    int64_t d_bs = 0, d_rs = 0, d_cs = 0;
    int64_t bias_s = 0;
    bool bias_rows = false;  // bias indexed by the row of D (a transposed problem), else by its column
    float alpha = 1.0f, beta = 0.0f;
    Activation act = Activation::none;
    GemmBlocking blk;
    GemmTileShape tile{};
    GemmWorkspaceLayout ws_layout;
    unsigned char* ws = nullptr;  // 64-byte aligned
    int threads = 1;
};

// IN: dtype of A and B; OUT: dtype of C, D and bias. Accumulates in f32.
template <tops_dtype_t IN, tops_dtype_t OUT>
struct GemmBlockedKernel {
    template <class Arch>
    void operator()(Arch, GemmArgs g) const;
};

}  // namespace tops::cpu
