// Blocked f32-accumulating GEMM (gemm_<in>[_<out>out]_<mr>x<nr>_<isa>).
//
// Strategy (Goto / BLIS): D = act(alpha * A @ B + beta * C + bias) is cut
// into NC-wide column panels (jc), then KC-deep slabs (pc). For each slab the
// thread team packs B (KC, NC) into NR-wide column slivers, (kc, NR) each and
// contiguous, so the micro-kernel streams it with aligned vector loads; each
// thread then packs its own MC-tall block of A into MR-tall row slivers
// (kc, MR) (on avx512 a row-major A is transposed in (16, 16) register
// tiles, not element by element). f16 / bf16 inputs are widened to f32 while
// packing, and packing handles any strides (row- or column-major, padded, batch stride 0), so the
// micro-kernel sees one layout only. The micro-kernel keeps an MR x NR tile
// (NR = two SIMD vectors) in registers: per k step two B vectors are loaded
// and each A element is broadcast into two FMAs. A packed B sliver is reused
// while the loop walks the A slivers of the block; both stream from L2 (a
// k step needs 184 bytes per 28 FMAs), so KC and MC are sized from L2 and KC
// is deep, to amortize each tile's fixed cost (src/cpu/gemm.cpp).
//
// Few rows of A and a shallow reduction (the NCHW 1x1 convolution's D^T = W
// X: 64 filters, 256 channels) leave each packed B element only a handful of
// uses, so packing would cost about as much as the tiles it feeds; there an
// f32 B with unit column stride is read where it lies (b_read_in_place), each
// tile pulling a share of the next sliver's rows into L2, and a short last
// row tile runs the FMAs of its rows only (kMrTail).
//
// Operands often come cold from memory (a 1x1 convolution's x), so packing is
// laid out for the prefetchers. A packed row of B is one line of a row of B,
// and a row of A seldom more than a few lines, so a packing loop that walks
// one sliver at a time reads many short runs in turn and the hardware
// prefetcher, which follows a run only after several lines of it, never
// starts: packing from memory then waits on each line (the NCHW 1x1
// convolution's D^T = W X, B = x with 12.5 KB rows: a quarter of the GEMM's
// samples on one Zen 3 core sat on those loads). So a row-major B panel is
// packed by groups of rows that run across the whole panel
// (pack_b_panel_rows), each A sliver prefetches the next sliver's rows
// (pack_a_sliver), and while one MC block's tiles run they pull the next
// block of A into L2 a line at a time (LineStream).
//
// The epilogue runs in the tile store: the first K slab adds beta * C, later
// slabs add the partial sums kept in D (f32 output) or in an f32 workspace
// accumulator (f16 / bf16 output, so partial sums are never rounded), and the
// last slab adds the bias, applies the activation and converts to the output
// dtype. Element (i, j) of C is read right before element (i, j) of D is
// written, so D may be C. Full tiles with unit column strides use vector
// loads and stores; edge tiles (any M, N) and other strides go through a
// small stack tile and a scalar loop.
//
// Threads split D into a static grid of rectangles (src/cpu/gemm_kernels.hpp
// gemm_grid) and run this algorithm each on its own, with private packing
// buffers: no barriers.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "common/int_math.hpp"
#include "cpu/gemm_kernels.hpp"
#include "cpu/isa_arch.hpp"
#include "cpu/kernels/activation_simd.hpp"
#include "cpu/kernels/gemm_tile.hpp"
#if defined(TOPS_CPU_ISA_avx512)
#include "cpu/kernels/transpose16_avx512.hpp"
#elif defined(TOPS_CPU_ISA_avx2)
#include "cpu/kernels/transpose8_avx.hpp"
#endif
#include "cpu/vec_convert.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {
namespace {

// ------------------------------------------------------------------ packing

#if defined(TOPS_CPU_ISA_avx512)
// Row-major A on avx512: the sliver is a transpose, done on (16, 16)
// register tiles (transpose16_avx512.hpp; MR <= 16 rows of 16 k values
// each, missing rows zero) so that every load reads 16 k values of one row
// and every store writes one packed k step (MR lanes, masked).
constexpr __mmask16 kSliverLanes = __mmask16((1u << kMr) - 1);
static_assert(kMr <= kLanes && kLanes == kTranspose16, "one packed k step of A fits one zmm register");

// (mrows, 16) of A at src (row stride rs, unit column stride) -> 16 packed
// k steps (16, MR) at dst.
template <tops_dtype_t IN>
TOPS_MICRO_INLINE void pack_a_rows_16k_avx512(const storage_t<IN>* src, int64_t rs, int64_t mrows, float* dst) {
    __m512 r[kLanes];  // (16 rows, 16 k) -> (16 k, 16 rows)
    for (int i = 0; i < kLanes; ++i) r[i] = i < mrows ? __m512(load<IN>(src + i * rs)) : _mm512_setzero_ps();
    transpose_16x16_f32_avx512(r);
    for (int k = 0; k < kLanes; ++k) _mm512_mask_storeu_ps(dst + k * kMr, kSliverLanes, r[k]);
}

// A column-major B sliver on avx512 likewise: (16 k, 16 columns) register
// tiles, loaded one column (16 k values) per register, stored one packed k
// step (16 of the NR columns) per register, where the element loop stored
// one float at a time with an NR stride, in every thread (f32 1x1 NHWC
// convolutions, whose B is the KRSC filter, pack it this way: the C256
// 56x56 K64 layer at 16 threads went from 0.65x to 0.91x oneDNN on the
// Xeon, docs/performance.md).
static_assert(kNr % kTranspose16 == 0, "a B sliver is whole 16-column tiles");

// (16, NR) of B at src (column stride cs, unit row stride) -> 16 packed k
// steps (16, NR) at dst.
template <tops_dtype_t IN>
TOPS_MICRO_INLINE void pack_b_cols_16k_avx512(const storage_t<IN>* src, int64_t cs, float* dst) {
    for (int j0 = 0; j0 < kNr; j0 += kTranspose16) {
        __m512 r[kTranspose16];  // (16 columns, 16 k) -> (16 k, 16 columns)
        for (int j = 0; j < kTranspose16; ++j) r[j] = __m512(load<IN>(src + (j0 + j) * cs));
        transpose_16x16_f32_avx512(r);
        for (int k = 0; k < kTranspose16; ++k) _mm512_store_ps(dst + k * kNr + j0, r[k]);
    }
}
#elif defined(TOPS_CPU_ISA_avx2)
// Row-major A on avx2 likewise, on (8, 8) register tiles (transpose8_avx.hpp;
// MR = 6 rows of 8 k values each, the other rows zero): each packed k step
// is a 16-byte and an 8-byte store where the element loop made six 4-byte
// stores MR floats apart. Packing all of the C256 56x56 1x1 layer's A (x,
// 3136 x 256, cached) on one Zen 3 core, standalone: 0.54-0.56 ms by
// elements, 0.26 ms by register tiles (2.1x). In the layer's timed call x
// comes from memory, which bounds both.
static_assert(kMr == 6 && kLanes == kTranspose8, "one packed k step of A: 6 lanes of a ymm register");

// (mrows, 8) of A at src (row stride rs, unit column stride) -> 8 packed k
// steps (8, MR) at dst, rows past mrows zero.
template <tops_dtype_t IN>
TOPS_MICRO_INLINE void pack_a_rows_8k_avx2(const storage_t<IN>* src, int64_t rs, int64_t mrows, float* dst) {
    __m256 r[kTranspose8];  // (8 rows, 8 k) -> (8 k, 8 rows)
    for (int i = 0; i < kTranspose8; ++i) r[i] = i < mrows ? __m256(load<IN>(src + i * rs)) : _mm256_setzero_ps();
    transpose_8x8_f32_avx(r);
    for (int k = 0; k < kTranspose8; ++k) {
        _mm_storeu_ps(dst + k * kMr, _mm256_castps256_ps128(r[k]));                                      // rows 0-3
        _mm_storel_pi(reinterpret_cast<__m64*>(dst + k * kMr + 4), _mm256_extractf128_ps(r[k], 1));  // rows 4-5
    }
}
#endif

// One NR-wide sliver of B: (kc, ncols) at src with strides (rs, cs) ->
// dst (kc, NR) contiguous, columns past ncols zero. Full slivers with unit
// column stride never come here: they are packed by pack_b_panel_rows.
template <tops_dtype_t IN>
void pack_b_sliver(const storage_t<IN>* src, int64_t rs, int64_t cs, int64_t kc, int64_t ncols, float* dst) {
    if (rs == 1) {  // each column contiguous along k
        int64_t p0 = 0;
#if defined(TOPS_CPU_ISA_avx512)
        if (ncols == kNr) {
            for (; p0 + kLanes <= kc; p0 += kLanes) pack_b_cols_16k_avx512<IN>(src + p0, cs, dst + p0 * kNr);
        }
#endif
        for (int64_t j = 0; j < kNr; ++j) {
            if (j < ncols) {
                const storage_t<IN>* col = src + j * cs;
                for (int64_t p = p0; p < kc; ++p) dst[p * kNr + j] = to_float<IN>(col[p]);
            } else {
                for (int64_t p = p0; p < kc; ++p) dst[p * kNr + j] = 0.0f;
            }
        }
    } else {
        for (int64_t p = 0; p < kc; ++p) {
            for (int64_t j = 0; j < kNr; ++j) dst[p * kNr + j] = j < ncols ? to_float<IN>(src[p * rs + j * cs]) : 0.0f;
        }
    }
}


// The full NR-wide slivers of a row-major B panel, (kc, slivers * NR) at src
// (row stride rs, unit column stride) -> slivers (kc, NR) at dst, kc * NR
// apart. Sliver by sliver, each packed row is one line of a row of B, so the
// walk touches kc rows a line at a time and no hardware stream forms; here
// kPackRowGroup rows advance together across the panel, each read in order.
constexpr int64_t kPackRowGroup = 8;
template <tops_dtype_t IN>
void pack_b_panel_rows(const storage_t<IN>* src, int64_t rs, int64_t kc, int64_t slivers, float* dst) {
    for (int64_t p0 = 0; p0 < kc; p0 += kPackRowGroup) {
        const int64_t p1 = std::min(kc, p0 + kPackRowGroup);
        for (int64_t s = 0; s < slivers; ++s) {
            for (int64_t p = p0; p < p1; ++p) {
                for (int v = 0; v < kNv; ++v) {
                    load<IN>(src + p * rs + s * kNr + v * kLanes).store_aligned(dst + (s * kc + p) * kNr + v * kLanes);
                }
            }
        }
    }
}

// One MR-tall sliver of A: (mrows, kc) at src with strides (rs, cs) ->
// dst (kc, MR) contiguous, rows past mrows zero. A row-major sliver
// prefetches the next MR rows as it goes (past A's end after the last
// sliver: a prefetch never faults).
template <tops_dtype_t IN>
void pack_a_sliver(const storage_t<IN>* src, int64_t rs, int64_t cs, int64_t kc, int64_t mrows, float* dst) {
    if (cs == 1) {  // row-major: each row contiguous along k
        int64_t p0 = 0;
#if defined(TOPS_CPU_ISA_avx512) || defined(TOPS_CPU_ISA_avx2)
        const storage_t<IN>* next = src + kMr * rs;  // the next sliver's rows, prefetched a line at a time
        constexpr int64_t kLineElems = kCacheLine / int64_t(sizeof(storage_t<IN>));
        for (; p0 + kLanes <= kc; p0 += kLanes) {
            if (p0 % kLineElems == 0) {
                for (int64_t i = 0; i < kMr; ++i) __builtin_prefetch(next + i * rs + p0, 0, 3);
            }
#if defined(TOPS_CPU_ISA_avx512)
            pack_a_rows_16k_avx512<IN>(src + p0, rs, mrows, dst + p0 * kMr);
#else
            pack_a_rows_8k_avx2<IN>(src + p0, rs, mrows, dst + p0 * kMr);
#endif
        }
#endif
        for (int64_t i = 0; i < kMr; ++i) {
            if (i < mrows) {
                const storage_t<IN>* row = src + i * rs;
                for (int64_t p = p0; p < kc; ++p) dst[p * kMr + i] = to_float<IN>(row[p]);
            } else {
                for (int64_t p = p0; p < kc; ++p) dst[p * kMr + i] = 0.0f;
            }
        }
    } else {
        for (int64_t p = 0; p < kc; ++p) {
            for (int64_t i = 0; i < kMr; ++i) dst[p * kMr + i] = i < mrows ? to_float<IN>(src[i * rs + p * cs]) : 0.0f;
        }
    }
}

// ------------------------------------------------------------------ micro-kernel

// Packed A is read this many floats ahead (software prefetch into L1: the A
// sliver streams from L2 while the B sliver stays in L1).
constexpr int kPrefetchA = 8 * kMr;

// One k step: acc (ROWS, NR) += a (ROWS) outer b (NR); b is a packed
// sliver's row (aligned) or, B_IN_PLACE, a row of B itself. The packed A
// sliver keeps its MR stride whatever ROWS.
template <bool B_IN_PLACE = false, int ROWS = kMr>
TOPS_MICRO_INLINE void fma_step(const float* __restrict a, const float* __restrict b, Tile& acc) {
    static_assert(ROWS >= 1 && ROWS <= kMr, "a tile holds at most MR rows");
    __builtin_prefetch(a + kPrefetchA, 0, 3);
    const VecF b0 = B_IN_PLACE ? VecF::load_unaligned(b) : VecF::load_aligned(b);
    const VecF b1 = B_IN_PLACE ? VecF::load_unaligned(b + kLanes) : VecF::load_aligned(b + kLanes);
#pragma GCC unroll 32
    for (int i = 0; i < ROWS; ++i) {
        const VecF ai(a[i]);
        acc[i][0] = xsimd::fma(ai, b0, acc[i][0]);
        acc[i][1] = xsimd::fma(ai, b1, acc[i][1]);
    }
}

// What the tile's epilogue reads or writes (MR rows of NR elements at row
// stride rs), prefetched by the first kTilePrefetches k steps, one each
// (gemm_tile.hpp).
template <class T>
struct TilePrefetch {
    const T* p = nullptr;
    int64_t rs = 0;
};

// k step p < kTilePrefetches of the tile prefetch: prefetch_row_end's address
// written out (through the helper GCC scheduled this file's kernels
// differently, and the NCHW 1x1 convolution took 1.02x as long).
template <class T>
TOPS_MICRO_INLINE void prefetch_tile_step(const TilePrefetch<T>& pf, int64_t p) {
    __builtin_prefetch(pf.p + (p >> 1) * pf.rs + (p & 1) * (kNr - 1), 0, 3);
}

// What the next packing step will read (the next MC block of A), pulled into
// L2 by the tiles of the current block: runs of contiguous bytes (rows of a
// row-major A, columns of a column-major one), one line every `every` k
// steps of each tile. Packing then reads from L2 instead of waiting on
// memory between blocks of arithmetic.
struct LineStream {
    const char* run = nullptr;
    int64_t run_stride = 0, run_lines = 0, runs_left = 0, line = 0;
    int64_t every = 0;  // k steps between two prefetches (0: no stream)

