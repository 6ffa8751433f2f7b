// 16-byte vectors of f32 / f16 / bf16 storage <-> f32 registers for the
// norm, reduce and elementwise kernels. f16 and bf16 convert two elements
// per instruction (half2 / bfloat162 pack and unpack): element-wise
// f32 -> f16 conversion runs on the narrow conversion pipe and caps f16
// kernels near half the memory bandwidth.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <type_traits>

#include "cuda/common/device.cuh"

namespace tops::cuda {

template <class T>
struct PairTraits;
template <>
struct PairTraits<__half> {
    using Pair = __half2;
    static __device__ __forceinline__ float2 to_float2(Pair v) { return __half22float2(v); }
    static __device__ __forceinline__ Pair from_float2(float a, float b) { return __floats2half2_rn(a, b); }
};
template <>
struct PairTraits<__nv_bfloat16> {
    using Pair = __nv_bfloat162;
    static __device__ __forceinline__ float2 to_float2(Pair v) { return __bfloat1622float2(v); }
    static __device__ __forceinline__ Pair from_float2(float a, float b) { return __floats2bfloat162_rn(a, b); }
};

// L2 eviction priority of a load (load_with_policy): evict-first for a
// tensor read once by a streaming pass, so the lines it allocates are the
// first to be replaced and the pass does not push other, possibly dirty,
// data out of L2 (a pure read of a tensor after L2 was filled with written
// data runs 7-14% faster this way on an H100: docs/performance.md).
__device__ __forceinline__ uint64_t l2_policy(bool evict_first) {
    uint64_t policy;
    if (evict_first) {
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    } else {
        asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(policy));
    }
    return policy;
}

// One global load of 2, 4 or 16 bytes under an L2 policy from l2_policy
// (the same instruction either way, so choosing the policy at run time
// adds no branch to the loop that loads).
template <class V>
__device__ __forceinline__ V load_with_policy(const V* p, uint64_t policy) {
    static_assert(sizeof(V) == 2 || sizeof(V) == 4 || sizeof(V) == 16, "2-, 4- or 16-byte loads");
    V v;
    if constexpr (sizeof(V) == 16) {
        uint4 u;
        asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                     : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
                     : "l"(p), "l"(policy));
        memcpy(&v, &u, sizeof(V));
    } else if constexpr (sizeof(V) == 4) {
        uint32_t u;
        asm volatile("ld.global.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(u) : "l"(p), "l"(policy));
        memcpy(&v, &u, sizeof(V));
    } else {
        uint16_t u;
        asm volatile("ld.global.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(u) : "l"(p), "l"(policy));
        memcpy(&v, &u, sizeof(V));
    }
    return v;
}

// A loaded vector as f32.
template <class T, int VEC>
__device__ __forceinline__ void vec_to_f32(const Vec<T, VEC>& t, float (&v)[VEC]) {
    if constexpr (std::is_same_v<T, __nv_bfloat16> && VEC % 2 == 0) {
        // From the 32-bit words: a bf16 is the high half of its f32. (Through
        // __nv_bfloat162 pairs, 16-bit moves kept the reduce kernel's 16
        // loaded vectors at 170 registers, against 95 for f16.)
        uint32_t w[VEC / 2];
        memcpy(w, &t, sizeof(w));
#pragma unroll
        for (int j = 0; j < VEC; j += 2) {
            v[j] = __uint_as_float(w[j / 2] << 16);
            v[j + 1] = __uint_as_float(w[j / 2] & 0xffff0000u);
        }
    } else if constexpr (sizeof(T) == 2 && VEC % 2 == 0) {
        using P = PairTraits<T>;
#pragma unroll
        for (int j = 0; j < VEC; j += 2) {
            typename P::Pair pr;
            pr.x = t.v[j];
            pr.y = t.v[j + 1];
            const float2 f = P::to_float2(pr);
            v[j] = f.x;
            v[j + 1] = f.y;
        }
    } else {
#pragma unroll
        for (int j = 0; j < VEC; ++j) v[j] = ElemTraits<T>::to_float(t.v[j]);
    }
}

// VEC elements at `src` (aligned to VEC * sizeof(T)) as f32.
template <class T, int VEC>
__device__ __forceinline__ void load_vec_f32(const T* src, float (&v)[VEC]) {
    static_assert(VEC * sizeof(T) <= 16, "vectors are at most 16 bytes");
    // Copy to registers first: converting through a reference to global
    // memory lets the compiler split the 16-byte load into scalar loads.
    const Vec<T, VEC> t = *reinterpret_cast<const Vec<T, VEC>*>(src);
    vec_to_f32<T, VEC>(t, v);
}

// Rounds VEC f32 values to T and stores them at `dst` (aligned).
template <class T, int VEC>
__device__ __forceinline__ void store_vec_f32(T* dst, const float (&v)[VEC]) {
    static_assert(VEC * sizeof(T) <= 16, "vectors are at most 16 bytes");
    Vec<T, VEC> t;
    if constexpr (sizeof(T) == 2 && VEC % 2 == 0) {
        using P = PairTraits<T>;
#pragma unroll
        for (int j = 0; j < VEC; j += 2) {
            const typename P::Pair pr = P::from_float2(v[j], v[j + 1]);
            t.v[j] = pr.x;
            t.v[j + 1] = pr.y;
        }
    } else {
#pragma unroll
        for (int j = 0; j < VEC; ++j) t.v[j] = ElemTraits<T>::from_float(v[j]);
    }
    *reinterpret_cast<Vec<T, VEC>*>(dst) = t;
}

}  // namespace tops::cuda
