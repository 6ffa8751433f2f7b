// SIMD load/store of f32, f16 and bf16 tensors into batches of f32, for the
// per-ISA kernel files only (include after cpu/isa_arch.hpp). Everything
// lives in TOPS_ISA_NS so each ISA keeps its own copy.
//   f16:  F16C (vcvtph2ps / vcvtps2ph) on the avx2 and avx512 builds
//         (x86-64-v3 and v4 include F16C); scalar half.hpp on sse4.
//   bf16: integer widening and shifts; stores round to nearest even and keep
//         NaN quiet, bit-exact with tops::float_to_bf16.
//   u8 masks and i32 vectors: zero-extending loads.
// Partial (tail) variants go through a small stack buffer so every lane
// beyond `count` is a caller-chosen filler and no byte past the end is read
// or written.
#pragma once

#if defined(TOPS_CPU_ISA_avx512) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12 reports the undefined pass-through operand inside its own AVX-512
// intrinsic wrappers (_mm512_max_ps, _mm512_cvttps_epi32, ...) as
// "(may be) used uninitialized" wherever they are inlined; fixed in GCC 13.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <xsimd/xsimd.hpp>

#include "common/half.hpp"
#include "cpu/isa_arch.hpp"
#include "tops/tops.h"

namespace tops::cpu::TOPS_ISA_NS {

using VecF = xsimd::batch<float, Arch>;
using VecI = xsimd::batch<int32_t, Arch>;
using BoolF = xsimd::batch_bool<float, Arch>;
constexpr int kLanes = int(VecF::size);

template <tops_dtype_t DT>
using storage_t = std::conditional_t<DT == TOPS_DTYPE_F32, float, uint16_t>;

template <tops_dtype_t DT>
inline float to_float(storage_t<DT> v) {
    if constexpr (DT == TOPS_DTYPE_F32) return v;
    else if constexpr (DT == TOPS_DTYPE_F16) return f16_to_float(v);
    else return bf16_to_float(v);
}

template <tops_dtype_t DT>
inline storage_t<DT> from_float(float v) {
    if constexpr (DT == TOPS_DTYPE_F32) return v;
    else if constexpr (DT == TOPS_DTYPE_F16) return float_to_f16(v);
    else return float_to_bf16(v);
}

// kLanes uint16 values zero-extended to int32 lanes.
inline VecI load_u16_widen(const uint16_t* p) {
#if defined(TOPS_CPU_ISA_avx512)
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#elif defined(TOPS_CPU_ISA_avx2)
    return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#else
    return _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
#endif
}

// Low 16 bits of each int32 lane stored as kLanes uint16 values.
inline void store_u16_narrow(uint16_t* p, VecI v) {
#if defined(TOPS_CPU_ISA_avx512)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(v));
#elif defined(TOPS_CPU_ISA_avx2)
    const __m256i lo = _mm256_and_si256(v, _mm256_set1_epi32(0xffff));
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, lo), 0x08);  // lanes 0..7 low
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
#else
    const __m128i lo = _mm_and_si128(v, _mm_set1_epi32(0xffff));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi32(lo, lo));
#endif
}

inline VecF bf16_widen(VecI bits) { return xsimd::bitwise_cast<VecF>(bits << 16); }

// Round to nearest even; NaN stays a quiet NaN (as tops::float_to_bf16).
inline VecI bf16_narrow(VecF v) {
    const VecI u = xsimd::bitwise_cast<VecI>(v);
    const VecI hi = (u >> 16) & VecI(0xffff);  // arithmetic shift, then keep 16 bits
    const VecI rounded = ((u + VecI(0x7fff) + (hi & VecI(1))) >> 16) & VecI(0xffff);
    const auto is_nan = (u & VecI(0x7fffffff)) > VecI(0x7f800000);
    return xsimd::select(is_nan, hi | VecI(0x40), rounded);
}

template <tops_dtype_t DT>
inline VecF load(const storage_t<DT>* p) {
    if constexpr (DT == TOPS_DTYPE_F32) {
        return VecF::load_unaligned(p);
    } else if constexpr (DT == TOPS_DTYPE_BF16) {
        return bf16_widen(load_u16_widen(p));
    } else {
#if defined(TOPS_CPU_ISA_avx512)
        return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#elif defined(TOPS_CPU_ISA_avx2)
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#else
        alignas(64) float tmp[kLanes];
        for (int i = 0; i < kLanes; ++i) tmp[i] = f16_to_float(p[i]);
        return VecF::load_aligned(tmp);
#endif
    }
}

