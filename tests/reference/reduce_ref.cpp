// Plain fp64 reductions: each element is folded into the output its kept
// indices select.
#include "reference/reduce_ref.hpp"

#include <cmath>
#include <limits>

namespace tops_ref {

std::vector<double> reduce(const std::vector<int64_t>& dims, const std::vector<double>& x, uint32_t axes,
                           ReduceKind op) {
    const int rank = int(dims.size());
    int64_t outputs = 1, count = 1;
    for (int d = 0; d < rank; ++d) {
        if ((axes >> d) & 1u) count *= dims[size_t(d)];
        else outputs *= dims[size_t(d)];
    }
    const double inf = std::numeric_limits<double>::infinity();
    double init = 0.0;
    if (op == ReduceKind::prod) init = 1.0;
    if (op == ReduceKind::max) init = -inf;
    if (op == ReduceKind::min) init = inf;
    std::vector<double> acc(size_t(outputs), init);
    std::vector<char> nan(size_t(outputs), 0);
    std::vector<int64_t> idx(size_t(rank), 0);
    for (size_t e = 0; e < x.size(); ++e) {
        int64_t rest = int64_t(e), o = 0, scale = 1;
        for (int d = rank - 1; d >= 0; --d) {
            idx[size_t(d)] = rest % dims[size_t(d)];
            rest /= dims[size_t(d)];
        }
        for (int d = rank - 1; d >= 0; --d) {
            if ((axes >> d) & 1u) continue;
            o += idx[size_t(d)] * scale;
            scale *= dims[size_t(d)];
        }
        const double v = x[e];
        double& a = acc[size_t(o)];
        if (std::isnan(v)) nan[size_t(o)] = 1;
        switch (op) {
            case ReduceKind::max: a = std::max(a, v); break;
            case ReduceKind::min: a = std::min(a, v); break;
            case ReduceKind::prod: a *= v; break;
            case ReduceKind::sumsq:
            case ReduceKind::norm2: a += v * v; break;
            default: a += v; break;
        }
    }
    for (size_t o = 0; o < acc.size(); ++o) {
        if (op == ReduceKind::mean) acc[o] = count > 0 ? acc[o] / double(count) : std::nan("");
        if (op == ReduceKind::norm2) acc[o] = std::sqrt(acc[o]);
        if ((op == ReduceKind::max || op == ReduceKind::min) && nan[o]) acc[o] = std::nan("");
    }
    return acc;
}

}  // namespace tops_ref
