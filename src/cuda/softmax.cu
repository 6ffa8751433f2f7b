// Softmax / log-softmax on CUDA for f32, f16 and bf16 storage (f32 math).
//
// Strategy (as the fastest known softmax kernels do, chosen by row length):
// - warp rows: a group of GROUP <= 32 lanes owns one row and keeps it in
//   registers (ITERS vectors of VEC elements per lane), so the row is read
//   once and reductions are shuffles only. Used up to 32 * VEC * 8 elements
//   (4 KiB for f32 with 16-byte vectors). Small rows use GROUP < 32 so that
//   a warp works on several rows at once instead of idling lanes.
// - block rows: one block per row; the row is copied to shared memory as it
//   is read (raw dtype, so f16 rows cost half) and normalized from there, so
//   x is read from device memory once. Rows longer than a block's opt-in
//   shared memory (about 56 Ki f32 / 113 Ki f16 elements) keep their head in
//   shared memory and read only the uncached tail a second time.
// - strided rows: when the softmax axis is not the fastest-moving dim of x,
//   one thread owns a row and walks it with its stride; neighbouring threads
//   touch neighbouring addresses, so accesses stay coalesced.
// All row kernels compute online (max, sum) statistics in the exp2 domain
// (x * scale * log2 e), rescaled once per vector, which needs one pass for
// the statistics. Masked and
// out-of-length positions are -inf in that domain and write 0 (-inf for log);
// a row without a kept position writes only those values, never NaN. Lengths
// limit the reads to the valid prefix. Every kernel reads a row completely
// before writing it, so y == x (in place) is safe.
//
// 16-byte vectors are used when the row, its start and every row stride are
// aligned for them (checked at plan time for strides, at execute time for
// pointers); otherwise the same strategies run with VEC = 1.
#include <algorithm>
#include <cstdint>

#include "cuda/common/device.cuh"
#include "cuda/ops.hpp"

