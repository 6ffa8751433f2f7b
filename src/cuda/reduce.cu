// Reduce (sum, mean, max, min, prod, sumsq, norm2) over any set of axes of a
// strided f32 / f16 / bf16 tensor on CUDA, f32 accumulation, deterministic.
//
// The plan first drops size-1 dims and merges neighbouring dims of the same
// kind (kept / reduced) that continue each other in memory, then picks one
// of two shapes of work:
// - rows: the reduced elements of one output form a row. When the reduced
//   dims merge into one unit-stride dim (last-dim reduction, global average
//   pooling [N, C, H, W] over (2, 3)), a team of threads streams the row with
//   16-byte loads (a few scalar lanes take the unaligned head and the tail,
//   so any row length and offset works). Other layouts use the same kernel
//   with per-element index arithmetic. A warp per row for rows up to a few
//   thousand elements, a block per row beyond. Rows of whole vectors at
//   aligned, equally spaced starts (dense rows, NCHW pooling) take a leaner
//   warp-per-row kernel with all of a row's loads in flight at once.
// - columns: the innermost dim of x is kept (first-dim reduction, reducing
//   N or C of NCHW). Each thread owns VEC neighbouring outputs and walks the
//   reduced elements, so a warp reads whole 512-byte lines; the warps of a
//   block split the reduced range and combine through shared memory.
// When these leave the GPU short of work (few rows, few columns, one
// output), the reduced range is split over more blocks: each writes a
// partial to the caller's workspace (OpPlan::workspace_size) and a second
// kernel combines a warp per output. That kernel is a programmatic
// dependent launch on sm_90 (scheduled while the split kernel runs, it
// waits for its partials with griddepcontrol.wait). A split row is cut into
// interleaved pieces (split s reads pieces s, s + splits, ...), so at any
// moment the blocks read neighbouring memory, as over the rows of a
// last-dim reduction (whole-tensor sum on an H100: docs/performance.md).
// Every partial covers a fixed set of pieces and every combine runs in a
// fixed order (no atomics), so the same input gives bitwise the same output
// on every run. (Rows split into a scalar head and a
// vector body by their address modulo 16 bytes: the same values copied to a
// differently aligned address may round differently in the last bit.)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "common/env.hpp"
#include "cuda/common/device.cuh"
#include "cuda/norm_reduce_eltwise.hpp"
#include "cuda/vec_convert.cuh"

