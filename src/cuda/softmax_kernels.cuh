// Softmax / log-softmax on CUDA for f32, f16 and bf16 storage (f32 math).
//
// Strategy (as the fastest known softmax kernels do, chosen by row length):
// - warp rows: a group of GROUP <= 32 lanes owns one row and keeps it in
//   registers (ITERS vectors of VEC elements per lane), so the row is read
//   once and reductions are shuffles only. Used up to 32 values per lane
//   (1024 elements with 16-byte vectors, 256 without). Small rows use
//   GROUP < 32 so that a warp works on several rows at once instead of
//   idling lanes. Dense rows are the same strategy for the common case alone
//   (softmax with a positive scale, no mask or lengths, rows at one stride):
//   exponents kept in registers, no per-row case tests, more warps per SM.
// - block rows: one block per row; the row is copied to shared memory as it
//   is read (raw dtype, so f16 rows cost half) and normalized from there, so
//   x is read from device memory once. Rows longer than a block's opt-in
//   shared memory (about 56 Ki f32 / 113 Ki f16 elements) are split over a
//   cluster of up to 8 blocks (sm_90), each caching its slice, which combine
//   their statistics through distributed shared memory; without clusters
//   (sm_80), or beyond 8 slices, the uncached tail is read a second time.
// - strided rows: when the softmax axis is not the fastest-moving dim of x,
//   one thread owns a row and walks it with its stride; neighbouring threads
//   touch neighbouring addresses, so accesses stay coalesced.
// All row kernels compute online (max, sum) statistics in the exp2 domain
// (x * scale * log2 e), rescaled once per vector, which needs one pass for
// the statistics; exponents are (x - max) * scale * log2 e (sign of the scale
// applied to x first), so inputs of large magnitude keep their precision.
// Masked and
// out-of-length positions are -inf in that domain and write 0 (-inf for log);
// a row without a kept position writes only those values, never NaN. Lengths
// limit the reads to the valid prefix. Every kernel reads a row completely
// before writing it, so y == x (in place) is safe.
//
// 16-byte vectors are used when the row, its start and every row stride are
// aligned for them (checked at plan time for strides, at execute time for
// pointers); otherwise the same strategies run with VEC = 1.
// Vectorized kernels come in an UNMASKED form (no mask, no lengths) without
// any per-element tests: with them, the general form spilled registers at
// the occupancy the short-row kernels need, and f16 rows (twice the elements
// per byte) were bound by instruction issue.
#pragma once

#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cuda/common/device.cuh"
#include "cuda/ops.hpp"

