// CPU transpose kernels, compiled once per ISA.
//
// Strategy: a transpose is memory bound, so the kernels exist to make both
// the reads and the writes walk whole cache lines.
//  - copy:    the innermost dim is contiguous in x and y; each work unit is a
//             block of wide row copies.
//  - tile:    x is contiguous along panel rows, y along panel columns; the
//             panel is cut into blocks, each block into line tiles of one
//             64-byte line per side, read as kLine sequential x streams
//             (tile_block), and each line tile into square register tiles
//             (a zmm 16x16 for 4-byte elements on avx512, so a whole line
//             per register; AVX 8x8 on avx2, SSE 4x4 on sse4; SSE 8x8 for
//             2-byte and 16x16 for 1-byte elements), so every load and store
//             moves a full vector. Edges that do not fill a tile are copied
//             element by element.
//  - strided: any strides, a blocked element-by-element copy (correct for
//             broadcast inputs and padded outputs; no vector gathers).
// Elements are moved as raw bytes (never converted).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

#include "cpu/isa_arch.hpp"
#include "cpu/transpose_kernels.hpp"
#if defined(TOPS_CPU_ISA_avx512)
#include "cpu/kernels/transpose16_avx512.hpp"
#endif
#if !defined(TOPS_CPU_ISA_sse4)
#include "cpu/kernels/transpose8_avx.hpp"
#endif