template <tops_dtype_t DT>
inline void store(storage_t<DT>* p, VecF v) {
    if constexpr (DT == TOPS_DTYPE_F32) {
        v.store_unaligned(p);
    } else if constexpr (DT == TOPS_DTYPE_BF16) {
        store_u16_narrow(p, bf16_narrow(v));
    } else {
#if defined(TOPS_CPU_ISA_avx512)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                            _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif defined(TOPS_CPU_ISA_avx2)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
#else
        alignas(64) float tmp[kLanes];
        v.store_aligned(tmp);
        for (int i = 0; i < kLanes; ++i) p[i] = float_to_f16(tmp[i]);
#endif
    }
}

// Lanes [0, count) from p, the rest `fill`; 0 <= count <= kLanes.
template <tops_dtype_t DT>
inline VecF load_partial(const storage_t<DT>* p, int count, float fill) {
    alignas(64) float tmp[kLanes];
    for (float& t : tmp) t = fill;
    for (int i = 0; i < count; ++i) tmp[i] = to_float<DT>(p[i]);
    return VecF::load_aligned(tmp);
}

template <tops_dtype_t DT>
inline void store_partial(storage_t<DT>* p, VecF v, int count) {
    alignas(64) float tmp[kLanes];
    v.store_aligned(tmp);
    for (int i = 0; i < count; ++i) p[i] = from_float<DT>(tmp[i]);
}

// Bytes one store<DT> writes; store_stream<DT> needs p aligned to this.
template <tops_dtype_t DT>
constexpr int kVecBytes = int(sizeof(storage_t<DT>)) * kLanes;

// Non-temporal store (no read-for-ownership, bypasses the caches): for
// outputs too large to stay cached. p must be kVecBytes<DT>-aligned; call
// stream_fence() before other threads may read the data. sse4 f16/bf16 (8
// bytes a vector) has no such store and uses a plain one.
template <tops_dtype_t DT>
inline void store_stream(storage_t<DT>* p, VecF v) {
    if constexpr (DT == TOPS_DTYPE_F32) {
#if defined(TOPS_CPU_ISA_avx512)
        _mm512_stream_ps(p, v);
#elif defined(TOPS_CPU_ISA_avx2)
        _mm256_stream_ps(p, v);
#else
        _mm_stream_ps(p, v);
#endif
    } else {
#if defined(TOPS_CPU_ISA_avx512)
        const __m256i h = DT == TOPS_DTYPE_F16 ? _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
                                               : _mm512_cvtepi32_epi16(bf16_narrow(v));
        _mm256_stream_si256(reinterpret_cast<__m256i*>(p), h);
#elif defined(TOPS_CPU_ISA_avx2)
        __m128i h;
        if constexpr (DT == TOPS_DTYPE_F16) {
            h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
        } else {
            const __m256i lo = _mm256_and_si256(bf16_narrow(v), _mm256_set1_epi32(0xffff));
            h = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(lo, lo), 0x08));
        }
        _mm_stream_si128(reinterpret_cast<__m128i*>(p), h);
#else
        store<DT>(p, v);
#endif
    }
}

inline void stream_fence() { _mm_sfence(); }

constexpr int64_t kCacheLine = 64;  // bytes

// Hint that the cache line holding p is read soon (into L1, or L2 with far).
inline void prefetch_read(const void* p, bool far) {
    if (far) _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T1);
    else _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0);
}

// kLanes mask bytes: true where the byte is nonzero.
inline BoolF load_mask(const uint8_t* p) {
#if defined(TOPS_CPU_ISA_avx512)
    const VecI v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
#elif defined(TOPS_CPU_ISA_avx2)
    const VecI v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
#else
    int32_t word;
    std::memcpy(&word, p, sizeof word);
    const VecI v = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(word));
#endif
    return xsimd::bool_cast(v != VecI(0));
}

// Lanes [0, count) from p (byte stride `stride`), the rest false.
inline BoolF load_mask_strided(const uint8_t* p, int64_t stride, int count) {
    alignas(64) int32_t tmp[kLanes] = {};
    for (int i = 0; i < count; ++i) tmp[i] = p[i * stride];
    return xsimd::bool_cast(VecI::load_aligned(tmp) != VecI(0));
}

}  // namespace tops::cpu::TOPS_ISA_NS
