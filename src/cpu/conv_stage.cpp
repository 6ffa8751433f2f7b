// Staging for the CPU implicit-GEMM convolution (src/cpu/kernels/conv_gemm.cpp):
//   - the input x (any strides, any float dtype) -> zero-padded f32 NHWC xp,
//     one (n, padded row) per work item; a dense NHWC f32 source row is one
//     contiguous copy, any other layout an element gather;
//   - the filter w -> f32 rows (K, kdim) in the (r, s, c) reduction order;
//   - the filter w -> NR-wide channel slivers (G, slivers, kdim, NR), for
//     the pixels_by_channels orientation, zero past K/G.
// Each is one pass over its tensor, linear in its size (the GEMM itself is
// the cubic part); all run in parallel over independent rows.
#include <cstring>

#include "common/half.hpp"
#include "cpu/conv_stage.hpp"
#include "cpu/parallel.hpp"

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
void stage_input_t(const ConvParams& p, const ConvStaging& s, const void* x, float* xp, int threads) {
    if (s.nchw) {
        const int64_t rows = p.batch * p.in_c * s.hp;
        parallel_for(pick_threads(threads, rows * s.wp, kGrainElems), rows, [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                stage_row_nchw<DT>(p, s, x, xp, r / s.hp / p.in_c, r / s.hp % p.in_c, r % s.hp);
            }
        });
        return;
    }
    const int64_t rows = p.batch * s.hp;
    parallel_for(pick_threads(threads, rows * s.xp_row, kGrainElems), rows, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) stage_row<DT>(p, s, x, xp, r / s.hp, r % s.hp);
    });
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

void conv_stage_input(const ConvParams& p, const ConvStaging& s, const void* x, float* xp, int threads) {
    switch (p.x.dtype) {
        case TOPS_DTYPE_F16: stage_input_t<TOPS_DTYPE_F16>(p, s, x, xp, threads); break;
        case TOPS_DTYPE_BF16: stage_input_t<TOPS_DTYPE_BF16>(p, s, x, xp, threads); break;
        default: stage_input_t<TOPS_DTYPE_F32>(p, s, x, xp, threads); break;
    }
}

void conv_stage_filter_rows(const ConvParams& p, const void* w, float* dst, int threads) {
    const int64_t cg = p.in_c_per_group(), r = p.kernel_h, s = p.kernel_w, kdim = r * s * cg;
    const int64_t* ws = p.w.strides;
    const tops_dtype_t dt = p.w.dtype;
    parallel_for(pick_threads(threads, p.out_c * kdim, kGrainElems), p.out_c, [&](int64_t begin, int64_t end) {
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
    });
}

void conv_pack_filter_slivers(const ConvParams& p, const void* w, int nr, float* dst, int threads) {
    const int64_t cg = p.in_c_per_group(), kg = p.out_c_per_group(), r = p.kernel_h, s = p.kernel_w;
    const int64_t kdim = r * s * cg, slivers = (kg + nr - 1) / nr;
    const int64_t* ws = p.w.strides;
    const tops_dtype_t dt = p.w.dtype;
    const int64_t total = p.groups * slivers;
    parallel_for(pick_threads(threads, total * kdim * nr, kGrainElems), total, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
            const int64_t g = t / slivers, j0 = t % slivers * nr;
            float* out = dst + t * kdim * nr;  // (kdim, NR)
            for (int64_t j = 0; j < nr; ++j) {
                if (j0 + j >= kg) {
                    for (int64_t kk = 0; kk < kdim; ++kk) out[kk * nr + j] = 0.0f;
                    continue;
                }
                const int64_t k = g * kg + j0 + j;
                for (int64_t ri = 0; ri < r; ++ri) {
                    for (int64_t si = 0; si < s; ++si) {
                        const int64_t kk0 = (ri * s + si) * cg;
                        const int64_t src = k * ws[0] + ri * ws[2] + si * ws[3];
                        if (dt == TOPS_DTYPE_F32) {
                            const float* wf = static_cast<const float*>(w) + src;
                            for (int64_t c = 0; c < cg; ++c) out[(kk0 + c) * nr + j] = wf[c * ws[1]];
                        } else {
                            for (int64_t c = 0; c < cg; ++c) out[(kk0 + c) * nr + j] = load_elem(dt, w, src + c * ws[1]);
                        }
                    }
                }
            }
        }
    });
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