// Included by softmax.cu only (the one instantiation list).
namespace tops::cuda::softmax_impl {

namespace cg = cooperative_groups;

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Threads of a warp-rows block: 4 warps per block keeps blocks small for
// good tail balance over 132 SMs.
constexpr int kWarpRowsThreads = 128;
// Largest ITERS of the warp-rows kernel: 8 vectors per lane, and at most 32
// f32 values per lane (f16 rows of 64 values per lane spilled 250-450 bytes
// at 64 registers; such rows take the block kernel).
constexpr int kWarpRowsMaxIters = 8;
constexpr int kWarpRowsMaxValues = 32;
// Rows of 17-32 vectors: 8 lanes x 4 vectors per row instead of 32 lanes x 1
// vector x 2 rows, where a lane then holds at most 16 values (f32): fewer
// shuffles per element (65536x128 f32: 0.0270 ms vs 0.0287 ms, H100; f16
// rows of 128, 16 vectors, measured no gain from 8 or 4 lanes).
constexpr int kShortRowVecs = 16;
constexpr int kShortRowLanes = 8;
constexpr int kShortRowIters = 4;
constexpr int kShortRowMaxValues = 16;
// Vectors loaded back to back per thread in the block kernels before they
// are consumed: 4 x 16 bytes in flight per thread.
constexpr int kBlockUnroll = 4;
constexpr int kBlockMaxThreads = 1024;
// Block rows come in two register budgets: blocks of up to 256 threads (rows
// up to 8 Ki f16 / 4 Ki f32 elements) at 5 blocks per SM (48 registers), and
// up to 1024 threads at 1 block per SM (64 registers). One budget of 64
// registers left 128-thread blocks at 50% occupancy (8192x4096 f16, ncu); at
// 6 blocks per SM (40 registers) the f16 and bf16 kernels spilled 32-160 bytes.
constexpr int kBlockSmallThreads = 256;
template <int MAX_THREADS>
constexpr int block_rows_min_blocks() {
    return MAX_THREADS <= kBlockSmallThreads ? 5 : 1;
}
constexpr int kBlockMinThreads = 128;
// Target vectors per thread in the block kernels (two unrolled batches).
constexpr int kBlockVecsPerThread = 2 * kBlockUnroll;
constexpr int kStridedThreads = 256;
constexpr int64_t kMaxGrid = int64_t(1) << 30;

// Row r (all non-axis indices, row-major over the collapsed outer dims) to
// element offsets of x, y, mask and lengths.
struct RowIndexer {
    int ndim = 0;  // collapsed outer dims, outermost first
    FastDivmod div[kMaxRank];
    int64_t xs[kMaxRank] = {};
    int64_t ys[kMaxRank] = {};
    int64_t ms[kMaxRank] = {};
    int64_t ls[kMaxRank] = {};
};

struct RowOffsets {
    int64_t x, y, m, l;
};

// A rolled loop on purpose (see transpose.cu: unrolled index walks stall on
// instruction fetch).
__device__ __forceinline__ RowOffsets row_offsets(const RowIndexer& ix, int64_t row) {
    RowOffsets o{0, 0, 0, 0};
    uint64_t r = uint64_t(row);
#pragma unroll 1
    for (int i = ix.ndim - 1; i >= 1; --i) {
        uint64_t q, rem;
        ix.div[i].divmod(r, &q, &rem);
        o.x += int64_t(rem) * ix.xs[i];
        o.y += int64_t(rem) * ix.ys[i];
        o.m += int64_t(rem) * ix.ms[i];
        o.l += int64_t(rem) * ix.ls[i];
        r = q;
    }
    if (ix.ndim > 0) {
        o.x += int64_t(r) * ix.xs[0];
        o.y += int64_t(r) * ix.ys[0];
        o.m += int64_t(r) * ix.ms[0];
        o.l += int64_t(r) * ix.ls[0];
    }
    return o;
}

// The one parameter struct of every softmax kernel (passed by value).
struct SoftmaxRowParams {
    const void* x = nullptr;
    void* y = nullptr;
    const uint8_t* mask = nullptr;    // nullptr: no mask
    const int32_t* lengths = nullptr;  // nullptr: every row has n valid entries
    int64_t rows = 0;
    int64_t n = 0;           // softmax axis length
    int64_t x_inner = 1;     // strides along the axis (1 for VEC > 1)
    int64_t y_inner = 1;
    int64_t mask_inner = 0;
    // x * scale * log2(e) = (x * pre) * scale_log2e with scale_log2e > 0: pre is
    // the sign of scale (0 for a zero scale), so -inf marks absent values.
    float pre = 1.0f;
    float scale_log2e = kLog2e;
    int64_t cache_vecs = 0;  // block rows: leading vectors of a block's slice kept in shared memory
    int64_t slice_vecs = 0;  // block rows: vectors of a row per block of a cluster
    int cluster = 1;         // block rows: blocks per row (> 1 only for sm_90 binaries)
    bool log = false;
    bool mask_vec = false;   // mask rows contiguous and aligned for VEC-byte loads
    RowIndexer ix;
};

template <bool UNMASKED>
__device__ __forceinline__ int64_t valid_length(const SoftmaxRowParams& p, const RowOffsets& o) {
    if (UNMASKED || !p.lengths) return p.n;
    const int64_t len = p.lengths[o.l];
    return len < 0 ? 0 : (len > p.n ? p.n : len);
}

// Raw VEC elements of x starting at column `col` (a multiple of VEC).
template <class T, int VEC>
__device__ __forceinline__ void load_raw(const SoftmaxRowParams& p, const T* xrow, int64_t col, T (&raw)[VEC]) {
    if constexpr (VEC == 1) {
        raw[0] = xrow[col * p.x_inner];
    } else {
        const Vec<T, VEC> t = *reinterpret_cast<const Vec<T, VEC>*>(xrow + col);
#pragma unroll
        for (int j = 0; j < VEC; ++j) raw[j] = t.v[j];
    }
}

// Values u = x * pre of raw elements at `col` (exp2-domain value u *
// scale_log2e): -inf where masked or at/after `valid`. UNMASKED kernels (no
// mask, no lengths: every loaded vector is valid) skip the per-element tests.
template <class T, int VEC, bool UNMASKED>
__device__ __forceinline__ void to_values(const SoftmaxRowParams& p, const T (&raw)[VEC], const uint8_t* mrow,
                                          int64_t col, int64_t valid, float (&v)[VEC]) {
    if constexpr (UNMASKED) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) v[j] = ElemTraits<T>::to_float(raw[j]) * p.pre;
    } else {
        uint8_t keep[VEC];
#pragma unroll
        for (int j = 0; j < VEC; ++j) keep[j] = 1;
        if (mrow) {
            if (VEC > 1 && p.mask_vec) {
                const Vec<uint8_t, VEC> mv = *reinterpret_cast<const Vec<uint8_t, VEC>*>(mrow + col);
#pragma unroll
                for (int j = 0; j < VEC; ++j) keep[j] = mv.v[j];
            } else {
#pragma unroll
                for (int j = 0; j < VEC; ++j) keep[j] = mrow[(col + j) * p.mask_inner];
            }
        }
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            const bool in = keep[j] != 0 && col + j < valid;
            v[j] = in ? ElemTraits<T>::to_float(raw[j]) * p.pre : -INFINITY;
        }
    }
}

