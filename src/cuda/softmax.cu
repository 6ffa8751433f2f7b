// Softmax / log-softmax on CUDA for f32, f16 and bf16 storage (f32 math).
//
// Strategy (as the fastest known softmax kernels do, chosen by row length):
// - warp rows: a group of GROUP <= 32 lanes owns one row and keeps it in
//   registers (ITERS vectors of VEC elements per lane), so the row is read
//   once and reductions are shuffles only. Used up to 32 values per lane
//   (1024 elements with 16-byte vectors, 256 without). Small rows use
//   GROUP < 32 so that a warp works on several rows at once instead of
//   idling lanes.
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
#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cuda/common/device.cuh"
#include "cuda/ops.hpp"

namespace tops::cuda {
namespace {

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

// ---------------------------------------------------------------- instantiation list
enum class Strategy { kWarp, kBlock, kStrided };

struct KernelEntry {
    Strategy strategy;
    tops_dtype_t dtype;
    int vec;
    int group;  // warp rows: lanes per row; block rows: 0 = 256-thread budget, 1 = 1024-thread budget
    int iters;  // warp rows only
    int rows;   // warp rows only: rows per lane group
    bool unmasked;  // no mask, no lengths
    const void* fn;
    const char* name;
};

#define TOPS_SOFTMAX_WARP_U(T, DT, NAME, V, I, G, R, U, SUFFIX)                                             \
    {Strategy::kWarp, DT, V, G, I, R, U,                                                                     \
     reinterpret_cast<const void*>(&softmax_warp_rows_kernel<T, V, I, G, R, U>),                             \
     "softmax_" NAME "_warp_g" #G "_i" #I "_r" #R "_v" #V SUFFIX "_cuda"}
#define TOPS_SOFTMAX_WARP(T, DT, NAME, V, I, G, R) TOPS_SOFTMAX_WARP_U(T, DT, NAME, V, I, G, R, false, "")
// Vectorized warp rows come in both forms.
#define TOPS_SOFTMAX_WARP2(T, DT, NAME, V, I, G, R) \
    TOPS_SOFTMAX_WARP(T, DT, NAME, V, I, G, R), TOPS_SOFTMAX_WARP_U(T, DT, NAME, V, I, G, R, true, "_unmasked")
#define TOPS_SOFTMAX_BLOCK_U(T, DT, NAME, V, U, SUFFIX)                                                       \
    {Strategy::kBlock, DT, V, 0, 0, 0, U,                                                                      \
     reinterpret_cast<const void*>(&softmax_block_rows_kernel<T, V, kBlockSmallThreads, U>),                   \
     "softmax_" NAME "_block_smem_t256_v" #V SUFFIX "_cuda"},                                                  \
    {Strategy::kBlock, DT, V, 1, 0, 0, U,                                                                      \
     reinterpret_cast<const void*>(&softmax_block_rows_kernel<T, V, kBlockMaxThreads, U>),                     \
     "softmax_" NAME "_block_smem_t1024_v" #V SUFFIX "_cuda"}
// VM: elements per 16-byte vector. Warp rows cover up to 32 * VM * 8 elements
// vectorized and 32 * 8 unvectorized; longer unvectorized rows take the block
// kernel. Two rows per lane group where a lane holds at most 2 vectors of a row.
// Vectorized kernels also come without mask and lengths (the common case);
// unvectorized ones (misaligned or strided rows) only in the general form.
#define TOPS_SOFTMAX_DTYPE(T, DT, NAME, VM)                                                                      \
    TOPS_SOFTMAX_WARP2(T, DT, NAME, VM, 1, 4, 2), TOPS_SOFTMAX_WARP2(T, DT, NAME, VM, 1, 8, 2),                   \
    TOPS_SOFTMAX_WARP2(T, DT, NAME, VM, 1, 16, 2), TOPS_SOFTMAX_WARP2(T, DT, NAME, VM, 1, 32, 2),                 \
    TOPS_SOFTMAX_WARP2(T, DT, NAME, VM, 2, 32, 2), TOPS_SOFTMAX_WARP2(T, DT, NAME, VM, 4, 32, 1),                 \
    TOPS_SOFTMAX_WARP(T, DT, NAME, 1, 1, 32, 2),                                                                 \
    TOPS_SOFTMAX_WARP(T, DT, NAME, 1, 2, 32, 2), TOPS_SOFTMAX_WARP(T, DT, NAME, 1, 4, 32, 1),                     \
    TOPS_SOFTMAX_WARP(T, DT, NAME, 1, 8, 32, 1), TOPS_SOFTMAX_BLOCK_U(T, DT, NAME, VM, false, ""),                \
    TOPS_SOFTMAX_BLOCK_U(T, DT, NAME, VM, true, "_unmasked"), TOPS_SOFTMAX_BLOCK_U(T, DT, NAME, 1, false, ""),    \
    {Strategy::kStrided, DT, 1, 0, 0, 0, false, reinterpret_cast<const void*>(&softmax_strided_rows_kernel<T>), \
     "softmax_" NAME "_strided_cuda"}
const KernelEntry kKernels[] = {
    TOPS_SOFTMAX_DTYPE(float, TOPS_DTYPE_F32, "f32", 4),
    TOPS_SOFTMAX_WARP2(float, TOPS_DTYPE_F32, "f32", 4, 8, 32, 1),  // 32 f32 values per lane
    TOPS_SOFTMAX_WARP2(float, TOPS_DTYPE_F32, "f32", 4, 4, 8, 1),   // short f32 rows, see kShortRowLanes
    TOPS_SOFTMAX_DTYPE(__half, TOPS_DTYPE_F16, "f16", 8),
    TOPS_SOFTMAX_DTYPE(__nv_bfloat16, TOPS_DTYPE_BF16, "bf16", 8),
};

#undef TOPS_SOFTMAX_DTYPE
#undef TOPS_SOFTMAX_BLOCK_U
#undef TOPS_SOFTMAX_WARP2
#undef TOPS_SOFTMAX_WARP
#undef TOPS_SOFTMAX_WARP_U

// The unmasked form where one is instantiated, else the general one.
const KernelEntry* find_kernel(Strategy s, tops_dtype_t dt, int vec, int group, int iters, bool unmasked,
                               int rows = -1) {
    const KernelEntry* general = nullptr;
    for (const KernelEntry& e : kKernels) {
        if (e.strategy == s && e.dtype == dt && e.vec == vec && e.group == group && e.iters == iters &&
            (rows < 0 || e.rows == rows)) {
            if (e.unmasked == unmasked) return &e;
            if (!e.unmasked && !general) general = &e;
        }
    }
    return general;
}

// ---------------------------------------------------------------- planning
struct Launch {
    const KernelEntry* kernel = nullptr;
    int grid = 0;
    int threads = 0;
    size_t smem = 0;
    int64_t cache_vecs = 0;
    int64_t slice_vecs = 0;
    int cluster = 1;
};

int pow2_at_least(int64_t v) {
    int p = 1;
    while (p < v) p *= 2;
    return p;
}

bool unmasked_rows(const SoftmaxParams& sp) { return !sp.mask.present() && !sp.lengths.present(); }

// Largest portable cluster (blocks per row) for rows longer than one block's
// shared memory, and the share of the device's block slots its clusters must
// fill at once (GPC boundaries can leave slots that no cluster fits).
constexpr int kMaxCluster = 8;
constexpr double kMinClusterFill = 0.9;

// Block-rows launch for `cluster` blocks per row: slice, cache and threads.
Launch block_launch(const SoftmaxParams& sp, const DeviceInfo& dev, int vec, int cluster) {
    const int64_t n = sp.x.dims[sp.axis];
    const size_t vec_bytes = size_t(vec) * dtype_size(sp.x.dtype);
    const int64_t nvec = n / vec;
    Launch l;
    l.cluster = cluster;
    l.slice_vecs = (nvec + cluster - 1) / cluster;
    l.threads = int(std::clamp<int64_t>(pow2_at_least((l.slice_vecs + kBlockVecsPerThread - 1) / kBlockVecsPerThread),
                                        kBlockMinThreads, kBlockMaxThreads));
    // group field: 0 = the 256-thread register budget, 1 = the 1024-thread one
    l.kernel = find_kernel(Strategy::kBlock, sp.x.dtype, vec, l.threads <= kBlockSmallThreads ? 0 : 1, 0,
                           unmasked_rows(sp));
    // The opt-in limit covers static and dynamic shared memory together; the
    // dynamic part starts at a 16-byte boundary after the static part.
    size_t static_bytes = sizeof(BlockRowsScratch);
    cudaFuncAttributes fa{};
    if (l.kernel && cudaFuncGetAttributes(&fa, l.kernel->fn) == cudaSuccess) static_bytes = fa.sharedSizeBytes;
    else (void)cudaGetLastError();
    constexpr size_t kSmemAlign = 16;
    static_bytes = (static_bytes + kSmemAlign - 1) / kSmemAlign * kSmemAlign;
    const size_t optin = size_t(dev.max_smem_per_block_optin);
    const size_t smem_budget = optin > static_bytes ? optin - static_bytes : 0;
    l.cache_vecs = std::min<int64_t>(l.slice_vecs, int64_t(smem_budget / vec_bytes));
    l.smem = size_t(l.cache_vecs) * vec_bytes;
    return l;
}

// Whether `fn` runs as sm_90 code on this device (clusters and distributed
// shared memory): its machine code is for sm_90 and was compiled from PTX of
// compute_90 or later (code JIT-compiled from compute_80 PTX has the cluster
// path compiled out).
bool clusters_usable(const DeviceInfo& dev, const void* fn) {
    if (dev.cc_major < 9) return false;
    cudaFuncAttributes a{};
    if (cudaFuncGetAttributes(&a, fn) != cudaSuccess) return false;
    return a.binaryVersion >= 90 && a.ptxVersion >= 90;
}

Status prepare_smem(const Launch& l) {
    if (l.smem == 0) return Status::ok();
    return cuda_status(cudaFuncSetAttribute(l.kernel->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(l.smem)),
                       "softmax: cudaFuncSetAttribute");
}

// Fraction of the device's block slots that clusters of l.cluster blocks can fill at once.
Status cluster_fill(const Launch& l, const DeviceInfo& dev, double* fill) {
    TOPS_RETURN_IF_ERROR(prepare_smem(l));
    int per_sm = 0;
    TOPS_RETURN_IF_ERROR(cuda_status(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l.kernel->fn, l.threads, l.smem),
        "softmax: cudaOccupancyMaxActiveBlocksPerMultiprocessor"));
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(unsigned(l.cluster * dev.sm_count));
    cfg.blockDim = dim3(unsigned(l.threads));
    cfg.dynamicSmemBytes = l.smem;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = unsigned(l.cluster);
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    int clusters = 0;
    TOPS_RETURN_IF_ERROR(cuda_status(cudaOccupancyMaxActiveClusters(&clusters, l.kernel->fn, &cfg),
                                     "softmax: cudaOccupancyMaxActiveClusters"));
    *fill = per_sm > 0 ? double(clusters) * l.cluster / (double(per_sm) * dev.sm_count) : 0.0;
    return Status::ok();
}

// Picks the kernel and launch shape for vectors of `vec` elements: the one
// dispatch point that turns the runtime shape into template parameters.
Status choose_launch(const SoftmaxParams& sp, const DeviceInfo& dev, bool strided, int64_t rows, int vec,
                     Launch* out) {
    const int64_t n = sp.x.dims[sp.axis];
    Launch l;
    if (strided) {
        l.kernel = find_kernel(Strategy::kStrided, sp.x.dtype, 1, 0, 0, false);
        l.threads = kStridedThreads;
    } else if (n <= int64_t(kWarpSize) * vec * std::min(kWarpRowsMaxIters, std::max(1, kWarpRowsMaxValues / vec))) {
        const int64_t per_lane = (n + vec - 1) / vec;  // vectors a full warp would split
        int group = kWarpSize;
        int iters = 1;
        if (vec > 1 && per_lane > kShortRowVecs && per_lane <= kWarpSize &&
            vec * kShortRowIters <= kShortRowMaxValues) {
            group = kShortRowLanes;
            iters = kShortRowIters;
        } else if (per_lane <= kWarpSize) {
            group = std::max(vec == 1 ? kWarpSize : 4, pow2_at_least(per_lane));
        } else {
            iters = pow2_at_least((per_lane + kWarpSize - 1) / kWarpSize);
        }
        l.kernel = find_kernel(Strategy::kWarp, sp.x.dtype, vec, group, iters, unmasked_rows(sp));
        l.threads = kWarpRowsThreads;
    } else {
        // Cache as much of the row as the block's opt-in shared memory holds.
        // Rows longer than that are split over a cluster of blocks (sm_90):
        // the largest cluster whose blocks can all be resident at once, so the
        // slices are small and several blocks share an SM (1024x131072: f32
        // 88% of copy bandwidth with 8 x 64 KiB slices, 82% with 4 x 128 KiB;
        // f16 87% with 8 x 32 KiB, 75% with 2 x 128 KiB). Rows that fit stay
        // in one block (4096x32768 f32: 98% in one block, 95% over 2). Rows
        // longer than every cluster's shared memory re-read their uncached tail.
        l = block_launch(sp, dev, vec, 1);
        if (l.kernel && l.cache_vecs < l.slice_vecs && clusters_usable(dev, l.kernel->fn)) {
            double best_fill = 0.0;
            for (int c = kMaxCluster; c >= 2; c /= 2) {
                const Launch cl = block_launch(sp, dev, vec, c);
                if (!cl.kernel) continue;
                double fill = 0.0;
                TOPS_RETURN_IF_ERROR(cluster_fill(cl, dev, &fill));
                if (fill > best_fill) {
                    best_fill = fill;
                    l = cl;
                }
                if (fill >= kMinClusterFill) break;
            }
        }
    }
    if (!l.kernel) return Status(TOPS_ERROR_INTERNAL, "softmax: no CUDA kernel instantiated for this case");
    TOPS_RETURN_IF_ERROR(prepare_smem(l));
    int per_sm = 0;
    TOPS_RETURN_IF_ERROR(cuda_status(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l.kernel->fn, l.threads, l.smem),
        "softmax: cudaOccupancyMaxActiveBlocksPerMultiprocessor"));
    if (per_sm < 1) return Status(TOPS_ERROR_INTERNAL, fmt("softmax: ", l.kernel->name, " cannot be resident"));
    int64_t rows_per_block = 1;
    if (l.kernel->strategy == Strategy::kWarp) rows_per_block = kWarpRowsThreads / l.kernel->group * l.kernel->rows;
    if (l.kernel->strategy == Strategy::kStrided) rows_per_block = kStridedThreads;
    // One block (cluster) per row set, not a persistent grid: the block
    // scheduler balances the tail, where a persistent grid of 3-4 row sets per
    // block leaves whole row sets of imbalance. The kernels still loop, for
    // row counts beyond the grid limit.
    const int64_t needed = (rows + rows_per_block - 1) / rows_per_block;
    l.grid = int(std::max<int64_t>(1, std::min<int64_t>(needed, kMaxGrid / l.cluster)) * l.cluster);
    *out = l;
    return Status::ok();
}

// Outer (non-axis) dims ordered by decreasing x stride, size-1 dims dropped,
// dims merged where x, y, mask and lengths all continue each other.
void build_indexer(const SoftmaxParams& sp, RowIndexer* ix, int64_t* rows) {
    struct Dim {
        int64_t d, xs, ys, ms, ls;
    };
    Dim dims[kMaxRank];
    int nd = 0;
    for (int i = 0; i < sp.x.rank; ++i) {
        if (i == sp.axis || sp.x.dims[i] == 1) continue;
        dims[nd++] = {sp.x.dims[i], sp.x.strides[i], sp.y.strides[i],
                      sp.mask.present() ? sp.mask.strides[i] : 0, sp.lengths.present() ? sp.lengths.strides[i] : 0};
    }
    std::stable_sort(dims, dims + nd, [](const Dim& a, const Dim& b) { return a.xs > b.xs; });
    Dim merged[kMaxRank];
    int nm = 0;
    for (int i = 0; i < nd; ++i) {
        if (nm > 0) {
            Dim& o = merged[nm - 1];
            const Dim& c = dims[i];
            if (o.xs == c.xs * c.d && o.ys == c.ys * c.d && o.ms == c.ms * c.d && o.ls == c.ls * c.d) {
                o = {o.d * c.d, c.xs, c.ys, c.ms, c.ls};
                continue;
            }
        }
        merged[nm++] = dims[i];
    }
    *rows = 1;
    ix->ndim = nm;
    for (int i = 0; i < nm; ++i) {
        ix->div[i] = FastDivmod(uint64_t(merged[i].d));
        ix->xs[i] = merged[i].xs;
        ix->ys[i] = merged[i].ys;
        ix->ms[i] = merged[i].ms;
        ix->ls[i] = merged[i].ls;
        *rows *= merged[i].d;
    }
}

bool all_multiple(const RowIndexer& ix, const int64_t* s, int64_t v) {
    for (int i = 0; i < ix.ndim; ++i) {
        if (s[i] % v != 0) return false;
    }
    return true;
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

class SoftmaxPlanCuda final : public OpPlan {
public:
    SoftmaxPlanCuda(const SoftmaxRowParams& base, const Launch& vec_launch, const Launch& scalar_launch, int vm,
                    bool mask_vec_strides, int device, std::string why)
        : base_(base), vec_(vec_launch), scalar_(scalar_launch), vm_(vm), mask_vec_strides_(mask_vec_strides),
          device_(device), why_(std::move(why)) {}

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (base_.rows == 0 || base_.n == 0) return Status::ok();
        DeviceScope scope(device_);
        TOPS_RETURN_IF_ERROR(scope.status());
        SoftmaxRowParams p = base_;
        p.x = args.in(TOPS_ARG_X);
        p.y = args.out(TOPS_ARG_Y);
        p.mask = static_cast<const uint8_t*>(args.in(TOPS_ARG_MASK));
        p.lengths = static_cast<const int32_t*>(args.in(TOPS_ARG_LENGTHS));
        const size_t vec_bytes = size_t(vm_) * esize_of(vec_);
        const bool use_vec = vec_.kernel && aligned(p.x, vec_bytes) && aligned(p.y, vec_bytes);
        const Launch& l = use_vec ? vec_ : scalar_;
        p.cache_vecs = l.cache_vecs;
        p.slice_vecs = l.slice_vecs;
        p.cluster = l.cluster;
        p.mask_vec = use_vec && p.mask && mask_vec_strides_ && aligned(p.mask, size_t(vm_));
        void* kargs[] = {&p};
        cudaLaunchConfig_t cfg{};
        cfg.gridDim = dim3(unsigned(l.grid));
        cfg.blockDim = dim3(unsigned(l.threads));
        cfg.dynamicSmemBytes = l.smem;
        cfg.stream = static_cast<cudaStream_t>(ctx.stream);
        cudaLaunchAttribute attr{};
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = unsigned(l.cluster);
        attr.val.clusterDim.y = 1;
        attr.val.clusterDim.z = 1;
        cfg.attrs = &attr;
        cfg.numAttrs = l.cluster > 1 ? 1 : 0;
        cudaError_t err = cudaLaunchKernelExC(&cfg, l.kernel->fn, kargs);
        if (err != cudaSuccess) return cuda_status(err, l.kernel->name, TOPS_ERROR_DEVICE_LAUNCH);
        return launch_status(l.kernel->name);
    }

    const char* kernel_name() const override { return (vec_.kernel ? vec_ : scalar_).kernel->name; }
    std::string reason() const override { return why_; }

private:
    static size_t esize_of(const Launch& l) {
        return l.kernel ? dtype_size(l.kernel->dtype) : 1;
    }

    SoftmaxRowParams base_;
    Launch vec_;     // kernel == nullptr when strides rule out 16-byte vectors
    Launch scalar_;  // always valid
    int vm_;
    bool mask_vec_strides_;
    int device_;
    std::string why_;
};

}  // namespace

Status plan_softmax(const SoftmaxParams& sp, const DeviceInfo& dev, PlanPtr* out) {
    SoftmaxRowParams base;
    build_indexer(sp, &base.ix, &base.rows);
    const int64_t n = sp.x.dims[sp.axis];
    base.n = n;
    base.x_inner = sp.x.strides[sp.axis];
    base.y_inner = sp.y.strides[sp.axis];
    base.mask_inner = sp.mask.present() ? sp.mask.strides[sp.axis] : 0;
    // A zero scale (or one whose product with log2(e) underflows) makes every
    // kept value 0: pre = 0 (x * 0, NaN for infinite x as in x * scale).
    base.scale_log2e = std::fabs(sp.scale) * kLog2e;
    base.pre = sp.scale > 0.0f ? 1.0f : -1.0f;
    if (!(base.scale_log2e > 0.0f)) {
        base.scale_log2e = 1.0f;
        base.pre = 0.0f;
    }
    base.log = sp.log;
    if (n == 1) {
        base.x_inner = 1;
        base.y_inner = 1;
    }
    // The axis is the fastest dim of x unless an outer dim moves faster: then
    // one thread per row keeps neighbouring threads on neighbouring addresses.
    bool strided = false;
    if (base.x_inner != 1 && base.ix.ndim > 0 && base.ix.xs[base.ix.ndim - 1] < base.x_inner) strided = true;
    const int vm = int(16 / dtype_size(sp.x.dtype));
    const bool vec_strides = !strided && base.x_inner == 1 && base.y_inner == 1 && n % vm == 0 &&
                             all_multiple(base.ix, base.ix.xs, vm) && all_multiple(base.ix, base.ix.ys, vm);
    const bool mask_vec_strides = sp.mask.present() && base.mask_inner == 1 && all_multiple(base.ix, base.ix.ms, vm);
    DeviceScope scope(dev.ordinal);
    TOPS_RETURN_IF_ERROR(scope.status());
    Launch vec_launch, scalar_launch;
    if (vec_strides) TOPS_RETURN_IF_ERROR(choose_launch(sp, dev, false, base.rows, vm, &vec_launch));
    TOPS_RETURN_IF_ERROR(choose_launch(sp, dev, strided, base.rows, 1, &scalar_launch));
    std::string why = fmt("rows=", base.rows, " n=", n, " outer_dims=", base.ix.ndim,
                          strided ? " axis is not the fastest dim: one thread per row" : "",
                          vec_strides ? fmt(" 16-byte vectors when pointers are aligned (else ",
                                            scalar_launch.kernel->name, ")")
                                      : " no 16-byte vectors (strides or length)",
                          " grid=", (vec_strides ? vec_launch : scalar_launch).grid,
                          " cluster=", (vec_strides ? vec_launch : scalar_launch).cluster,
                          " threads=", (vec_strides ? vec_launch : scalar_launch).threads,
                          " smem=", (vec_strides ? vec_launch : scalar_launch).smem);
    out->reset(new SoftmaxPlanCuda(base, vec_launch, scalar_launch, vm, mask_vec_strides, dev.ordinal,
                                   std::move(why)));
    return Status::ok();
}

}  // namespace tops::cuda