    TOPS_MICRO_INLINE void next() {
        if (runs_left <= 0) return;
        __builtin_prefetch(run + line * kCacheLine, 0, 1);
        if (++line == run_lines) {
            line = 0;
            run += run_stride;
            --runs_left;
        }
    }
};

TOPS_MICRO_INLINE void zero_tile(Tile& acc) {
#pragma GCC unroll 32
    for (int i = 0; i < kMr; ++i) {
#pragma GCC unroll 2
        for (int v = 0; v < kNv; ++v) acc[i][v] = VecF(0.0f);
    }
}

// acc (MR, NR) = a (kc, MR) packed ^T @ b (kc, NR) packed. next_b (or
// nullptr): the B sliver the next tile reads, pulled into L2 two lines per
// k step (the last tile of a sliver passes it: the packed B panel is larger
// than L2, so a new sliver would otherwise start from L3).
template <class T>
TOPS_MICRO_INLINE void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b, Tile& acc,
                                    TilePrefetch<T> pf, const float* next_b, LineStream& stream) {
    zero_tile(acc);
    int64_t p = 0;
    if (pf.p) {
        const int64_t steps = std::min(kc, kTilePrefetches);
        for (; p < steps; ++p) {
            prefetch_tile_step(pf, p);
            fma_step(a, b, acc);
            a += kMr;
            b += kNr;
        }
    }
    if (next_b) {
        next_b += p * kNr;
#pragma GCC unroll 2
        for (; p < kc; ++p) {
            __builtin_prefetch(next_b, 0, 2);
            __builtin_prefetch(next_b + kLanes, 0, 2);
            fma_step(a, b, acc);
            a += kMr;
            b += kNr;
            next_b += kNr;
        }
    }
    const int64_t every = stream.every > 0 ? stream.every : kc;
    while (p < kc) {
        const int64_t end = std::min(kc, p + every);
        stream.next();
#pragma GCC unroll 2
        for (; p < end; ++p) {
            fma_step(a, b, acc);
            a += kMr;
            b += kNr;
        }
    }
}

