// Integer helpers shared by the planners and kernels of both backends
// (plain host C++17).
#pragma once

#include <cstdint>

namespace tops {

// Blocks of `b` needed for `a` items (a >= 0, b > 0).
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// `a` rounded up to a multiple of `b`.
constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Whether a * b == p; a product that overflows int64 equals nothing (layout
// merges test stride * dim against the next stride, where any stride may
// come from the caller).
inline bool product_equals(int64_t a, int64_t b, int64_t p) {
    int64_t r;
    return !__builtin_mul_overflow(a, b, &r) && r == p;
}

// a * b for a, b >= 0, saturated at INT64_MAX: the bytes of a tensor whose
// element count fits int64 (a broadcast input may have any count) but whose
// byte size need not.
inline int64_t mul_saturated(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

}  // namespace tops
