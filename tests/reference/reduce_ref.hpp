// fp64 reference for reductions over any set of axes.
#pragma once

#include <cstdint>
#include <vector>

namespace tops_ref {

enum class ReduceKind { sum, mean, max, min, prod, sumsq, norm2 };

// x: numel(dims) values, row-major. Returns one value per multi-index of the
// kept dims (row-major over them; keepdims does not change the order).
// Empty sets: sum, sumsq, norm2 0; prod 1; max -inf; min +inf; mean NaN.
// max / min return NaN when any reduced element is NaN.
std::vector<double> reduce(const std::vector<int64_t>& dims, const std::vector<double>& x, uint32_t axes,
                           ReduceKind op);

}  // namespace tops_ref
