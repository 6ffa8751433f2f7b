// CPU transpose kernel functors. Only declarations here: the bodies live in
// src/cpu/kernels/transpose_*.cpp, compiled once per ISA (see cpu/isa.hpp).
//
// Every kernel walks the same work decomposition. The canonical problem
// (common/transpose_plan.hpp) is split into an outer loop nest and a 2-D
// panel per outer index: panel row r runs along one dim ("a"), panel column c
// along y's innermost dim ("b"):
//   y + row_y(r) + c * y_col  <-  x + r * x_row + c * x_col   (byte strides)
// where row_y(r) = r * y_row, except that the tile strategy may make the rows
// two dims of x that are contiguous together but apart in y (x's unit dim,
// shorter than a cache line, and the dim after it in x): rows then come in
// groups of row_group, y_row apart within a group and y_row_group apart
// between groups (transpose_row_y).
// The panel is cut into blocks of block_rows x block_cols; a work unit is one
// (outer index, row block, column block), enumerated with the column block
// fastest, then the row block, then the outer dims (y memory order). Threads
// take contiguous unit ranges [unit_begin, unit_end).
#pragma once

#include <cstdint>

#include "common/tensor.hpp"

namespace tops::cpu {

struct TransposeKernelArgs {
    const char* x = nullptr;
    char* y = nullptr;
    int64_t elem_size = 0;  // bytes: 1, 2 or 4

    int outer_rank = 0;  // outer loop nest, outermost first, byte strides
    int64_t outer_dims[kMaxRank] = {};
    int64_t outer_xs[kMaxRank] = {};
    int64_t outer_ys[kMaxRank] = {};

    int64_t rows = 1;  // panel extent along dim a (1 when there is no dim a)
    int64_t cols = 1;  // panel extent along dim b
    int64_t x_row = 0, x_col = 0;  // byte strides of the panel in x
    int64_t y_row = 0, y_col = 0;  // byte strides of the panel in y
    int64_t block_rows = 1, block_cols = 1;
    // Rows per group and the y stride between groups (see above); a panel
    // without groups has one group of all its rows. block_rows is a multiple
    // of row_group, so every block starts a group.
    int64_t row_group = 1;
    int64_t y_row_group = 0;
    // tile: y is too large to stay cached; whole y lines of line tiles are
    // written with non-temporal stores (when y's rows are line aligned).
    bool stream = false;

    int64_t unit_begin = 0, unit_end = 0;
};

// Work units of a decomposition: outer count x row blocks x column blocks.
inline int64_t transpose_unit_count(const TransposeKernelArgs& a) {
    int64_t outer = 1;
    for (int k = 0; k < a.outer_rank; ++k) outer *= a.outer_dims[k];
    const int64_t row_blocks = (a.rows + a.block_rows - 1) / a.block_rows;
    const int64_t col_blocks = (a.cols + a.block_cols - 1) / a.block_cols;
    return outer * row_blocks * col_blocks;
}

// Byte offset in y of panel row r (relative to a group start).
inline int64_t transpose_row_y(const TransposeKernelArgs& a, int64_t r) {
    return r % a.row_group * a.y_row + r / a.row_group * a.y_row_group;
}

// Panel rows are contiguous in both x and y (x_col == y_col == elem_size):
// each unit is a wide row copy.
struct TransposeCopyKernel {
    template <class Arch>
    void operator()(Arch, const TransposeKernelArgs& a) const;
};

// x is contiguous along panel rows (x_row == elem_size) and y along panel
// columns (y_col == elem_size): square in-register tile transposes, scalar
// edges.
struct TransposeTileKernel {
    template <class Arch>
    void operator()(Arch, const TransposeKernelArgs& a) const;
};

// TransposeTileKernel's register tile for an element size on this ISA, in
// panel rows x panel columns; parts of a panel outside whole tiles are
// copied element by element. line_in_registers: a whole cache-line tile
// (64 bytes per side) is transposed in registers rather than through a
// buffer of register tiles.
struct TransposeTileShape {
    int rows = 1;
    int cols = 1;
    bool line_in_registers = false;
};
struct TransposeTileEdge {
    template <class Arch>
    TransposeTileShape operator()(Arch, int64_t elem_size) const;
};

// Any strides: blocked element-by-element copy.
struct TransposeStridedKernel {
    template <class Arch>
    void operator()(Arch, const TransposeKernelArgs& a) const;
};

}  // namespace tops::cpu
