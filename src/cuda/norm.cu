// LayerNorm / RMSNorm on CUDA for f32, f16 and bf16 rows (f32 statistics),
// with the fused residual form s = x + bias + residual, an optional pre-norm
// output (s) and optional per-row mean / rstd outputs.
//
// Strategy, chosen by row length (as the fastest row-wise kernels do):
// - register rows: a team of TEAM threads owns a row and keeps s in
//   registers (ITERS vectors of VEC elements per thread), so x and residual
//   are read exactly once. TEAM <= 32 is a (part of a) warp reducing with
//   shuffles only (short rows: a warp works on 32 / TEAM rows at once);
//   TEAM >= 128 is a whole block per row reducing through shared memory
//   (medium rows, up to 1024 * 4 vectors). Statistics are exact two-pass
//   over the registers: mean first, then the sum of squared deviations.
// - streaming rows: rows too long for registers (e.g. 65536) get one block
//   each: a Welford pass (per-vector mean / M2 merged with Chan's formula,
//   stable for any length) that also keeps the row on chip, then a normalize
//   pass from there; only the part of a row beyond it is read twice. Without
//   bias and residual (s == x) x itself is copied into shared memory with
//   cp.async (up to the block's opt-in limit, 227 KiB on sm_90: a whole f16
//   row of 65536; the copies bypass registers and L1, whose share of the SM's
//   memory is small next to such a cache), else s is cached as f32; f32 rows
//   also hold 32 KiB in registers beyond the cache (a whole 65536 f32 row).
//   Raw rows wholly on chip take their statistics in two exact passes over
//   the cache (no Welford division per vector), and each cache slot, once
//   normalized, is refilled with the block's next row, so that row's reads
//   overlap this row's writes. With gamma and beta, each block's normalize
//   pass starts at its own group of vectors, so that the SMs do not all
//   read the same parameter lines at once.
// Every kernel reads all of a row before it writes any of it, and a thread
// writes only elements it has itself read, so y and prenorm may alias x or
// residual (in place).
//
// Grid, measured on an H100 (the dense f32 block teams on an H200;
// docs/performance.md): warp teams and 4-byte block teams launch one block
// per row group (the scheduler refills SMs as blocks finish); 2-byte block
// teams and every dense-rows block team (which stage gamma / beta once per
// block) run a persistent grid of the blocks resident at once, each walking
// rows with a grid stride. In the general kernel, rows of 2-byte types up to
// 512 vectors use a 512-thread team with one vector per thread: 32
// registers, so an SM holds 2048 threads (register caps: see
// regs_min_blocks). Tried and dropped (slower):
// prefetching the next row's vectors before the reductions (more registers,
// fewer warps), gamma / beta held in registers across rows (also with packed
// f16x2 multiply-adds), a cluster of blocks per long row exchanging
// statistics through distributed shared memory (register or shared-memory
// slices; again as a persistent grid of clusters staging gamma / beta once
// per block with up to 8 rows of x in flight: 25-45% slower on an H200,
// docs/performance.md); for streaming rows, 512-thread blocks with 8 loads
// in flight and gamma / beta of 4 vectors loaded ahead (12-30% slower; with
// the cp.async copies still 3-37% slower), gamma / beta of the next vector
// prefetched in the normalize pass (f32 1-2% slower, f16 spills), or staged
// in the shared memory a raw row leaves free by bulk copies running steps
// ahead (H200, 2-12% slower), each block starting the normalize pass at
// its own group of vectors also without both gamma and beta (H100: up to
// 3% slower), a raw row's LayerNorm statistics in one pass of exact
// chunks merged by Chan's formula (H100, f16 256x65536 without parameters
// 31 -> 34 us). Not kept for its spills: a fused row's x and
// residual loads all issued before its sums (H200, bias + residual
// LayerNorm f16 16384x768 36.5 -> 35.8 us, but 32-192 bytes of spills in
// the register teams of 3 or more 16-byte vectors per input).
//
// 16-byte vectors are used when every row tensor has unit column stride and
// row strides, column count and parameter vectors allow them (plan time) and
// the pointers are aligned (execute time); otherwise the same strategies run
// with VEC = 1 and arbitrary strides.
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "common/env.hpp"
#include "common/int_math.hpp"
#include "cuda/common/device.cuh"
#include "cuda/common/mma.cuh"
#include "cuda/norm_kernels.cuh"
#include "cuda/norm_reduce_eltwise.hpp"
#include "cuda/vec_convert.cuh"