// acc (ROWS, NR) = a (kc, MR) packed ^T @ b (kc, NR) read in place (f32, row
// stride b_rs, unit column stride); rows of acc past ROWS stay zero. next_b
// (or nullptr): the same rows of the next sliver, whose rows pf_row, pf_row +
// pf_every, ... this tile pulls into L2, so that the tiles sharing a sliver
// spread its misses between them.
template <int ROWS, class T>
TOPS_MICRO_INLINE void micro_kernel_b_in_place(int64_t kc, const float* __restrict a, const float* __restrict b,
                                               int64_t b_rs, Tile& acc, TilePrefetch<T> pf, const float* next_b,
                                               int64_t pf_row, int64_t pf_every) {
    zero_tile(acc);
    const int64_t tile_steps = pf.p ? std::min(kc, kTilePrefetches) : 0;
    if (!next_b) pf_row = kc;
    for (int64_t p = 0; p < kc; ++p) {
        if (p < tile_steps) prefetch_tile_step(pf, p);
        if (p == pf_row) {
            __builtin_prefetch(next_b + p * b_rs, 0, 2);
            __builtin_prefetch(next_b + p * b_rs + kNr - 1, 0, 2);
            pf_row += pf_every;
        }
        fma_step<true, ROWS>(a, b, acc);
        a += kMr;
        b += b_rs;
    }
}

