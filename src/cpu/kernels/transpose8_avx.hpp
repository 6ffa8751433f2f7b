// A (8, 8) tile of 4-byte elements transposed in ymm registers, shared by
// the transpose tile kernel (one 32-byte line of x per register) and the
// avx2 GEMM's packing of row-major A (one row of 8 k values per register).
// The in-lane unpacks and shuffles build 4x4 transposes in both 128-bit
// halves, then permute2f128 swaps the off-diagonal halves; after them
// register j holds element j of every input register.
// Included only by kernel files compiled for avx2 or avx512.
#pragma once

#include <immintrin.h>

#include "cpu/isa_arch.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {

constexpr int kTranspose8 = 8;

// v[i] (row i, 8 f32) -> v[j] = column j.
inline __attribute__((always_inline)) void transpose_8x8_f32_avx(__m256 (&v)[kTranspose8]) {
    constexpr int N = kTranspose8;
    __m256 t[N];
    for (int i = 0; i < N / 2; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]);
    }
    __m256 s[N];
    for (int h = 0; h < 2; ++h) {  // h: rows 0..3 or 4..7
        const int b = 4 * h;
        s[b + 0] = _mm256_shuffle_ps(t[b + 0], t[b + 2], _MM_SHUFFLE(1, 0, 1, 0));
        s[b + 1] = _mm256_shuffle_ps(t[b + 0], t[b + 2], _MM_SHUFFLE(3, 2, 3, 2));
        s[b + 2] = _mm256_shuffle_ps(t[b + 1], t[b + 3], _MM_SHUFFLE(1, 0, 1, 0));
        s[b + 3] = _mm256_shuffle_ps(t[b + 1], t[b + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int r = 0; r < N / 2; ++r) {
        v[r] = _mm256_permute2f128_ps(s[r], s[r + 4], 0x20);
        v[r + 4] = _mm256_permute2f128_ps(s[r], s[r + 4], 0x31);
    }
}

}  // namespace TOPS_ISA_NS
}  // namespace tops::cpu
