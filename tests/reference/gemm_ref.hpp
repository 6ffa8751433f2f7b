// fp64 reference of GEMM with its epilogue (tests/reference/gemm_ref.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace tops_ref {

enum class GemmAct { none, relu, gelu_erf, gelu_tanh, silu };

// D = act(alpha * A @ B + beta * C + bias), each batch on its own.
// a: (batch, m, k), b: (batch, k, n), c: (batch, m, n) or empty (no C term),
// bias: (n) or empty; all row-major with op() already applied.
struct GemmProblem {
    int64_t batch = 1, m = 0, n = 0, k = 0;
    std::vector<double> a, b, c, bias;
    double alpha = 1.0, beta = 0.0;
    GemmAct act = GemmAct::none;
};

// (batch, m, n) values, row-major.
std::vector<double> gemm(const GemmProblem& p);

double activate(GemmAct act, double x);

}  // namespace tops_ref
