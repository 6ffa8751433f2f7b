// Scalar fp16 / bf16 <-> fp32 conversions (round to nearest even), usable on
// host and device. SIMD kernels use wider converters; these are the reference
// and the tail path.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TOPS_HD __host__ __device__ __forceinline__
#else
#define TOPS_HD inline
#endif

namespace tops {

TOPS_HD float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

TOPS_HD uint32_t float_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

TOPS_HD float bf16_to_float(uint16_t h) { return bits_to_float(uint32_t(h) << 16); }

TOPS_HD uint16_t float_to_bf16(float f) {
    uint32_t u = float_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
}

TOPS_HD float f16_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) return bits_to_float(sign | 0x7f800000u | (man << 13));  // inf / nan
    if (exp == 0) {
        if (man == 0) return bits_to_float(sign);
        // subnormal: value = man * 2^-24
        float v = float(man) * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
}

TOPS_HD uint16_t float_to_f16(float f) {
    const uint32_t u = float_to_bits(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // nan
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow -> inf (incl. rounding)
    if (abs < 0x38800000u) {                                  // subnormal or zero in f16
        if (abs < 0x33000000u) return uint16_t(sign);         // < 2^-25 rounds to 0
        const uint32_t e = abs >> 23;
        const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e;  // 14..24
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return uint16_t(sign | r);
    }
    uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u);  // round mantissa to 10 bits
    return uint16_t(sign | ((r >> 13) - (112u << 10)));
}

}  // namespace tops
