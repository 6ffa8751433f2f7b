// L2 policy probe (bench/l2_policy_probe.py builds and runs it): a 16-byte
// grid-stride copy and sum whose loads and stores carry different cache
// hints, to see what each costs or saves under compare_torch.py's timer
// (L2 written full before every call). Load forms: LD_DEF plain, LD_NC
// non-coherent, LD_CS evict-first (.cs), LD_EF L2::cache_hint evict_first,
// LD_NCNA_EF non-coherent + L1::no_allocate + evict_first, LD_LU last use,
// LD_NC256 non-coherent with 256-byte L2 prefetch, LD_NA_EF L1::no_allocate
// + evict_first. Store forms: ST_DEF, ST_CS (.cs), ST_EF / ST_EL
// (L2::cache_hint evict_first / evict_last). Variant id = load * 10 + store.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

constexpr int kThreads = 256;  // per block
constexpr int kUnroll = 4;     // 16-byte vectors per thread in flight
constexpr int kWarps = kThreads / 32;

enum { LD_DEF, LD_NC, LD_CS, LD_EF, LD_NCNA_EF, LD_LU, LD_NC256, LD_NA_EF };
enum { ST_DEF, ST_CS, ST_EF, ST_EL };

// Operand lists of a 16-byte load into v from p (with an L2 policy pol) and a store of v to p.
#define PROBE_LD_OUT "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
#define PROBE_ST_IN "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)

template <int P>
__device__ __forceinline__ uint4 ld(const uint4* p, uint64_t pol) {
    uint4 v;
    if constexpr (P == LD_DEF) {
        asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : PROBE_LD_OUT : "l"(p));
    } else if constexpr (P == LD_NC) {
        asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : PROBE_LD_OUT : "l"(p));
    } else if constexpr (P == LD_CS) {
        asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];" : PROBE_LD_OUT : "l"(p));
    } else if constexpr (P == LD_EF) {
        asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;" : PROBE_LD_OUT : "l"(p), "l"(pol));
    } else if constexpr (P == LD_NCNA_EF) {
        asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                     : PROBE_LD_OUT
                     : "l"(p), "l"(pol));
    } else if constexpr (P == LD_LU) {
        asm volatile("ld.global.lu.v4.u32 {%0,%1,%2,%3}, [%4];" : PROBE_LD_OUT : "l"(p));
    } else if constexpr (P == LD_NA_EF) {
        asm volatile("ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                     : PROBE_LD_OUT
                     : "l"(p), "l"(pol));
    } else {
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : PROBE_LD_OUT : "l"(p));
    }
    return v;
}

template <int S>
__device__ __forceinline__ void st(uint4* p, uint4 v, uint64_t pol) {
    if constexpr (S == ST_DEF) {
        asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::PROBE_ST_IN : "memory");
    } else if constexpr (S == ST_CS) {
        asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::PROBE_ST_IN : "memory");
    } else {
        asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, %5;" ::PROBE_ST_IN, "l"(pol) : "memory");
    }
}

#undef PROBE_LD_OUT
#undef PROBE_ST_IN

__device__ __forceinline__ uint64_t policy(bool evict_last) {
    uint64_t pol;
    if (evict_last) {
        asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    } else {
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    }
    return pol;
}

// y = x over n 16-byte vectors, kUnroll loads of a thread in flight before its stores.
template <int P, int S>
__global__ void __launch_bounds__(kThreads) copy_k(const uint4* __restrict__ x, uint4* __restrict__ y, int64_t n) {
    const uint64_t lp = policy(false), sp = policy(S == ST_EL);
    const int64_t step = int64_t(gridDim.x) * kThreads * kUnroll;
    for (int64_t i = int64_t(blockIdx.x) * kThreads * kUnroll + threadIdx.x; i < n; i += step) {
        uint4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (i + u * kThreads < n) v[u] = ld<P>(x + i + u * kThreads, lp);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (i + u * kThreads < n) st<S>(y + i + u * kThreads, v[u], sp);
        }
    }
}

// Per-warp sums of n 16-byte vectors read as f32 into out[block * kWarps + warp].
template <int P>
__global__ void __launch_bounds__(kThreads) sum_k(const uint4* __restrict__ x, float* __restrict__ out, int64_t n) {
    const uint64_t lp = policy(false);
    const int64_t step = int64_t(gridDim.x) * kThreads * kUnroll;
    float acc = 0.0f;
    for (int64_t i = int64_t(blockIdx.x) * kThreads * kUnroll + threadIdx.x; i < n; i += step) {
        uint4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) v[u] = i + u * kThreads < n ? ld<P>(x + i + u * kThreads, lp) : uint4{};
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            acc += __uint_as_float(v[u].x) + __uint_as_float(v[u].y) + __uint_as_float(v[u].z) +
                   __uint_as_float(v[u].w);
        }
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x % 32 == 0) out[blockIdx.x * kWarps + threadIdx.x / 32] = acc;
}

}  // namespace

#define PROBE_COPY(P, S)                                                                     \
    case P * 10 + S:                                                                         \
        copy_k<P, S><<<grid, kThreads, 0, s>>>(static_cast<const uint4*>(x), static_cast<uint4*>(y), n16); \
        break;
extern "C" int run_copy(int variant, const void* x, void* y, int64_t bytes, int grid, void* stream) {
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const int64_t n16 = bytes / 16;
    switch (variant) {
        PROBE_COPY(0, 0) PROBE_COPY(1, 0) PROBE_COPY(2, 0) PROBE_COPY(3, 0) PROBE_COPY(4, 0)
        PROBE_COPY(5, 0) PROBE_COPY(6, 0) PROBE_COPY(7, 0) PROBE_COPY(0, 1) PROBE_COPY(0, 2)
        PROBE_COPY(0, 3) PROBE_COPY(1, 1) PROBE_COPY(2, 1) PROBE_COPY(3, 1) PROBE_COPY(4, 1)
        PROBE_COPY(4, 2) PROBE_COPY(4, 3) PROBE_COPY(5, 1) PROBE_COPY(6, 1) PROBE_COPY(7, 1)
        default: return -1;
    }
    return int(cudaGetLastError());
}
#undef PROBE_COPY

#define PROBE_SUM(P)                                                                                  \
    case P:                                                                                           \
        sum_k<P><<<grid, kThreads, 0, s>>>(static_cast<const uint4*>(x), static_cast<float*>(y), n16); \
        break;
// y holds grid * 8 floats (one per warp).
extern "C" int run_sum(int variant, const void* x, void* y, int64_t bytes, int grid, void* stream) {
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const int64_t n16 = bytes / 16;
    switch (variant) {
        PROBE_SUM(0) PROBE_SUM(1) PROBE_SUM(2) PROBE_SUM(3) PROBE_SUM(4) PROBE_SUM(5) PROBE_SUM(6) PROBE_SUM(7)
        default: return -1;
    }
    return int(cudaGetLastError());
}
#undef PROBE_SUM