// The B operand of one tile: a packed sliver (rs 0) or B in place (row
// stride rs), the next sliver to prefetch (or nullptr), and for B in place
// which of its rows this tile prefetches (pf_row, pf_row + pf_every, ...).
struct BSliver {
    const float* p;
    int64_t rs;
    const float* next;
    int64_t pf_row, pf_every;
};

// A short last row tile (mrows <= kMrTail) read against B in place runs the
// FMAs of kMrTail rows only: the NCHW 1x1 convolution's D^T = W X with 64
// filters is 4 full tiles and one of 8 rows on avx512, which then costs 8
// rows' FMAs instead of 14 (the layer's FMAs: 70 -> 64 rows' worth).
constexpr int kMrTail = kMr / 2 + 1;
static_assert(kMrTail < kMr, "the tail kernel is shorter than a full tile");

template <class T>
TOPS_MICRO_INLINE void tile_kernel(int64_t kc, const float* __restrict a, const BSliver& b, int mrows, Tile& acc,
                                   TilePrefetch<T> pf, LineStream& stream) {
    if (b.rs && mrows <= kMrTail) {
        micro_kernel_b_in_place<kMrTail>(kc, a, b.p, b.rs, acc, pf, b.next, b.pf_row, b.pf_every);
    } else if (b.rs) {
        micro_kernel_b_in_place<kMr>(kc, a, b.p, b.rs, acc, pf, b.next, b.pf_row, b.pf_every);
    } else {
        micro_kernel(kc, a, b.p, acc, pf, b.next, stream);
    }
}

