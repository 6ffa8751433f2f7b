// LayerNorm / RMSNorm on CUDA: the parameter struct every norm kernel takes,
// the row helpers they share (loads, sums, stores, team reductions) and the
// dense-rows kernel. Included by norm.cu only (the one instantiation list,
// the other kernels and the planner; its opening comment gives the strategy).
#pragma once

#include <cstdint>

#include "cuda/common/device.cuh"
#include "cuda/vec_convert.cuh"

namespace tops::cuda::norm_impl {

// Block size of the warp-team kernels: 4 warps, several rows per block.
constexpr int kSmallTeamThreads = 128;
// Register caps (__launch_bounds__ minimum blocks): warp teams holding at
// most kSmallTeamCappedValues values per thread get 64 registers (8 blocks
// of 128 threads per SM); block teams of one vector per thread get 32 (a
// full SM of 2048 threads); other block teams 64 (1024 threads per SM).
// Dense rows took the same caps: at 10 blocks of 128 threads a standalone
// replica of 16384x1024 f16 rows ran 28.8 us against 28.2 at 8.
constexpr int kSmallTeamCappedValues = 32;
constexpr int kSmallTeamMinBlocks = 8;
constexpr int kFullSmThreads = 2048;
constexpr int kHalfSmThreads = 1024;
constexpr int kBlockTeamMax = 1024;

// Threads of a block of register rows with teams of TEAM threads.
template <int TEAM>
constexpr int team_threads() {
    return TEAM > kSmallTeamThreads ? TEAM : kSmallTeamThreads;
}

template <int VEC, int ITERS, int TEAM>
constexpr int regs_min_blocks() {
    if (TEAM <= kWarpSize) return ITERS * VEC <= kSmallTeamCappedValues ? kSmallTeamMinBlocks : 1;
    const int threads = ITERS == 1 ? kFullSmThreads : kHalfSmThreads;
    return threads / TEAM > 1 ? threads / TEAM : 1;
}

// The one parameter struct of every norm kernel (passed by value).
struct NormKernelParams {
    const void* x = nullptr;
    void* y = nullptr;
    const void* residual = nullptr;  // nullptr: absent
    void* prenorm = nullptr;         // nullptr: absent
    const void* gamma = nullptr;
    const void* beta = nullptr;
    const void* bias = nullptr;
    float* mean = nullptr;
    float* rstd = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    // Row / column strides in elements: x, y, residual, prenorm.
    int64_t x_rs = 0, x_cs = 1, y_rs = 0, y_cs = 1, r_rs = 0, r_cs = 1, p_rs = 0, p_cs = 1;
    int64_t gamma_s = 1, beta_s = 1, bias_s = 1, mean_s = 1, rstd_s = 1;
    bool gamma_f32 = false, beta_f32 = false, bias_f32 = false;  // else x's dtype
    bool rms = false;
    float eps = 1e-5f;
    int64_t cache_vecs = 0;  // streaming rows: leading vectors of a row cached in shared memory
};

// VEC elements of a row tensor at column `col` (a multiple of VEC) as f32.
template <class T, int VEC>
__device__ __forceinline__ void load_elems(const T* row, int64_t col, int64_t cs, float (&v)[VEC]) {
    if constexpr (VEC == 1) {
        v[0] = ElemTraits<T>::to_float(row[col * cs]);
    } else {
        load_vec_f32<T, VEC>(row + col, v);
    }
}

template <class T, int VEC>
__device__ __forceinline__ void store_elems(T* row, int64_t col, int64_t cs, const float (&v)[VEC]) {
    if constexpr (VEC == 1) {
        row[col * cs] = ElemTraits<T>::from_float(v[0]);
    } else {
        store_vec_f32<T, VEC>(row + col, v);
    }
}

// A gamma / beta / bias vector stored as f32 or as T.
template <class T, int VEC>
__device__ __forceinline__ void load_param(const void* ptr, bool f32, int64_t col, int64_t stride,
                                           float (&v)[VEC]) {
    if (f32) {
        const float* f = static_cast<const float*>(ptr);
        if constexpr (VEC == 1) {
            v[0] = f[col * stride];
        } else {
            constexpr int kChunk = VEC < 4 ? VEC : 4;  // 16-byte pieces
#pragma unroll
            for (int c = 0; c < VEC; c += kChunk) {
                const Vec<float, kChunk> t = *reinterpret_cast<const Vec<float, kChunk>*>(f + col + c);
#pragma unroll
                for (int j = 0; j < kChunk; ++j) v[c + j] = t.v[j];
            }
        }
    } else {
        load_elems<T, VEC>(static_cast<const T*>(ptr), col, stride, v);
    }
}

// s = x [+ bias] [+ residual] at (row, col).
template <class T, int VEC>
__device__ __forceinline__ void load_sum(const NormKernelParams& p, int64_t row, int64_t col, float (&s)[VEC]) {
    load_elems<T, VEC>(static_cast<const T*>(p.x) + row * p.x_rs, col, p.x_cs, s);
    if (p.bias) {
        float b[VEC];
        load_param<T, VEC>(p.bias, p.bias_f32, col, p.bias_s, b);
#pragma unroll
        for (int j = 0; j < VEC; ++j) s[j] += b[j];
    }
    if (p.residual) {
        float r[VEC];
        load_elems<T, VEC>(static_cast<const T*>(p.residual) + row * p.r_rs, col, p.r_cs, r);
#pragma unroll
        for (int j = 0; j < VEC; ++j) s[j] += r[j];
    }
}

// Writes prenorm (if any) and y for VEC elements of s.
template <class T, int VEC>
__device__ __forceinline__ void store_outputs(const NormKernelParams& p, int64_t row, int64_t col,
                                              const float (&s)[VEC], float mean, float rstd, bool with_prenorm) {
    if (with_prenorm && p.prenorm) store_elems<T, VEC>(static_cast<T*>(p.prenorm) + row * p.p_rs, col, p.p_cs, s);
    float o[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) o[j] = (s[j] - mean) * rstd;
    if (p.gamma) {
        float g[VEC];
        load_param<T, VEC>(p.gamma, p.gamma_f32, col, p.gamma_s, g);
#pragma unroll
        for (int j = 0; j < VEC; ++j) o[j] *= g[j];
    }
    if (p.beta) {
        float b[VEC];
        load_param<T, VEC>(p.beta, p.beta_f32, col, p.beta_s, b);
#pragma unroll
        for (int j = 0; j < VEC; ++j) o[j] += b[j];
    }
    store_elems<T, VEC>(static_cast<T*>(p.y) + row * p.y_rs, col, p.y_cs, o);
}

__device__ __forceinline__ void store_stats(const NormKernelParams& p, int64_t row, float mean, float rstd) {
    if (p.mean) p.mean[row * p.mean_s] = mean;
    if (p.rstd) p.rstd[row * p.rstd_s] = rstd;
}

// Sum over a team of TEAM threads (TEAM <= 32: aligned lanes of a warp;
// otherwise the whole block, through `scratch` of kWarpSize floats). Starts
// with a barrier so consecutive calls may reuse scratch.
template <int TEAM>
__device__ __forceinline__ float team_sum(float v, float* scratch) {
    if constexpr (TEAM <= kWarpSize) {
        return group_sum<TEAM>(v);
    } else {
        static_assert(TEAM % kWarpSize == 0 && TEAM / kWarpSize <= kWarpSize, "block team of whole warps");
        const int lane = threadIdx.x % kWarpSize;
        const int warp = threadIdx.x / kWarpSize;
        v = group_sum<kWarpSize>(v);
        __syncthreads();
        if (lane == 0) scratch[warp] = v;
        __syncthreads();
        return group_sum<kWarpSize>(lane < TEAM / kWarpSize ? scratch[lane] : 0.0f);
    }
}

struct RowStats {
    float mean;  // 0 for RMSNorm
    float rstd;
};

// Statistics of a row held in registers by a team of TEAM threads: this
// thread holds the row's vectors it * TEAM + lane (those < nvec) in s and
// the sum of its values in `sum` (vectors past the row hold 0). Exact two
// passes: the mean first, then the sum of squared deviations (RMSNorm: of
// the values). Rows of no columns get mean 0 and rstd 1 / sqrt(eps).
template <int TEAM, int ITERS, int VEC>
__device__ __forceinline__ RowStats team_row_stats(const NormKernelParams& p, const float (&s)[ITERS][VEC], float sum,
                                                   int lane, int64_t nvec, float* scratch) {
    const float inv_cols = p.cols > 0 ? 1.0f / float(p.cols) : 0.0f;
    const float mean = p.rms ? 0.0f : team_sum<TEAM>(sum, scratch) * inv_cols;
    float sq = 0.0f;
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
        if (it * TEAM + lane < nvec) {
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                const float d = s[it][j] - mean;
                sq += d * d;
            }
        }
    }
    return {mean, rsqrtf(team_sum<TEAM>(sq, scratch) * inv_cols + p.eps)};
}

