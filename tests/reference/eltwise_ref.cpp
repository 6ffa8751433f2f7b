// Plain fp64 elementwise ops with broadcasting by dims.
#include "reference/eltwise_ref.hpp"

#include <cmath>

namespace tops_ref {
namespace {

// Value of a broadcast input at y's row-major element e.
double at(const BroadcastInput& in, const std::vector<int64_t>& y_dims, int64_t e) {
    int64_t off = 0, scale = 1;
    for (size_t d = y_dims.size(); d-- > 0;) {
        const int64_t i = e % y_dims[d];
        e /= y_dims[d];
        if (in.dims[d] != 1) off += i * scale;
        scale *= in.dims[d];
    }
    return in.values[size_t(off)];
}

int64_t count(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
}

}  // namespace

double activation(Act act, double v) {
    const double pi = 3.14159265358979323846;
    switch (act) {
        case Act::relu: return v > 0 ? v : 0.0;
        case Act::gelu_erf: return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
        case Act::gelu_tanh: return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (v + 0.044715 * v * v * v)));
        case Act::silu: return v / (1.0 + std::exp(-v));
        default: return v;
    }
}

std::vector<double> bias_act(const std::vector<int64_t>& y_dims, const BroadcastInput& x,
                             const BroadcastInput& bias, Act act) {
    std::vector<double> y(size_t(count(y_dims)));
    for (int64_t e = 0; e < int64_t(y.size()); ++e) {
        const double b = bias.dims.empty() ? 0.0 : at(bias, y_dims, e);
        y[size_t(e)] = activation(act, at(x, y_dims, e) + b);
    }
    return y;
}

std::vector<double> prelu(const std::vector<int64_t>& y_dims, const BroadcastInput& x,
                          const BroadcastInput& slope) {
    std::vector<double> y(size_t(count(y_dims)));
    for (int64_t e = 0; e < int64_t(y.size()); ++e) {
        const double v = at(x, y_dims, e);
        y[size_t(e)] = v > 0 ? v : at(slope, y_dims, e) * v;
    }
    return y;
}

std::vector<double> weighted_sum(const std::vector<int64_t>& y_dims, const std::vector<BroadcastInput>& inputs,
                                 const std::vector<double>& coefs) {
    std::vector<double> y(size_t(count(y_dims)), 0.0);
    for (int64_t e = 0; e < int64_t(y.size()); ++e) {
        double s = 0.0;
        for (size_t i = 0; i < inputs.size(); ++i) s += coefs[i] * at(inputs[i], y_dims, e);
        y[size_t(e)] = s;
    }
    return y;
}

}  // namespace tops_ref
