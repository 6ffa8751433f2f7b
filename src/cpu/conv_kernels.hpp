// CPU convolution: kernel entry points shared by the planner (src/cpu/conv.cpp)
// and the kernels (src/cpu/conv_direct.cpp, src/cpu/kernels/conv_*.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/backend.hpp"
#include "common/int_math.hpp"
#include "common/params.hpp"
#include "cpu/gemm_kernels.hpp"
#include "cpu/isa.hpp"

namespace tops::cpu {

// y = act(conv(x, w) + bias [+ residual]) by direct loops (src/cpu/conv_direct.cpp).
void conv_direct_run(const ConvParams& p, const ArgTable& args, int threads);

// ------------------------------------------------------------------ implicit GEMM

// The packed implicit GEMM (src/cpu/kernels/conv_gemm.cpp) computes, per image
// n and group g, D = A @ B over kdim = R * S * C/G reduction steps, with the
// f32 input staged as a zero-padded tensor xp (NHWC or NCHW) so that no
// tap needs a bounds check: tap kk of the pixel whose window starts at xp
// offset o reads xp[o + koff[kk]] (koff folds r, s, c in the reduction order).
// What every conv kernel does after the reduction: y = act(acc + bias + res),
// addressed through canonical (N, K, P, Q) strides in elements.
struct ConvEpilogueArgs {
    void* y = nullptr;
    int64_t ys[4] = {};
    const void* res = nullptr;  // residual, y's dtype (or null)
    int64_t rs[4] = {};
    const void* bias = nullptr;  // (K), y's dtype (or null)
    int64_t bias_s = 0;
    Activation act = Activation::none;
};

// Two orientations, chosen by which operand is cheaper to pack:
//   pixels_by_channels: D (pixels, K/G). A rows are pixels read in place from
//     xp through koff (indirect, nothing packed); B is the filter, packed once
//     per execute into NR-wide channel slivers (kdim, NR).
//   channels_by_pixels: D (K/G, pixels). A rows are filter rows (f32, kdim
//     contiguous in the reduction order); B is a block of im2col columns
//     packed per task into NR-wide pixel slivers (kdim, NR): a blocked
//     im2col of at most `cols_block` pixels, never the whole matrix.
enum class ConvGemmOrientation { pixels_by_channels, channels_by_pixels };

struct ConvGemmArgs : ConvEpilogueArgs {
    ConvGemmOrientation orientation = ConvGemmOrientation::pixels_by_channels;
    int64_t batch = 0, groups = 1, cg = 0, kg = 0, out_h = 0, out_w = 0, kdim = 0;
    int64_t stride_h = 1, stride_w = 1;
    const float* xp = nullptr;     // (N, Hp, Wp, C) f32
    int64_t xp_img = 0, xp_row = 0, xp_pix = 0, xp_chan = 1;  // NHWC or NCHW (src/cpu/conv_stage.hpp)
    const int64_t* koff = nullptr;  // (kdim) offsets into xp from a window origin
    // pixels_by_channels with channels contiguous in xp: kdim = taps * run,
    // tap t's run of `run` reduction steps starts at xp offset tap_off[t]
    // (taps = 0: use koff).
    const int64_t* tap_off = nullptr;
    int64_t taps = 0, run = 0;
    const float* wpack = nullptr;  // pixels_by_channels: (G, ceil(K/G / NR), kdim, NR)
    const float* wrows = nullptr;  // channels_by_pixels: (K, w_row) f32 rows
    int64_t w_row = 0;
    // blocking: a task is (n, g, a block of rows, a block of cols)
    int64_t rows_block = 0, cols_block = 0;  // multiples of MR / NR
    float* col_bufs = nullptr;                // channels_by_pixels: per thread (kdim, cols_block)
    size_t col_buf_floats = 0;
};

// The register tile is the GEMM's (gemm_tile_shape, src/cpu/gemm_kernels.hpp).
// OUT: dtype of y, residual and bias (the input is staged to f32).
// Tasks (n, g, row block, col block), independent of each other, of an
// orientation with `pixels` output pixels per image and kg filters per group.
inline int64_t conv_gemm_task_count(ConvGemmOrientation o, int64_t batch, int64_t groups, int64_t pixels, int64_t kg,
                                    int64_t rows_block, int64_t cols_block) {
    const bool pbc = o == ConvGemmOrientation::pixels_by_channels;
    const int64_t rows = pbc ? pixels : kg, cols = pbc ? kg : pixels;
    return batch * groups * ceil_div(rows, rows_block) * ceil_div(cols, cols_block);
}

// Runs tasks [begin, end) on the calling thread; tid picks its im2col
// buffer (col_bufs holds one per thread of the team).
template <tops_dtype_t OUT>
struct ConvGemmKernel {
    template <class Arch>
    void operator()(Arch, const ConvGemmArgs& g, int64_t begin, int64_t end, int tid) const;
};

// ------------------------------------------------------------------ depthwise

// Depthwise (C/G = 1, K = C * mult) on the same staged xp; filter staged
// tap-major wt (taps = R * S, K) f32 (src/cpu/kernels/conv_depthwise.cpp).
struct ConvDepthwiseArgs : ConvEpilogueArgs {
    int64_t batch = 0, k = 0, mult = 1, out_h = 0, out_w = 0, stride_h = 1, stride_w = 1;
    const float* xp = nullptr;
    int64_t xp_img = 0, xp_row = 0, xp_pix = 0;
    const int64_t* tap_off = nullptr;  // (taps) offsets into xp from a window origin
    int64_t taps = 0;
    const float* wt = nullptr;  // (taps, K)
    int threads = 1;
};

template <tops_dtype_t OUT>
struct ConvDepthwiseKernel {
    template <class Arch>
    void operator()(Arch, ConvDepthwiseArgs g) const;
};

}  // namespace tops::cpu