namespace tops::cuda {
namespace {

using namespace norm_impl;

// Rows of 2-byte types up to this many vectors: one vector per thread of a 512-thread team
// (general kernel; the dense rows take 128-thread teams of 4 vectors).
constexpr int kOneVecTeam = 512;
// Block teams hold at most this many vectors per thread in registers.
constexpr int kBlockTeamIters = 4;
constexpr int kBlockTeamMin = 128;
// Warp teams hold at most this many vectors per lane.
constexpr int kWarpTeamMaxIters = 8;
constexpr int kStreamThreads = 1024;
constexpr size_t kVecBytes = 16;
// Vectors a streaming thread loads back to back before using them.
constexpr int kStreamUnroll = 4;

// ---------------------------------------------------------------- register rows
// (rows, cols) with cols <= TEAM * ITERS * VEC; s stays in registers.
template <class T, int VEC, int ITERS, int TEAM>
__global__ void __launch_bounds__(team_threads<TEAM>(), (regs_min_blocks<VEC, ITERS, TEAM>()))
    norm_regs_kernel(const __grid_constant__ NormKernelParams p) {
    static_assert(VEC * sizeof(T) <= 16, "vectors are at most 16 bytes");
    static_assert((TEAM & (TEAM - 1)) == 0 && TEAM >= 1 && TEAM <= kBlockTeamMax, "TEAM: power of two");
    constexpr int kThreads = team_threads<TEAM>();
    constexpr int kRowsPerBlock = kThreads / TEAM;
    __shared__ float scratch[kWarpSize];
    const int lane = threadIdx.x % TEAM;
    // The loop bound is uniform per block so that every thread reaches the reductions.
    for (int64_t base = int64_t(blockIdx.x) * kRowsPerBlock; base < p.rows;
         base += int64_t(gridDim.x) * kRowsPerBlock) {
        const int64_t row = base + threadIdx.x / TEAM;
        const bool active = row < p.rows;
        float s[ITERS][VEC];
        float sum = 0.0f;
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const int64_t col = int64_t(it * TEAM + lane) * VEC;
            if (active && col < p.cols) {
                load_sum<T, VEC>(p, row, col, s[it]);
            } else {
#pragma unroll
                for (int j = 0; j < VEC; ++j) s[it][j] = 0.0f;
            }
#pragma unroll
            for (int j = 0; j < VEC; ++j) sum += s[it][j];
        }
        // Every read of this thread's elements is done: prenorm may overwrite them now.
        if (p.prenorm) {
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
                const int64_t col = int64_t(it * TEAM + lane) * VEC;
                if (active && col < p.cols) {
                    store_elems<T, VEC>(static_cast<T*>(p.prenorm) + row * p.p_rs, col, p.p_cs, s[it]);
                }
            }
        }
        // Vectorized rows have cols % VEC == 0, so the row's vectors are those below cols / VEC.
        const RowStats st = team_row_stats<TEAM, ITERS, VEC>(p, s, sum, lane, p.cols / VEC, scratch);
        if (!active) continue;
        if (lane == 0) store_stats(p, row, st.mean, st.rstd);
        // prenorm was written above.
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const int64_t col = int64_t(it * TEAM + lane) * VEC;
            if (col < p.cols) store_outputs<T, VEC>(p, row, col, s[it], st.mean, st.rstd, false);
        }
    }
}

// ---------------------------------------------------------------- streaming rows
// Welford statistics: count, mean and sum of squared deviations.
struct Welford {
    float n;
    float mean;
    float m2;
};

__device__ __forceinline__ Welford welford_merge(Welford a, Welford b) {
    const float n = a.n + b.n;
    if (n == 0.0f) return a;
    const float wb = b.n / n;
    const float d = b.mean - a.mean;
    return {n, a.mean + d * wb, a.m2 + b.m2 + d * d * a.n * wb};
}

__device__ __forceinline__ Welford warp_welford(Welford a) {
#pragma unroll
    for (int o = kWarpSize / 2; o > 0; o /= 2) {
        const Welford b{__shfl_xor_sync(kFullMask, a.n, o), __shfl_xor_sync(kFullMask, a.mean, o),
                        __shfl_xor_sync(kFullMask, a.m2, o)};
        a = welford_merge(a, b);
    }
    return a;
}

// Block-wide merge, every thread gets the result; starts with a barrier.
__device__ __forceinline__ Welford block_welford(Welford a, Welford* scratch) {
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    const int nwarps = blockDim.x / kWarpSize;
    a = warp_welford(a);
    __syncthreads();
    if (lane == 0) scratch[warp] = a;
    __syncthreads();
    return warp_welford(lane < nwarps ? scratch[lane] : Welford{0.0f, 0.0f, 0.0f});
}

// A vector of a streaming row as it is cached: the sums s as f32, or (RAW:
// no bias, no residual, so s == x) x itself in its storage type, which
// halves the cache of 2-byte rows (a 65536-element f16 row needs 128 KiB,
// not 256).
template <class T, int VEC, bool RAW>
struct StreamRow {
    using Elem = std::conditional_t<RAW, T, float>;
    using Loaded = Vec<Elem, VEC>;
    static_assert(!RAW || VEC > 1, "raw caching reads whole aligned vectors");
    static_assert(sizeof(Loaded) % 16 == 0 || sizeof(Loaded) < 16, "cached vectors split into 16-byte chunks");
    static constexpr int kChunkBytes = sizeof(Loaded) < 16 ? int(sizeof(Loaded)) : 16;
    static constexpr int kChunkElems = kChunkBytes / int(sizeof(Elem));
    static constexpr int kChunks = int(sizeof(Loaded)) / kChunkBytes;
    using Chunk = Vec<Elem, kChunkElems>;
    // Row vectors each thread keeps in registers beyond the shared-memory
    // cache: 32 bytes per thread (32 KiB per block) for f32 rows, which with
    // 227 KiB of shared memory holds a whole 256 KiB row (65536) on chip. Raw
    // 2-byte rows fit in shared memory up to 116224 elements without them;
    // the f32 cache of 2-byte sums keeps none (ptxas spills under the
    // 64-register cap of 1024 threads).
    static constexpr int kHeld = std::is_same_v<T, float> && VEC > 1 ? 32 / int(sizeof(Loaded)) : 0;
    // Vectors re-read back to back in pass 2: 32 bytes per thread (more
    // spills under the 64-register cap next to the gamma / beta / output
    // registers; the raw bf16 kernel spills with 2).
    static constexpr int kReread = RAW ? 1 : 32 / int(sizeof(Loaded)) > 0 ? 32 / int(sizeof(Loaded)) : 1;

