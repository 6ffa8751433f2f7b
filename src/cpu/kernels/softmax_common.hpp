// Helpers shared by the per-ISA softmax kernel files: the row cursor over a
// SoftmaxRowSpace (the vector exp is exp_simd.hpp's), horizontal
// reductions and the per-row finishing constants. Everything lives in
// TOPS_ISA_NS so each ISA build keeps its own copy.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "cpu/isa_arch.hpp"
#include "cpu/kernels/exp_simd.hpp"
#include "cpu/kernels/rowwise_simd.hpp"
#include "cpu/softmax_kernels.hpp"
#include "cpu/vec_convert.hpp"

namespace tops::cpu::TOPS_ISA_NS {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Element offsets of x, y, mask and lengths for consecutive rows of a
// SoftmaxRowSpace (an odometer over its dims).
class RowCursor {
public:
    RowCursor(const SoftmaxRowSpace& s, int64_t row) : s_(s) {
        for (int d = s.rank - 1; d >= 0; --d) {
            idx_[d] = row % s.dims[d];
            row /= s.dims[d];
            x += idx_[d] * s.x[d];
            y += idx_[d] * s.y[d];
            mask += idx_[d] * s.mask[d];
            lengths += idx_[d] * s.lengths[d];
        }
    }

    void next() {
        for (int d = s_.rank - 1; d >= 0; --d) {
            x += s_.x[d];
            y += s_.y[d];
            mask += s_.mask[d];
            lengths += s_.lengths[d];
            if (++idx_[d] < s_.dims[d]) return;
            x -= s_.dims[d] * s_.x[d];
            y -= s_.dims[d] * s_.y[d];
            mask -= s_.dims[d] * s_.mask[d];
            lengths -= s_.dims[d] * s_.lengths[d];
            idx_[d] = 0;
        }
    }

    int64_t x = 0, y = 0, mask = 0, lengths = 0;

private:
    const SoftmaxRowSpace& s_;
    int64_t idx_[kMaxRank] = {};
};

// Entries of a row that take part: clamp(len, 0, n).
inline int64_t valid_length(const int32_t* lengths, int64_t n) {
    if (!lengths) return n;
    const int64_t len = *lengths;
    return len < 0 ? 0 : (len > n ? n : len);
}

inline float hmax(VecF v) {
    alignas(64) float tmp[kLanes];
    v.store_aligned(tmp);
    float m = tmp[0];
    for (int i = 1; i < kLanes; ++i) m = tmp[i] > m ? tmp[i] : m;
    return m;
}

inline float hsum(VecF v) { return xsimd::hadd(v); }

// A row (or column) whose maximum is -inf has no finite entry taking part:
// subtract 0 instead so that exp() sees -inf, not NaN, and the sum stays 0.
inline float safe_max(float m) { return m == -kInf ? 0.0f : m; }
inline VecF safe_max(VecF m) { return xsimd::select(m == VecF(-kInf), VecF(0.0f), m); }

// Softmax multiplier 1/sum (0 for an empty row, which so becomes all 0; NaN
// for a row whose sum is NaN, which so becomes all NaN).
inline float inv_sum(float sum) { return sum == 0.0f ? 0.0f : 1.0f / sum; }
inline VecF inv_sum(VecF sum) { return xsimd::select(sum == VecF(0.0f), VecF(0.0f), VecF(1.0f) / sum); }

// Log-softmax offset max + log(sum) (+inf for an empty row: all -inf; NaN
// for a NaN sum: all NaN).
inline float log_offset(float max, float sum) { return sum == 0.0f ? kInf : max + std::log(sum); }
inline VecF log_offset(VecF max, VecF sum) {
    alignas(64) float m[kLanes], s[kLanes];
    max.store_aligned(m);
    sum.store_aligned(s);
    for (int i = 0; i < kLanes; ++i) m[i] = log_offset(m[i], s[i]);
    return VecF::load_aligned(m);
}

// Value written at positions that do not take part.
inline float masked_value(bool log) { return log ? -kInf : 0.0f; }

}  // namespace tops::cpu::TOPS_ISA_NS
