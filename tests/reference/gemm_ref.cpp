// Plain fp64 GEMM: a triple loop per batch, then the epilogue element-wise.
#include "reference/gemm_ref.hpp"

#include <cmath>

namespace tops_ref {

double activate(GemmAct act, double x) {
    switch (act) {
        case GemmAct::relu: return x > 0.0 ? x : 0.0;
        case GemmAct::gelu_erf: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
        case GemmAct::gelu_tanh: {
            const double c = std::sqrt(2.0 / M_PI);
            return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
        }
        case GemmAct::silu: return x / (1.0 + std::exp(-x));
        default: return x;
    }
}

std::vector<double> gemm(const GemmProblem& p) {
    std::vector<double> d(size_t(p.batch * p.m * p.n));
    for (int64_t bi = 0; bi < p.batch; ++bi) {
        const double* a = p.a.data() + bi * p.m * p.k;
        const double* b = p.b.data() + bi * p.k * p.n;
        double* out = d.data() + bi * p.m * p.n;
        for (int64_t i = 0; i < p.m; ++i) {
            for (int64_t j = 0; j < p.n; ++j) {
                double s = 0.0;
                for (int64_t l = 0; l < p.k; ++l) s += a[i * p.k + l] * b[l * p.n + j];
                double x = p.alpha * s;
                if (!p.c.empty()) x += p.beta * p.c[size_t((bi * p.m + i) * p.n + j)];
                if (!p.bias.empty()) x += p.bias[size_t(j)];
                out[i * p.n + j] = activate(p.act, x);
            }
        }
    }
    return d;
}

}  // namespace tops_ref
