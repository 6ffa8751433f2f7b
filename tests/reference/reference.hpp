// Plain fp64 reference implementations: loops over multi-indices, written
// for clarity, not speed. Dense inputs are row-major over their own dims.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tops_ref {

// softmax(scale * x) along `axis` (negative counts from the end), or
// log-softmax. A position takes part when mask (broadcast from mask_dims) is
// nonzero and its index along the axis is below its row's length (lengths
// broadcast from lengths_dims, whose axis dim is 1; clamped to [0, n]).
// Positions left out are 0 (-inf for log); a row with none left is all 0
// (all -inf for log).
struct SoftmaxProblem {
    std::vector<int64_t> dims;
    int axis = -1;
    double scale = 1.0;
    bool log = false;
    std::vector<double> x;               // numel(dims) values
    std::vector<int64_t> mask_dims;      // empty: no mask
    std::vector<uint8_t> mask;           // numel(mask_dims) values
    std::vector<int64_t> lengths_dims;   // empty: no lengths
    std::vector<int32_t> lengths;        // numel(lengths_dims) values
};

// Returns numel(dims) values, row-major.
std::vector<double> softmax(const SoftmaxProblem& p);

// y[i] = x[j] with j[perm[k]] = i[k], element by element (elem_size bytes),
// over strided storages (strides in elements). y_dims[k] = x_dims[perm[k]].
void transpose(const void* x, const std::vector<int64_t>& x_dims, const std::vector<int64_t>& x_strides,
               void* y, const std::vector<int64_t>& y_strides, const std::vector<int>& perm,
               size_t elem_size);

}  // namespace tops_ref
