// SIMD helpers shared by the norm, reduce and elementwise kernel files (include
// after cpu/isa_arch.hpp; everything lives in TOPS_ISA_NS so each ISA keeps its
// own copy). Adds to cpu/vec_convert.hpp:
//   load_n / store_n: the first `count` lanes of a vector, the rest of the
//     loaded lanes 0. AVX-512 uses masked loads and stores (no byte outside
//     [p, p + count) is touched and masked lanes never fault); AVX2 masks f32
//     with vmaskmovps; everything else goes through vec_convert's stack-buffer
//     partial variants.
//   row_store: a row of results, non-temporal full vectors on request.
//   first_lanes, fold_lanes (horizontal max / min / product).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "cpu/isa_arch.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu::TOPS_ISA_NS {

// Lanes [0, count) true; 0 <= count <= kLanes.
inline BoolF first_lanes(int count) {
#if defined(TOPS_CPU_ISA_avx512)
    return BoolF(__mmask16((1u << count) - 1u));  // a mask register, no compare
#else
    alignas(64) int32_t iota[kLanes];
    for (int i = 0; i < kLanes; ++i) iota[i] = i;
    return xsimd::bool_cast(VecI::load_aligned(iota) < VecI(count));
#endif
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

// y[j] = f(j, count) for vectors over [0, len), where f returns lanes
// j .. j+count (count < kLanes only at the ends, stored masked). With
// `stream`, full vectors use non-temporal stores once y + j is vector aligned.
template <tops_dtype_t DT, class F>
inline void row_store(storage_t<DT>* y, int64_t len, bool stream, F&& f) {
    using T = storage_t<DT>;
    int64_t j = 0;
    const auto misaligned = reinterpret_cast<uintptr_t>(y) % uintptr_t(kVecBytes<DT>);
    if (stream && misaligned % sizeof(T) == 0) {
        const int64_t head = misaligned ? std::min<int64_t>(len, kLanes - int64_t(misaligned / sizeof(T))) : 0;
        if (head > 0) store_n<DT>(y, f(0, int(head)), int(head));
        for (j = head; j + kLanes <= len; j += kLanes) store_stream<DT>(y + j, f(j, kLanes));
    }
    for (; j + kLanes <= len; j += kLanes) store<DT>(y + j, f(j, kLanes));
    if (j < len) store_n<DT>(y + j, f(j, int(len - j)), int(len - j));
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

// f folded over the lanes by halving (f(v, v with its halves swapped), then
// quarters, ...): log2(kLanes) shuffles and f's, where a scalar loop over the
// lanes was a 15-long dependency chain per output on AVX-512. The order of the
// pairs is fixed, so an f that rounds gives the same bits on every call.
template <class F>
inline float fold_lanes(VecF v, F f) {
#if defined(TOPS_CPU_ISA_avx512)
    v = f(v, VecF(_mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2))));
    v = f(v, VecF(_mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1))));
    v = f(v, VecF(_mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2))));
    v = f(v, VecF(_mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1))));
    return _mm512_cvtss_f32(v);
#elif defined(TOPS_CPU_ISA_avx2)
    v = f(v, VecF(_mm256_permute2f128_ps(v, v, 1)));
    v = f(v, VecF(_mm256_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2))));
    v = f(v, VecF(_mm256_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1))));
    return _mm256_cvtss_f32(v);
#else
    v = f(v, VecF(_mm_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2))));
    v = f(v, VecF(_mm_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1))));
    return _mm_cvtss_f32(v);
#endif
}

}  // namespace tops::cpu::TOPS_ISA_NS
