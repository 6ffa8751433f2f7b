// Staging for the CPU implicit-GEMM convolution (src/cpu/kernels/conv_gemm.cpp):
//   - the input x (any strides, any float dtype) -> zero-padded f32 NHWC xp,
//     one (n, padded row) per work item; a dense NHWC f32 source row is one
//     contiguous copy, any other layout an element gather;
//   - the filter w -> f32 rows (K, kdim) in the (r, s, c) reduction order;
//   - the filter w -> NR-wide channel slivers (G, slivers, kdim, NR), for
//     the pixels_by_channels orientation, zero past K/G.
// Each is one pass over its tensor, linear in its size (the GEMM itself is
// the cubic part); all run in parallel over independent rows.
#include <algorithm>
#include <cstring>

#include "common/half.hpp"
#include "common/int_math.hpp"
#include "cpu/conv_stage.hpp"
#include "cpu/isa.hpp"
#include "cpu/parallel.hpp"
#include "cpu/transpose_kernels.hpp"

namespace tops::cpu {
namespace {

// Elements worth one thread: each pass is a copy (~1 MiB per 0.1 ms), so
// below this a fork / join (and, on a shared machine, waiting for a
// descheduled worker) costs more than the copy.
constexpr int64_t kGrainElems = 256 * 1024;

inline float load_elem(tops_dtype_t dt, const void* base, int64_t off) {
    switch (dt) {
        case TOPS_DTYPE_F16: return f16_to_float(static_cast<const uint16_t*>(base)[off]);
        case TOPS_DTYPE_BF16: return bf16_to_float(static_cast<const uint16_t*>(base)[off]);
        default: return static_cast<const float*>(base)[off];
    }
}

template <tops_dtype_t DT>
inline float load_t(const void* base, int64_t off) {
    if constexpr (DT == TOPS_DTYPE_F32) return static_cast<const float*>(base)[off];
    else if constexpr (DT == TOPS_DTYPE_F16) return f16_to_float(static_cast<const uint16_t*>(base)[off]);
    else return bf16_to_float(static_cast<const uint16_t*>(base)[off]);
}

// One padded row (n, hp) of xp: (Wp, C).
template <tops_dtype_t DT>
void stage_row(const ConvParams& p, const ConvStaging& s, const void* x, float* xp, int64_t n, int64_t hp) {
    float* dst = xp + n * s.xp_img + hp * s.xp_row;
    const int64_t ih = hp - p.pad_top;
    const int64_t c = p.in_c;
    if (ih < 0 || ih >= p.in_h) {
        std::memset(dst, 0, size_t(s.xp_row) * sizeof(float));
        return;
    }
    std::memset(dst, 0, size_t(p.pad_left * c) * sizeof(float));
    std::memset(dst + (p.pad_left + p.in_w) * c, 0, size_t(p.pad_right * c) * sizeof(float));
    float* out = dst + p.pad_left * c;
    const int64_t* xs = p.x.strides;
    const int64_t base = n * xs[0] + ih * xs[2];
    if (DT == TOPS_DTYPE_F32 && xs[1] == 1 && xs[3] == c) {
        std::memcpy(out, static_cast<const float*>(x) + base, size_t(p.in_w * c) * sizeof(float));
    } else if (xs[1] == 1) {
        for (int64_t iw = 0; iw < p.in_w; ++iw) {
            for (int64_t ci = 0; ci < c; ++ci) out[iw * c + ci] = load_t<DT>(x, base + iw * xs[3] + ci);
        }
    } else {  // channel-strided source (NCHW): walk each channel's row, write strided
        for (int64_t ci = 0; ci < c; ++ci) {
            for (int64_t iw = 0; iw < p.in_w; ++iw) out[iw * c + ci] = load_t<DT>(x, base + ci * xs[1] + iw * xs[3]);
        }
    }
}

// One padded row (n, c, hp) of an NCHW xp: (Wp).
template <tops_dtype_t DT>
void stage_row_nchw(const ConvParams& p, const ConvStaging& s, const void* x, float* xp, int64_t n, int64_t c,
                    int64_t hp) {
    float* dst = xp + n * s.xp_img + c * s.xp_chan + hp * s.xp_row;
    const int64_t ih = hp - p.pad_top;
    if (ih < 0 || ih >= p.in_h) {
        std::memset(dst, 0, size_t(s.wp) * sizeof(float));
        return;
    }
    std::memset(dst, 0, size_t(p.pad_left) * sizeof(float));
    std::memset(dst + p.pad_left + p.in_w, 0, size_t(p.pad_right) * sizeof(float));
    const int64_t* xs = p.x.strides;
    const int64_t base = n * xs[0] + c * xs[1] + ih * xs[2];
    float* out = dst + p.pad_left;
    if (DT == TOPS_DTYPE_F32 && xs[3] == 1) {
        std::memcpy(out, static_cast<const float*>(x) + base, size_t(p.in_w) * sizeof(float));
    } else {
        for (int64_t iw = 0; iw < p.in_w; ++iw) out[iw] = load_t<DT>(x, base + iw * xs[3]);
    }
}

template <tops_dtype_t DT>
void stage_input_rows_t(const ConvParams& p, const ConvStaging& s, const void* x, float* xp, int64_t begin,
                        int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
        if (s.nchw) stage_row_nchw<DT>(p, s, x, xp, r / s.hp / p.in_c, r / s.hp % p.in_c, r % s.hp);
        else stage_row<DT>(p, s, x, xp, r / s.hp, r % s.hp);
    }
}

}  // namespace