namespace tops::cuda {
namespace {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// Threads of a warp-rows block: 4 warps per block keeps blocks small for
// good tail balance over 132 SMs.
constexpr int kWarpRowsThreads = 128;
// Largest ITERS of the warp-rows kernel: 8 vectors per lane (32 registers of
// f32 data for 16-byte f32 vectors) keeps occupancy at 2048 threads per SM.
constexpr int kWarpRowsMaxIters = 8;
// Vectors loaded back to back per thread in the block kernels before they
// are consumed: 4 x 16 bytes in flight per thread.
constexpr int kBlockUnroll = 4;
constexpr int kBlockMaxThreads = 1024;
// Block rows come in two register budgets: blocks of up to 256 threads (rows
// up to 8 Ki f16 / 4 Ki f32 elements) at 6 blocks per SM (42 registers), and
// up to 1024 threads at 1 block per SM (64 registers). One budget of 64
// registers left 128-thread blocks at 50% occupancy (8192x4096 f16, ncu).
constexpr int kBlockSmallThreads = 256;
constexpr int kBlockThreadsPerSm = 1536;
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
    float scale_log2e = kLog2e;
    int64_t cache_vecs = 0;  // block rows: leading vectors kept in shared memory
    bool log = false;
    bool mask_vec = false;   // mask rows contiguous and aligned for VEC-byte loads
    RowIndexer ix;
};

__device__ __forceinline__ int64_t valid_length(const SoftmaxRowParams& p, const RowOffsets& o) {
    if (!p.lengths) return p.n;
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

// exp2-domain values of raw elements at `col`: -inf where masked or at/after `valid`.
template <class T, int VEC>
__device__ __forceinline__ void to_values(const SoftmaxRowParams& p, const T (&raw)[VEC], const uint8_t* mrow,
                                          int64_t col, int64_t valid, float (&v)[VEC]) {
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
        v[j] = in ? ElemTraits<T>::to_float(raw[j]) * p.scale_log2e : -INFINITY;
    }
}

template <class T, int VEC>
__device__ __forceinline__ void load_values(const SoftmaxRowParams& p, const T* xrow, const uint8_t* mrow,
                                            int64_t col, int64_t valid, float (&v)[VEC]) {
    T raw[VEC];
    load_raw<T, VEC>(p, xrow, col, raw);
    to_values<T, VEC>(p, raw, mrow, col, valid, v);
}

struct RowStats {
    float m;      // max in the exp2 domain (-inf: nothing kept)
    float inv_s;  // 1 / sum (0 when nothing is kept)
    float log_s;  // ln(sum)
};

__device__ __forceinline__ RowStats row_stats(float m, float s) {
    return {m, s > 0.0f ? 1.0f / s : 0.0f, logf(s)};
}

// Absent values (-inf) come out as 0 (log: -inf) without a test: 2^-inf = 0.
// A row with nothing kept (m == -inf) is written by the caller's row-level branch.
__device__ __forceinline__ float output_value(bool log, float v, const RowStats& st) {
    return log ? (v - st.m) * kLn2 - st.log_s : fast_exp2(v - st.m) * st.inv_s;
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

// ---------------------------------------------------------------- warp rows
// (rows, n) with n <= GROUP * VEC * ITERS; GROUP lanes per row, the row in
// registers. Each group owns ROWS rows at once: their loads are all in flight
// before the first reduction (short rows otherwise leave too few bytes in flight).
// Blocks per SM the compiler must fit: rows of at most 8 / 16 f32 values per
// lane get 32 / 42 registers (full / 75% occupancy); at 51 registers the
// 65536x128 f32 case was register-limited to 62% occupancy (ncu, H100).
template <int kValuesPerLane>
constexpr int warp_rows_min_blocks() {
    return kValuesPerLane <= 8 ? 16 : (kValuesPerLane <= 16 ? 12 : 8);
}

template <class T, int VEC, int ITERS, int GROUP, int ROWS>
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
        RowOffsets o[ROWS];
        bool active[ROWS];
        float v[ROWS][ITERS][VEC];
        float m[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const int64_t row = base + group * ROWS + r;
            active[r] = row < p.rows;
            o[r] = active[r] ? row_offsets(p.ix, row) : RowOffsets{0, 0, 0, 0};
            const int64_t valid = active[r] ? valid_length(p, o[r]) : 0;
            const uint8_t* mrow = p.mask ? p.mask + o[r].m : nullptr;
            m[r] = -INFINITY;
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
                const int64_t col = int64_t(it * GROUP + lane) * VEC;
                if (col < valid) {
                    load_values<T, VEC>(p, x + o[r].x, mrow, col, valid, v[r][it]);
                } else {
#pragma unroll
                    for (int j = 0; j < VEC; ++j) v[r][it][j] = -INFINITY;
                }
            }
        }
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
#pragma unroll
                for (int j = 0; j < VEC; ++j) m[r] = fmaxf(m[r], v[r][it][j]);
            }
            m[r] = group_max<GROUP>(m[r]);
        }
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            float s = 0.0f;
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
#pragma unroll
                for (int j = 0; j < VEC; ++j) s += fast_exp2(v[r][it][j] - m[r]);
            }
            s = group_sum<GROUP>(s);
            const RowStats st = row_stats(m[r], s);
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
                const int64_t col = int64_t(it * GROUP + lane) * VEC;
                if (active[r] && col < p.n) {
                    float out[VEC];
#pragma unroll
                    for (int j = 0; j < VEC; ++j) {
                        out[j] = m[r] == -INFINITY ? empty_row_value(p.log) : output_value(p.log, v[r][it][j], st);
                    }
                    store_values<T, VEC>(p, y + o[r].y, col, out);
                }
            }
        }
    }
}