// ------------------------------------------------------------------ epilogue

// Where one tile's result goes. part (f32) holds partial sums across K slabs:
// D itself for f32 output, the workspace accumulator otherwise.
template <tops_dtype_t OUT>
struct TileDest {
    float alpha = 1.0f, beta = 0.0f;
    Activation act = Activation::none;
    const float* prev = nullptr;              // partial sums to add (not the first slab)
    float* part = nullptr;                    // where partial sums go (not the last slab)
    int64_t part_rs = 0, part_cs = 0;
    const storage_t<OUT>* c = nullptr;        // beta * C (first slab only)
    int64_t c_rs = 0, c_cs = 0;
    const storage_t<OUT>* bias = nullptr;     // last slab only
    int64_t bias_s = 0;
    bool bias_rows = false;                   // bias[i] (per row) instead of bias[j]
    storage_t<OUT>* d = nullptr;              // final output (last slab only)
    int64_t d_rs = 0, d_cs = 0;
    bool last = false;
};

// Full tile, unit column strides everywhere: vector loads and stores.
template <tops_dtype_t OUT>
TOPS_MICRO_INLINE void store_tile_vec(const Tile& acc, const TileDest<OUT>& t) {
    const VecF alpha(t.alpha), beta(t.beta);
    VecF bias[kNv];
    for (int v = 0; v < kNv; ++v) bias[v] = t.bias && !t.bias_rows ? load<OUT>(t.bias + v * kLanes) : VecF(0.0f);
#pragma GCC unroll 32
    for (int i = 0; i < kMr; ++i) {
        if (t.bias_rows && t.last) {
            for (int v = 0; v < kNv; ++v) bias[v] = VecF(to_float<OUT>(t.bias[i * t.bias_s]));
        }
#pragma GCC unroll 2
        for (int v = 0; v < kNv; ++v) {
            VecF x = acc[i][v] * alpha;
            if (t.prev) x += VecF::load_unaligned(t.prev + i * t.part_rs + v * kLanes);
            if (t.c) x = xsimd::fma(beta, load<OUT>(t.c + i * t.c_rs + v * kLanes), x);
            if (t.last) {
                store<OUT>(t.d + i * t.d_rs + v * kLanes, activate(t.act, x + bias[v]));
            } else {
                x.store_unaligned(t.part + i * t.part_rs + v * kLanes);
            }
        }
    }
}

// Any tile (mrows <= MR, ncols <= NR), any strides: scalar, from the
// accumulators stored to tmp (by the caller, so that the accumulators of the
// vector path never need a memory home).
template <tops_dtype_t OUT>
void store_tile_scalar(const float (&tmp)[kMr][kNr], const TileDest<OUT>& t, int64_t mrows, int64_t ncols) {
    for (int64_t i = 0; i < mrows; ++i) {
        for (int64_t j = 0; j < ncols; ++j) {
            float x = t.alpha * tmp[i][j];
            if (t.prev) x += t.prev[i * t.part_rs + j * t.part_cs];
            if (t.c) x += t.beta * to_float<OUT>(t.c[i * t.c_rs + j * t.c_cs]);
            if (t.last) {
                if (t.bias) x += to_float<OUT>(t.bias[(t.bias_rows ? i : j) * t.bias_s]);
                t.d[i * t.d_rs + j * t.d_cs] = from_float<OUT>(activate_scalar(t.act, x));
            } else {
                t.part[i * t.part_rs + j * t.part_cs] = x;
            }
        }
    }
}