    // Vector i of x's row (raw rows: 16-byte aligned).
    static __device__ __forceinline__ const T* x_at(const NormKernelParams& p, int64_t row, int64_t i) {
        return static_cast<const T*>(p.x) + row * p.x_rs + i * VEC;
    }
    static __device__ __forceinline__ Loaded load(const NormKernelParams& p, int64_t row, int64_t i) {
        Loaded l;
        if constexpr (RAW) {
            l = *reinterpret_cast<const Loaded*>(x_at(p, row, i));
        } else {
            load_sum<T, VEC>(p, row, i * VEC, l.v);
        }
        return l;
    }
    static __device__ __forceinline__ void to_f32(const Loaded& l, float (&s)[VEC]) {
        if constexpr (RAW) {
            vec_to_f32<T, VEC>(l, s);
        } else {
#pragma unroll
            for (int j = 0; j < VEC; ++j) s[j] = l.v[j];
        }
    }
    // Planar chunks: chunk c of vector e at cache[(c * vecs + e) * kChunkElems],
    // so a warp's 16-byte accesses are conflict-free.
    template <class E>
    static __device__ __forceinline__ E* slot(E* cache, int64_t vecs, int64_t e, int c = 0) {
        return cache + (int64_t(c) * vecs + e) * kChunkElems;
    }
    static __device__ __forceinline__ void put(Elem* cache, int64_t vecs, int64_t e, const Loaded& l) {
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
            reinterpret_cast<Chunk*>(slot(cache, vecs, e, c))[0] = reinterpret_cast<const Chunk*>(&l)[c];
        }
    }
    static __device__ __forceinline__ Loaded get(const Elem* cache, int64_t vecs, int64_t e) {
        Loaded l;
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
            reinterpret_cast<Chunk*>(&l)[c] = reinterpret_cast<const Chunk*>(slot(cache, vecs, e, c))[0];
        }
        return l;
    }
};

template <int VEC>
__device__ __forceinline__ void welford_add(Welford& acc, const float (&s)[VEC], bool rms) {
    if (rms) {
        // Mean fixed at 0: merging adds the plain sums of squares.
        float sq = 0.0f;
#pragma unroll
        for (int j = 0; j < VEC; ++j) sq += s[j] * s[j];
        acc.n += float(VEC);
        acc.m2 += sq;
    } else {
        float m = 0.0f;
#pragma unroll
        for (int j = 0; j < VEC; ++j) m += s[j];
        m *= 1.0f / VEC;
        float m2 = 0.0f;
#pragma unroll
        for (int j = 0; j < VEC; ++j) m2 += (s[j] - m) * (s[j] - m);
        acc = welford_merge(acc, Welford{float(VEC), m, m2});
    }
}

