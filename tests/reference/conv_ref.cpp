// Plain fp64 convolution: for every output element, the sum over its
// group's input channels and the kernel taps that land inside x, then the
// epilogue (bias, residual, activation).
#include "reference/conv_ref.hpp"

#include <cstddef>

namespace tops_ref {

std::vector<double> conv2d(const ConvProblem& p) {
    const int64_t oh = p.out_h(), ow = p.out_w();
    const int64_t cg = p.c / p.groups, kg = p.k / p.groups;
    std::vector<double> y(size_t(p.n * p.k * oh * ow));
    for (int64_t n = 0; n < p.n; ++n) {
        for (int64_t k = 0; k < p.k; ++k) {
            const int64_t g = k / kg;
            for (int64_t i = 0; i < oh; ++i) {
                for (int64_t j = 0; j < ow; ++j) {
                    double acc = 0.0;
                    for (int64_t c = 0; c < cg; ++c) {
                        for (int64_t r = 0; r < p.r; ++r) {
                            const int64_t ih = i * p.stride_h - p.pad_top + r * p.dilation_h;
                            if (ih < 0 || ih >= p.h) continue;
                            for (int64_t s = 0; s < p.s; ++s) {
                                const int64_t iw = j * p.stride_w - p.pad_left + s * p.dilation_w;
                                if (iw < 0 || iw >= p.w) continue;
                                acc += p.x[size_t(((n * p.c + g * cg + c) * p.h + ih) * p.w + iw)] *
                                       p.wt[size_t(((k * cg + c) * p.r + r) * p.s + s)];
                            }
                        }
                    }
                    const size_t o = size_t(((n * p.k + k) * oh + i) * ow + j);
                    if (!p.bias.empty()) acc += p.bias[size_t(k)];
                    if (!p.residual.empty()) acc += p.residual[o];
                    y[o] = activate(p.act, acc);
                }
            }
        }
    }
    return y;
}

}  // namespace tops_ref
