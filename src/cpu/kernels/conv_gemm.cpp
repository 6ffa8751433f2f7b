// Implicit-GEMM convolution (conv2d_gemm_<orientation>_<dtype>_<mr>x<nr>_<isa>).
//
// Strategy: per image n and group g the convolution is the GEMM
// D = A @ B with kdim = R * S * C/G reduction steps. The input is staged by
// the planner's execute (src/cpu/conv.cpp) as a zero-padded f32 tensor xp
// (NHWC, or NCHW for a channel-strided x: a row copy, never a transpose), so
// every tap of every output pixel lies inside xp and the reduction step kk of
// the pixel whose window starts at offset o reads xp[o + koff[kk]] (koff
// folds r, s and c in the reduction order). The micro-kernel is the
// GEMM's: an MR x NR register tile (NR = two SIMD vectors), per step two B
// vectors loaded from a packed (kdim, NR) sliver and each A element broadcast
// into two FMAs. What differs is where A comes from: MR row pointers, read in
// place, so nothing of A is packed.
//   pixels_by_channels: A rows are output pixels, read from xp through koff
//     (indirect convolution: no im2col at all); B is the filter packed into
//     channel slivers once per execute. Used when the filter is the smaller
//     operand (many pixels: the early ResNet layers, the stem).
//   channels_by_pixels: A rows are filter rows (contiguous in the reduction
//     order); B is a blocked im2col: each task packs at most cols_block
//     pixels x kdim into its thread's buffer (sized to stay in L2) and runs
//     every filter row against it. Used when the pixels are fewer than the
//     filters (the late layers at small batch), so only the small operand is
//     ever packed.
// The whole reduction runs in registers (no K slabs): the epilogue adds bias
// and residual, applies the activation and converts to y's dtype straight
// from the accumulators, with vector stores where a tile row is contiguous
// in y (NHWC for pixels_by_channels, NCHW for channels_by_pixels) and a
// scalar store otherwise (the vector store is inlined, so the accumulators
// never leave registers; pixels_by_channels prefetches the tile's rows of y
// while the taps run, since y is written once and its lines come from
// memory). A call runs tasks (n, g, row block, col block)
// [begin, end) of conv_gemm_task_count; the plan splits them across the team
// that staged the operands, statically or in units claimed as threads come
// (src/cpu/conv.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/int_math.hpp"
#include "cpu/conv_kernels.hpp"
#include "cpu/isa_arch.hpp"
#include "cpu/kernels/activation_simd.hpp"
#include "cpu/kernels/gemm_tile.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {
namespace {

// acc (MR, NR) = sum over kk of A[i][kk] * b (kdim, NR) packed, where A row i
// is rows[i][koff[kk]] (kIndexed) or rows[i][kk].
template <bool kIndexed>
TOPS_MICRO_INLINE void micro_kernel(const float* const* rows, const int64_t* __restrict koff, int64_t kdim,
                                   const float* __restrict b, Tile& acc) {
    const float* r[kMr];
#pragma GCC unroll 32
    for (int i = 0; i < kMr; ++i) {
        r[i] = rows[i];
#pragma GCC unroll 2
        for (int v = 0; v < kNv; ++v) acc[i][v] = VecF(0.0f);
    }
#pragma GCC unroll 2
    for (int64_t p = 0; p < kdim; ++p) {
        const int64_t o = kIndexed ? koff[p] : p;
        const VecF b0 = VecF::load_aligned(b);
        const VecF b1 = VecF::load_aligned(b + kLanes);
#pragma GCC unroll 32
        for (int i = 0; i < kMr; ++i) {
            const VecF ai(r[i][o]);
            acc[i][0] = xsimd::fma(ai, b0, acc[i][0]);
            acc[i][1] = xsimd::fma(ai, b1, acc[i][1]);
        }
        b += kNr;
    }
}

// The tile's rows of y (row i at y + row[i]), prefetched while the taps run
// (kTilePrefetches of them, spread over the taps), so that the epilogue's
// stores find their lines: y is written once, so every line of it comes from
// memory (on one Zen 4 core the batch-8 NHWC stem spent 9.5% of its kernel
// time in the tile store, its stores waiting on those misses).
template <class T>
struct YPrefetch {
    const T* y = nullptr;  // the tile's first column
    const int64_t* row = nullptr;
};

// The same over taps: A row i is rows[i][tap_off[t] + c] for each tap t and
// c < run (a run of channels contiguous in xp), so no offset is loaded per
// step. ypf: the tile's rows of y (none where ypf.y is nullptr).
template <class T>
TOPS_MICRO_INLINE void micro_kernel_taps(const float* const* rows, const int64_t* __restrict tap_off, int64_t taps,
                                        int64_t run, const float* __restrict b, Tile& acc, YPrefetch<T> ypf) {
#pragma GCC unroll 32
    for (int i = 0; i < kMr; ++i) {
#pragma GCC unroll 2
        for (int v = 0; v < kNv; ++v) acc[i][v] = VecF(0.0f);
    }
    for (int64_t t = 0; t < taps; ++t) {
        if (ypf.y) {
            for (int64_t p = t * kTilePrefetches / taps; p < (t + 1) * kTilePrefetches / taps; ++p) {
                prefetch_row_end<1>(ypf.y + ypf.row[p >> 1], p);
            }
        }
        const float* r[kMr];
#pragma GCC unroll 32
        for (int i = 0; i < kMr; ++i) r[i] = rows[i] + tap_off[t];
#pragma GCC unroll 2
        for (int64_t c = 0; c < run; ++c) {
            const VecF b0 = VecF::load_aligned(b);
            const VecF b1 = VecF::load_aligned(b + kLanes);
#pragma GCC unroll 32
            for (int i = 0; i < kMr; ++i) {
                const VecF ai(r[i][c]);
                acc[i][0] = xsimd::fma(ai, b0, acc[i][0]);
                acc[i][1] = xsimd::fma(ai, b1, acc[i][1]);
            }
            b += kNr;
        }
    }
}

// Where the tile's rows and columns land: y / residual offsets and the
// output channel of each row or column (bias).
struct TileMap {
    int64_t y_row[kMr], y_col[kNr];
    int64_t r_row[kMr], r_col[kNr];
    int64_t chan_row[kMr], chan_col[kNr];  // -1 where the channel is on the other axis
    int mrows = 0, ncols = 0;
    bool bias_on_cols = false;
    bool vec_cols = false;  // whole rows of vector stores (set_vec_cols, once the columns are known)
};

bool contiguous(const int64_t* off, int n) {
    for (int j = 1; j < n; ++j) {
        if (off[j] != off[0] + j) return false;
    }
    return true;
}

// Whether tile rows go out as vectors: all NR columns, contiguous in y and
// the residual, bias along them unit-strided. Set once per column block.
void set_vec_cols(const ConvGemmArgs& g, TileMap& t) {
    t.vec_cols = t.ncols == kNr && contiguous(t.y_col, kNr) && (!g.res || contiguous(t.r_col, kNr)) &&
                 (!g.bias || !t.bias_on_cols || g.bias_s == 1);
}

// Edge tiles and strided rows of y: through a stack tile, one element at a
// time (out of line: the full-tile path below is inlined into the task loops,
// so the accumulators go from registers to y without a round trip through memory).
template <tops_dtype_t OUT>
__attribute__((noinline)) void store_tile_scalar(const Tile& acc, const ConvGemmArgs& g, const TileMap& t) {
    using TO = storage_t<OUT>;
    TO* y = static_cast<TO*>(g.y);
    const TO* res = static_cast<const TO*>(g.res);
    const TO* bias = static_cast<const TO*>(g.bias);
    alignas(64) float tmp[kMr][kNr];
    for (int i = 0; i < kMr; ++i) {
        for (int v = 0; v < kNv; ++v) acc[i][v].store_aligned(&tmp[i][v * kLanes]);
    }
    for (int i = 0; i < t.mrows; ++i) {
        for (int j = 0; j < t.ncols; ++j) {
            float x = tmp[i][j];
            if (bias) x += to_float<OUT>(bias[(t.bias_on_cols ? t.chan_col[j] : t.chan_row[i]) * g.bias_s]);
            if (res) x += to_float<OUT>(res[t.r_row[i] + t.r_col[j]]);
            y[t.y_row[i] + t.y_col[j]] = from_float<OUT>(activate_scalar(g.act, x));
        }
    }
}

template <tops_dtype_t OUT>
TOPS_MICRO_INLINE void store_tile(const Tile& acc, const ConvGemmArgs& g, const TileMap& t) {
    if (!t.vec_cols) {
        store_tile_scalar<OUT>(acc, g, t);
        return;
    }
    using TO = storage_t<OUT>;
    TO* y = static_cast<TO*>(g.y);
    const TO* res = static_cast<const TO*>(g.res);
    const TO* bias = static_cast<const TO*>(g.bias);
    VecF bcol[kNv];
    for (int v = 0; v < kNv; ++v) {
        bcol[v] = bias && t.bias_on_cols ? load<OUT>(bias + t.chan_col[0] + v * kLanes) : VecF(0.0f);
    }
#pragma GCC unroll 32
    for (int i = 0; i < kMr; ++i) {  // a constant bound: acc stays in registers
        if (i == t.mrows) break;
        const VecF brow(bias && !t.bias_on_cols ? to_float<OUT>(bias[t.chan_row[i] * g.bias_s]) : 0.0f);
#pragma GCC unroll 2
        for (int v = 0; v < kNv; ++v) {
            VecF x = acc[i][v] + bcol[v] + brow;
            if (res) x += load<OUT>(res + t.r_row[i] + t.r_col[0] + v * kLanes);
            store<OUT>(y + t.y_row[i] + t.y_col[0] + v * kLanes, activate(g.act, x));
        }
    }
}

// Window origin of output pixel (p, q) of image n in xp, group g's channels.
const float* pixel_origin(const ConvGemmArgs& g, int64_t n, int64_t grp, int64_t p, int64_t q) {
    return g.xp + n * g.xp_img + p * g.stride_h * g.xp_row + q * g.stride_w * g.xp_pix + grp * g.cg * g.xp_chan;
}
const float* pixel_origin(const ConvGemmArgs& g, int64_t n, int64_t grp, int64_t m) {
    return pixel_origin(g, n, grp, m / g.out_w, m % g.out_w);
}

// One task of pixels_by_channels: pixels [m0, m1) x channels [j0, j1) of (n, grp).
template <tops_dtype_t OUT>
void task_pixels_by_channels(const ConvGemmArgs& g, int64_t n, int64_t grp, int64_t m0, int64_t m1, int64_t j0,
                             int64_t j1) {
    const int64_t slivers = ceil_div(g.kg, kNr);
    using TO = storage_t<OUT>;
    const TO* y = static_cast<const TO*>(g.y);
    TileMap t;
    t.bias_on_cols = true;
    for (int i = 0; i < kMr; ++i) t.chan_row[i] = -1;
    for (int64_t j = j0; j < j1; j += kNr) {
        const float* b = g.wpack + (grp * slivers + j / kNr) * g.kdim * kNr;
        t.ncols = int(std::min<int64_t>(kNr, j1 - j));
        for (int c = 0; c < kNr; ++c) {
            const int64_t k = grp * g.kg + j + std::min(c, t.ncols - 1);
            t.chan_col[c] = k;
            t.y_col[c] = k * g.ys[1];
            t.r_col[c] = k * g.rs[1];
        }
        set_vec_cols(g, t);
        for (int64_t m = m0; m < m1; m += kMr) {
            t.mrows = int(std::min<int64_t>(kMr, m1 - m));
            const float* rows[kMr];
            // Pixel (p, q) of row i, stepped along the output rows (one
            // division per tile); rows past mrows repeat the last pixel.
            int64_t p = m / g.out_w, q = m % g.out_w;
            for (int i = 0; i < kMr; ++i) {
                rows[i] = pixel_origin(g, n, grp, p, q);
                t.y_row[i] = n * g.ys[0] + p * g.ys[2] + q * g.ys[3];
                t.r_row[i] = n * g.rs[0] + p * g.rs[2] + q * g.rs[3];
                if (i + 1 < t.mrows && ++q == g.out_w) {
                    q = 0;
                    ++p;
                }
            }
            // Only whole vector rows of y are prefetched (else y is nullptr: none).
            const YPrefetch<TO> ypf{t.vec_cols ? y + t.y_col[0] : nullptr, t.y_row};
            Tile acc;
            if (g.taps > 0) micro_kernel_taps(rows, g.tap_off, g.taps, g.run, b, acc, ypf);
            else micro_kernel<true>(rows, g.koff, g.kdim, b, acc);
            store_tile<OUT>(acc, g, t);
        }
    }
}

// Packs im2col columns [m0, m1) of (n, grp) into slivers (kdim, NR); columns
// past m1 repeat the last pixel (computed, never stored).
void pack_im2col(const ConvGemmArgs& g, int64_t n, int64_t grp, int64_t m0, int64_t m1, float* dst) {
    for (int64_t m = m0; m < m1; m += kNr) {
        const float* base[kNr];
        for (int j = 0; j < kNr; ++j) base[j] = pixel_origin(g, n, grp, std::min(m + j, m1 - 1));
        bool contiguous_pixels = true;  // NCHW staging, stride 1, one output row
        for (int j = 1; j < kNr; ++j) contiguous_pixels = contiguous_pixels && base[j] == base[0] + j;
        if (contiguous_pixels) {
            for (int64_t kk = 0; kk < g.kdim; ++kk) {
                const float* src = base[0] + g.koff[kk];
#pragma GCC unroll 2
                for (int v = 0; v < kNv; ++v) {
                    VecF::load_unaligned(src + v * kLanes).store_aligned(dst + kk * kNr + v * kLanes);
                }
            }
        } else {
            for (int64_t kk = 0; kk < g.kdim; ++kk) {
                const int64_t o = g.koff[kk];
#pragma GCC unroll 32
                for (int j = 0; j < kNr; ++j) dst[kk * kNr + j] = base[j][o];
            }
        }
        dst += g.kdim * kNr;
    }
}

// One task of channels_by_pixels: channels [k0, k1) x pixels [m0, m1) of
// (n, grp), with the pixels' im2col block packed in buf (when not already).
template <tops_dtype_t OUT>
void task_channels_by_pixels(const ConvGemmArgs& g, int64_t n, int64_t grp, int64_t k0, int64_t k1, int64_t m0,
                             int64_t m1, const float* buf) {
    TileMap t;
    t.bias_on_cols = false;
    for (int c = 0; c < kNr; ++c) t.chan_col[c] = -1;
    for (int64_t m = m0; m < m1; m += kNr) {
        const float* b = buf + (m - m0) * g.kdim;
        t.ncols = int(std::min<int64_t>(kNr, m1 - m));
        for (int c = 0; c < kNr; ++c) {
            const int64_t mc = m + std::min(c, t.ncols - 1);
            const int64_t p = mc / g.out_w, q = mc % g.out_w;
            t.y_col[c] = p * g.ys[2] + q * g.ys[3];
            t.r_col[c] = p * g.rs[2] + q * g.rs[3];
        }
        set_vec_cols(g, t);
        for (int64_t k = k0; k < k1; k += kMr) {
            t.mrows = int(std::min<int64_t>(kMr, k1 - k));
            const float* rows[kMr];
            for (int i = 0; i < kMr; ++i) {
                const int64_t kc = grp * g.kg + k + std::min(i, t.mrows - 1);
                rows[i] = g.wrows + kc * g.w_row;
                t.chan_row[i] = kc;
                t.y_row[i] = n * g.ys[0] + kc * g.ys[1];
                t.r_row[i] = n * g.rs[0] + kc * g.rs[1];
            }
            Tile acc;
            micro_kernel<false>(rows, nullptr, g.kdim, b, acc);
            store_tile<OUT>(acc, g, t);
        }
    }
}

template <tops_dtype_t OUT>
void run_tasks(const ConvGemmArgs& g, int64_t begin, int64_t end, int tid) {
    const int64_t pixels = g.out_h * g.out_w;
    if (g.orientation == ConvGemmOrientation::pixels_by_channels) {
        const int64_t rblocks = ceil_div(pixels, g.rows_block), cblocks = ceil_div(g.kg, g.cols_block);
        // Pixel blocks fastest: a thread's consecutive tasks share a channel
        // block, whose packed filter slivers then stay in its L2 rather
        // than each task fetching other slivers from L3.
        for (int64_t task = begin; task < end; ++task) {
            const int64_t rb = task % rblocks, cb = task / rblocks % cblocks, ng = task / rblocks / cblocks;
            const int64_t m0 = rb * g.rows_block, j0 = cb * g.cols_block;
            task_pixels_by_channels<OUT>(g, ng / g.groups, ng % g.groups, m0, std::min(pixels, m0 + g.rows_block), j0,
                                         std::min(g.kg, j0 + g.cols_block));
        }
        return;
    }
    // channels_by_pixels: consecutive tasks share a pixel block, packed once.
    const int64_t rblocks = ceil_div(g.kg, g.rows_block), cblocks = ceil_div(pixels, g.cols_block);
    float* buf = g.col_bufs + size_t(tid) * g.col_buf_floats;
    int64_t packed = -1;  // (ng, cb) held in buf
    for (int64_t task = begin; task < end; ++task) {
        const int64_t rb = task % rblocks, cb = task / rblocks % cblocks, ng = task / rblocks / cblocks;
        const int64_t n = ng / g.groups, grp = ng % g.groups;
        const int64_t m0 = cb * g.cols_block, m1 = std::min(pixels, m0 + g.cols_block);
        if (packed != task / rblocks) {
            pack_im2col(g, n, grp, m0, m1, buf);
            packed = task / rblocks;
        }
        const int64_t k0 = rb * g.rows_block;
        task_channels_by_pixels<OUT>(g, n, grp, k0, std::min(g.kg, k0 + g.rows_block), m0, m1, buf);
    }
}

}  // namespace

}  // namespace TOPS_ISA_NS

template <tops_dtype_t OUT>
template <class A>
void ConvGemmKernel<OUT>::operator()(A, const ConvGemmArgs& g, int64_t begin, int64_t end, int tid) const {
    TOPS_ISA_NS::run_tasks<OUT>(g, begin, end, tid);
}

template void ConvGemmKernel<TOPS_DTYPE_F32>::operator()<Arch>(Arch, const ConvGemmArgs&, int64_t, int64_t, int) const;
template void ConvGemmKernel<TOPS_DTYPE_F16>::operator()<Arch>(Arch, const ConvGemmArgs&, int64_t, int64_t, int) const;
template void ConvGemmKernel<TOPS_DTYPE_BF16>::operator()<Arch>(Arch, const ConvGemmArgs&, int64_t, int64_t, int) const;

}  // namespace tops::cpu