// One block per row of any length. Pass 1 reads the row once and takes its
// statistics (two exact passes over a raw row that is wholly on chip, else
// Welford); its first p.cache_vecs vectors stay in dynamic shared memory,
// the next kHeld * blockDim.x in registers (32 KiB), and only what lies
// beyond both is read again in pass 2, which normalizes.
// A thread caches and later reads back the same vectors (its own cp.async
// copies, complete after its wait), so the cache needs no barrier.
template <class T, int VEC, bool RAW>
__global__ void __launch_bounds__(kStreamThreads)
    norm_stream_kernel(const __grid_constant__ NormKernelParams p) {
    static_assert(kStreamThreads % kWarpSize == 0 && kStreamThreads / kWarpSize <= kWarpSize, "whole warps");
    using R = StreamRow<T, VEC, RAW>;
    using Loaded = typename R::Loaded;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    typename R::Elem* cache = reinterpret_cast<typename R::Elem*>(smem_raw);  // (kChunks, cache_vecs, kChunkElems)
    __shared__ Welford scratch[kWarpSize];
    __shared__ float sum_scratch[kWarpSize];
    const int64_t nvec = (p.cols + VEC - 1) / VEC;
    const int64_t threads = blockDim.x;
    const int64_t step = int64_t(kStreamUnroll) * threads;
    const int64_t cached_end = p.cache_vecs < nvec ? p.cache_vecs : nvec;
    const int64_t held_end = cached_end + R::kHeld * threads < nvec ? cached_end + R::kHeld * threads : nvec;
    // Raw rows: vector i of `row` into this thread's cache slot i.
    auto copy_vec = [&](int64_t row, int64_t i) {
        cp_async_16_zfill(smem_addr(R::slot(cache, p.cache_vecs, i)), R::x_at(p, row, i), true);
    };
    auto copy_row = [&](int64_t row) {
        for (int64_t i = threadIdx.x; i < cached_end; i += threads) copy_vec(row, i);
        cp_async_commit();
    };
    for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
        Welford acc{0.0f, 0.0f, 0.0f};
        const int64_t next_row = row + gridDim.x;
        // Batches of kStreamUnroll vectors over [begin, end), every load issued before any use.
        auto pass1 = [&](int64_t begin, int64_t end, bool keep) {
            for (int64_t i0 = begin + threadIdx.x; i0 < end; i0 += step) {
                Loaded l[kStreamUnroll];
#pragma unroll
                for (int u = 0; u < kStreamUnroll; ++u) {
                    if (i0 + u * threads < end) l[u] = R::load(p, row, i0 + u * threads);
                }
#pragma unroll
                for (int u = 0; u < kStreamUnroll; ++u) {
                    if (i0 + u * threads < end) {
                        if (keep) R::put(cache, p.cache_vecs, i0 + u * threads, l[u]);
                        float s[VEC];
                        R::to_f32(l[u], s);
                        welford_add<VEC>(acc, s, p.rms);
                    }
                }
            }
        };
        if constexpr (RAW) {
            // The cached range goes straight to shared memory (cp.async.cg:
            // no registers, no L1 lines), so the whole range is in flight at
            // once; the statistics then read it back. Rows after the block's
            // first were copied by the previous row's normalize pass.
            static_assert(sizeof(Loaded) == 16, "raw rows copy 16-byte vectors");
            if (row == blockIdx.x) copy_row(row);
        } else {
            pass1(0, cached_end, true);
        }
        Loaded held[R::kHeld > 0 ? R::kHeld : 1];
        if constexpr (R::kHeld > 0) {
#pragma unroll
            for (int h = 0; h < R::kHeld; ++h) {
                if (cached_end + h * threads + threadIdx.x < held_end) {
                    held[h] = R::load(p, row, cached_end + h * threads + threadIdx.x);
                }
            }
        }
        // f(s) over the vectors on chip, [0, held_end): shared memory (raw rows), then registers.
        auto for_on_chip = [&](auto&& f) {
            if constexpr (RAW) {
#pragma unroll 2
                for (int64_t i = threadIdx.x; i < cached_end; i += threads) {
                    float s[VEC];
                    R::to_f32(R::get(cache, p.cache_vecs, i), s);
                    f(s);
                }
            }
            if constexpr (R::kHeld > 0) {
#pragma unroll
                for (int h = 0; h < R::kHeld; ++h) {
                    if (cached_end + h * threads + threadIdx.x < held_end) {
                        float s[VEC];
                        R::to_f32(held[h], s);
                        f(s);
                    }
                }
            }
        };
        const float inv_cols = p.cols > 0 ? 1.0f / float(p.cols) : 0.0f;  // empty rows: mean 0, var 0
        if constexpr (RAW) {
            cp_async_wait<0>();
            asm volatile("" ::: "memory");  // the cache reads below stay after the wait
        }
        float mean = 0.0f, m2 = 0.0f;
        if (RAW && held_end == nvec) {
            // A raw row wholly on chip: two exact passes (the mean, then the
            // squared deviations; RMSNorm only the second) instead of a
            // Welford merge, with its division, per vector; that merge ran
            // with DRAM idle, as the statistics of every block fall between
            // its read and write phases.
            if (!p.rms) {
                float sum = 0.0f;
                for_on_chip([&](const float (&v)[VEC]) {
#pragma unroll
                    for (int j = 0; j < VEC; ++j) sum += v[j];
                });
                mean = team_sum<kStreamThreads>(sum, sum_scratch) * inv_cols;
            }
            float sq = 0.0f;
            for_on_chip([&](const float (&v)[VEC]) {
#pragma unroll
                for (int j = 0; j < VEC; ++j) sq += (v[j] - mean) * (v[j] - mean);
            });
            m2 = team_sum<kStreamThreads>(sq, sum_scratch);
        } else {
            for_on_chip([&](const float (&v)[VEC]) { welford_add<VEC>(acc, v, p.rms); });
            pass1(held_end, nvec, false);
            const Welford r = block_welford(acc, scratch);
            mean = p.rms ? 0.0f : r.mean;
            m2 = r.m2;
        }
        const float rstd = rsqrtf(m2 * inv_cols + p.eps);
        if (threadIdx.x == 0) store_stats(p, row, mean, rstd);
        // Each cache slot, once normalized, takes the block's next row (raw
        // rows), so that row's reads overlap this row's writes. The slot was
        // read by this thread's own load, which the in-order issue of the
        // store that consumes it has completed; the empty asm keeps the
        // compiler from moving the copy above that load.
        const bool refill = RAW && next_row < p.rows;
        auto normalize_slot = [&](int64_t i) {
            float s[VEC];
            R::to_f32(R::get(cache, p.cache_vecs, i), s);
            store_outputs<T, VEC>(p, row, i * VEC, s, mean, rstd, true);
            if (refill) {
                asm volatile("" ::: "memory");
                copy_vec(next_row, i);
            }
        };
        // With gamma and beta, each block starts at its own group of
        // `threads` vectors (block index modulo the groups) and wraps
        // around, so that the SMs do not all read the same parameter lines at
        // once. H100, 256x65536 (docs/performance.md): LayerNorm with gamma
        // and beta 0.9 us (f16) / 3.8 us (f32) faster; the forms without
        // both read 0.3-0.6 us slower there (unstaggered; 0.5-1 us staggered).
        const int64_t groups = ceil_div(cached_end, threads);
        const bool stagger = p.gamma && p.beta && groups > 0;
        const int64_t split = stagger ? (blockIdx.x % groups) * threads : 0;
        for (int64_t i = split + threadIdx.x; i < cached_end; i += threads) normalize_slot(i);
        for (int64_t i = threadIdx.x; i < split; i += threads) normalize_slot(i);
        if (refill) cp_async_commit();
#pragma unroll
        for (int h = 0; h < R::kHeld; ++h) {
            const int64_t i = cached_end + h * threads + threadIdx.x;
            if (i < held_end) {
                float s[VEC];
                R::to_f32(held[h], s);
                store_outputs<T, VEC>(p, row, i * VEC, s, mean, rstd, true);
            }
        }
        for (int64_t i0 = held_end + threadIdx.x; i0 < nvec; i0 += R::kReread * threads) {
            Loaded l[R::kReread];
#pragma unroll
            for (int u = 0; u < R::kReread; ++u) {
                if (i0 + u * threads < nvec) l[u] = R::load(p, row, i0 + u * threads);
            }
#pragma unroll
            for (int u = 0; u < R::kReread; ++u) {
                if (i0 + u * threads < nvec) {
                    float s[VEC];
                    R::to_f32(l[u], s);
                    store_outputs<T, VEC>(p, row, (i0 + u * threads) * VEC, s, mean, rstd, true);
                }
            }
        }
    }
}

