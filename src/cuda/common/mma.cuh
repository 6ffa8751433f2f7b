// Tensor-core building blocks (sm_80 instructions, also run on sm_90):
// cp.async global -> shared copies with zero fill, ldmatrix fragment loads,
// mma.sync m16n8k16 with f32 accumulation for f16 and bf16 operands, and
// m16n8k8 on TF32 operands with the 3xTF32 split for f32 inputs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace tops::cuda {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared; src_bytes 0 writes zeros and reads nothing
// (the source address must still be a valid pointer value, never dereferenced).
__device__ __forceinline__ void cp_async_16_zfill(uint32_t dst, const void* src, bool valid) {
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

// The same through L1 (cp.async.ca): for data that neighbouring copies of
// the same CTA read again (overlapping convolution windows).
__device__ __forceinline__ void cp_async_16_zfill_ca(uint32_t dst, const void* src, bool valid) {
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// D(16x8, f32) += A(16x16, row) * B(16x8, col).
template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]);

template <>
__device__ __forceinline__ void mma_m16n8k16<__half>(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <>
__device__ __forceinline__ void mma_m16n8k16<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4],
                                                             const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// TF32 keeps the sign, the exponent and the top 10 of f32's 23 mantissa bits.
constexpr uint32_t kTf32Mask = 0xffffe000u;

// f32 bits v rounded to the nearest TF32 (ties away from zero).
__device__ __forceinline__ uint32_t tf32_round(uint32_t v) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "r"(v));
    return r;
}

// f32 value v as big + small, both TF32 (10 explicit mantissa bits): big is v
// rounded to nearest TF32 and small the rounded remainder, so big + small
// carries 21-22 of v's 24 significant bits and the remainder has no sign
// bias. A finite v that would round past the f32 range keeps its truncated
// big. +-inf splits into (+-largest finite TF32, +-inf): an infinite big
// would meet the other operand's small part of either sign (inf - inf = NaN
// where the product is an infinity); NaN splits into (NaN, NaN).
__device__ __forceinline__ void tf32_split(uint32_t v, uint32_t& big, uint32_t& small) {
    constexpr uint32_t kSignBit = 0x80000000u;
    constexpr uint32_t kTf32MaxFinite = 0x7f7fe000u;
    big = tf32_round(v);
    const float x = __uint_as_float(v);
    if (isinf(__uint_as_float(big))) big = isinf(x) ? (v & kSignBit) | kTf32MaxFinite : v & kTf32Mask;
    small = tf32_round(__float_as_uint(x - __uint_as_float(big)));
}

// Values below this magnitude (finite) take tf32_split_ordinary.
constexpr float kTf32OrdinaryLimit = 0x1p127f;

// tf32_split for a finite |v| < kTf32OrdinaryLimit in five integer / f32
// instructions: rounding to nearest (ties away) adds half a TF32 ulp to the
// bits and clears the 13 low ones, which cannot carry past the f32 range
// here. A NaN v also splits into NaNs. Same results as tf32_split otherwise.
__device__ __forceinline__ void tf32_split_ordinary(uint32_t v, uint32_t& big, uint32_t& small) {
    constexpr uint32_t kHalfUlp = 0x1000u;  // half a TF32 ulp in f32 bits
    big = (v + kHalfUlp) & kTf32Mask;
    const float rest = __uint_as_float(v) - __uint_as_float(big);
    small = (__float_as_uint(rest) + kHalfUlp) & kTf32Mask;
}

// D(16x8, f32) += A(16x8, row) * B(8x8, col), TF32 operands. The fragment
// registers are those ldmatrix gives for the same bytes of an f16 m16n8k16
// tile: an 8x8 b16 matrix is 8 rows of 4 f32 values, lane l holding value
// l % 4 of row l / 4, which is the TF32 fragment layout. Not volatile: it has
// no side effects, so independent MMAs may be interleaved by the compiler.
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace tops::cuda