ConvStaging conv_staging(const ConvParams& p, bool allow_nchw) {
    ConvStaging s;
    s.nchw = allow_nchw && !conv_is_dense_nhwc(p.x) && p.x.strides[3] == 1 && p.x.strides[1] != 1;
    const bool no_pad = p.pad_top == 0 && p.pad_bottom == 0 && p.pad_left == 0 && p.pad_right == 0;
    s.in_place = p.x.dtype == TOPS_DTYPE_F32 && no_pad && (s.nchw ? conv_is_dense_nchw(p.x) : conv_is_dense_nhwc(p.x));
    s.hp = p.in_h + p.pad_top + p.pad_bottom;
    s.wp = p.in_w + p.pad_left + p.pad_right;
    // In place, hp / wp equal x's H / W: the dense strides of x are these
    // (size-1 dims of x may carry any stride; they are never stepped).
    if (s.nchw) {
        s.xp_pix = 1;
        s.xp_row = s.wp;
        s.xp_chan = s.hp * s.wp;
        s.xp_img = p.in_c * s.xp_chan;
    } else {
        s.xp_chan = 1;
        s.xp_pix = p.in_c;
        s.xp_row = s.wp * p.in_c;
        s.xp_img = s.hp * s.xp_row;
    }
    s.floats = s.in_place ? 0 : size_t(p.batch * s.xp_img);
    return s;
}

int64_t conv_stage_input_rows(const ConvParams& p, const ConvStaging& s) {
    return s.in_place ? 0 : p.batch * s.hp * (s.nchw ? p.in_c : 1);
}

void conv_stage_input_range(const ConvParams& p, const ConvStaging& s, const void* x, float* xp, int64_t begin,
                            int64_t end) {
    switch (p.x.dtype) {
        case TOPS_DTYPE_F16: stage_input_rows_t<TOPS_DTYPE_F16>(p, s, x, xp, begin, end); break;
        case TOPS_DTYPE_BF16: stage_input_rows_t<TOPS_DTYPE_BF16>(p, s, x, xp, begin, end); break;
        default: stage_input_rows_t<TOPS_DTYPE_F32>(p, s, x, xp, begin, end); break;
    }
}

void conv_stage_input(const ConvParams& p, const ConvStaging& s, const void* x, float* xp, int threads) {
    const int64_t rows = conv_stage_input_rows(p, s);
    const int64_t row_elems = s.nchw ? s.wp : s.xp_row;
    parallel_for(pick_threads(threads, rows * row_elems, kGrainElems), rows,
                 [&](int64_t begin, int64_t end) { conv_stage_input_range(p, s, x, xp, begin, end); });
}

void conv_stage_filter_rows_range(const ConvParams& p, const void* w, float* dst, int64_t begin, int64_t end) {
    const int64_t cg = p.in_c_per_group(), r = p.kernel_h, s = p.kernel_w, kdim = r * s * cg;
    const int64_t* ws = p.w.strides;
    const tops_dtype_t dt = p.w.dtype;
    for (int64_t k = begin; k < end; ++k) {
        float* row = dst + k * kdim;
        for (int64_t ri = 0; ri < r; ++ri) {
            for (int64_t si = 0; si < s; ++si) {
                for (int64_t c = 0; c < cg; ++c) {
                    row[(ri * s + si) * cg + c] = load_elem(dt, w, k * ws[0] + c * ws[1] + ri * ws[2] + si * ws[3]);
                }
            }
        }
    }
}

bool conv_filter_packs_by_transpose(const ConvParams& p, int nr) {
    return p.w.dtype == TOPS_DTYPE_F32 && conv_is_dense_nhwc(p.w) && p.out_c_per_group() % nr == 0;
}

// Packing units.
//  - A dense f32 KRSC filter with whole slivers is a transpose of (NR, kdim)
//    panels with rows kdim apart: the transpose op's tile kernel (in-register
//    square tiles, full-vector loads and stores). A unit is kPackFilters
//    filter rows of one sliver over a block of reduction steps: whole rows,
//    cut into blocks (of at least kMinPackSteps) only as far as it takes to
//    give every thread of the team a unit. On the 16-core Xeon with cold
//    buffers (a thread's share of the 28x28 layer's 590 KB filter comes
//    from memory), a unit of 128 steps across all 32 rows of a sliver took
//    17-20 us for 16 KiB and whole 16-row units 62-67 us for 74 KB, with half
//    the threads idle at the barrier. An element loop costs about two cycles
//    per element: 0.1 ms for a 128x128x3x3 filter on one core, against 0.04
//    ms for all of oneDNN's convolution of a 2x2 image with it.
//  - Otherwise element by element, in units of kPackSteps reduction steps
//    of one sliver: each filter's run of steps read in order into the unit's
//    16 KiB of output (L1 resident across the NR filters).
constexpr int64_t kPackFilters = 16;
constexpr int64_t kMinPackSteps = 64;
constexpr int64_t kPackStepAlign = 16;  // a register tile's rows
constexpr int64_t kPackSteps = 128;

