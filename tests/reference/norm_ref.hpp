// fp64 reference for LayerNorm / RMSNorm with the fused residual form.
#pragma once

#include <cstdint>
#include <vector>

namespace tops_ref {

// rows x cols, row-major. s = x [+ bias] [+ residual]; LayerNorm:
// y = (s - mean) / sqrt(var + eps) * gamma + beta (population variance);
// RMSNorm: y = s / sqrt(mean(s^2) + eps) * gamma. Empty optional vectors are
// absent (gamma 1, beta / bias / residual 0).
struct NormProblem {
    int64_t rows = 0, cols = 0;
    bool rms = false;
    double eps = 1e-5;
    std::vector<double> x, residual;           // rows * cols
    std::vector<double> gamma, beta, bias;     // cols
};

struct NormResult {
    std::vector<double> y, prenorm;  // rows * cols
    std::vector<double> mean, rstd;  // rows (mean 0 for RMSNorm)
};

NormResult norm(const NormProblem& p);

}  // namespace tops_ref