namespace tops::cuda {
namespace {

constexpr int kRowsThreads = 256;     // block size of the rows kernel
constexpr int kRowsWarpMaxLen = 4096;  // rows up to this length get a warp, longer a block
constexpr int kUnroll = 4;            // independent loads in flight per thread (columns)
constexpr int kRowsUnroll = 4;        // independent loads in flight per thread (rows)
constexpr int kColsLanes = kWarpSize;  // threads along the outputs of a column tile
constexpr int kColsWarps = 8;         // warps splitting the reduced range of a tile
constexpr int kFinalThreads = 256;
constexpr int64_t kMinSplitElems = 8192;  // smallest reduced range worth a split (rows)
constexpr int64_t kSplitPiece = 8192;     // rows split: interleaved pieces of about this many elements
constexpr int64_t kMinSplitRows = 64;     // smallest reduced range worth a split (columns)
constexpr int kMaxSplits = 4096;
constexpr size_t kWorkspaceAlign = 16;

// How values combine; mean and norm2 finish with a post-op.
enum class Acc { add, addsq, max, min, mul };
enum class Post { none, scale, sqrt };

template <Acc A>
struct AccOp {
    static __device__ __forceinline__ float init() {
        if constexpr (A == Acc::max) return -INFINITY;
        if constexpr (A == Acc::min) return INFINITY;
        if constexpr (A == Acc::mul) return 1.0f;
        return 0.0f;
    }
    // NaN propagates through max and min.
    static __device__ __forceinline__ float combine(float a, float b) {
        if constexpr (A == Acc::max) return (a > b || a != a) ? a : b;
        if constexpr (A == Acc::min) return (a < b || a != a) ? a : b;
        if constexpr (A == Acc::mul) return a * b;
        return a + b;
    }
    static __device__ __forceinline__ float apply(float acc, float v) {
        if constexpr (A == Acc::addsq) return fmaf(v, v, acc);
        return combine(acc, v);
    }
};

template <Acc A, int Width>
__device__ __forceinline__ float group_reduce(float v) {
#pragma unroll
    for (int o = Width / 2; o > 0; o /= 2) v = AccOp<A>::combine(v, __shfl_xor_sync(kFullMask, v, o, Width));
    return v;
}

// Multi-index decomposition of a flat index (dims outermost first) into
// element offsets of x and y.
struct Indexer {
    int ndim = 0;
    FastDivmod div[kMaxRank];
    int64_t xs[kMaxRank] = {};
    int64_t ys[kMaxRank] = {};
};

__device__ __forceinline__ void index_offsets(const Indexer& ix, int64_t flat, int64_t* xo, int64_t* yo) {
    int64_t ox = 0, oy = 0;
    uint64_t r = uint64_t(flat);
#pragma unroll
    for (int i = kMaxRank - 1; i >= 1; --i) {
        if (i < ix.ndim) {
            uint64_t q, rem;
            ix.div[i].divmod(r, &q, &rem);
            ox += int64_t(rem) * ix.xs[i];
            oy += int64_t(rem) * ix.ys[i];
            r = q;
        }
    }
    if (ix.ndim > 0) {
        ox += int64_t(r) * ix.xs[0];
        oy += int64_t(r) * ix.ys[0];
    }
    *xo = ox;
    *yo = oy;
}

// x offset of reduced element r (one dim: a multiply).
__device__ __forceinline__ int64_t reduced_offset(const Indexer& red, int64_t r) {
    if (red.ndim == 1) return r * red.xs[0];
    int64_t xo, yo;
    index_offsets(red, r, &xo, &yo);
    return xo;
}

// The one parameter struct of every reduce kernel (passed by value).
struct ReduceKernelParams {
    const void* x = nullptr;
    void* y = nullptr;
    float* partial = nullptr;    // (outputs, splits) f32 when splits > 1
    int64_t outputs = 0;
    int64_t len = 0;             // reduced elements per output
    int64_t chunk = 0;           // reduced elements per split
    int splits = 1;
    bool contiguous = false;     // rows: the reduced elements are one unit-stride run
    int64_t inner = 1;           // columns: outputs along the unit-stride kept dim
    Indexer kept;                // output index -> x and y offsets of its first element
    Indexer red;                 // reduced index -> x offset
    tops_dtype_t y_dtype = TOPS_DTYPE_F32;
    Post post = Post::none;
    float post_scale = 1.0f;     // mean: 1 / len
    bool streaming = false;      // x loaded evict-first in L2 (l2_policy)
};

__device__ __forceinline__ void store_output(const ReduceKernelParams& p, int64_t o, float v) {
    if (p.post == Post::scale) v *= p.post_scale;
    if (p.post == Post::sqrt) v = sqrtf(v);
    int64_t xo, yo;
    index_offsets(p.kept, o, &xo, &yo);
    switch (p.y_dtype) {
        case TOPS_DTYPE_F16: static_cast<__half*>(p.y)[yo] = ElemTraits<__half>::from_float(v); break;
        case TOPS_DTYPE_BF16:
            static_cast<__nv_bfloat16*>(p.y)[yo] = ElemTraits<__nv_bfloat16>::from_float(v);
            break;
        default: static_cast<float*>(p.y)[yo] = v; break;
    }
}

// A finished (output, split) value: to y, or to the partial buffer.
__device__ __forceinline__ void emit(const ReduceKernelParams& p, int64_t o, int split, float v) {
    if (p.splits > 1) {
        p.partial[o * p.splits + split] = v;
    } else {
        store_output(p, o, v);
    }
}

// Programmatic dependent launch (device.cuh): the split kernels let the
// combine kernel be scheduled while they run; the combine kernel waits for
// their completion (and the visibility of their partials) before reading any.

// ---------------------------------------------------------------- rows
// Work item w = (output, split); TEAM threads reduce its range of the row.
template <class T, Acc A, int VEC, int TEAM>
__global__ void __launch_bounds__(kRowsThreads)
    reduce_rows_kernel(const __grid_constant__ ReduceKernelParams p) {
    static_assert(kRowsThreads % TEAM == 0 && (TEAM == kWarpSize || TEAM == kRowsThreads), "warp or block teams");
    static_assert(VEC * sizeof(T) <= 16, "vectors are at most 16 bytes");
    constexpr int kTeams = kRowsThreads / TEAM;
    __shared__ float scratch[kRowsThreads / kWarpSize];
    using Op = AccOp<A>;
    const T* x = static_cast<const T*>(p.x);
    const uint64_t policy = l2_policy(p.streaming);
    const int lane = threadIdx.x % TEAM;
    const int64_t items = p.outputs * p.splits;
    if (p.splits > 1) allow_dependent_launch();
    for (int64_t base = int64_t(blockIdx.x) * kTeams; base < items; base += int64_t(gridDim.x) * kTeams) {
        const int64_t w = base + threadIdx.x / TEAM;
        float acc[kRowsUnroll];
#pragma unroll
        for (int u = 0; u < kRowsUnroll; ++u) acc[u] = Op::init();
        if (w < items) {
            const int64_t o = w / p.splits;
            const int split = int(w - o * p.splits);
            int64_t xo, yo;
            index_offsets(p.kept, o, &xo, &yo);
            const T* row = x + xo;
            // Split `split` owns the pieces split, split + splits, ... of p.chunk
            // elements (one piece when chunk * splits >= len).
            for (int64_t b = int64_t(split) * p.chunk; b < p.len; b += int64_t(p.splits) * p.chunk) {
                const int64_t e = b + p.chunk < p.len ? b + p.chunk : p.len;
                if (VEC > 1 && p.contiguous) {
                    // Scalar head up to a 16-byte boundary, vector body, scalar tail.
                    const int64_t mis = int64_t((reinterpret_cast<uintptr_t>(row + b) / sizeof(T)) % VEC);
                    const int64_t head = std::min<int64_t>((VEC - mis) % VEC, e - b);
                    const int64_t nvec = (e - b - head) / VEC;
                    const int64_t body = b + head;
                    const int64_t tail = body + nvec * VEC;
                    if (lane < head) acc[0] = Op::apply(acc[0], ElemTraits<T>::to_float(row[b + lane]));
                    if (lane < e - tail) acc[1] = Op::apply(acc[1], ElemTraits<T>::to_float(row[tail + lane]));
                    const Vec<T, VEC>* vrow = reinterpret_cast<const Vec<T, VEC>*>(row + body);
                    for (int64_t i0 = lane; i0 < nvec; i0 += int64_t(kRowsUnroll) * TEAM) {
                        Vec<T, VEC> t[kRowsUnroll];
#pragma unroll
                        for (int u = 0; u < kRowsUnroll; ++u) {
                            const int64_t i = i0 + int64_t(u) * TEAM;
                            if (i < nvec) t[u] = load_with_policy(vrow + i, policy);
                        }
#pragma unroll
                        for (int u = 0; u < kRowsUnroll; ++u) {
                            const int64_t i = i0 + int64_t(u) * TEAM;
                            if (i < nvec) {
                                float f[VEC];
                                vec_to_f32<T, VEC>(t[u], f);
#pragma unroll
                                for (int j = 0; j < VEC; ++j) acc[u] = Op::apply(acc[u], f[j]);
                            }
                        }
                    }
                } else {
                    for (int64_t i0 = b + lane; i0 < e; i0 += int64_t(kRowsUnroll) * TEAM) {
                        T t[kRowsUnroll];
#pragma unroll
                        for (int u = 0; u < kRowsUnroll; ++u) {
                            const int64_t i = i0 + int64_t(u) * TEAM;
                            if (i < e) t[u] = load_with_policy(row + reduced_offset(p.red, i), policy);
                        }
#pragma unroll
                        for (int u = 0; u < kRowsUnroll; ++u) {
                            const int64_t i = i0 + int64_t(u) * TEAM;
                            if (i < e) acc[u] = Op::apply(acc[u], ElemTraits<T>::to_float(t[u]));
                        }
                    }
                }
            }
        }
        static_assert((kRowsUnroll & (kRowsUnroll - 1)) == 0, "pairwise combine of a power of two");
#pragma unroll
        for (int w = kRowsUnroll / 2; w > 0; w /= 2) {
#pragma unroll
            for (int u = 0; u < w; ++u) acc[u] = Op::combine(acc[u], acc[u + w]);
        }
        float v = acc[0];
        v = group_reduce<A, kWarpSize>(v);
        if constexpr (TEAM > kWarpSize) {
            const int warp = threadIdx.x / kWarpSize;
            __syncthreads();  // scratch of the previous item has been read
            if (threadIdx.x % kWarpSize == 0) scratch[warp] = v;
            __syncthreads();
            v = scratch[0];
#pragma unroll
            for (int k = 1; k < TEAM / kWarpSize; ++k) v = Op::combine(v, scratch[k]);
        }
        if (lane == 0 && w < items) {
            const int64_t o = w / p.splits;
            emit(p, o, int(w - o * p.splits), v);
        }
    }
}

// ---------------------------------------------------------------- dense rows
// Rows of whole 16-byte vectors at 16-byte aligned, equally spaced starts, up
// to kRowsWarpMaxLen elements (global pooling of NCHW, last-dim sums of dense
// rows), unsplit: a warp per row issues the loads of up to kDenseVecs vectors
// per lane before combining any, and a row's start is one multiply (no
// divmods, no scalar head or tail). kDenseAccs chains keep the adds off the
// critical path. Which rows qualify: plan_reduce.
// Loads in flight per lane x resident 256-thread blocks per SM, H200, f16 /
// f32 global pool 64x256x56x56 (rows of 392 / 784 vectors): 16 x 2 (95
// registers) 31.0-31.2 / 56.7 us; 16 x 3 (80 registers, spills) 33.2 / 64.8;
// 8 x 4 32.8 / 58.5; 12 x 2 (a second, nearly empty round per f16 row)
// 35.1 / 63.3; the general rows kernel 34.5 / 58.4 (docs/performance.md).
constexpr int kDenseVecs = 16;      // a 2-byte row of 4096 in one round
constexpr int kDenseMinBlocks = 2;
constexpr int kDenseAccs = 4;       // independent accumulators per lane

template <class T, Acc A, int VEC>
__global__ void __launch_bounds__(kRowsThreads, kDenseMinBlocks)
    reduce_dense_rows_kernel(const __grid_constant__ ReduceKernelParams p) {
    static_assert(VEC * sizeof(T) == 16, "whole 16-byte vectors");
    static_assert(kDenseVecs % kDenseAccs == 0 && (kDenseAccs & (kDenseAccs - 1)) == 0, "pairwise combine");
    constexpr int kWarps = kRowsThreads / kWarpSize;
    using Op = AccOp<A>;
    const uint64_t policy = l2_policy(p.streaming);
    const int lane = threadIdx.x % kWarpSize;
    const int nvec = int(p.len / VEC);  // len <= kRowsWarpMaxLen
    const int64_t row_stride = p.kept.ndim > 0 ? p.kept.xs[0] : 0;
    for (int64_t o = int64_t(blockIdx.x) * kWarps + threadIdx.x / kWarpSize; o < p.outputs;
         o += int64_t(gridDim.x) * kWarps) {
        const Vec<T, VEC>* row = reinterpret_cast<const Vec<T, VEC>*>(static_cast<const T*>(p.x) + o * row_stride);
        float acc[kDenseAccs];
#pragma unroll
        for (int u = 0; u < kDenseAccs; ++u) acc[u] = Op::init();
        for (int c = lane; c < nvec; c += kDenseVecs * kWarpSize) {
            Vec<T, VEC> t[kDenseVecs];  // (kDenseVecs) vectors of this lane, kWarpSize apart
#pragma unroll
            for (int k = 0; k < kDenseVecs; ++k) {
                if (c + k * kWarpSize < nvec) t[k] = load_with_policy(row + c + k * kWarpSize, policy);
            }
#pragma unroll
            for (int k = 0; k < kDenseVecs; ++k) {
                if (c + k * kWarpSize < nvec) {
                    float f[VEC];
                    vec_to_f32<T, VEC>(t[k], f);
#pragma unroll
                    for (int j = 0; j < VEC; ++j) acc[k % kDenseAccs] = Op::apply(acc[k % kDenseAccs], f[j]);
                }
            }
        }
#pragma unroll
        for (int w = kDenseAccs / 2; w > 0; w /= 2) {
#pragma unroll
            for (int u = 0; u < w; ++u) acc[u] = Op::combine(acc[u], acc[u + w]);
        }
        const float v = group_reduce<A, kWarpSize>(acc[0]);
        if (lane == 0) store_output(p, o, v);
    }
}

// ---------------------------------------------------------------- columns
// Block (kColsLanes, kColsWarps): tile of kColsLanes * VEC neighbouring
// outputs along the unit-stride kept dim; blockIdx.y is the split.
template <class T, Acc A, int VEC>
__global__ void __launch_bounds__(kColsLanes * kColsWarps)
    reduce_cols_kernel(const __grid_constant__ ReduceKernelParams p) {
    static_assert(VEC * sizeof(T) <= 16, "vectors are at most 16 bytes");
    constexpr int kTile = kColsLanes * VEC;
    __shared__ float part[kColsWarps][kTile];  // (warps, tile outputs)
    using Op = AccOp<A>;
    const T* x = static_cast<const T*>(p.x);
    const uint64_t policy = l2_policy(p.streaming);
    const int64_t tiles_per_outer = (p.inner + kTile - 1) / kTile;
    const int64_t outer = int64_t(blockIdx.x) / tiles_per_outer;
    const int64_t c0 = (int64_t(blockIdx.x) - outer * tiles_per_outer) * kTile + int64_t(threadIdx.x) * VEC;
    const int split = blockIdx.y;
    if (p.splits > 1) allow_dependent_launch();
    const int64_t b = int64_t(split) * p.chunk;
    const int64_t e = b + p.chunk < p.len ? b + p.chunk : p.len;
    float acc[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) acc[j] = Op::init();
    if (c0 < p.inner) {
        int64_t xo, yo;
        index_offsets(p.kept, outer * p.inner + c0, &xo, &yo);
        const T* col = x + xo;
        for (int64_t r0 = b + threadIdx.y; r0 < e; r0 += int64_t(kUnroll) * kColsWarps) {
            Vec<T, VEC> t[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                const int64_t r = r0 + int64_t(u) * kColsWarps;
                if (r < e) {
                    if constexpr (VEC == 1) {
                        t[u].v[0] = load_with_policy(col + reduced_offset(p.red, r), policy);
                    } else {
                        t[u] = load_with_policy(reinterpret_cast<const Vec<T, VEC>*>(col + reduced_offset(p.red, r)),
                                                policy);
                    }
                }
            }
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                if (r0 + int64_t(u) * kColsWarps < e) {
                    float f[VEC];
                    vec_to_f32<T, VEC>(t[u], f);
#pragma unroll
                    for (int j = 0; j < VEC; ++j) acc[j] = Op::apply(acc[j], f[j]);
                }
            }
        }
    }
#pragma unroll
    for (int j = 0; j < VEC; ++j) part[threadIdx.y][threadIdx.x * VEC + j] = acc[j];
    __syncthreads();
    // Warps combine in a fixed order; each thread finishes tile outputs.
    const int tid = threadIdx.y * kColsLanes + threadIdx.x;
    for (int k = tid; k < kTile; k += kColsLanes * kColsWarps) {
        const int64_t c = (int64_t(blockIdx.x) - outer * tiles_per_outer) * kTile + k;
        if (c >= p.inner) continue;
        float v = part[0][k];
#pragma unroll
        for (int wy = 1; wy < kColsWarps; ++wy) v = Op::combine(v, part[wy][k]);
        emit(p, outer * p.inner + c, split, v);
    }
}

// ---------------------------------------------------------------- split combine
// A warp per output combines its `splits` partials: lanes stride over them,
// then a fixed shuffle tree.
template <Acc A>
__global__ void __launch_bounds__(kFinalThreads)
    reduce_combine_kernel(const __grid_constant__ ReduceKernelParams p) {
    using Op = AccOp<A>;
    wait_for_primary();
    const int lane = threadIdx.x % kWarpSize;
    constexpr int kWarps = kFinalThreads / kWarpSize;
    for (int64_t o = int64_t(blockIdx.x) * kWarps + threadIdx.x / kWarpSize; o < p.outputs;
         o += int64_t(gridDim.x) * kWarps) {
        float v = Op::init();
        for (int s = lane; s < p.splits; s += kWarpSize) v = Op::combine(v, p.partial[o * p.splits + s]);
        v = group_reduce<A, kWarpSize>(v);
        if (lane == 0) store_output(p, o, v);
    }
}

// ---------------------------------------------------------------- instantiation list
enum class Shape { kRows, kDenseRows, kCols, kCombine };

struct KernelEntry {
    Shape shape;
    tops_dtype_t dtype;  // kCombine: TOPS_DTYPE_INVALID (f32 partials)
    Acc acc;
    int vec;
    int team;  // rows only
    const void* fn;
    const char* name;
};

#define TOPS_REDUCE_ROWS(T, DT, NAME, A, V, TEAM)                                                       \
    {Shape::kRows, DT, Acc::A, V, TEAM, reinterpret_cast<const void*>(&reduce_rows_kernel<T, Acc::A, V, TEAM>), \
     "reduce_" #A "_" NAME "_rows_t" #TEAM "_v" #V "_cuda"}
#define TOPS_REDUCE_DENSE(T, DT, NAME, A, V)                                                             \
    {Shape::kDenseRows, DT, Acc::A, V, kWarpSize,                                                         \
     reinterpret_cast<const void*>(&reduce_dense_rows_kernel<T, Acc::A, V>),                              \
     "reduce_" #A "_" NAME "_dense_rows_v" #V "_cuda"}
#define TOPS_REDUCE_COLS(T, DT, NAME, A, V)                                                          \
    {Shape::kCols, DT, Acc::A, V, 0, reinterpret_cast<const void*>(&reduce_cols_kernel<T, Acc::A, V>), \
     "reduce_" #A "_" NAME "_cols_v" #V "_cuda"}
#define TOPS_REDUCE_ACC(T, DT, NAME, A, VM)                                                             \
    TOPS_REDUCE_ROWS(T, DT, NAME, A, VM, 32), TOPS_REDUCE_ROWS(T, DT, NAME, A, VM, 256),               \
    TOPS_REDUCE_ROWS(T, DT, NAME, A, 1, 32), TOPS_REDUCE_ROWS(T, DT, NAME, A, 1, 256),                 \
    TOPS_REDUCE_DENSE(T, DT, NAME, A, VM), TOPS_REDUCE_COLS(T, DT, NAME, A, VM), TOPS_REDUCE_COLS(T, DT, NAME, A, 1)
#define TOPS_REDUCE_DTYPE(T, DT, NAME, VM)                                                           \
    TOPS_REDUCE_ACC(T, DT, NAME, add, VM), TOPS_REDUCE_ACC(T, DT, NAME, addsq, VM),                   \
    TOPS_REDUCE_ACC(T, DT, NAME, max, VM), TOPS_REDUCE_ACC(T, DT, NAME, min, VM),                     \
    TOPS_REDUCE_ACC(T, DT, NAME, mul, VM)
#define TOPS_REDUCE_COMBINE(A)                                                                        \
    {Shape::kCombine, TOPS_DTYPE_INVALID, Acc::A, 1, 0,                                               \
     reinterpret_cast<const void*>(&reduce_combine_kernel<Acc::A>), "reduce_" #A "_combine_cuda"}

const KernelEntry kKernels[] = {
    TOPS_REDUCE_DTYPE(float, TOPS_DTYPE_F32, "f32", 4),
    TOPS_REDUCE_DTYPE(__half, TOPS_DTYPE_F16, "f16", 8),
    TOPS_REDUCE_DTYPE(__nv_bfloat16, TOPS_DTYPE_BF16, "bf16", 8),
    TOPS_REDUCE_COMBINE(add), TOPS_REDUCE_COMBINE(addsq), TOPS_REDUCE_COMBINE(max),
    TOPS_REDUCE_COMBINE(min), TOPS_REDUCE_COMBINE(mul),
};

#undef TOPS_REDUCE_COMBINE
#undef TOPS_REDUCE_DTYPE
#undef TOPS_REDUCE_ACC
#undef TOPS_REDUCE_COLS
#undef TOPS_REDUCE_DENSE
#undef TOPS_REDUCE_ROWS

const KernelEntry* find_kernel(Shape s, tops_dtype_t dt, Acc a, int vec, int team) {
    for (const KernelEntry& e : kKernels) {
        if (e.shape == s && e.dtype == dt && e.acc == a && e.vec == vec && e.team == team) return &e;
    }
    return nullptr;
}

// ---------------------------------------------------------------- planning
struct Launch {
    const KernelEntry* kernel = nullptr;
    dim3 grid;
    dim3 block;
    bool pdl = false;  // combine: launched as a programmatic dependent of the split kernel
};

// The launch a plan reports (name, reason): the first kernel of the execute
// order dense > 16-byte vectors > scalar that the layout allows (execute may
// still step down one when x is misaligned).
const Launch& preferred_launch(const Launch& dense, const Launch& vec, const Launch& scalar) {
    return dense.kernel ? dense : vec.kernel ? vec : scalar;
}

struct Dim {
    int64_t d, xs, ys;
};

// Dims of one kind (kept or reduced) in x's order, size-1 dims dropped,
// neighbours merged where x (and y) continue each other.
int collect_dims(const ReduceParams& rp, bool reduced, Dim* out) {
    int n = 0;
    for (int i = 0; i < rp.x.rank; ++i) {
        if (bool((rp.axes >> i) & 1u) != reduced || rp.x.dims[i] == 1) continue;
        const Dim c{rp.x.dims[i], rp.x.strides[i], reduced ? 0 : rp.y.strides[i]};
        if (n > 0) {
            Dim& o = out[n - 1];
            if (o.xs == c.xs * c.d && o.ys == c.ys * c.d) {
                o = {o.d * c.d, c.xs, c.ys};
                continue;
            }
        }
        out[n++] = c;
    }
    return n;
}

void fill_indexer(const Dim* dims, int n, Indexer* ix, int64_t* count) {
    ix->ndim = n;
    *count = 1;
    for (int i = 0; i < n; ++i) {
        ix->div[i] = FastDivmod(uint64_t(dims[i].d));
        ix->xs[i] = dims[i].xs;
        ix->ys[i] = dims[i].ys;
        *count *= dims[i].d;
    }
}

Status resident_blocks(const void* fn, int threads, const DeviceInfo& dev, int64_t* out) {
    int per_sm = 0;
    TOPS_RETURN_IF_ERROR(cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, threads, 0),
                                     "reduce: cudaOccupancyMaxActiveBlocksPerMultiprocessor"));
    if (per_sm < 1) return Status(TOPS_ERROR_INTERNAL, "reduce: a kernel cannot be resident");
    *out = int64_t(per_sm) * dev.sm_count;
    return Status::ok();
}

int choose_splits(int64_t blocks, int64_t resident, int64_t len, int64_t min_len) {
    blocks = std::max<int64_t>(blocks, 1);
    if (blocks >= resident || len < 2 * min_len) return 1;
    const int64_t want = resident / blocks;  // floor: every block fits one wave
    return int(std::clamp<int64_t>(std::min(want, len / min_len), 1, kMaxSplits));
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

Acc acc_of(ReduceOp op) {
    switch (op) {
        case ReduceOp::max: return Acc::max;
        case ReduceOp::min: return Acc::min;
        case ReduceOp::prod: return Acc::mul;
        case ReduceOp::sumsq:
        case ReduceOp::norm2: return Acc::addsq;
        default: return Acc::add;
    }
}

class ReducePlanCuda final : public OpPlan {
public:
    ReducePlanCuda(const ReduceKernelParams& base, const Launch& dense, const Launch& main_vec,
                   const Launch& main_scalar, const Launch& combine, int device, std::string why)
        : base_(base), dense_(dense), vec_(main_vec), scalar_(main_scalar), combine_(combine), device_(device),
          why_(std::move(why)) {}

    size_t workspace_size() const override {
        if (base_.splits <= 1) return 0;
        return size_t(base_.outputs) * size_t(base_.splits) * sizeof(float) + kWorkspaceAlign;
    }

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (base_.outputs == 0) return Status::ok();
        DeviceScope scope(device_);
        TOPS_RETURN_IF_ERROR(scope.status());
        ReduceKernelParams p = base_;
        p.x = args.in(TOPS_ARG_X);
        p.y = args.out(TOPS_ARG_Y);
        if (p.splits > 1) {
            const uintptr_t ws = reinterpret_cast<uintptr_t>(args.workspace);
            p.partial = reinterpret_cast<float*>((ws + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign);
        }
        // Dense rows and columns need aligned vector starts; rows align themselves (scalar head).
        const bool use_vec = vec_.kernel && (p.contiguous || aligned(p.x, 16));
        const Launch& l = dense_.kernel && aligned(p.x, 16) ? dense_ : use_vec ? vec_ : scalar_;
        const cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
        void* kargs[] = {&p};
        cudaError_t err = cudaLaunchKernel(l.kernel->fn, l.grid, l.block, kargs, 0, stream);
        if (err != cudaSuccess) return cuda_status(err, l.kernel->name, TOPS_ERROR_DEVICE_LAUNCH);
        TOPS_RETURN_IF_ERROR(launch_status(l.kernel->name));
        if (p.splits > 1) {
            err = launch_maybe_pdl(combine_.kernel->fn, combine_.grid, combine_.block, kargs, stream,
                                   combine_.pdl && l.pdl);
            if (err != cudaSuccess) return cuda_status(err, combine_.kernel->name, TOPS_ERROR_DEVICE_LAUNCH);
            TOPS_RETURN_IF_ERROR(launch_status(combine_.kernel->name));
        }
        return Status::ok();
    }

    const char* kernel_name() const override { return shown().kernel->name; }
    std::string reason() const override { return why_; }

private:
    const Launch& shown() const { return preferred_launch(dense_, vec_, scalar_); }

    ReduceKernelParams base_;
    Launch dense_;    // kernel == nullptr unless the rows qualify (plan_reduce)
    Launch vec_;      // kernel == nullptr when the layout rules out 16-byte vectors
    Launch scalar_;   // always valid
    Launch combine_;  // used when base_.splits > 1
    int device_;
    std::string why_;
};

}  // namespace

// The one dispatch point: canonical dims -> work shape, kernel, splits, launch.
Status plan_reduce(const ReduceParams& rp, const DeviceInfo& dev, PlanPtr* out) {
    Dim kept[kMaxRank], red[kMaxRank];
    const int nk = collect_dims(rp, false, kept);
    const int nr = collect_dims(rp, true, red);
    ReduceKernelParams base;
    fill_indexer(kept, nk, &base.kept, &base.outputs);
    fill_indexer(red, nr, &base.red, &base.len);
    base.y_dtype = rp.y.dtype;
    base.post = rp.op == ReduceOp::mean ? Post::scale : rp.op == ReduceOp::norm2 ? Post::sqrt : Post::none;
    base.post_scale = 1.0f / float(base.len);
    const Acc acc = acc_of(rp.op);
    const tops_dtype_t dt = rp.x.dtype;
    const int vm = int(16 / dtype_size(dt));
    // Evict-first loads of x (l2_policy) keep the pass from pushing other,
    // possibly dirty, data out of L2: on an H100 whose L2 was just filled with
    // written data, global pooling f16 (2 L2 sizes of input) ran 9.6% faster,
    // f32 (4 L2 sizes) 1.6%; evict-first on every input made 8192x8192 f32
    // sums (5 L2 sizes) 0.3-1.8% slower, so larger inputs keep the normal
    // priority (docs/performance.md). An empty x reads nothing (and its dims
    // may be unbounded).
    constexpr int64_t kStreamingMaxL2s = 4;
    base.streaming = base.outputs > 0 && base.len > 0 &&
                     base.len <= kStreamingMaxL2s * int64_t(dev.l2_bytes) / base.outputs / int64_t(dtype_size(dt));
    // Columns when x's innermost kept dim has unit stride.
    const bool cols = nk > 0 && kept[nk - 1].xs == 1;
    base.contiguous = !cols && nr == 1 && red[0].xs == 1;
    DeviceScope scope(dev.ordinal);
    TOPS_RETURN_IF_ERROR(scope.status());
    Launch dense_l, vec_l, scalar_l, combine_l;
    int64_t resident = 0;
    if (cols) {
        base.inner = kept[nk - 1].d;
        bool vec_ok = base.inner % vm == 0;
        for (int i = 0; i < nk - 1; ++i) vec_ok = vec_ok && kept[i].xs % vm == 0;
        for (int i = 0; i < nr; ++i) vec_ok = vec_ok && red[i].xs % vm == 0;
        const int vec = vec_ok ? vm : 1;
        const KernelEntry* k = find_kernel(Shape::kCols, dt, acc, vec, 0);
        const KernelEntry* ks = find_kernel(Shape::kCols, dt, acc, 1, 0);
        if (!k || !ks) return Status(TOPS_ERROR_INTERNAL, "reduce: no CUDA kernel instantiated for this case");
        TOPS_RETURN_IF_ERROR(resident_blocks(k->fn, kColsLanes * kColsWarps, dev, &resident));
        const int64_t tile = int64_t(kColsLanes) * vec;
        const int64_t outer = base.inner > 0 ? base.outputs / base.inner : 0;
        const int64_t tiles = std::max<int64_t>(1, outer * ((base.inner + tile - 1) / tile));
        base.splits = choose_splits(tiles, resident, base.len, kMinSplitRows);
        base.chunk = (base.len + base.splits - 1) / base.splits;
        const dim3 block(kColsLanes, kColsWarps);
        if (vec_ok) vec_l = {k, dim3(unsigned(tiles), unsigned(base.splits)), block};
        // The scalar fallback (misaligned x) keeps the same splits; its tiles are narrower.
        const int64_t tiles1 = std::max<int64_t>(1, outer * ((base.inner + kColsLanes - 1) / kColsLanes));
        scalar_l = {ks, dim3(unsigned(tiles1), unsigned(base.splits)), block};
    } else {
        const int team = base.len <= kRowsWarpMaxLen ? kWarpSize : kRowsThreads;
        const bool vec_ok = base.contiguous;
        const KernelEntry* k = find_kernel(Shape::kRows, dt, acc, vec_ok ? vm : 1, team);
        const KernelEntry* ks = find_kernel(Shape::kRows, dt, acc, 1, team);
        if (!k || !ks) return Status(TOPS_ERROR_INTERNAL, "reduce: no CUDA kernel instantiated for this case");
        TOPS_RETURN_IF_ERROR(resident_blocks(k->fn, kRowsThreads, dev, &resident));
        const int64_t teams = kRowsThreads / team;
        base.splits = choose_splits((base.outputs + teams - 1) / teams, resident, base.len, kMinSplitElems);
        base.chunk = (base.len + base.splits - 1) / base.splits;
        if (base.splits > 1 && base.chunk > kSplitPiece) {
            // Interleaved pieces (split s reads pieces s, s + splits, ...), so the blocks
            // stream neighbouring memory at any moment, as they do over the rows of a
            // last-dim reduction; the same number of pieces per split, rounded to 16 bytes.
            const int64_t per_split = (base.chunk + kSplitPiece - 1) / kSplitPiece;
            const int64_t pieces = per_split * base.splits;
            base.chunk = ((base.len + pieces - 1) / pieces + vm - 1) / vm * vm;
        }
        const int64_t items = base.outputs * base.splits;
        const unsigned grid = unsigned(std::max<int64_t>(1, std::min((items + teams - 1) / teams, resident)));
        if (vec_ok) vec_l = {k, dim3(grid), dim3(kRowsThreads)};
        scalar_l = {ks, dim3(grid), dim3(kRowsThreads)};
        // Dense rows: whole vectors, equally spaced 16-byte aligned starts (x's own
        // alignment is checked per call), a warp per row, no split.
        // TOPS_REDUCE_DENSE=0 keeps the general rows kernel (for comparisons).
        const bool dense = vec_ok && team == kWarpSize && base.splits == 1 && base.len % vm == 0 && nk <= 1 &&
                           (nk == 0 || kept[0].xs % vm == 0) && !env_switched_off("TOPS_REDUCE_DENSE");
        if (dense) {
            const KernelEntry* kd = find_kernel(Shape::kDenseRows, dt, acc, vm, kWarpSize);
            if (!kd) return Status(TOPS_ERROR_INTERNAL, "reduce: no CUDA dense-rows kernel instantiated");
            dense_l = {kd, dim3(grid), dim3(kRowsThreads)};
        }
    }
    if (base.splits > 1) {
        combine_l.kernel = find_kernel(Shape::kCombine, TOPS_DTYPE_INVALID, acc, 1, 0);
        if (!combine_l.kernel) return Status(TOPS_ERROR_INTERNAL, "reduce: no CUDA combine kernel instantiated");
        int64_t resident_c = 0;
        TOPS_RETURN_IF_ERROR(resident_blocks(combine_l.kernel->fn, kFinalThreads, dev, &resident_c));
        const int64_t warps = kFinalThreads / kWarpSize;
        combine_l.grid = dim3(unsigned(std::max<int64_t>(1, std::min((base.outputs + warps - 1) / warps, resident_c))));
        combine_l.block = dim3(kFinalThreads);
        combine_l.pdl = runs_sm90_code(dev, combine_l.kernel->fn);
        vec_l.pdl = vec_l.kernel && runs_sm90_code(dev, vec_l.kernel->fn);
        scalar_l.pdl = runs_sm90_code(dev, scalar_l.kernel->fn);
    }
    const Launch& shown = preferred_launch(dense_l, vec_l, scalar_l);
    std::string why = fmt(cols ? "columns" : base.contiguous ? "contiguous rows" : "strided rows",
                          " outputs=", base.outputs, " len=", base.len, " kept_dims=", nk, " reduced_dims=", nr,
                          " splits=", base.splits, " grid=", shown.grid.x, "x", shown.grid.y,
                          dense_l.kernel ? " dense rows (16-byte aligned x)"
                          : vec_l.kernel ? " 16-byte vectors"
                                         : " scalar loads",
                          base.streaming ? " evict-first" : "");
    out->reset(new ReducePlanCuda(base, dense_l, vec_l, scalar_l, combine_l, dev.ordinal, std::move(why)));
    return Status::ok();
}

}  // namespace tops::cuda
