// Backend-independent simplification of a transpose into a canonical loop
// problem, shared by the CPU and CUDA backends (plain host C++17).
//
// A transpose is a loop nest over y's index space: for every multi-index i,
// y[sum i[k] * ys[k]] = x[sum i[k] * xs[k]] where xs[k] = x.strides[perm[k]].
// The nest's order is free, so the canonical problem
//   1. drops size-1 dims (their strides never matter),
//   2. sorts the dims by y stride, largest first (for a row-major y this is
//      y's own order; for a permuted or padded y it is y's memory order, so
//      the innermost loop always walks y's smallest stride),
//   3. merges neighbours that are contiguous in both x and y
//      (xs[k] == xs[k+1] * dims[k+1] and ys[k] == ys[k+1] * dims[k+1]).
// y was validated not to overlap itself, so its non-trivial strides are
// distinct and the sort is a strict order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/params.hpp"
#include "common/tensor.hpp"

namespace tops {

struct TransposeProblem {
    int rank = 0;                 // 0: one element (or none when numel == 0)
    int64_t dims[kMaxRank] = {};  // y memory order, outermost first; all > 1
    int64_t xs[kMaxRank] = {};    // x stride of each dim, in elements (0 = broadcast)
    int64_t ys[kMaxRank] = {};    // y stride of each dim, in elements, strictly decreasing
    int64_t numel = 0;
    size_t elem_size = 0;         // bytes per element: 1, 2 or 4

    bool empty() const { return numel == 0; }
    int last() const { return rank - 1; }
    // The dim (other than the innermost) that is unit-stride in x, or -1.
    int x_unit_dim() const {
        for (int k = 0; k + 1 < rank; ++k) {
            if (xs[k] == 1) return k;
        }
        return -1;
    }
    // The innermost dim is contiguous in both x and y: rows can be copied.
    bool inner_contiguous() const { return rank >= 1 && xs[last()] == 1 && ys[last()] == 1; }
};

inline TransposeProblem simplify_transpose(const TransposeParams& p) {
    TransposeProblem t;
    t.elem_size = dtype_size(p.x.dtype);
    t.numel = p.y.numel();
    if (t.numel == 0) return t;

    for (int k = 0; k < p.y.rank; ++k) {  // 1. drop size-1 dims
        if (p.y.dims[k] == 1) continue;
        t.dims[t.rank] = p.y.dims[k];
        t.xs[t.rank] = p.x.strides[p.perm[k]];
        t.ys[t.rank] = p.y.strides[k];
        ++t.rank;
    }
    for (int k = 1; k < t.rank; ++k) {  // 2. insertion sort, largest y stride first
        for (int j = k; j > 0 && t.ys[j] > t.ys[j - 1]; --j) {
            const int64_t d = t.dims[j], xs = t.xs[j], ys = t.ys[j];
            t.dims[j] = t.dims[j - 1];
            t.xs[j] = t.xs[j - 1];
            t.ys[j] = t.ys[j - 1];
            t.dims[j - 1] = d;
            t.xs[j - 1] = xs;
            t.ys[j - 1] = ys;
        }
    }
    int n = 0;  // 3. merge dim k into the kept dim n - 1 when contiguous in both
    for (int k = 0; k < t.rank; ++k) {
        if (n > 0 && t.xs[n - 1] == t.xs[k] * t.dims[k] && t.ys[n - 1] == t.ys[k] * t.dims[k]) {
            t.dims[n - 1] *= t.dims[k];
            t.xs[n - 1] = t.xs[k];
            t.ys[n - 1] = t.ys[k];
            continue;
        }
        t.dims[n] = t.dims[k];
        t.xs[n] = t.xs[k];
        t.ys[n] = t.ys[k];
        ++n;
    }
    for (int k = n; k < kMaxRank; ++k) t.dims[k] = t.xs[k] = t.ys[k] = 0;
    t.rank = n;
    return t;
}

}  // namespace tops
