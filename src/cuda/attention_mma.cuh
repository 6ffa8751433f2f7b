// Warp-level building blocks of the attention kernels (sm_80 instructions,
// also run on sm_90): cp.async 16-byte copies with zero fill, ldmatrix (plain
// and transposed) and mma.sync.m16n8k16 with f32 accumulators for f16 and
// bf16 operands, plus packing of two f32 values into one operand register.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cstdint>

namespace tops::cuda::attn {

constexpr float kLn2 = 0.69314718055994531f;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared; when !valid the destination is zero-filled and
// nothing is read.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Four 8x8 b16 matrices; lane l supplies the row address of matrix l / 8.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

// d (16x8 f32) += a (16x16, row) * b (16x8, col).
template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);

template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                         uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// (lo, hi) -> one register holding two T values, lo in the low half.
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);

template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
}

template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
}

// 2^x with one MUFU instruction (2^-inf = 0).
__device__ __forceinline__ float exp2_approx(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// Keys visible to a block of query rows: key tiles [nb_begin, nb_end) of
// block_n keys (the split's share of them under split-KV), and the band
// lo <= j - i <= hi of key j for query i (INT_MIN / INT_MAX when unbounded).
// Query i sees key j when i + off - left <= j <= i + off + right and
// 0 <= j < sk, off = sk - sq (a right bound is aligned bottom-right).
struct KeyBand {
    int nb_begin, nb_end, lo, hi;

    // Whether no key of tile [n0, n0 + block_n) x rows [m0, m0 + block_m) needs a mask.
    __device__ __forceinline__ bool unmasked(int n0, int block_n, int m0, int block_m, int sk) const {
        return n0 + block_n <= sk && int64_t(n0) + block_n - 1 - m0 <= hi && int64_t(n0) - (m0 + block_m - 1) >= lo;
    }
};

__device__ __forceinline__ KeyBand key_band(int m0, int block_m, int block_n, int sq, int sk, int64_t window_left,
                                            int64_t window_right, int split, int splits) {
    const int64_t off = int64_t(sk) - sq;
    const bool has_left = window_left >= 0, has_right = window_right >= 0;
    const int64_t m_last = int64_t(min(m0 + block_m, sq)) - 1;
    const int64_t key_lo = has_left ? max(int64_t(0), m0 + off - window_left) : 0;
    const int64_t key_hi = has_right ? min(int64_t(sk), m_last + off + window_right + 1) : sk;
    KeyBand b;
    b.nb_begin = int(key_lo / block_n);
    b.nb_end = key_hi > key_lo ? int((key_hi + block_n - 1) / block_n) : b.nb_begin;
    if (splits > 1) {
        const int per = (b.nb_end - b.nb_begin + splits - 1) / splits;
        b.nb_begin = min(b.nb_end, b.nb_begin + split * per);
        b.nb_end = min(b.nb_end, b.nb_begin + per);
    }
    b.lo = has_left ? int(max(int64_t(INT_MIN), off - window_left)) : INT_MIN;
    b.hi = has_right ? int(min(int64_t(INT_MAX), off + window_right)) : INT_MAX;
    return b;
}

}  // namespace tops::cuda::attn