template <class T, int VEC, bool UNMASKED>
__device__ __forceinline__ void load_values(const SoftmaxRowParams& p, const T* xrow, const uint8_t* mrow,
                                            int64_t col, int64_t valid, float (&v)[VEC]) {
    T raw[VEC];
    load_raw<T, VEC>(p, xrow, col, raw);
    to_values<T, VEC, UNMASKED>(p, raw, mrow, col, valid, v);
}

struct RowStats {
    float m;      // max of u = x * pre (-inf: nothing kept)
    float inv_s;  // 1 / sum (softmax)
    float log_s;  // ln(sum) (log-softmax)
};

// The max position contributes 2^0 = 1, so s >= 1 whenever m is finite.
__device__ __forceinline__ RowStats row_stats(bool log, float m, float s) {
    RowStats st{m, 0.0f, 0.0f};
    if (log) {
        st.log_s = logf(s);
    } else {
        st.inv_s = 1.0f / s;
    }
    return st;
}

__device__ __forceinline__ float empty_row_value(bool log) { return log ? -INFINITY : 0.0f; }

template <class T, int VEC>
__device__ __forceinline__ void store_values(const SoftmaxRowParams& p, T* yrow, int64_t col, const float (&o)[VEC]) {
    if constexpr (VEC == 1) {
        yrow[col * p.y_inner] = ElemTraits<T>::from_float(o[0]);
    } else {
        Vec<T, VEC> t;
#pragma unroll
        for (int j = 0; j < VEC; ++j) t.v[j] = ElemTraits<T>::from_float(o[j]);
        *reinterpret_cast<Vec<T, VEC>*>(yrow + col) = t;
    }
}