namespace tops::cpu {
namespace TOPS_ISA_NS {
namespace {

constexpr int64_t kSseBytes = 16;
constexpr int64_t kAvxBytes = 32;
constexpr int64_t kLineBytes = 64;

#if defined(TOPS_CPU_ISA_sse4)
constexpr bool kHasAvx = false;
#else
constexpr bool kHasAvx = true;
#endif

// Unsigned integer of an element size (elements are moved, never converted).
template <int ES> struct ElemBits;
template <> struct ElemBits<1> { using type = uint8_t; };
template <> struct ElemBits<2> { using type = uint16_t; };
template <> struct ElemBits<4> { using type = uint32_t; };

// Register tile of the tile strategy: kRows panel rows (one vector of x per
// line) by kCols panel columns (one vector of y per row).
//  - sse4: a square SSE tile, 16 / ES elements per side.
//  - AVX (avx2 and avx512 builds): 8x8 in 256-bit registers for 4-byte
//    elements; for 1- and 2-byte elements two SSE-sized tiles side by side in
//    the two 128-bit lanes, so each y row receives 32 contiguous bytes.
template <int ES>
struct TileTraits {
    static constexpr int kRows = (ES == 4 && kHasAvx) ? int(kAvxBytes / ES) : int(kSseBytes / ES);
    static constexpr int kCols = (ES < 4 && kHasAvx) ? 2 * kRows : kRows;
    static_assert(kRows * ES == kSseBytes || kRows * ES == kAvxBytes, "a tile line is one vector register");
    static_assert(kCols * ES == kSseBytes || kCols * ES == kAvxBytes, "a tile row is one vector register");
};

// ------------------------------------------------------------- unit walker

// Calls panel(x_block, y_block, nr, nc) for every work unit in
// [a.unit_begin, a.unit_end): x_block/y_block point at the block's first
// element, nr x nc is its extent (edge blocks are smaller).
template <class Panel>
void for_each_unit(const TransposeKernelArgs& a, Panel&& panel) {
    const int64_t row_blocks = (a.rows + a.block_rows - 1) / a.block_rows;
    const int64_t col_blocks = (a.cols + a.block_cols - 1) / a.block_cols;
    const int64_t per_outer = row_blocks * col_blocks;

    int64_t u = a.unit_begin;
    int64_t outer = u / per_outer;
    int64_t rb = (u % per_outer) / col_blocks;
    int64_t cb = u % col_blocks;

    int64_t idx[kMaxRank] = {};  // outer odometer, innermost last
    int64_t off_x = 0, off_y = 0;
    for (int k = a.outer_rank - 1; k >= 0; --k) {
        idx[k] = outer % a.outer_dims[k];
        outer /= a.outer_dims[k];
        off_x += idx[k] * a.outer_xs[k];
        off_y += idx[k] * a.outer_ys[k];
    }

    for (; u < a.unit_end; ++u) {
        const int64_t r0 = rb * a.block_rows;
        const int64_t c0 = cb * a.block_cols;
        const int64_t nr = a.rows - r0 < a.block_rows ? a.rows - r0 : a.block_rows;
        const int64_t nc = a.cols - c0 < a.block_cols ? a.cols - c0 : a.block_cols;
        panel(a.x + off_x + r0 * a.x_row + c0 * a.x_col, a.y + off_y + transpose_row_y(a, r0) + c0 * a.y_col, nr,
              nc);

        if (++cb < col_blocks) continue;
        cb = 0;
        if (++rb < row_blocks) continue;
        rb = 0;
        for (int k = a.outer_rank - 1; k >= 0; --k) {  // advance the odometer
            off_x += a.outer_xs[k];
            off_y += a.outer_ys[k];
            if (++idx[k] < a.outer_dims[k]) break;
            off_x -= idx[k] * a.outer_xs[k];
            off_y -= idx[k] * a.outer_ys[k];
            idx[k] = 0;
        }
    }
}

// ------------------------------------------------------------- scalar blocks

// y(r, c) = x(r, c) for an nr x nc block with arbitrary byte strides.
template <int ES>
inline void copy_block_scalar(const char* x, int64_t x_row, int64_t x_col, char* y, int64_t y_row, int64_t y_col,
                              int64_t nr, int64_t nc) {
    using T = typename ElemBits<ES>::type;
    for (int64_t r = 0; r < nr; ++r) {
        const char* xr = x + r * x_row;
        char* yr = y + r * y_row;
        for (int64_t c = 0; c < nc; ++c) {
            T v;
            std::memcpy(&v, xr + c * x_col, ES);
            std::memcpy(yr + c * y_col, &v, ES);
        }
    }
}

// Copies one 64-byte line.
inline void copy_line(const char* x, char* y) {
#if !defined(TOPS_CPU_ISA_sse4)
    for (int64_t i = 0; i < kLineBytes; i += kAvxBytes) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    }
#else
    for (int64_t i = 0; i < kLineBytes; i += kSseBytes) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    }
#endif
}

// Writes one 64-byte line from an aligned buffer with non-temporal stores
// (no read-for-ownership of y's line); y must be line aligned.
inline void stream_line(const char* buf, char* y) {
#if !defined(TOPS_CPU_ISA_sse4)
    for (int64_t i = 0; i < kLineBytes; i += kAvxBytes) {
        _mm256_stream_si256(reinterpret_cast<__m256i*>(y + i), _mm256_load_si256(reinterpret_cast<const __m256i*>(buf + i)));
    }
#else
    for (int64_t i = 0; i < kLineBytes; i += kSseBytes) {
        _mm_stream_si128(reinterpret_cast<__m128i*>(y + i), _mm_load_si128(reinterpret_cast<const __m128i*>(buf + i)));
    }
#endif
}

// ------------------------------------------------------------- register tiles

template <int ES> inline __m128i unpack_lo(__m128i a, __m128i b);
template <int ES> inline __m128i unpack_hi(__m128i a, __m128i b);
template <> inline __m128i unpack_lo<1>(__m128i a, __m128i b) { return _mm_unpacklo_epi8(a, b); }
template <> inline __m128i unpack_hi<1>(__m128i a, __m128i b) { return _mm_unpackhi_epi8(a, b); }
template <> inline __m128i unpack_lo<2>(__m128i a, __m128i b) { return _mm_unpacklo_epi16(a, b); }
template <> inline __m128i unpack_hi<2>(__m128i a, __m128i b) { return _mm_unpackhi_epi16(a, b); }
template <> inline __m128i unpack_lo<4>(__m128i a, __m128i b) { return _mm_unpacklo_epi32(a, b); }
template <> inline __m128i unpack_hi<4>(__m128i a, __m128i b) { return _mm_unpackhi_epi32(a, b); }

// Transposes one (N, N) tile, N = 16 / ES, with SSE2 unpacks: x holds N
// lines of N elements (line c at x + c * x_ld holds x(0..N-1, c)); y row r
// at y + r * y_ld receives them. Each round interleaves register i with
// register i + N/2; viewing an element's (register, lane) bits as one word,
// a round rotates that word left by one bit, so log2(N) rounds swap the two
// halves: register and lane trade places, which is the transpose.
template <int ES>
inline void tile_sse(const char* x, int64_t x_ld, char* y, int64_t y_ld) {
    constexpr int N = int(kSseBytes / ES);
    static_assert(N == 4 || N == 8 || N == 16, "SSE tile edge must be 4, 8 or 16 elements");
    __m128i v[N];  // (N, N): register c = line c of x
    for (int c = 0; c < N; ++c) v[c] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + c * x_ld));
    for (int round = 1; round < N; round *= 2) {
        __m128i w[N];
        for (int i = 0; i < N / 2; ++i) {
            w[2 * i] = unpack_lo<ES>(v[i], v[i + N / 2]);
            w[2 * i + 1] = unpack_hi<ES>(v[i], v[i + N / 2]);
        }
        for (int i = 0; i < N; ++i) v[i] = w[i];
    }
    for (int r = 0; r < N; ++r) _mm_storeu_si128(reinterpret_cast<__m128i*>(y + r * y_ld), v[r]);  // register r = row r of y
}