// ------------------------------------------------------------------ driver

// Whether B's full slivers are read in place rather than packed: f32 with
// unit column stride, at most 64 rows of A (one MC block, so B is read once)
// and at most 256 k steps (a sliver then fits L1 across the tiles sharing
// it). Measured on the 16-core Xeon, one thread: 64x3136x256 (the NCHW 1x1
// convolution's D^T = W X) 1.85 -> 1.56 ms in place; outside these bounds
// 128x3136x256 (two MC blocks) went 3.10 -> 4.42 ms, 112x2050x1024 7.6 -> 9.1
// and 64x4100x4096 46 -> 55 (64x784x1152 gained, 2.11 -> 1.68, but shares its
// depth with the last). Rows whose stride is a multiple of a large power of
// two fall into the same few cache sets and evict each other (64x4096x4096
// ran 2x slower in place), so those are packed too.
constexpr int64_t kInPlaceMaxRows = 64;
constexpr int64_t kInPlaceMaxDepth = 256;
constexpr int64_t kSetWindowBytes = 4096;  // an L1 way: 64 sets of 64-byte lines
constexpr int64_t kMaxRowAlias = 256;      // rows step over at least 16 set positions
template <tops_dtype_t IN>
bool b_read_in_place(const GemmArgs& g, int64_t m_rows, int64_t mc) {
    const int64_t row_bytes = g.b_rs * int64_t(sizeof(float));
    return IN == TOPS_DTYPE_F32 && g.b_cs == 1 && m_rows <= std::min(kInPlaceMaxRows, mc) &&
           std::min(g.blk.kc, g.k) <= kInPlaceMaxDepth && std::gcd(row_bytes, kSetWindowBytes) <= kMaxRowAlias;
}

// The stream over a (rows, cols) block at src with strides (rs, cs) and
// es-byte elements, spread over `tiles` tiles of kc k steps (no stream for
// an empty block or one with neither stride 1).
LineStream block_stream(const void* src, int64_t rs, int64_t cs, int64_t rows, int64_t cols, int64_t es,
                        int64_t tiles, int64_t kc) {
    LineStream st;
    if (rows <= 0 || cols <= 0 || (cs != 1 && rs != 1)) return st;
    const bool by_rows = cs == 1;
    st.run = static_cast<const char*>(src);
    st.run_stride = (by_rows ? rs : cs) * es;
    st.runs_left = by_rows ? rows : cols;
    st.run_lines = ceil_div((by_rows ? cols : rows) * es, kCacheLine);
    const int64_t per_tile = ceil_div(st.runs_left * st.run_lines, std::max<int64_t>(tiles, 1));
    st.every = std::max<int64_t>(1, kc / per_tile);
    return st;
}

// [begin, end) of part `i` of `parts` when `len` is cut in whole units.
struct Range {
    int64_t begin = 0, end = 0;
};

Range split_units(int64_t len, int64_t unit, int parts, int i) {
    const int64_t units = ceil_div(len, unit);
    Range r;
    r.begin = std::min(len, units * i / parts * unit);
    r.end = std::min(len, units * (i + 1) / parts * unit);
    return r;
}