// Writes the outputs of VEC values u (exponents (u - m) * scale_log2e, see
// MaxSum). Absent values (-inf) come out as 0 (log: -inf)
// without a test: 2^-inf = 0. The row-level cases (nothing kept, log,
// softmax) are branches per vector, not selects per element.
template <class T, int VEC>
__device__ __forceinline__ void store_outputs(const SoftmaxRowParams& p, T* yrow, int64_t col, const float (&v)[VEC],
                                              const RowStats& st) {
    float out[VEC];
    if (st.m == -INFINITY) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) out[j] = empty_row_value(p.log);
    } else if (p.log) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) out[j] = (v[j] - st.m) * (p.scale_log2e * kLn2) - st.log_s;
    } else {
#pragma unroll
        for (int j = 0; j < VEC; ++j) out[j] = fast_exp2((v[j] - st.m) * p.scale_log2e) * st.inv_s;
    }
    store_values<T, VEC>(p, yrow, col, out);
}

// ---------------------------------------------------------------- warp rows
// (rows, n) with n <= GROUP * VEC * ITERS; GROUP lanes per row, the row in
// registers. Each group owns ROWS rows at once: their loads are all in flight
// before the first reduction (short rows otherwise leave too few bytes in flight).
// Blocks per SM the compiler must fit: rows of at most 8 / 16 f32 values per
// lane get 32 / 40 registers (full / 75% occupancy); at 51 registers the
// 65536x128 f32 case was register-limited to 62% occupancy (ncu, H100). Only
// the y offset of each row stays live across the loads (the x, mask and
// lengths offsets of all ROWS rows spilled at 32 registers).
template <int kValuesPerLane>
constexpr int warp_rows_min_blocks() {
    return kValuesPerLane <= 8 ? 16 : (kValuesPerLane <= 16 ? 12 : 8);
}

template <class T, int VEC, int ITERS, int GROUP, int ROWS, bool UNMASKED>
__global__ void __launch_bounds__(kWarpRowsThreads, warp_rows_min_blocks<ROWS * ITERS * VEC>())
    softmax_warp_rows_kernel(const __grid_constant__ SoftmaxRowParams p) {
    static_assert(GROUP >= 1 && GROUP <= kWarpSize && (GROUP & (GROUP - 1)) == 0, "GROUP: power of two <= 32");
    static_assert(VEC * sizeof(T) <= 16, "vectors are at most 16 bytes");
    static_assert(kWarpRowsThreads % kWarpSize == 0, "whole warps");
    constexpr int kRowsPerWarp = kWarpSize / GROUP * ROWS;
    constexpr int kRowsPerBlock = kWarpRowsThreads / kWarpSize * kRowsPerWarp;
    const T* x = static_cast<const T*>(p.x);
    T* y = static_cast<T*>(p.y);
    const int lane = threadIdx.x % GROUP;
    const int group = (threadIdx.x % kWarpSize) / GROUP;
    const int64_t step = int64_t(gridDim.x) * kRowsPerBlock;
    // The loop bound is uniform per warp so that every lane reaches the shuffles.
    for (int64_t base = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x / kWarpSize) * kRowsPerWarp;
         base < p.rows; base += step) {
        int64_t yoff[ROWS];  // -1: past the last row
        float v[ROWS][ITERS][VEC];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const int64_t row = base + group * ROWS + r;
            int64_t valid = 0;
            const T* xrow = x;
            const uint8_t* mrow = nullptr;
            yoff[r] = -1;
            if (row < p.rows) {
                const RowOffsets o = row_offsets(p.ix, row);
                valid = valid_length<UNMASKED>(p, o);
                xrow = x + o.x;
                mrow = !UNMASKED && p.mask ? p.mask + o.m : nullptr;
                yoff[r] = o.y;
            }
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
                const int64_t col = int64_t(it * GROUP + lane) * VEC;
                if (col < valid) {
                    load_values<T, VEC, UNMASKED>(p, xrow, mrow, col, valid, v[r][it]);
                } else {
#pragma unroll
                    for (int j = 0; j < VEC; ++j) v[r][it][j] = -INFINITY;
                }
            }
        }
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            float m = -INFINITY;
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
#pragma unroll
                for (int j = 0; j < VEC; ++j) m = fmaxf(m, v[r][it][j]);
            }
            m = group_max<GROUP>(m);
            float s = 0.0f;
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
#pragma unroll
                for (int j = 0; j < VEC; ++j) s += fast_exp2((v[r][it][j] - m) * p.scale_log2e);
            }
            s = group_sum<GROUP>(s);
            const RowStats st = row_stats(p.log, m, s);
            if (yoff[r] < 0) continue;
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
                const int64_t col = int64_t(it * GROUP + lane) * VEC;
                if (col < p.n) store_outputs<T, VEC>(p, y + yoff[r], col, v[r][it], st);
            }
        }
    }
}

