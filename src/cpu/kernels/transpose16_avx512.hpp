// A (16, 16) tile of 4-byte elements transposed in zmm registers, shared by
// the transpose tile kernel (one 64-byte line of x per register) and the
// GEMM's packing of row-major A (one row of 16 k values per register).
// Rounds: 32-bit unpacks of register pairs (c, c+1), 64-bit unpacks of pairs
// (c, c+2), then two 128-bit lane shuffles (c, c+4) and (c, c+8); after them
// register j holds element j of every input register. The shuffles use the
// maskz forms with every lane selected: they compile to the plain
// instructions, while gcc 12's unmasked intrinsics warn (-Wuninitialized)
// about their internal _mm512_undefined_* operand.
// Included only by kernel files compiled for avx512 (TOPS_CPU_ISA_avx512).
#pragma once

#include <immintrin.h>

#include "cpu/isa_arch.hpp"

namespace tops::cpu {
namespace TOPS_ISA_NS {

constexpr int kTranspose16 = 16;
constexpr __mmask16 kAllLanesPs = 0xffff;
constexpr __mmask8 kAllLanesPd = 0xff;

// v[i] (row i, 16 f32) -> v[j] = column j.
inline __attribute__((always_inline)) void transpose_16x16_f32_avx512(__m512 (&v)[kTranspose16]) {
    constexpr int N = kTranspose16;
    constexpr int kEvenLanes = _MM_SHUFFLE(2, 0, 2, 0);  // 128-bit lanes 0 and 2 of each source
    constexpr int kOddLanes = _MM_SHUFFLE(3, 1, 3, 1);   // lanes 1 and 3
    __m512 t[N];
    for (int i = 0; i < N; i += 2) {
        t[i] = _mm512_maskz_unpacklo_ps(kAllLanesPs, v[i], v[i + 1]);
        t[i + 1] = _mm512_maskz_unpackhi_ps(kAllLanesPs, v[i], v[i + 1]);
    }
    // v[4g + j], lane k: element 4k + j of registers 4g..4g+3
    for (int g = 0; g < N; g += 4) {
        const __m512d a0 = _mm512_castps_pd(t[g]), a1 = _mm512_castps_pd(t[g + 1]);
        const __m512d b0 = _mm512_castps_pd(t[g + 2]), b1 = _mm512_castps_pd(t[g + 3]);
        v[g] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAllLanesPd, a0, b0));
        v[g + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAllLanesPd, a0, b0));
        v[g + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAllLanesPd, a1, b1));
        v[g + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAllLanesPd, a1, b1));
    }
    // registers 0..7 (h = 0) and 8..15 (h = 8): lane pairs of groups g and g + 4
    for (int h = 0; h < N; h += 8) {
        for (int j = 0; j < 4; ++j) {
            t[h + j] = _mm512_maskz_shuffle_f32x4(kAllLanesPs, v[h + j], v[h + 4 + j], kEvenLanes);  // elements j, 8 + j
            t[h + 4 + j] = _mm512_maskz_shuffle_f32x4(kAllLanesPs, v[h + j], v[h + 4 + j], kOddLanes);  // 4 + j, 12 + j
        }
    }
    // t[j]'s even lanes hold element j, its odd lanes element j + 8
    for (int j = 0; j < 8; ++j) {
        v[j] = _mm512_maskz_shuffle_f32x4(kAllLanesPs, t[j], t[8 + j], kEvenLanes);
        v[j + 8] = _mm512_maskz_shuffle_f32x4(kAllLanesPs, t[j], t[8 + j], kOddLanes);
    }
}

}  // namespace TOPS_ISA_NS
}  // namespace tops::cpu