#if !defined(TOPS_CPU_ISA_sse4)
// (8, 8) tile of 4-byte elements in AVX registers (transpose8_avx.hpp).
inline void tile_avx_b4(const char* x, int64_t x_ld, char* y, int64_t y_ld) {
    constexpr int N = kTranspose8;
    static_assert(N == int(kAvxBytes / 4), "AVX 4-byte tile is 8x8");
    __m256 v[N];  // (8, 8): register c = line c of x
    for (int c = 0; c < N; ++c) v[c] = _mm256_loadu_ps(reinterpret_cast<const float*>(x + c * x_ld));
    transpose_8x8_f32_avx(v);
    for (int r = 0; r < N; ++r) _mm256_storeu_ps(reinterpret_cast<float*>(y + r * y_ld), v[r]);
}

template <int ES> inline __m256i unpack_lo_avx(__m256i a, __m256i b);
template <int ES> inline __m256i unpack_hi_avx(__m256i a, __m256i b);
template <> inline __m256i unpack_lo_avx<1>(__m256i a, __m256i b) { return _mm256_unpacklo_epi8(a, b); }
template <> inline __m256i unpack_hi_avx<1>(__m256i a, __m256i b) { return _mm256_unpackhi_epi8(a, b); }
template <> inline __m256i unpack_lo_avx<2>(__m256i a, __m256i b) { return _mm256_unpacklo_epi16(a, b); }
template <> inline __m256i unpack_hi_avx<2>(__m256i a, __m256i b) { return _mm256_unpackhi_epi16(a, b); }

// Two (N, N) SSE-sized tiles at once, N = 16 / ES: lane 0 holds x lines
// 0..N-1, lane 1 lines N..2N-1, and the in-lane unpack rounds of tile_sse
// transpose both, so register r ends as y row r, columns 0..2N-1: a
// (N, 2N) tile with one 32-byte store per y row.
template <int ES>
inline void tile_avx_2lane(const char* x, int64_t x_ld, char* y, int64_t y_ld) {
    constexpr int N = int(kSseBytes / ES);
    static_assert(N == 8 || N == 16, "two-lane tiles are for 1- and 2-byte elements");
    __m256i v[N];  // lane 0: line c, lane 1: line c + N
    for (int c = 0; c < N; ++c) {
        const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + c * x_ld));
        const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + (c + N) * x_ld));
        v[c] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
    }
    for (int round = 1; round < N; round *= 2) {
        __m256i w[N];
        for (int i = 0; i < N / 2; ++i) {
            w[2 * i] = unpack_lo_avx<ES>(v[i], v[i + N / 2]);
            w[2 * i + 1] = unpack_hi_avx<ES>(v[i], v[i + N / 2]);
        }
        for (int i = 0; i < N; ++i) v[i] = w[i];
    }
    for (int r = 0; r < N; ++r) _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + r * y_ld), v[r]);
}
#endif

