// SIMD helpers shared by the norm, reduce and elementwise kernel files (include
// after cpu/isa_arch.hpp; everything lives in TOPS_ISA_NS so each ISA keeps its
// own copy). Adds to cpu/vec_convert.hpp:
//   load_n / store_n: the first `count` lanes of a vector, the rest of the
//     loaded lanes 0. AVX-512 uses masked loads and stores (no byte outside
//     [p, p + count) is touched and masked lanes never fault); AVX2 masks f32
//     with vmaskmovps; everything else goes through vec_convert's stack-buffer
//     partial variants.
//   first_lanes, horizontal max / min.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "cpu/isa_arch.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu::TOPS_ISA_NS {

// Lanes [0, count) true; 0 <= count <= kLanes.
inline BoolF first_lanes(int count) {
    alignas(64) int32_t iota[kLanes];
    for (int i = 0; i < kLanes; ++i) iota[i] = i;
    return xsimd::bool_cast(VecI::load_aligned(iota) < VecI(count));
}

#if defined(TOPS_CPU_ISA_avx2)
// All-ones in 32-bit lanes [0, count).
inline __m256i avx2_lane_mask(int count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#endif

template <tops_dtype_t DT>
inline VecF load_n(const storage_t<DT>* p, int count) {
#if defined(TOPS_CPU_ISA_avx512)
    const __mmask16 m = __mmask16((1u << count) - 1u);
    if constexpr (DT == TOPS_DTYPE_F32) {
        return _mm512_maskz_loadu_ps(m, p);
    } else if constexpr (DT == TOPS_DTYPE_F16) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    } else {
        return bf16_widen(VecI(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p))));
    }
#elif defined(TOPS_CPU_ISA_avx2)
    if constexpr (DT == TOPS_DTYPE_F32) {
        return _mm256_maskload_ps(p, avx2_lane_mask(count));
    } else {
        return load_partial<DT>(p, count, 0.0f);
    }
#else
    return load_partial<DT>(p, count, 0.0f);
#endif
}

template <tops_dtype_t DT>
inline void store_n(storage_t<DT>* p, VecF v, int count) {
#if defined(TOPS_CPU_ISA_avx512)
    const __mmask16 m = __mmask16((1u << count) - 1u);
    if constexpr (DT == TOPS_DTYPE_F32) {
        _mm512_mask_storeu_ps(p, m, v);
    } else if constexpr (DT == TOPS_DTYPE_F16) {
        _mm256_mask_storeu_epi16(p, m, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    } else {
        _mm256_mask_storeu_epi16(p, m, _mm512_cvtepi32_epi16(bf16_narrow(v)));
    }
#elif defined(TOPS_CPU_ISA_avx2)
    if constexpr (DT == TOPS_DTYPE_F32) {
        _mm256_maskstore_ps(p, avx2_lane_mask(count), v);
    } else {
        store_partial<DT>(p, v, count);
    }
#else
    store_partial<DT>(p, v, count);
#endif
}

// Full vector when count == kLanes, masked otherwise.
template <tops_dtype_t DT>
inline VecF load_any(const storage_t<DT>* p, int count) {
    return count == kLanes ? load<DT>(p) : load_n<DT>(p, count);
}

template <tops_dtype_t DT>
inline void store_any(storage_t<DT>* p, VecF v, int count) {
    if (count == kLanes) store<DT>(p, v);
    else store_n<DT>(p, v, count);
}

inline float hmax_lanes(VecF v) {
    alignas(64) float tmp[kLanes];
    v.store_aligned(tmp);
    float m = tmp[0];
    for (int i = 1; i < kLanes; ++i) m = tmp[i] > m ? tmp[i] : m;
    return m;
}

inline float hmin_lanes(VecF v) {
    alignas(64) float tmp[kLanes];
    v.store_aligned(tmp);
    float m = tmp[0];
    for (int i = 1; i < kLanes; ++i) m = tmp[i] < m ? tmp[i] : m;
    return m;
}

inline float hprod_lanes(VecF v) {
    alignas(64) float tmp[kLanes];
    v.store_aligned(tmp);
    float m = tmp[0];
    for (int i = 1; i < kLanes; ++i) m *= tmp[i];
    return m;
}

}  // namespace tops::cpu::TOPS_ISA_NS
