// fp64 reference of the 2-D convolution with its epilogue
// (tests/reference/conv_ref.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "reference/gemm_ref.hpp"

namespace tops_ref {

// y = act(conv(x, w) + bias [+ residual]) in the canonical orders:
// x (N, C, H, W), w (K, C / groups, R, S), y and residual (N, K, P, Q),
// bias (K); all row-major. Empty bias / residual: no such term.
struct ConvProblem {
    int64_t n = 1, c = 1, h = 1, w = 1, k = 1, r = 1, s = 1;
    int64_t stride_h = 1, stride_w = 1;
    int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
    int64_t dilation_h = 1, dilation_w = 1;
    int64_t groups = 1;
    std::vector<double> x, wt, bias, residual;
    GemmAct act = GemmAct::none;

    int64_t out_h() const { return (h + pad_top + pad_bottom - dilation_h * (r - 1) - 1) / stride_h + 1; }
    int64_t out_w() const { return (w + pad_left + pad_right - dilation_w * (s - 1) - 1) / stride_w + 1; }
};

// (N, K, P, Q) values, row-major.
std::vector<double> conv2d(const ConvProblem& p);

}  // namespace tops_ref