// One (kRows, kCols) register tile at x (line c at x + c * x_ld) into y
// (row r at y + r * y_ld).
template <int ES>
inline void tile(const char* x, int64_t x_ld, char* y, int64_t y_ld) {
#if !defined(TOPS_CPU_ISA_sse4)
    if constexpr (ES == 4) {
        tile_avx_b4(x, x_ld, y, y_ld);
    } else {
        tile_avx_2lane<ES>(x, x_ld, y, y_ld);
    }
#else
    tile_sse<ES>(x, x_ld, y, y_ld);
#endif
}

// y(r, c) = x(r, c) over an nr x nc region with register tiles where whole
// tiles fit and element copies for the rest (right columns, bottom rows).
template <int ES>
inline void tile_region(const char* x, int64_t x_col, char* y, int64_t y_row, int64_t nr, int64_t nc) {
    constexpr int64_t R = TileTraits<ES>::kRows;
    constexpr int64_t C = TileTraits<ES>::kCols;
    const int64_t full_r = nr / R * R;
    const int64_t full_c = nc / C * C;
    for (int64_t r = 0; r < full_r; r += R) {
        for (int64_t c = 0; c < full_c; c += C) tile<ES>(x + r * ES + c * x_col, x_col, y + r * y_row + c * ES, y_row);
    }
    if (full_c < nc) copy_block_scalar<ES>(x + full_c * x_col, ES, x_col, y + full_c * ES, y_row, ES, full_r, nc - full_c);
    if (full_r < nr) copy_block_scalar<ES>(x + full_r * ES, ES, x_col, y + full_r * y_row, y_row, ES, nr - full_r, nc);
}

#if defined(TOPS_CPU_ISA_avx512)
// (16, 16) tile of 4-byte elements in zmm registers: one whole 64-byte line
// of x per register in, one whole 64-byte row of y per register out
// (transpose16_avx512.hpp).
inline void tile16_zmm_b4(const char* x, int64_t x_ld, char* y, const int64_t* y_off, bool stream) {
    constexpr int N = kTranspose16;
    static_assert(N * 4 == kLineBytes, "one zmm register holds one line of 4-byte elements");
    __m512 v[N];  // (16, 16): register c = line c of x
    for (int c = 0; c < N; ++c) v[c] = _mm512_loadu_ps(reinterpret_cast<const float*>(x + c * x_ld));
    transpose_16x16_f32_avx512(v);  // v[r] = y row r
    if (stream) {
        for (int r = 0; r < N; ++r) _mm512_stream_ps(reinterpret_cast<float*>(y + y_off[r]), v[r]);
    } else {
        for (int r = 0; r < N; ++r) _mm512_storeu_ps(reinterpret_cast<float*>(y + y_off[r]), v[r]);
    }
}
#endif

// A (kLine, kLine) tile of one cache line per side: kLine lines of x, each
// read whole, and kLine rows of y, each written whole by one run of stores;
// y row r of the tile is at y + y_off[r] (panel rows may come in groups).
// On avx512 a 4-byte tile is one zmm register per line (tile16_zmm_b4).
// Elsewhere register tiles alone would leave every line half used between
// visits, and when the strides are large powers of two the lines of a tile
// share a cache set and are evicted before the next visit, so the tile goes
// through a small L1-resident buffer instead.
template <int ES>
struct LineTile {
    static constexpr int64_t kLine = kLineBytes / ES;
    static constexpr int64_t R = TileTraits<ES>::kRows;
    static constexpr int64_t C = TileTraits<ES>::kCols;
    static_assert(kLine % R == 0 && kLine % C == 0, "a line tile holds whole register tiles");
    static constexpr bool kInRegisters = kIsa == Isa::avx512 && ES == 4;