// ---------------------------------------------------------------- dense rows
// The warp-rows strategy for the common case alone: softmax (not log) with a
// positive scale, no mask, no lengths, 16-byte vectors and rows at one stride
// (outer dims merged into at most one). Each lane keeps the exponents in
// place of its values (one ex2 per element, where the general kernel takes
// two) and no per-element or per-row case tests remain, so the row of 32
// values per lane fits 48 registers without spills: 40 warps per SM instead
// of the general kernel's 32 (63 registers). Standalone replicas, H100:
// f32 16384x1024 47.8 us against 50.3 for PyTorch and 49.1 for a copy of the
// same bytes (bench/softmax_rows_probe.py, docs/performance.md).
template <int kValuesPerLane>
constexpr int dense_rows_min_blocks() {
    return kValuesPerLane <= 16 ? 16 : 10;
}

template <class T, int VEC, int ITERS, int GROUP>
__global__ void __launch_bounds__(kWarpRowsThreads, dense_rows_min_blocks<ITERS * VEC>())
    softmax_dense_rows_kernel(const __grid_constant__ SoftmaxRowParams p) {
    static_assert(GROUP >= 1 && GROUP <= kWarpSize && (GROUP & (GROUP - 1)) == 0, "GROUP: power of two <= 32");
    static_assert(VEC > 1 && VEC * sizeof(T) == 16, "16-byte vectors");
    constexpr int kGroupsPerWarp = kWarpSize / GROUP;
    constexpr int kRowsPerBlock = kWarpRowsThreads / GROUP;
    const T* x = static_cast<const T*>(p.x);
    T* y = static_cast<T*>(p.y);
    const int lane = threadIdx.x % GROUP;
    const int64_t xs = p.ix.xs[0];  // row strides (rows == 1 when no outer dim is left)
    const int64_t ys = p.ix.ys[0];
    const int64_t step = int64_t(gridDim.x) * kRowsPerBlock;
    // The loop bound is uniform per warp so that every lane reaches the shuffles.
    for (int64_t base = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize * kGroupsPerWarp;
         base < p.rows; base += step) {
        const int64_t row = base + (threadIdx.x % kWarpSize) / GROUP;
        const bool live = row < p.rows;
        const T* xrow = x + (live ? row : 0) * xs;
        float v[ITERS][VEC];  // (ITERS, VEC) values of the row, then their exponents
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const int64_t col = int64_t(it * GROUP + lane) * VEC;
            if (live && col < p.n) {
                const Vec<T, VEC> t = *reinterpret_cast<const Vec<T, VEC>*>(xrow + col);
#pragma unroll
                for (int j = 0; j < VEC; ++j) v[it][j] = ElemTraits<T>::to_float(t.v[j]);
            } else {
#pragma unroll
                for (int j = 0; j < VEC; ++j) v[it][j] = -INFINITY;
            }
        }
        float m = -INFINITY;
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
#pragma unroll
            for (int j = 0; j < VEC; ++j) m = fmaxf(m, v[it][j]);
        }
        m = group_max<GROUP>(m);
        // A row of -inf only (or no row) has no kept value: every exponent is
        // 2^-inf = 0 against m = 0, and the row writes 0 as the general kernel
        // does. A NaN (or +inf - +inf) among the values makes the sum, and so
        // the whole row, NaN.
        const bool empty = m == -INFINITY;
        if (empty) m = 0.0f;
        float s = 0.0f;
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                v[it][j] = fast_exp2((v[it][j] - m) * p.scale_log2e);
                s += v[it][j];
            }
        }
        s = group_sum<GROUP>(s);
        const float inv_s = empty ? 0.0f : 1.0f / s;
        if (!live) continue;
        T* yrow = y + row * ys;
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const int64_t col = int64_t(it * GROUP + lane) * VEC;
            if (col < p.n) {
                Vec<T, VEC> t;
#pragma unroll
                for (int j = 0; j < VEC; ++j) t.v[j] = ElemTraits<T>::from_float(v[it][j] * inv_s);
                *reinterpret_cast<Vec<T, VEC>*>(yrow + col) = t;
            }
        }
    }
}