// ---------------------------------------------------------------- dense rows
// The register rows of norm_regs_kernel for the common case alone: x -> y
// (LayerNorm or RMSNorm) with no bias, residual or pre-norm output, gamma /
// beta absent or in x's dtype, 16-byte vectors. Teams own rows as there
// (TEAM <= 32: part of a warp, else the whole block); gamma and beta are
// staged once per block in shared memory, where the general kernel loads
// them from global memory for every row: streamed rows push them out of
// L1. A standalone replica of 16384x1024 f16 rows took 30.9 us that way
// against 28.2 us with them staged (27.0 us for a copy of the same bytes;
// docs/performance.md). Blocks of 256 threads, or a persistent grid that
// stages once per block, measured 0.1-3% slower.
template <class T, int VEC, int ITERS, int TEAM>
__global__ void __launch_bounds__(team_threads<TEAM>(), (regs_min_blocks<VEC, ITERS, TEAM>()))
    norm_dense_rows_kernel(const __grid_constant__ NormKernelParams p) {
    static_assert(VEC > 1 && VEC * sizeof(T) == 16, "16-byte vectors");
    static_assert((TEAM & (TEAM - 1)) == 0 && TEAM >= 1 && TEAM <= kBlockTeamMax, "TEAM: power of two");
    using V = Vec<T, VEC>;
    constexpr int kThreads = team_threads<TEAM>();
    constexpr int kRowsPerBlock = kThreads / TEAM;
    __shared__ float scratch[kWarpSize];
    extern __shared__ uint4 dense_smem[];
    V* dense_params = reinterpret_cast<V*>(dense_smem);  // (2, nvec): gamma, then beta (absent: unused)
    const int nvec = int(p.cols / VEC);  // at most kBlockTeamMax * 4 vectors
    for (int i = threadIdx.x; i < nvec; i += kThreads) {
        if (p.gamma) dense_params[i] = static_cast<const V*>(p.gamma)[i];
        if (p.beta) dense_params[nvec + i] = static_cast<const V*>(p.beta)[i];
    }
    __syncthreads();
    const int lane = threadIdx.x % TEAM;
    // The loop bound is uniform per block so that every thread reaches the reductions.
    for (int64_t base = int64_t(blockIdx.x) * kRowsPerBlock; base < p.rows;
         base += int64_t(gridDim.x) * kRowsPerBlock) {
        const int64_t row = base + threadIdx.x / TEAM;
        const bool active = row < p.rows;
        const T* xrow = static_cast<const T*>(p.x) + row * p.x_rs;  // read only when active
        float s[ITERS][VEC];  // (ITERS, VEC) values of the row held by this thread
        float sum = 0.0f;
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const int c = it * TEAM + lane;
            if (active && c < nvec) {
                load_vec_f32<T, VEC>(xrow + c * VEC, s[it]);
            } else {
#pragma unroll
                for (int j = 0; j < VEC; ++j) s[it][j] = 0.0f;
            }
#pragma unroll
            for (int j = 0; j < VEC; ++j) sum += s[it][j];
        }
        const RowStats st = team_row_stats<TEAM, ITERS, VEC>(p, s, sum, lane, nvec, scratch);
        if (!active) continue;
        if (lane == 0) store_stats(p, row, st.mean, st.rstd);
        T* yrow = static_cast<T*>(p.y) + row * p.y_rs;
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const int c = it * TEAM + lane;
            if (c >= nvec) continue;
            float o[VEC];
#pragma unroll
            for (int j = 0; j < VEC; ++j) o[j] = (s[it][j] - st.mean) * st.rstd;
            if (p.gamma) {
                float g[VEC];
                vec_to_f32<T, VEC>(dense_params[c], g);
#pragma unroll
                for (int j = 0; j < VEC; ++j) o[j] *= g[j];
            }
            if (p.beta) {
                float b[VEC];
                vec_to_f32<T, VEC>(dense_params[nvec + c], b);
#pragma unroll
                for (int j = 0; j < VEC; ++j) o[j] += b[j];
            }
            store_vec_f32<T, VEC>(yrow + c * VEC, o);
        }
    }
}

}  // namespace tops::cuda::norm_impl
