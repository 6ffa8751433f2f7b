// Device helpers shared by the CUDA kernels: element <-> f32 conversion for
// f32/f16/bf16 storage, aligned vectors for 16-byte accesses, warp and block
// reductions, and a 32-bit fast divmod for index arithmetic.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace tops::cuda {

// Storage types: f16 and bf16 travel as their CUDA types, math is f32.
template <class T>
struct ElemTraits;
template <>
struct ElemTraits<float> {
    static __device__ __forceinline__ float to_float(float v) { return v; }
    static __device__ __forceinline__ float from_float(float v) { return v; }
};
template <>
struct ElemTraits<__half> {
    static __device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
    static __device__ __forceinline__ __half from_float(float v) { return __float2half_rn(v); }
};
template <>
struct ElemTraits<__nv_bfloat16> {
    static __device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
    static __device__ __forceinline__ __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
};

// N elements loaded or stored with one instruction (N * sizeof(T) <= 16).
template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
    T v[N];
};

// Bytes moved as one unit by dtype-agnostic kernels (transpose).
template <int Bytes>
struct ByteUnit;
template <> struct ByteUnit<1> { using type = uint8_t; };
template <> struct ByteUnit<2> { using type = uint16_t; };
template <> struct ByteUnit<4> { using type = uint32_t; };
template <> struct ByteUnit<8> { using type = uint2; };
template <> struct ByteUnit<16> { using type = uint4; };

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;

// Reductions over aligned groups of `Width` lanes (Width a power of two <= 32).
template <int Width>
__device__ __forceinline__ float group_max(float v) {
#pragma unroll
    for (int o = Width / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o, Width));
    return v;
}

template <int Width>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int o = Width / 2; o > 0; o /= 2) v += __shfl_xor_sync(kFullMask, v, o, Width);
    return v;
}

// Online softmax statistics of values u whose exp2-domain values are u * k
// (k > 0, the caller's scale): running max m of u and sum s of 2^((u - m) * k).
// Exponents are formed as (u - m) * k, not u * k - m * k: u - m is exact near
// the max, so inputs of large magnitude (|u * k| ~ 1e3, where one rounding of
// u * k costs 6e-5 of absolute exponent) keep their relative precision, and
// the max itself contributes exactly 2^0 (a one-element log-softmax is 0).
struct MaxSum {
    float m;
    float s;
};

// 2^x with one MUFU instruction (max relative error 2^-22; 2^-inf = 0).
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ MaxSum maxsum_combine(MaxSum a, MaxSum b, float k) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.0f};
    return {m, a.s * fast_exp2((a.m - m) * k) + b.s * fast_exp2((b.m - m) * k)};
}

// Adds N values (-inf = absent): one rescale per call, not per value.
template <int N>
__device__ __forceinline__ MaxSum maxsum_add(MaxSum acc, const float (&u)[N], float k) {
    float cm = u[0];
#pragma unroll
    for (int j = 1; j < N; ++j) cm = fmaxf(cm, u[j]);
    if (cm == -INFINITY) return acc;
    if (cm > acc.m) {
        acc.s *= fast_exp2((acc.m - cm) * k);  // acc.m == -inf: 0 * 0
        acc.m = cm;
    }
#pragma unroll
    for (int j = 0; j < N; ++j) acc.s += fast_exp2((u[j] - acc.m) * k);
    return acc;
}

__device__ __forceinline__ MaxSum warp_maxsum(MaxSum a, float k) {
#pragma unroll
    for (int o = kWarpSize / 2; o > 0; o /= 2) {
        MaxSum b{__shfl_xor_sync(kFullMask, a.m, o), __shfl_xor_sync(kFullMask, a.s, o)};
        a = maxsum_combine(a, b, k);
    }
    return a;
}

// Block-wide combine; every thread gets the result. `scratch` holds 32 entries.
// Starts with a barrier so that scratch may be reused by consecutive calls.
__device__ __forceinline__ MaxSum block_maxsum(MaxSum a, MaxSum* scratch, float k) {
    const int lane = threadIdx.x % kWarpSize;
    const int warp = threadIdx.x / kWarpSize;
    const int nwarps = (blockDim.x + kWarpSize - 1) / kWarpSize;
    a = warp_maxsum(a, k);
    __syncthreads();
    if (lane == 0) scratch[warp] = a;
    __syncthreads();
    MaxSum r = lane < nwarps ? scratch[lane] : MaxSum{-INFINITY, 0.0f};
    return warp_maxsum(r, k);
}

// Division by a fixed positive divisor through a multiply-high (Granlund and
// Montgomery): exact for every 32-bit dividend. Dividends of 2^32 and more
// take the slow path (huge tensors only).
struct FastDivmod {
    uint64_t d = 1;
    uint32_t mul = 0;
    uint32_t shift = 0;
    bool wide = false;  // divisor >= 2^32: always the slow path

    FastDivmod() = default;
    __host__ explicit FastDivmod(uint64_t divisor) : d(divisor ? divisor : 1) {
        if (d > 0xffffffffull) {
            wide = true;
            return;
        }
        while ((uint64_t(1) << shift) < d) ++shift;
        const uint64_t one = 1;
        mul = uint32_t(((one << 32) * ((one << shift) - d)) / d + 1);
    }

    __device__ __forceinline__ void divmod(uint64_t n, uint64_t* q, uint64_t* r) const {
        if (!wide && n <= 0xffffffffull) {
            const uint32_t n32 = uint32_t(n);
            const uint32_t t = __umulhi(n32, mul);
            const uint32_t qq = shift ? (t + ((n32 - t) >> 1)) >> (shift - 1) : n32;
            *q = qq;
            *r = n32 - qq * uint32_t(d);
        } else {
            *q = n / d;
            *r = n - *q * d;
        }
    }
};

// Programmatic dependent launch (sm_90; no-ops before): a primary kernel lets
// the next kernel of the stream, launched with the programmatic-serialization
// attribute, be scheduled while it runs; the dependent waits for the
// primary's completion and the visibility of its writes before reading them.
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void wait_for_primary() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace tops::cuda