// ---------------------------------------------------------------- block rows
// One block per row (rows, n). The first p.cache_vecs vectors of the row are
// kept in dynamic shared memory (raw T) as they are read; the rest (rows
// longer than shared memory) is read a second time for the output pass.
template <class T, int VEC, int MAX_THREADS>
__global__ void __launch_bounds__(MAX_THREADS, kBlockThreadsPerSm / MAX_THREADS) softmax_block_rows_kernel(const __grid_constant__ SoftmaxRowParams p) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __shared__ MaxSum scratch[kWarpSize];
    using V = Vec<T, VEC>;
    V* cache = reinterpret_cast<V*>(smem_raw);
    const T* x = static_cast<const T*>(p.x);
    T* y = static_cast<T*>(p.y);
    const int64_t nvec = p.n / VEC;
    for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
        const RowOffsets o = row_offsets(p.ix, row);
        const int64_t valid = valid_length(p, o);
        const int64_t nvec_valid = (valid + VEC - 1) / VEC;
        const T* xrow = x + o.x;
        const uint8_t* mrow = p.mask ? p.mask + o.m : nullptr;
        MaxSum acc{-INFINITY, 0.0f};
        for (int64_t i0 = threadIdx.x; i0 < nvec_valid; i0 += int64_t(kBlockUnroll) * blockDim.x) {
            T raw[kBlockUnroll][VEC];
            // Issue every load of the batch before using any.
#pragma unroll
            for (int u = 0; u < kBlockUnroll; ++u) {
                const int64_t i = i0 + int64_t(u) * blockDim.x;
                if (i < nvec_valid) load_raw<T, VEC>(p, xrow, i * VEC, raw[u]);
            }
#pragma unroll
            for (int u = 0; u < kBlockUnroll; ++u) {
                const int64_t i = i0 + int64_t(u) * blockDim.x;
                if (i < nvec_valid) {
                    if (i < p.cache_vecs) {
                        V c;
#pragma unroll
                        for (int j = 0; j < VEC; ++j) c.v[j] = raw[u][j];
                        cache[i] = c;
                    }
                    float v[VEC];
                    to_values<T, VEC>(p, raw[u], mrow, i * VEC, valid, v);
                    acc = maxsum_add<VEC>(acc, v);
                }
            }
        }
        const MaxSum r = block_maxsum(acc, scratch);
        const RowStats st = row_stats(r.m, r.s);
        T* yrow = y + o.y;
        for (int64_t i = threadIdx.x; i < nvec; i += blockDim.x) {
            float v[VEC];
            if (i < nvec_valid) {
                T raw[VEC];
                if (i < p.cache_vecs) {
                    const V c = cache[i];
#pragma unroll
                    for (int j = 0; j < VEC; ++j) raw[j] = c.v[j];
                } else {
                    load_raw<T, VEC>(p, xrow, i * VEC, raw);
                }
                to_values<T, VEC>(p, raw, mrow, i * VEC, valid, v);
            } else {
#pragma unroll
                for (int j = 0; j < VEC; ++j) v[j] = -INFINITY;
            }
            float out[VEC];
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                out[j] = st.m == -INFINITY ? empty_row_value(p.log) : output_value(p.log, v[j], st);
            }
            store_values<T, VEC>(p, yrow, i * VEC, out);
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
        const int64_t valid = valid_length(p, o);
        const uint8_t* mrow = p.mask ? p.mask + o.m : nullptr;
        MaxSum acc{-INFINITY, 0.0f};
        for (int64_t j = 0; j < valid; ++j) {
            float v[1];
            load_values<T, 1>(p, x + o.x, mrow, j, valid, v);
            acc = maxsum_add<1>(acc, v);
        }
        const RowStats st = row_stats(acc.m, acc.s);
        for (int64_t j = 0; j < p.n; ++j) {
            float v[1] = {-INFINITY};
            if (j < valid) load_values<T, 1>(p, x + o.x, mrow, j, valid, v);
            const float out[1] = {st.m == -INFINITY ? empty_row_value(p.log) : output_value(p.log, v[0], st)};
            store_values<T, 1>(p, y + o.y, j, out);
        }
    }
}

// ---------------------------------------------------------------- instantiation list
enum class Strategy { kWarp, kBlock, kStrided };

struct KernelEntry {
    Strategy strategy;
    tops_dtype_t dtype;
    int vec;
    int group;  // warp rows only
    int iters;  // warp rows only
    int rows;   // warp rows only: rows per lane group
    const void* fn;
    const char* name;
};