ConvFilterPacking conv_filter_packing(const ConvParams& p, int nr, int threads) {
    ConvFilterPacking k;
    k.nr = nr;
    k.by_transpose = conv_filter_packs_by_transpose(p, nr);
    const int64_t kdim = p.kernel_h * p.kernel_w * p.in_c_per_group();
    const int64_t slivers = p.groups * ceil_div(p.out_c_per_group(), int64_t(nr));
    if (!k.by_transpose) {
        k.steps = kPackSteps;
        k.units = slivers * ceil_div(kdim, k.steps);
        return k;
    }
    const int64_t whole_row_units = slivers * ceil_div(nr, kPackFilters);
    const int64_t splits = std::max<int64_t>(
        1, std::min(ceil_div(std::max(threads, 1), whole_row_units), kdim / kMinPackSteps));
    k.steps = std::min(kdim, round_up(ceil_div(kdim, splits), kPackStepAlign));
    k.units = whole_row_units * ceil_div(kdim, k.steps);
    return k;
}

// Sliver t (filters [j0, j0 + NR) of its group) is the transpose of their
// (NR, kdim) rows into (kdim, NR), zero past K/G.
void conv_pack_filter_slivers_range(const ConvParams& p, const void* w, const ConvFilterPacking& k, float* dst,
                                    int64_t begin, int64_t end) {
    const int nr = k.nr;
    const int64_t cg = p.in_c_per_group(), kg = p.out_c_per_group(), s = p.kernel_w;
    const int64_t kdim = p.kernel_h * s * cg, slivers = ceil_div(kg, int64_t(nr)), blocks = ceil_div(kdim, k.steps);
    if (k.by_transpose) {
        TransposeKernelArgs a;
        a.x = static_cast<const char*>(w);
        a.y = reinterpret_cast<char*>(dst);
        a.elem_size = sizeof(float);
        a.outer_rank = 1;
        a.outer_dims[0] = p.groups * slivers;
        a.outer_xs[0] = a.outer_ys[0] = nr * kdim * a.elem_size;
        a.rows = kdim;  // panel rows: reduction steps, contiguous in w
        a.x_row = a.elem_size;
        a.y_row = nr * a.elem_size;
        a.cols = nr;  // panel columns: filters, contiguous in the sliver
        a.x_col = kdim * a.elem_size;
        a.y_col = a.elem_size;
        a.block_rows = k.steps;
        a.block_cols = std::min<int64_t>(nr, kPackFilters);
        a.row_group = a.rows;
        a.unit_begin = begin;
        a.unit_end = end;
        isa_dispatch(TransposeTileKernel{}, a);
        return;
    }
    const int64_t* ws = p.w.strides;
    const tops_dtype_t dt = p.w.dtype;
    int64_t src_off[kPackSteps];  // filter offset of each step of the block
    for (int64_t u = begin; u < end; ++u) {
        const int64_t t = u / blocks, kk0 = u % blocks * k.steps, steps = std::min(k.steps, kdim - kk0);
        const int64_t g = t / slivers, j0 = t % slivers * nr;
        const int64_t live = std::min<int64_t>(nr, kg - j0);
        for (int64_t i = 0; i < steps; ++i) {
            const int64_t kk = kk0 + i, c = kk % cg, tap = kk / cg;
            src_off[i] = (g * kg + j0) * ws[0] + c * ws[1] + tap / s * ws[2] + tap % s * ws[3];
        }
        float* out = dst + (t * kdim + kk0) * nr;  // (steps, NR)
        for (int64_t j = 0; j < nr; ++j) {
            if (j >= live) {
                for (int64_t i = 0; i < steps; ++i) out[i * nr + j] = 0.0f;
            } else if (dt == TOPS_DTYPE_F32) {
                const float* wf = static_cast<const float*>(w) + j * ws[0];
                for (int64_t i = 0; i < steps; ++i) out[i * nr + j] = wf[src_off[i]];
            } else {
                for (int64_t i = 0; i < steps; ++i) out[i * nr + j] = load_elem(dt, w, j * ws[0] + src_off[i]);
            }
        }
    }
}

void conv_stage_filter_taps(const ConvParams& p, const void* w, float* dst, int threads) {
    const int64_t taps = p.kernel_h * p.kernel_w;
    const int64_t* ws = p.w.strides;
    const tops_dtype_t dt = p.w.dtype;
    parallel_for(pick_threads(threads, taps * p.out_c, kGrainElems), taps, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            const int64_t src = (t / p.kernel_w) * ws[2] + (t % p.kernel_w) * ws[3];
            for (int64_t k = 0; k < p.out_c; ++k) dst[t * p.out_c + k] = load_elem(dt, w, src + k * ws[0]);
        }
    });
}

}  // namespace tops::cpu
