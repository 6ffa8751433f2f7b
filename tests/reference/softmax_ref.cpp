// fp64 reference softmax: for every row (all indices but the axis), find the
// positions that take part, then max, sum of exponentials and the outputs.
#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/reference.hpp"

namespace tops_ref {

namespace {

// Row-major flat index of idx in dims, reading index 0 on dims of size 1
// (broadcast).
int64_t broadcast_flat(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
    int64_t flat = 0;
    for (size_t i = 0; i < dims.size(); ++i) flat = flat * dims[i] + (dims[i] == 1 ? 0 : idx[i]);
    return flat;
}

}  // namespace

std::vector<double> softmax(const SoftmaxProblem& p) {
    const int rank = int(p.dims.size());
    const int axis = p.axis < 0 ? p.axis + rank : p.axis;
    int64_t total = 1;
    for (int64_t d : p.dims) total *= d;
    std::vector<double> y(size_t(total), 0.0);
    if (total == 0) return y;
    const int64_t n = p.dims[size_t(axis)];
    const double minus_inf = -std::numeric_limits<double>::infinity();

    std::vector<int64_t> row_dims = p.dims;  // every row: index along axis is 0
    row_dims[size_t(axis)] = 1;
    std::vector<int64_t> idx(size_t(rank), 0);
    std::vector<char> take(static_cast<size_t>(n), 0);
    std::vector<double> z(static_cast<size_t>(n), 0.0);
    for (;;) {
        int64_t len = n;
        if (!p.lengths_dims.empty()) {
            len = std::clamp<int64_t>(p.lengths[size_t(broadcast_flat(p.lengths_dims, idx))], 0, n);
        }
        double mx = minus_inf;
        for (int64_t k = 0; k < n; ++k) {
            idx[size_t(axis)] = k;
            bool t = k < len;
            if (t && !p.mask_dims.empty()) t = p.mask[size_t(broadcast_flat(p.mask_dims, idx))] != 0;
            take[size_t(k)] = t;
            z[size_t(k)] = p.scale * p.x[size_t(broadcast_flat(p.dims, idx))];
            if (t) mx = std::max(mx, z[size_t(k)]);
        }
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) {
            if (take[size_t(k)]) sum += std::exp(z[size_t(k)] - mx);
        }
        const double log_sum = std::log(sum);
        for (int64_t k = 0; k < n; ++k) {
            idx[size_t(axis)] = k;
            double v;
            if (!take[size_t(k)]) {
                v = p.log ? minus_inf : 0.0;
            } else {
                v = p.log ? z[size_t(k)] - mx - log_sum : std::exp(z[size_t(k)] - mx) / sum;
            }
            y[size_t(broadcast_flat(p.dims, idx))] = v;
        }
        idx[size_t(axis)] = 0;
        int d = rank - 1;  // next row: odometer over row_dims
        for (; d >= 0; --d) {
            if (++idx[size_t(d)] < row_dims[size_t(d)]) break;
            idx[size_t(d)] = 0;
        }
        if (d < 0) break;
    }
    return y;
}

}  // namespace tops_ref