#define TOPS_SOFTMAX_WARP(T, DT, NAME, V, I, G, R)                                                              \
    {Strategy::kWarp, DT, V, G, I, R, reinterpret_cast<const void*>(&softmax_warp_rows_kernel<T, V, I, G, R>), \
     "softmax_" NAME "_warp_g" #G "_i" #I "_r" #R "_v" #V "_cuda"}
#define TOPS_SOFTMAX_BLOCK(T, DT, NAME, V)                                                                \
    {Strategy::kBlock, DT, V, 0, 0, 0,                                                                         \
     reinterpret_cast<const void*>(&softmax_block_rows_kernel<T, V, kBlockSmallThreads>),                      \
     "softmax_" NAME "_block_smem_t256_v" #V "_cuda"},                                                         \
    {Strategy::kBlock, DT, V, 1, 0, 0, reinterpret_cast<const void*>(&softmax_block_rows_kernel<T, V, kBlockMaxThreads>), \
     "softmax_" NAME "_block_smem_t1024_v" #V "_cuda"}
// VM: elements per 16-byte vector. Warp rows cover up to 32 * VM * 8 elements
// vectorized and 32 * 8 unvectorized; longer unvectorized rows take the block
// kernel. Two rows per lane group where a lane holds at most 2 vectors of a row.
#define TOPS_SOFTMAX_DTYPE(T, DT, NAME, VM)                                                             \
    TOPS_SOFTMAX_WARP(T, DT, NAME, VM, 1, 4, 2), TOPS_SOFTMAX_WARP(T, DT, NAME, VM, 1, 8, 2),            \
    TOPS_SOFTMAX_WARP(T, DT, NAME, VM, 1, 16, 2), TOPS_SOFTMAX_WARP(T, DT, NAME, VM, 1, 32, 2),          \
    TOPS_SOFTMAX_WARP(T, DT, NAME, VM, 2, 32, 2), TOPS_SOFTMAX_WARP(T, DT, NAME, VM, 4, 32, 1),          \
    TOPS_SOFTMAX_WARP(T, DT, NAME, VM, 8, 32, 1), TOPS_SOFTMAX_WARP(T, DT, NAME, 1, 1, 32, 2),           \
    TOPS_SOFTMAX_WARP(T, DT, NAME, 1, 2, 32, 2), TOPS_SOFTMAX_WARP(T, DT, NAME, 1, 4, 32, 1),            \
    TOPS_SOFTMAX_WARP(T, DT, NAME, 1, 8, 32, 1), TOPS_SOFTMAX_BLOCK(T, DT, NAME, VM),                     \
    TOPS_SOFTMAX_BLOCK(T, DT, NAME, 1),                                                                  \
    {Strategy::kStrided, DT, 1, 0, 0, 0, reinterpret_cast<const void*>(&softmax_strided_rows_kernel<T>), \
     "softmax_" NAME "_strided_cuda"}

const KernelEntry kKernels[] = {
    TOPS_SOFTMAX_DTYPE(float, TOPS_DTYPE_F32, "f32", 4),
    TOPS_SOFTMAX_DTYPE(__half, TOPS_DTYPE_F16, "f16", 8),
    TOPS_SOFTMAX_DTYPE(__nv_bfloat16, TOPS_DTYPE_BF16, "bf16", 8),
};

#undef TOPS_SOFTMAX_DTYPE
#undef TOPS_SOFTMAX_BLOCK
#undef TOPS_SOFTMAX_WARP

const KernelEntry* find_kernel(Strategy s, tops_dtype_t dt, int vec, int group, int iters) {
    for (const KernelEntry& e : kKernels) {
        if (e.strategy == s && e.dtype == dt && e.vec == vec && e.group == group && e.iters == iters) return &e;
    }
    return nullptr;
}

// ---------------------------------------------------------------- planning
struct Launch {
    const KernelEntry* kernel = nullptr;
    int grid = 0;
    int threads = 0;
    size_t smem = 0;
    int64_t cache_vecs = 0;
};

int pow2_at_least(int64_t v) {
    int p = 1;
    while (p < v) p *= 2;
    return p;
}

// Picks the kernel and launch shape for vectors of `vec` elements: the one
// dispatch point that turns the runtime shape into template parameters.
Status choose_launch(const SoftmaxParams& sp, const DeviceInfo& dev, bool strided, int64_t rows, int vec,
                     Launch* out) {
    const int64_t n = sp.x.dims[sp.axis];
    const size_t esize = dtype_size(sp.x.dtype);
    Launch l;
    if (strided) {
        l.kernel = find_kernel(Strategy::kStrided, sp.x.dtype, 1, 0, 0);
        l.threads = kStridedThreads;
    } else if (n <= int64_t(kWarpSize) * vec * kWarpRowsMaxIters) {
        const int64_t per_lane = (n + vec - 1) / vec;  // vectors a full warp would split
        int group = kWarpSize;
        int iters = 1;
        if (per_lane <= kWarpSize) {
            group = std::max(vec == 1 ? kWarpSize : 4, pow2_at_least(per_lane));
        } else {
            iters = pow2_at_least((per_lane + kWarpSize - 1) / kWarpSize);
        }
        l.kernel = find_kernel(Strategy::kWarp, sp.x.dtype, vec, group, iters);
        l.threads = kWarpRowsThreads;
    } else {
        // Cache as much of the row as the block's opt-in shared memory holds:
        // rows up to 56 Ki f32 / 113 Ki f16 are read once; longer rows re-read
        // only their uncached tail.
        const size_t vec_bytes = size_t(vec) * esize;
        const size_t smem_budget = size_t(dev.max_smem_per_block_optin) - kWarpSize * sizeof(MaxSum);
        const int64_t nvec = n / vec;
        l.cache_vecs = std::min<int64_t>(nvec, int64_t(smem_budget / vec_bytes));
        l.threads = int(std::clamp<int64_t>(pow2_at_least((nvec + kBlockVecsPerThread - 1) / kBlockVecsPerThread),
                                            kBlockMinThreads, kBlockMaxThreads));
        // group field: 0 = the 256-thread register budget, 1 = the 1024-thread one
        l.kernel = find_kernel(Strategy::kBlock, sp.x.dtype, vec, l.threads <= kBlockSmallThreads ? 0 : 1, 0);
        l.smem = size_t(l.cache_vecs) * vec_bytes;
    }
    if (!l.kernel) return Status(TOPS_ERROR_INTERNAL, "softmax: no CUDA kernel instantiated for this case");
    if (l.smem > 0) {
        TOPS_RETURN_IF_ERROR(cuda_status(
            cudaFuncSetAttribute(l.kernel->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(l.smem)),
            "softmax: cudaFuncSetAttribute"));
    }
    int per_sm = 0;
    TOPS_RETURN_IF_ERROR(cuda_status(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l.kernel->fn, l.threads, l.smem),
        "softmax: cudaOccupancyMaxActiveBlocksPerMultiprocessor"));
    if (per_sm < 1) return Status(TOPS_ERROR_INTERNAL, fmt("softmax: ", l.kernel->name, " cannot be resident"));
    int64_t rows_per_block = 1;
    if (l.kernel->strategy == Strategy::kWarp) rows_per_block = kWarpRowsThreads / l.kernel->group * l.kernel->rows;
    if (l.kernel->strategy == Strategy::kStrided) rows_per_block = kStridedThreads;
    // One block per row set, not a persistent grid: the block scheduler
    // balances the tail, where a persistent grid of 3-4 row sets per block
    // leaves whole row sets of imbalance. The kernels still loop, for row
    // counts beyond the grid limit.
    const int64_t needed = (rows + rows_per_block - 1) / rows_per_block;
    l.grid = int(std::max<int64_t>(1, std::min<int64_t>(needed, kMaxGrid)));
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
        p.mask_vec = use_vec && p.mask && mask_vec_strides_ && aligned(p.mask, size_t(vm_));
        void* kargs[] = {&p};
        cudaError_t err = cudaLaunchKernel(l.kernel->fn, dim3(l.grid), dim3(l.threads), kargs, l.smem,
                                           static_cast<cudaStream_t>(ctx.stream));
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
    base.scale_log2e = sp.scale * kLog2e;
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
                          " threads=", (vec_strides ? vec_launch : scalar_launch).threads,
                          " smem=", (vec_strides ? vec_launch : scalar_launch).smem);
    out->reset(new SoftmaxPlanCuda(base, vec_launch, scalar_launch, vm, mask_vec_strides, dev.ordinal,
                                   std::move(why)));
    return Status::ok();
}

}  // namespace tops::cuda