    // stream: y rows are line aligned; write them with non-temporal stores.
    static void run(const char* x, int64_t x_col, char* y, const int64_t* y_off, bool stream) {
#if defined(TOPS_CPU_ISA_avx512)
        if constexpr (kInRegisters) {
            tile16_zmm_b4(x, x_col, y, y_off, stream);
            return;
        }
#endif
        alignas(kLineBytes) char buf[kLine * kLineBytes];  // (kLine, kLine) elements
        for (int64_t c = 0; c < kLine; c += C) {
            for (int64_t r = 0; r < kLine; r += R) {
                tile<ES>(x + r * ES + c * x_col, x_col, buf + r * kLineBytes + c * ES, kLineBytes);
            }
        }
        if (stream) {
            for (int64_t r = 0; r < kLine; ++r) stream_line(buf + r * kLineBytes, y + y_off[r]);
        } else {
            for (int64_t r = 0; r < kLine; ++r) copy_line(buf + r * kLineBytes, y + y_off[r]);
        }
    }
};

// One nr x nc block of the tile strategy in line tiles, walked along the x
// lines first: a group of kLine x lines (panel columns) is read front to
// back, kLine sequential streams that the hardware prefetchers follow, and
// each y row receives one whole line per group. (Walking along y's rows
// instead reads one line from each of many x lines per step; with a large
// power-of-two stride those lines share their L1/L2 sets and every step
// touches a different page per line: 8192^2 f32 ran at half the speed.)
// With row groups (x's unit dim shorter than a line, e.g. [c][w][e=8] ->
// [e][w][c]) a line tile's kLine rows are kLine / row_group groups: it still
// reads kLine whole x lines and writes kLine whole y lines, where 8-row
// register tiles alone would read 32-byte pieces of x lines that a large
// power-of-two pitch puts in one L1 and L2 set.
// Register tiles and element copies for the edges, one run of rows that are
// evenly spaced in y at a time.
template <int ES>
inline void tile_rows(const TransposeKernelArgs& a, const char* x, char* y, int64_t r0, int64_t r1, int64_t nc) {
    for (int64_t r = r0; r < r1;) {
        const int64_t n = std::min(r1 - r, a.row_group - r % a.row_group);
        tile_region<ES>(x + r * ES, a.x_col, y + transpose_row_y(a, r), a.y_row, n, nc);
        r += n;
    }
}
template <int ES>
inline void tile_block(const TransposeKernelArgs& a, const char* x, char* y, int64_t nr, int64_t nc) {
    constexpr int64_t L = LineTile<ES>::kLine;
    const int64_t full_r = nr / L * L;
    const int64_t full_c = nc / L * L;
    // Line tiles start at multiples of L, which are group starts (a group
    // shorter than L divides it), so row r + j of a tile is at
    // r / L * y_tile + y_off[j].
    const int64_t y_tile = transpose_row_y(a, L);
    int64_t y_off[L];  // (L,) byte offsets of a line tile's y rows
    uintptr_t align = reinterpret_cast<uintptr_t>(y);
    for (int64_t j = 0; j < L; ++j) {
        y_off[j] = transpose_row_y(a, j);
        align |= uintptr_t(y_off[j]);
    }
    const bool stream = a.stream && align % kLineBytes == 0;
    for (int64_t c = 0; c < full_c; c += L) {
        for (int64_t r = 0; r < full_r; r += L) {
            LineTile<ES>::run(x + r * ES + c * a.x_col, a.x_col, y + r / L * y_tile + c * ES, y_off, stream);
        }
    }
    if (full_c < nc) tile_rows<ES>(a, x + full_c * a.x_col, y + full_c * ES, 0, full_r, nc - full_c);
    if (full_r < nr) tile_rows<ES>(a, x, y, full_r, nr, nc);
}
template <int ES>
void run_tile(const TransposeKernelArgs& a) {
    for_each_unit(a, [&](const char* x, char* y, int64_t nr, int64_t nc) { tile_block<ES>(a, x, y, nr, nc); });
    if (a.stream) _mm_sfence();  // non-temporal stores are visible before the threads join
}