// ---------------------------------------------------------------- block rows
// One block per row (rows, n), or, for rows longer than one block's shared
// memory, a cluster of p.cluster blocks per row (sm_90): block `rank` of the
// cluster owns the slice [rank * p.slice_vecs, (rank + 1) * p.slice_vecs) of
// the row's vectors, and the blocks exchange their (max, sum) through
// distributed shared memory. The first p.cache_vecs vectors of a block's
// slice are kept in dynamic shared memory (raw T) as they are read; the rest
// (rows longer than every cluster's shared memory) is read a second time for
// the output pass.
struct BlockRowsScratch {
    MaxSum warps[kWarpSize];
    MaxSum block;  // this block's statistics, read by the other blocks of its cluster
};

// Combines the per-block statistics of a cluster; every block combines in rank
// order, so all of them get the same values.
__device__ __forceinline__ MaxSum cluster_maxsum(MaxSum r, BlockRowsScratch* scratch, int cluster, float scale) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (threadIdx.x == 0) scratch->block = r;
    cg::cluster_group cl = cg::this_cluster();
    cl.sync();
    MaxSum acc{-INFINITY, 0.0f};
    for (int k = 0; k < cluster; ++k) acc = maxsum_combine(acc, cl.map_shared_rank(&scratch->block, k)[0], scale);
    cl.sync();  // no block moves on (overwrites or exits) while others read its statistics
    return acc;
#else
    __trap();  // the planner launches clusters only for sm_90 binaries
    return r;
#endif
}