// ---------------------------------------------------------------- instantiation list
enum class Strategy { kRegs, kDense, kStream, kStreamRaw };

struct KernelEntry {
    Strategy strategy;
    tops_dtype_t dtype;
    int vec;
    int team;   // register / dense rows only
    int iters;  // register / dense rows only
    const void* fn;
    const char* name;
};

#define TOPS_NORM_REGS(T, DT, NAME, V, I, TEAM)                                                       \
    {Strategy::kRegs, DT, V, TEAM, I, reinterpret_cast<const void*>(&norm_regs_kernel<T, V, I, TEAM>), \
     "norm_" NAME "_regs_t" #TEAM "_i" #I "_v" #V "_cuda"}
#define TOPS_NORM_VEC(T, DT, NAME, V)                                                                     \
    TOPS_NORM_REGS(T, DT, NAME, V, 1, 4), TOPS_NORM_REGS(T, DT, NAME, V, 1, 8),                          \
    TOPS_NORM_REGS(T, DT, NAME, V, 1, 16), TOPS_NORM_REGS(T, DT, NAME, V, 1, 32),                        \
    TOPS_NORM_REGS(T, DT, NAME, V, 2, 32), TOPS_NORM_REGS(T, DT, NAME, V, 3, 32),                        \
    TOPS_NORM_REGS(T, DT, NAME, V, 4, 32), TOPS_NORM_REGS(T, DT, NAME, V, 6, 32),                        \
    TOPS_NORM_REGS(T, DT, NAME, V, 8, 32), TOPS_NORM_REGS(T, DT, NAME, V, 4, 128),                       \
    TOPS_NORM_REGS(T, DT, NAME, V, 4, 256), TOPS_NORM_REGS(T, DT, NAME, V, 4, 512),                      \
    TOPS_NORM_REGS(T, DT, NAME, V, 4, 1024),                                                             \
    {Strategy::kStream, DT, V, 0, 0, reinterpret_cast<const void*>(&norm_stream_kernel<T, V, false>),    \
     "norm_" NAME "_stream_v" #V "_cuda"}
// Streaming rows caching x itself (16-byte vectors, no bias or residual).
#define TOPS_NORM_STREAM_RAW(T, DT, NAME, V)                                                                \
    {Strategy::kStreamRaw, DT, V, 0, 0, reinterpret_cast<const void*>(&norm_stream_kernel<T, V, true>),     \
     "norm_" NAME "_stream_raw_v" #V "_cuda"}
#define TOPS_NORM_DENSE(T, DT, NAME, V, I, TEAM)                                                        \
    {Strategy::kDense, DT, V, TEAM, I, reinterpret_cast<const void*>(&norm_dense_rows_kernel<T, V, I, TEAM>), \
     "norm_" NAME "_dense_t" #TEAM "_i" #I "_v" #V "_cuda"}
// VM: elements per 16-byte vector. The one-vector 512-thread team of f16 /
// bf16 follows each. Dense rows for warp teams of 2-4 vectors per lane
// (rows of 33-128 vectors, e.g. 768 and 1024 f16 elements).
#define TOPS_NORM_DTYPE(T, DT, NAME, VM)                                                                      \
    TOPS_NORM_VEC(T, DT, NAME, VM), TOPS_NORM_VEC(T, DT, NAME, 1), TOPS_NORM_DENSE(T, DT, NAME, VM, 2, 32),      \
        TOPS_NORM_DENSE(T, DT, NAME, VM, 3, 32), TOPS_NORM_DENSE(T, DT, NAME, VM, 4, 32)
// Dense rows of the block teams of 4 vectors per thread for 2-byte rows of
// 2049-16384 elements: 512 threads (8193-16384; 2048x16384 f16 68% -> 83% of
// copy on an H100) and 128 (2049-4096, in place of the general kernel's
// one-vector 512-thread teams; H200, 8192x4096 f16 LayerNorm 51.0 -> 41.2 us,
// RMSNorm 43.4 -> 40.3 us; the one-vector teams in the dense form had gained
// nothing, 79.6% against 79.7% of copy on an H100, spilling at their
// 32-register cap).
#define TOPS_NORM_DENSE_WIDE(T, DT, NAME) \
    TOPS_NORM_DENSE(T, DT, NAME, 8, 4, 512), TOPS_NORM_DENSE(T, DT, NAME, 8, 4, 128)

const KernelEntry kKernels[] = {
    TOPS_NORM_DTYPE(float, TOPS_DTYPE_F32, "f32", 4),
    TOPS_NORM_STREAM_RAW(float, TOPS_DTYPE_F32, "f32", 4),
    TOPS_NORM_DENSE(float, TOPS_DTYPE_F32, "f32", 4, 6, 32),
    TOPS_NORM_DENSE(float, TOPS_DTYPE_F32, "f32", 4, 8, 32),
    // f32 rows of 8193-16384 (one-wave grid, gamma / beta staged once per block):
    // H200, 2048x16384 LayerNorm 89.5-89.8 -> 81.2-81.3 us. The 256-thread teams
    // (rows of 4096) ran 3-5% slower in the dense form and keep the general kernel.
    TOPS_NORM_DENSE(float, TOPS_DTYPE_F32, "f32", 4, 4, 1024),
    TOPS_NORM_DTYPE(__half, TOPS_DTYPE_F16, "f16", 8),
    TOPS_NORM_REGS(__half, TOPS_DTYPE_F16, "f16", 8, 1, 512),
    TOPS_NORM_STREAM_RAW(__half, TOPS_DTYPE_F16, "f16", 8),
    TOPS_NORM_DENSE_WIDE(__half, TOPS_DTYPE_F16, "f16"),
    TOPS_NORM_DTYPE(__nv_bfloat16, TOPS_DTYPE_BF16, "bf16", 8),
    TOPS_NORM_REGS(__nv_bfloat16, TOPS_DTYPE_BF16, "bf16", 8, 1, 512),
    TOPS_NORM_STREAM_RAW(__nv_bfloat16, TOPS_DTYPE_BF16, "bf16", 8),
    TOPS_NORM_DENSE_WIDE(__nv_bfloat16, TOPS_DTYPE_BF16, "bf16"),
};

#undef TOPS_NORM_STREAM_RAW
#undef TOPS_NORM_DENSE_WIDE
#undef TOPS_NORM_DENSE
#undef TOPS_NORM_DTYPE
#undef TOPS_NORM_VEC
#undef TOPS_NORM_REGS

const KernelEntry* find_kernel(Strategy s, tops_dtype_t dt, int vec, int team, int iters) {
    for (const KernelEntry& e : kKernels) {
        if (e.strategy == s && e.dtype == dt && e.vec == vec && e.team == team && e.iters == iters) return &e;
    }
    return nullptr;
}

// ---------------------------------------------------------------- planning
struct Launch {
    const KernelEntry* kernel = nullptr;
    int grid = 0;
    int threads = 0;
    int64_t cache_vecs = 0;  // streaming rows
    size_t smem = 0;         // dynamic shared memory (streaming rows' cache)
};

int64_t pow2_at_least(int64_t v) {
    int64_t p = 1;
    while (p < v) p *= 2;
    return p;
}

// Streaming rows: as much of the row as the block's opt-in shared memory
// holds (f32 sums, or x itself for the raw kernels).
Status stream_cache(const DeviceInfo& dev, int64_t vec_bytes, int64_t nvec, Launch* l) {
    l->cache_vecs = std::min(nvec, int64_t(dynamic_smem_budget(dev, l->kernel->fn)) / vec_bytes);
    l->smem = size_t(l->cache_vecs * vec_bytes);
    return allow_dynamic_smem(dev, l->kernel->fn, "norm: cudaFuncSetAttribute");
}

// The one dispatch point: row length and vector width -> kernel and launch
// shape. `sum_is_x`: no bias and no residual, so a streaming row may cache x.
// `dense`: also no pre-norm output, and gamma / beta absent or in x's dtype
// (norm_dense_rows_kernel's case, with 16-byte vectors).
Status choose_launch(tops_dtype_t dt, int64_t rows, int64_t cols, int vec, bool sum_is_x, bool dense,
                     const DeviceInfo& dev, Launch* out) {
    static const int kWarpIters[] = {1, 2, 3, 4, 6, 8};
    const int64_t nvec = (cols + vec - 1) / vec;
    const bool narrow = dtype_size(dt) == 2;
    Launch l;
    int64_t rows_per_block = 1;
    bool persistent = false;
    if (nvec <= int64_t(kWarpSize) * kWarpTeamMaxIters) {
        int team = kWarpSize;
        int iters = 1;
        if (nvec <= kWarpSize) {
            team = int(std::max<int64_t>(4, pow2_at_least(nvec)));
        } else {
            const int64_t need = (nvec + kWarpSize - 1) / kWarpSize;
            for (int it : kWarpIters) {
                if (it >= need) {
                    iters = it;
                    break;
                }
            }
        }
        l.kernel = find_kernel(Strategy::kRegs, dt, vec, team, iters);
        l.threads = kSmallTeamThreads;
        rows_per_block = kSmallTeamThreads / team;

    } else if (nvec <= int64_t(kBlockTeamMax) * kBlockTeamIters) {
        int team = int(std::max<int64_t>(kBlockTeamMin, pow2_at_least((nvec + kBlockTeamIters - 1) /
                                                                      kBlockTeamIters)));
        int iters = kBlockTeamIters;
        if (narrow && vec > 1 && nvec <= kOneVecTeam && !dense) {
            team = kOneVecTeam;
            iters = 1;
        }
        l.kernel = find_kernel(Strategy::kRegs, dt, vec, team, iters);
        l.threads = team;
        persistent = narrow;
    } else {
        const bool raw = vec > 1 && sum_is_x;
        l.kernel = find_kernel(raw ? Strategy::kStreamRaw : Strategy::kStream, dt, vec, 0, 0);
        l.threads = kStreamThreads;
        const int64_t cached_bytes = int64_t(vec) * (raw ? int64_t(dtype_size(dt)) : int64_t(sizeof(float)));
        if (l.kernel) TOPS_RETURN_IF_ERROR(stream_cache(dev, cached_bytes, nvec, &l));
        persistent = true;
    }
    if (!l.kernel) return Status(TOPS_ERROR_INTERNAL, "norm: no CUDA kernel instantiated for this case");
    // Dense rows take the register rows' place (same teams and grid) where instantiated.
    if (dense && vec > 1 && l.kernel->strategy == Strategy::kRegs) {
        const KernelEntry* d = find_kernel(Strategy::kDense, dt, vec, l.kernel->team, l.kernel->iters);
        const size_t staged = size_t(2 * nvec) * kVecBytes;  // gamma and beta staged as 16-byte vectors
        // f32 rows of 16384 stage 128 KiB, more than some GPUs give a block (99 KiB on sm_86 / sm_89):
        // those keep the general kernel.
        if (d && staged <= dynamic_smem_budget(dev, d->fn)) {
            l.kernel = d;
            l.smem = staged;
            // A block team stages them once for all its rows (a one-wave grid), not once per row.
            if (rows_per_block == 1) persistent = true;
            TOPS_RETURN_IF_ERROR(allow_dynamic_smem(dev, l.kernel->fn, "norm: cudaFuncSetAttribute"));
        }
    }
    int per_sm = 0;
    TOPS_RETURN_IF_ERROR(cuda_status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, l.kernel->fn,
                                                                                   l.threads, l.smem),
                                     "norm: cudaOccupancyMaxActiveBlocksPerMultiprocessor"));
    if (per_sm < 1) return Status(TOPS_ERROR_INTERNAL, fmt("norm: ", l.kernel->name, " cannot be resident"));
    const int64_t needed = (rows + rows_per_block - 1) / rows_per_block;
    const int64_t groups = persistent ? std::min<int64_t>(needed, int64_t(per_sm) * dev.sm_count) : needed;
    // Kernels walk rows with a grid stride, so a grid capped at the launch limit covers any row count.
    constexpr int64_t kMaxGrid = 0x7fffffff;
    l.grid = int(std::clamp<int64_t>(groups, 1, kMaxGrid));
    *out = l;
    return Status::ok();
}

bool aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Which optional tensors the op was created with.
struct Optionals {
    bool residual = false, prenorm = false, gamma = false, beta = false, bias = false, mean = false, rstd = false;
};

class NormPlanCuda final : public OpPlan {
public:
    NormPlanCuda(const NormKernelParams& base, const Optionals& has, const Launch& vec_launch,
                 const Launch& scalar_launch, size_t vec_bytes, int device, std::string why)
        : base_(base), has_(has), vec_(vec_launch), scalar_(scalar_launch), vec_bytes_(vec_bytes), device_(device),
          why_(std::move(why)) {}

    Status execute(const ExecContext& ctx, const ArgTable& args) const override {
        if (base_.rows == 0) return Status::ok();
        DeviceScope scope(device_);
        TOPS_RETURN_IF_ERROR(scope.status());
        NormKernelParams p = base_;
        // Optional tensors absent at create time stay absent whatever the caller passes.
        p.x = args.in(TOPS_ARG_X);
        p.y = args.out(TOPS_ARG_Y);
        p.residual = has_.residual ? args.in(TOPS_ARG_RESIDUAL) : nullptr;
        p.prenorm = has_.prenorm ? args.out(TOPS_ARG_PRENORM) : nullptr;
        p.gamma = has_.gamma ? args.in(TOPS_ARG_GAMMA) : nullptr;
        p.beta = has_.beta ? args.in(TOPS_ARG_BETA) : nullptr;
        p.bias = has_.bias ? args.in(TOPS_ARG_BIAS) : nullptr;
        p.mean = has_.mean ? static_cast<float*>(args.out(TOPS_ARG_MEAN)) : nullptr;
        p.rstd = has_.rstd ? static_cast<float*>(args.out(TOPS_ARG_RSTD)) : nullptr;
        bool use_vec = vec_.kernel != nullptr;
        for (const void* ptr : {p.x, static_cast<const void*>(p.y), p.residual, static_cast<const void*>(p.prenorm),
                                p.gamma, p.beta, p.bias}) {
            if (ptr && !aligned(ptr, vec_bytes_)) use_vec = false;
        }
        const Launch& l = use_vec ? vec_ : scalar_;
        p.cache_vecs = l.cache_vecs;
        void* kargs[] = {&p};
        const cudaError_t err = cudaLaunchKernel(l.kernel->fn, dim3(unsigned(l.grid)), dim3(unsigned(l.threads)),
                                                 kargs, l.smem, static_cast<cudaStream_t>(ctx.stream));
        if (err != cudaSuccess) return cuda_status(err, l.kernel->name, TOPS_ERROR_DEVICE_LAUNCH);
        return launch_status(l.kernel->name);
    }

    const char* kernel_name() const override { return (vec_.kernel ? vec_ : scalar_).kernel->name; }
    std::string reason() const override { return why_; }

private:
    NormKernelParams base_;
    Optionals has_;
    Launch vec_;     // kernel == nullptr when strides rule out 16-byte vectors
    Launch scalar_;  // always valid
    size_t vec_bytes_;
    int device_;
    std::string why_;
};

}  // namespace

Status plan_norm(const NormParams& np, const DeviceInfo& dev, PlanPtr* out) {
    NormKernelParams base;
    base.rows = np.x.dims[0];
    base.cols = np.x.dims[1];
    base.x_rs = np.x.strides[0];
    base.x_cs = np.x.strides[1];
    base.y_rs = np.y.strides[0];
    base.y_cs = np.y.strides[1];
    if (np.residual.present()) {
        base.r_rs = np.residual.strides[0];
        base.r_cs = np.residual.strides[1];
    }
    if (np.prenorm.present()) {
        base.p_rs = np.prenorm.strides[0];
        base.p_cs = np.prenorm.strides[1];
    }
    if (np.gamma.present()) base.gamma_s = np.gamma.strides[0];
    if (np.beta.present()) base.beta_s = np.beta.strides[0];
    if (np.bias.present()) base.bias_s = np.bias.strides[0];
    if (np.mean.present()) base.mean_s = np.mean.strides[0];
    if (np.rstd.present()) base.rstd_s = np.rstd.strides[0];
    base.gamma_f32 = np.gamma.dtype == TOPS_DTYPE_F32;
    base.beta_f32 = np.beta.dtype == TOPS_DTYPE_F32;
    base.bias_f32 = np.bias.dtype == TOPS_DTYPE_F32;
    base.rms = np.rms;
    base.eps = np.eps;
    const tops_dtype_t dt = np.x.dtype;
    const int vm = int(16 / dtype_size(dt));
    // A dim of size 1 has no meaningful stride: treat it as unit.
    auto unit = [&](const TensorLayout& t, int i) { return !t.present() || t.dims[i] == 1 || t.strides[i] == 1; };
    auto rows_ok = [&](const TensorLayout& t) { return !t.present() || t.dims[0] == 1 || t.strides[0] % vm == 0; };
    if (base.cols == 1) base.x_cs = base.y_cs = base.r_cs = base.p_cs = 1;
    const bool vec_ok = base.cols % vm == 0 && unit(np.x, 1) && unit(np.y, 1) && unit(np.residual, 1) &&
                        unit(np.prenorm, 1) && rows_ok(np.x) && rows_ok(np.y) && rows_ok(np.residual) &&
                        rows_ok(np.prenorm) && unit(np.gamma, 0) && unit(np.beta, 0) && unit(np.bias, 0);
    DeviceScope scope(dev.ordinal);
    TOPS_RETURN_IF_ERROR(scope.status());
    Launch vec_launch, scalar_launch;
    const bool sum_is_x = !np.bias.present() && !np.residual.present();
    // TOPS_NORM_DENSE=0 keeps the general register-rows kernels (for comparisons).
    const bool dense = sum_is_x && !np.prenorm.present() && (!np.gamma.present() || np.gamma.dtype == dt) &&
                       (!np.beta.present() || np.beta.dtype == dt) && !env_switched_off("TOPS_NORM_DENSE");
    if (vec_ok) TOPS_RETURN_IF_ERROR(choose_launch(dt, base.rows, base.cols, vm, sum_is_x, dense, dev, &vec_launch));
    TOPS_RETURN_IF_ERROR(choose_launch(dt, base.rows, base.cols, 1, sum_is_x, false, dev, &scalar_launch));
    const Launch& shown = vec_ok ? vec_launch : scalar_launch;
    std::string why = fmt("rows=", base.rows, " cols=", base.cols,
                          vec_ok ? fmt(" 16-byte vectors when pointers are aligned (else ", scalar_launch.kernel->name,
                                       ")")
                                 : std::string(" no 16-byte vectors (strides or length)"),
                          " grid=", shown.grid, " threads=", shown.threads, " cached vectors=", shown.cache_vecs);
    Optionals has;
    has.residual = np.residual.present();
    has.prenorm = np.prenorm.present();
    has.gamma = np.gamma.present();
    has.beta = np.beta.present();
    has.bias = np.bias.present();
    has.mean = np.mean.present();
    has.rstd = np.rstd.present();
    out->reset(new NormPlanCuda(base, has, vec_launch, scalar_launch, kVecBytes, dev.ordinal, std::move(why)));
    return Status::ok();
}

}  // namespace tops::cuda