// The serial blocked algorithm over rows [rows.begin, rows.end) and columns
// [cols.begin, cols.end) of every batch, with this thread's buffers.
template <tops_dtype_t IN, tops_dtype_t OUT>
void gemm_rectangle(const GemmArgs& g, Range rows, Range cols, float* bpack, float* apack) {
    using TI = storage_t<IN>;
    using TO = storage_t<OUT>;
    constexpr bool kF32Out = OUT == TOPS_DTYPE_F32;
    float* const accbuf = g.ws_layout.has_acc ? reinterpret_cast<float*>(g.ws + g.ws_layout.acc_offset) : nullptr;
    const int64_t kc_max = g.blk.kc, nc_max = g.blk.nc;
    constexpr int64_t es_in = int64_t(sizeof(TI));
    const int64_t kslabs = g.k > 0 ? ceil_div(g.k, kc_max) : 1;
    const int64_t m_rows = rows.end - rows.begin;
    // MC blocks of equal height (whole MR slivers).
    const int64_t mc = std::min(g.blk.mc, round_up(ceil_div(m_rows, ceil_div(m_rows, g.blk.mc)), kMr));
    const bool vec_ok = g.d_cs == 1 && (!g.c || g.c_cs == 1) && (!g.bias || g.bias_rows || g.bias_s == 1);
    // B's full slivers read where they lie instead of packed (b_read_in_place)
    const int64_t row_tiles = ceil_div(m_rows, kMr);
    const bool b_in_place = b_read_in_place<IN>(g, m_rows, mc);

    for (int64_t bi = 0; bi < g.batch; ++bi) {
        const TI* A = static_cast<const TI*>(g.a) + bi * g.a_bs;
        const TI* B = static_cast<const TI*>(g.b) + bi * g.b_bs;
        const TO* C = g.c ? static_cast<const TO*>(g.c) + bi * g.c_bs : nullptr;
        TO* D = static_cast<TO*>(g.d) + bi * g.d_bs;
        for (int64_t jc = cols.begin; jc < cols.end; jc += nc_max) {
            const int64_t ncur = std::min(nc_max, cols.end - jc);
            const int64_t slivers = ceil_div(ncur, kNr);
            for (int64_t slab = 0; slab < kslabs; ++slab) {
                const int64_t pc = slab * kc_max;
                const int64_t kc = std::min(kc_max, g.k - pc);
                const bool first = slab == 0, last = slab == kslabs - 1;
                // (kc, ncur) of B -> slivers (kc, NR)
                const int64_t full = ncur / kNr;
                const bool panel_rows = !b_in_place && g.b_cs == 1 && full > 0;
                if (panel_rows) pack_b_panel_rows<IN>(B + pc * g.b_rs + jc, g.b_rs, kc, full, bpack);
                for (int64_t s = panel_rows ? full : 0; s < slivers; ++s) {
                    if (b_in_place && ncur - s * kNr >= kNr) continue;
                    pack_b_sliver<IN>(B + pc * g.b_rs + (jc + s * kNr) * g.b_cs, g.b_rs, g.b_cs, kc,
                                      std::min<int64_t>(kNr, ncur - s * kNr), bpack + s * kNr * kc);
                }
                for (int64_t ic = rows.begin; ic < rows.end; ic += mc) {
                    const int64_t mcur = std::min(mc, rows.end - ic);
                    // (mcur, kc) of A -> slivers (kc, MR)
                    for (int64_t ir = 0; ir < mcur; ir += kMr) {
                        pack_a_sliver<IN>(A + (ic + ir) * g.a_rs + pc * g.a_cs, g.a_rs, g.a_cs, kc,
                                          std::min<int64_t>(kMr, mcur - ir), apack + ir * kc);
                    }
                    // The next block of A, pulled into L2 meanwhile (a panel of B is L3-sized: not streamed).
                    LineStream stream;
                    if (ic + mcur < rows.end) {
                        stream = block_stream(A + (ic + mcur) * g.a_rs + pc * g.a_cs, g.a_rs, g.a_cs,
                                              std::min(mc, rows.end - ic - mcur), kc, es_in,
                                              slivers * ceil_div(mcur, kMr), kc);
                    }
                    for (int64_t s = 0; s < slivers; ++s) {
                        const int64_t j0 = jc + s * kNr;
                        const int64_t ncols = std::min<int64_t>(kNr, cols.end - j0);
                        for (int64_t ir = 0; ir < mcur; ir += kMr) {
                            const int64_t i0 = ic + ir;
                            const int64_t mrows = std::min<int64_t>(kMr, mcur - ir);
                            Tile acc;
                            const float* ap = apack + ir * kc;
                            const bool in_place = b_in_place && ncols == kNr;
                            const float* bp = in_place ? reinterpret_cast<const float*>(B) + pc * g.b_rs + j0
                                                       : bpack + s * kNr * kc;
                            // Packed: the last tile of this sliver prefetches the next one.
                            // In place: every tile prefetches a share of the next one's rows.
                            const bool next_in_place = b_in_place && cols.end - j0 >= 2 * kNr && s + 1 < slivers;
                            const float* nb = in_place ? (next_in_place ? bp + kNr : nullptr)
                                              : ir + kMr >= mcur && s + 1 < slivers ? bp + kNr * kc
                                                                                    : nullptr;
                            // (a helper, not a lambda: a lambda capturing acc kept it in memory, 2.5x slower)
                            const BSliver bs{bp, in_place ? g.b_rs : 0, nb, ir / kMr, row_tiles};
                            // prefetch what the epilogue reads or writes (full tiles)
                            if (mrows == kMr && !first && (kF32Out || accbuf)) {
                                if constexpr (kF32Out) {
                                    tile_kernel(kc, ap, bs, kMr, acc,
                                                TilePrefetch<TO>{D + i0 * g.d_rs + j0 * g.d_cs, g.d_rs}, stream);
                                } else {
                                    tile_kernel(kc, ap, bs, kMr, acc, TilePrefetch<float>{accbuf + i0 * g.n + j0, g.n},
                                                stream);
                                }
                            } else if (mrows == kMr && first && C) {
                                tile_kernel(kc, ap, bs, kMr, acc,
                                            TilePrefetch<TO>{C + i0 * g.c_rs + j0 * g.c_cs, g.c_rs}, stream);
                            } else if (mrows == kMr && last) {
                                tile_kernel(kc, ap, bs, kMr, acc,
                                            TilePrefetch<TO>{D + i0 * g.d_rs + j0 * g.d_cs, g.d_rs}, stream);
                            } else {
                                tile_kernel(kc, ap, bs, int(mrows), acc, TilePrefetch<float>{}, stream);
                            }

                            TileDest<OUT> t;
                            t.alpha = g.alpha;
                            t.beta = g.beta;
                            t.act = g.act;
                            t.last = last;
                            if constexpr (kF32Out) {
                                t.part = reinterpret_cast<float*>(D) + i0 * g.d_rs + j0 * g.d_cs;
                                t.part_rs = g.d_rs;
                                t.part_cs = g.d_cs;
                            } else if (accbuf) {  // reused by every batch: a thread finishes one first
                                t.part = accbuf + i0 * g.n + j0;
                                t.part_rs = g.n;
                                t.part_cs = 1;
                            }
                            if (!first) t.prev = t.part;
                            if (first && C) {
                                t.c = C + i0 * g.c_rs + j0 * g.c_cs;
                                t.c_rs = g.c_rs;
                                t.c_cs = g.c_cs;
                            }
                            if (last) {
                                t.d = D + i0 * g.d_rs + j0 * g.d_cs;
                                t.d_rs = g.d_rs;
                                t.d_cs = g.d_cs;
                                if (g.bias) {
                                    t.bias = static_cast<const TO*>(g.bias) + (g.bias_rows ? i0 : j0) * g.bias_s;
                                    t.bias_s = g.bias_s;
                                    t.bias_rows = g.bias_rows;
                                }
                            }
                            const bool part_unit = t.part == nullptr || t.part_cs == 1;
                            if (vec_ok && part_unit && mrows == kMr && ncols == kNr) {
                                store_tile_vec<OUT>(acc, t);
                            } else {
                                alignas(64) float tmp[kMr][kNr];
                                for (int i = 0; i < kMr; ++i) {
                                    for (int v = 0; v < kNv; ++v) acc[i][v].store_aligned(&tmp[i][v * kLanes]);
                                }
                                store_tile_scalar<OUT>(tmp, t, mrows, ncols);
                            }
                        }
                    }
                }
            }
        }
    }
}

