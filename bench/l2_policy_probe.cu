// L2 policy probe (bench/l2_policy_probe.py builds and runs it): a 16-byte
// grid-stride copy and sum whose loads and stores carry different cache
// hints, to see what each costs or saves under compare_torch.py's timer
// (L2 written full before every call). Load forms: LD_DEF plain, LD_NC
// non-coherent, LD_CS evict-first (.cs), LD_EF L2::cache_hint evict_first,
// LD_NCNA_EF non-coherent + L1::no_allocate + evict_first, LD_LU last use,
// LD_NC256 non-coherent with 256-byte L2 prefetch, LD_NA_EF L1::no_allocate
// + evict_first. Store forms: ST_DEF, ST_CS (.cs), ST_EF / ST_EL
// (L2::cache_hint evict_first / evict_last). Variant id = load * 10 + store.
#include <cstdint>
#include <cuda_runtime.h>

enum { LD_DEF = 0, LD_NC = 1, LD_CS = 2, LD_EF = 3, LD_NCNA_EF = 4, LD_LU = 5, LD_NC256 = 6, LD_NA_EF = 7 };

template <int P>
__device__ __forceinline__ uint4 ld(const uint4* p, uint64_t pol) {
    uint4 v;
    if constexpr (P == LD_DEF) {
        asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    } else if constexpr (P == LD_NC) {
        asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    } else if constexpr (P == LD_CS) {
        asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    } else if constexpr (P == LD_EF) {
        asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(pol));
    } else if constexpr (P == LD_NCNA_EF) {
        asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(pol));
    } else if constexpr (P == LD_LU) {
        asm volatile("ld.global.lu.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    } else if constexpr (P == LD_NA_EF) {
        asm volatile("ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(pol));
    } else {
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    }
    return v;
}

enum { ST_DEF = 0, ST_CS = 1, ST_EF = 2, ST_EL = 3 };
template <int S>
__device__ __forceinline__ void st(uint4* p, uint4 v, uint64_t pol) {
    if constexpr (S == ST_DEF) {
        asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
    } else if constexpr (S == ST_CS) {
        asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
    } else {
        asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, %5;" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(pol) : "memory");
    }
}

__device__ __forceinline__ uint64_t pol_first() {
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}
__device__ __forceinline__ uint64_t pol_last() {
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}

constexpr int U = 4;
template <int P, int S>
__global__ void __launch_bounds__(256) copy_k(const uint4* __restrict__ x, uint4* __restrict__ y, int64_t n) {
    const uint64_t lp = pol_first();
    const uint64_t sp = S == ST_EL ? pol_last() : pol_first();
    int64_t i = (int64_t(blockIdx.x) * 256 * U) + threadIdx.x;
    const int64_t step = int64_t(gridDim.x) * 256 * U;
    for (; i < n; i += step) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) if (i + u * 256 < n) v[u] = ld<P>(x + i + u * 256, lp);
#pragma unroll
        for (int u = 0; u < U; ++u) if (i + u * 256 < n) st<S>(y + i + u * 256, v[u], sp);
    }
}

template <int P>
__global__ void __launch_bounds__(256) sum_k(const uint4* __restrict__ x, float* __restrict__ out, int64_t n) {
    const uint64_t lp = pol_first();
    int64_t i = (int64_t(blockIdx.x) * 256 * U) + threadIdx.x;
    const int64_t step = int64_t(gridDim.x) * 256 * U;
    float acc = 0.f;
    for (; i < n; i += step) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) if (i + u * 256 < n) v[u] = ld<P>(x + i + u * 256, lp); else v[u] = make_uint4(0,0,0,0);
#pragma unroll
        for (int u = 0; u < U; ++u) acc += __uint_as_float(v[u].x) + __uint_as_float(v[u].y) + __uint_as_float(v[u].z) + __uint_as_float(v[u].w);
    }
    for (int o = 16; o; o >>= 1) acc += __shfl_xor_sync(~0u, acc, o);
    if ((threadIdx.x & 31) == 0) out[blockIdx.x * 8 + threadIdx.x / 32] = acc;
}

#define COPY(P, S) case P * 10 + S: copy_k<P, S><<<grid, 256, 0, s>>>((const uint4*)x, (uint4*)y, n16); break;
extern "C" int run_copy(int variant, const void* x, void* y, int64_t bytes, int grid, void* stream) {
    cudaStream_t s = (cudaStream_t)stream;
    const int64_t n16 = bytes / 16;
    switch (variant) {
        COPY(0, 0) COPY(1, 0) COPY(2, 0) COPY(3, 0) COPY(4, 0) COPY(5, 0) COPY(6, 0)
        COPY(0, 1) COPY(0, 2) COPY(0, 3) COPY(1, 1) COPY(2, 1) COPY(3, 1) COPY(4, 1) COPY(5, 1) COPY(6, 1) COPY(7, 1) COPY(7, 0) COPY(4, 2) COPY(4, 3)
        default: return -1;
    }
    return (int)cudaGetLastError();
}
#define SUM(P) case P: sum_k<P><<<grid, 256, 0, s>>>((const uint4*)x, (float*)y, n16); break;
extern "C" int run_sum(int variant, const void* x, void* y, int64_t bytes, int grid, void* stream) {
    cudaStream_t s = (cudaStream_t)stream;
    const int64_t n16 = bytes / 16;
    switch (variant) {
        SUM(0) SUM(1) SUM(2) SUM(3) SUM(4) SUM(5) SUM(6) SUM(7)
        default: return -1;
    }
    return (int)cudaGetLastError();
}
