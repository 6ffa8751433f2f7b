// Staging of the CPU implicit-GEMM convolution's operands (src/cpu/conv_stage.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/params.hpp"

namespace tops::cpu {

// The zero-padded f32 input xp, strides in elements: NHWC (N, Hp, Wp, C), or
// NCHW (N, C, Hp, Wp) when the caller's x is channel-strided with unit
// width stride and allow_nchw (so staging is a row copy, never a transpose).
// in_place: x itself serves (dense f32 of that order, no padding).
struct ConvStaging {
    bool in_place = false;
    bool nchw = false;
    int64_t hp = 0, wp = 0;
    int64_t xp_img = 0, xp_row = 0, xp_pix = 0, xp_chan = 1;
    size_t floats = 0;  // workspace for xp (0 when in place)
};

ConvStaging conv_staging(const ConvParams& p, bool allow_nchw);

// x (any strides, f32 / f16 / bf16) -> xp, in independent rows: rows
// [begin, end) of conv_stage_input_rows (0 when x is read in place).
int64_t conv_stage_input_rows(const ConvParams& p, const ConvStaging& s);
void conv_stage_input_range(const ConvParams& p, const ConvStaging& s, const void* x, float* xp, int64_t begin,
                            int64_t end);
// All rows, over up to `threads` threads.
void conv_stage_input(const ConvParams& p, const ConvStaging& s, const void* x, float* xp, int threads);

// w -> f32 rows (K, kdim), reduction order (r, s, c): filters [begin, end).
void conv_stage_filter_rows_range(const ConvParams& p, const void* w, float* dst, int64_t begin, int64_t end);

// w -> NR-wide channel slivers (G, ceil(K/G / NR), kdim, NR), order (r, s, c),
// zero past K/G, in units [begin, end) of the ConvFilterPacking that
// conv_filter_packing chooses for a team of `threads` (see conv_stage.cpp).
struct ConvFilterPacking {
    int nr = 0;
    bool by_transpose = false;
    int64_t steps = 0;  // reduction steps per unit
    int64_t units = 0;
};
ConvFilterPacking conv_filter_packing(const ConvParams& p, int nr, int threads);
void conv_pack_filter_slivers_range(const ConvParams& p, const void* w, const ConvFilterPacking& k, float* dst,
                                    int64_t begin, int64_t end);
// Whether that packing runs as vector transposes (a dense f32 KRSC w whose
// K/G is a whole number of slivers) rather than element by element.
bool conv_filter_packs_by_transpose(const ConvParams& p, int nr);
void conv_pack_filter_slivers_range(const ConvParams& p, const void* w, int nr, float* dst, int64_t begin,
                                    int64_t end);

// w (K, 1, R, S) -> f32 tap-major (R * S, K), for the depthwise kernel.
void conv_stage_filter_taps(const ConvParams& p, const void* w, float* dst, int threads);

}  // namespace tops::cpu