template <class T, int VEC, int MAX_THREADS, bool UNMASKED>
__global__ void __launch_bounds__(MAX_THREADS, block_rows_min_blocks<MAX_THREADS>()) softmax_block_rows_kernel(const __grid_constant__ SoftmaxRowParams p) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ BlockRowsScratch scratch;
    using V = Vec<T, VEC>;
    V* cache = reinterpret_cast<V*>(smem_raw);
    const T* x = static_cast<const T*>(p.x);
    T* y = static_cast<T*>(p.y);
    const int64_t nvec = p.n / VEC;
    const int rank = int(blockIdx.x % unsigned(p.cluster));
    const int64_t first = int64_t(rank) * p.slice_vecs;  // this block's slice of the row
    const int64_t slice_end = first + p.slice_vecs < nvec ? first + p.slice_vecs : nvec;
    for (int64_t row = blockIdx.x / unsigned(p.cluster); row < p.rows; row += gridDim.x / unsigned(p.cluster)) {
        const RowOffsets o = row_offsets(p.ix, row);
        const int64_t valid = valid_length<UNMASKED>(p, o);
        const int64_t nvec_valid = (valid + VEC - 1) / VEC;
        const int64_t load_end = nvec_valid < slice_end ? nvec_valid : slice_end;
        const T* xrow = x + o.x;
        const uint8_t* mrow = !UNMASKED && p.mask ? p.mask + o.m : nullptr;
        MaxSum acc{-INFINITY, 0.0f};
        for (int64_t i0 = first + threadIdx.x; i0 < load_end; i0 += int64_t(kBlockUnroll) * blockDim.x) {
            T raw[kBlockUnroll][VEC];
            // Issue every load of the batch before using any.
#pragma unroll
            for (int u = 0; u < kBlockUnroll; ++u) {
                const int64_t i = i0 + int64_t(u) * blockDim.x;
                if (i < load_end) load_raw<T, VEC>(p, xrow, i * VEC, raw[u]);
            }
#pragma unroll
            for (int u = 0; u < kBlockUnroll; ++u) {
                const int64_t i = i0 + int64_t(u) * blockDim.x;
                if (i < load_end) {
                    if (i - first < p.cache_vecs) {
                        V c;
#pragma unroll
                        for (int j = 0; j < VEC; ++j) c.v[j] = raw[u][j];
                        cache[i - first] = c;
                    }
                    float v[VEC];
                    to_values<T, VEC, UNMASKED>(p, raw[u], mrow, i * VEC, valid, v);
                    acc = maxsum_add<VEC>(acc, v, p.scale_log2e);
                }
            }
        }
        MaxSum r = block_maxsum(acc, scratch.warps, p.scale_log2e);
        if (p.cluster > 1) r = cluster_maxsum(r, &scratch, p.cluster, p.scale_log2e);
        const RowStats st = row_stats(p.log, r.m, r.s);
        T* yrow = y + o.y;
        for (int64_t i = first + threadIdx.x; i < slice_end; i += blockDim.x) {
            float v[VEC];
            if (i < nvec_valid) {
                T raw[VEC];
                if (i - first < p.cache_vecs) {
                    const V c = cache[i - first];
#pragma unroll
                    for (int j = 0; j < VEC; ++j) raw[j] = c.v[j];
                } else {
                    load_raw<T, VEC>(p, xrow, i * VEC, raw);
                }
                to_values<T, VEC, UNMASKED>(p, raw, mrow, i * VEC, valid, v);
            } else {
#pragma unroll
                for (int j = 0; j < VEC; ++j) v[j] = -INFINITY;
            }
            store_outputs<T, VEC>(p, yrow, i * VEC, v, st);
        }
        if (p.cache_vecs > 0) __syncthreads();  // the next row overwrites the cache
    }
}

// ---------------------------------------------------------------- strided rows
// One thread per row; the axis is walked with stride x_inner (not the fastest dim).
template <class T>
__global__ void __launch_bounds__(kStridedThreads) softmax_strided_rows_kernel(const __grid_constant__ SoftmaxRowParams p) {
    const T* x = static_cast<const T*>(p.x);
    T* y = static_cast<T*>(p.y);
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t row = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; row < p.rows; row += step) {
        const RowOffsets o = row_offsets(p.ix, row);
        const int64_t valid = valid_length<false>(p, o);
        const uint8_t* mrow = p.mask ? p.mask + o.m : nullptr;
        MaxSum acc{-INFINITY, 0.0f};
        for (int64_t j = 0; j < valid; ++j) {
            float v[1];
            load_values<T, 1, false>(p, x + o.x, mrow, j, valid, v);
            acc = maxsum_add<1>(acc, v, p.scale_log2e);
        }
        const RowStats st = row_stats(p.log, acc.m, acc.s);
        for (int64_t j = 0; j < p.n; ++j) {
            float v[1] = {-INFINITY};
            if (j < valid) load_values<T, 1, false>(p, x + o.x, mrow, j, valid, v);
            store_outputs<T, 1>(p, y + o.y, j, v, st);
        }
    }
}

}  // namespace tops::cuda::softmax_impl
