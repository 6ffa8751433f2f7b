// Plain fp64 LayerNorm / RMSNorm: two passes per row (mean, then centered
// sum of squares), written for clarity.
#include "reference/norm_ref.hpp"

#include <cmath>

namespace tops_ref {

NormResult norm(const NormProblem& p) {
    NormResult r;
    const size_t n = size_t(p.rows * p.cols);
    r.y.assign(n, 0.0);
    r.prenorm.assign(n, 0.0);
    r.mean.assign(size_t(p.rows), 0.0);
    r.rstd.assign(size_t(p.rows), 0.0);
    for (int64_t i = 0; i < p.rows; ++i) {
        double* s = r.prenorm.data() + i * p.cols;
        for (int64_t j = 0; j < p.cols; ++j) {
            const size_t k = size_t(i * p.cols + j);
            s[j] = p.x[k] + (p.bias.empty() ? 0.0 : p.bias[size_t(j)]) + (p.residual.empty() ? 0.0 : p.residual[k]);
        }
        double mean = 0.0;
        if (!p.rms) {
            for (int64_t j = 0; j < p.cols; ++j) mean += s[j];
            mean = p.cols > 0 ? mean / double(p.cols) : 0.0;
        }
        double m2 = 0.0;
        for (int64_t j = 0; j < p.cols; ++j) m2 += (s[j] - mean) * (s[j] - mean);
        const double var = p.cols > 0 ? m2 / double(p.cols) : 0.0;
        const double rstd = 1.0 / std::sqrt(var + p.eps);
        r.mean[size_t(i)] = mean;
        r.rstd[size_t(i)] = rstd;
        for (int64_t j = 0; j < p.cols; ++j) {
            double t = (s[j] - mean) * rstd;
            if (!p.gamma.empty()) t *= p.gamma[size_t(j)];
            if (!p.beta.empty()) t += p.beta[size_t(j)];
            r.y[size_t(i * p.cols + j)] = t;
        }
    }
    return r;
}

}  // namespace tops_ref