// ------------------------------------------------------------- row copy

// Copies one row of `bytes` bytes with inline vector moves: rows of a
// transpose are often short (a head dim of 64 elements), where a call into
// the C library's memcpy costs as much as the copy. Long rows use memcpy.
inline void copy_row(const char* x, char* y, int64_t bytes) {
    constexpr int64_t kInlineMaxBytes = 4096;
    if (bytes < kSseBytes || bytes > kInlineMaxBytes) {
        std::memcpy(y, x, size_t(bytes));
        return;
    }
    int64_t i = 0;
#if !defined(TOPS_CPU_ISA_sse4)
    for (; i + kAvxBytes <= bytes; i += kAvxBytes) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    }
#endif
    for (; i + kSseBytes <= bytes; i += kSseBytes) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    }
    if (i < bytes) {  // last vector overlaps bytes already written (same values)
        const int64_t last = bytes - kSseBytes;
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + last),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + last)));
    }
}

}  // namespace
}  // namespace TOPS_ISA_NS

template <class A>
TransposeTileShape TransposeTileEdge::operator()(A, int64_t elem_size) const {
    using namespace TOPS_ISA_NS;
    switch (elem_size) {
        case 1: return {TileTraits<1>::kRows, TileTraits<1>::kCols, LineTile<1>::kInRegisters};
        case 2: return {TileTraits<2>::kRows, TileTraits<2>::kCols, LineTile<2>::kInRegisters};
        default: return {TileTraits<4>::kRows, TileTraits<4>::kCols, LineTile<4>::kInRegisters};
    }
}

template <class A>
void TransposeTileKernel::operator()(A, const TransposeKernelArgs& a) const {
    using namespace TOPS_ISA_NS;
    switch (a.elem_size) {
        case 1: run_tile<1>(a); break;
        case 2: run_tile<2>(a); break;
        default: run_tile<4>(a); break;
    }
}

template <class A>
void TransposeCopyKernel::operator()(A, const TransposeKernelArgs& a) const {
    using namespace TOPS_ISA_NS;
    // Panel rows are contiguous in x and y: copy each row of a block whole.
    for_each_unit(a, [&](const char* x, char* y, int64_t nr, int64_t nc) {
        for (int64_t r = 0; r < nr; ++r) copy_row(x + r * a.x_row, y + r * a.y_row, nc * a.elem_size);
    });
}

template <class A>
void TransposeStridedKernel::operator()(A, const TransposeKernelArgs& a) const {
    using namespace TOPS_ISA_NS;
    auto run = [&](auto es) {
        constexpr int ES = decltype(es)::value;
        for_each_unit(a, [&](const char* x, char* y, int64_t nr, int64_t nc) {
            copy_block_scalar<ES>(x, a.x_row, a.x_col, y, a.y_row, a.y_col, nr, nc);
        });
    };
    switch (a.elem_size) {
        case 1: run(std::integral_constant<int, 1>{}); break;
        case 2: run(std::integral_constant<int, 2>{}); break;
        default: run(std::integral_constant<int, 4>{}); break;
    }
}

template TransposeTileShape TransposeTileEdge::operator()<Arch>(Arch, int64_t) const;
TOPS_CPU_INSTANTIATE(TransposeTileKernel, const TransposeKernelArgs&)
TOPS_CPU_INSTANTIATE(TransposeCopyKernel, const TransposeKernelArgs&)
TOPS_CPU_INSTANTIATE(TransposeStridedKernel, const TransposeKernelArgs&)

}  // namespace tops::cpu