template <tops_dtype_t IN, tops_dtype_t OUT>
void gemm_team_member(const GemmArgs& g, int tid, int nt) {
    const GemmGrid grid = gemm_grid(g.m, g.n, nt, g.tile);
    const GemmThreadBuffers buf = gemm_thread_buffers(g.blk, grid);
    unsigned char* mine = g.ws + buf.stride() * size_t(tid);
    const Range rows = split_units(g.m, kMr, grid.tm, tid / grid.tn);
    const Range cols = split_units(g.n, kNr, grid.tn, tid % grid.tn);
    if (rows.begin == rows.end || cols.begin == cols.end) return;
    gemm_rectangle<IN, OUT>(g, rows, cols, reinterpret_cast<float*>(mine),
                            reinterpret_cast<float*>(mine + buf.b_bytes));
}

}  // namespace
}  // namespace TOPS_ISA_NS

template <tops_dtype_t IN, tops_dtype_t OUT>
template <class A>
void GemmBlockedKernel<IN, OUT>::operator()(A, GemmArgs g) const {
    if (g.threads <= 1) {
        TOPS_ISA_NS::gemm_team_member<IN, OUT>(g, 0, 1);
        return;
    }
#pragma omp parallel num_threads(g.threads)
    TOPS_ISA_NS::gemm_team_member<IN, OUT>(g, omp_get_thread_num(), omp_get_num_threads());
}

// Input x output dtypes: f32 -> f32; f16 / bf16 -> themselves or f32.
template void GemmBlockedKernel<TOPS_DTYPE_F32, TOPS_DTYPE_F32>::operator()<Arch>(Arch, GemmArgs) const;
template void GemmBlockedKernel<TOPS_DTYPE_F16, TOPS_DTYPE_F16>::operator()<Arch>(Arch, GemmArgs) const;
template void GemmBlockedKernel<TOPS_DTYPE_F16, TOPS_DTYPE_F32>::operator()<Arch>(Arch, GemmArgs) const;
template void GemmBlockedKernel<TOPS_DTYPE_BF16, TOPS_DTYPE_BF16>::operator()<Arch>(Arch, GemmArgs) const;
template void GemmBlockedKernel<TOPS_DTYPE_BF16, TOPS_DTYPE_F32>::operator()<Arch>(Arch, GemmArgs) const;

}  // namespace tops::cpu
