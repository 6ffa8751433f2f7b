// fp64 reference of the BERT encoder on one sequence (no padding: sequences
// are independent, so the padded batch's valid rows must match it). Plain
// loops written for clarity; the dot products are OpenMP simd reductions and
// the rows of a linear layer are split across threads so a CPU-only demo
// verifies in about the time tops takes to run.
#include <algorithm>
#include <cmath>
#include <vector>

#include "bert_model.hpp"

namespace bert {
namespace {

using Mat = std::vector<double>;  // row-major

double dot(const double* a, const float* w, int64_t n) {
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (int64_t k = 0; k < n; ++k) acc += a[k] * double(w[k]);
    return acc;
}

// y[n, out] = x[n, in] @ W[out, in]^T + b
Mat linear(const Mat& x, int64_t n, int64_t in, const std::vector<float>& w, const std::vector<float>& b, int64_t out) {
    Mat y(size_t(n * out));
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t o = 0; o < out; ++o) {
            y[size_t(i * out + o)] = double(b[size_t(o)]) + dot(&x[size_t(i * in)], &w[size_t(o * in)], in);
        }
    }
    return y;
}

// Rows of x + residual, normalized: (s - mean) / sqrt(var + eps) * g + b.
Mat add_layernorm(const Mat& x, const Mat& residual, int64_t n, int64_t h, const std::vector<float>& g,
                  const std::vector<float>& b, double eps) {
    Mat y(size_t(n * h));
    std::vector<double> s(static_cast<size_t>(h));
    for (int64_t i = 0; i < n; ++i) {
        double mean = 0.0;
        for (int64_t k = 0; k < h; ++k) {
            s[size_t(k)] = x[size_t(i * h + k)] + residual[size_t(i * h + k)];
            mean += s[size_t(k)];
        }
        mean /= double(h);
        double var = 0.0;
        for (int64_t k = 0; k < h; ++k) var += (s[size_t(k)] - mean) * (s[size_t(k)] - mean);
        const double rstd = 1.0 / std::sqrt(var / double(h) + eps);
        for (int64_t k = 0; k < h; ++k) {
            y[size_t(i * h + k)] = (s[size_t(k)] - mean) * rstd * double(g[size_t(k)]) + double(b[size_t(k)]);
        }
    }
    return y;
}

// Multi-head self-attention over all len tokens; qkv is [len, 3H].
Mat attention(const Mat& qkv, int64_t len, const Config& c) {
    const int64_t H = c.hidden, d = c.head_dim();
    const double scale = 1.0 / std::sqrt(double(d));
    Mat out(size_t(len * H), 0.0);
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t h = 0; h < c.heads; ++h) {
        for (int64_t i = 0; i < len; ++i) {
            std::vector<double> p(static_cast<size_t>(len));
            const double* q = &qkv[size_t(i * 3 * H + h * d)];
            double mx = -INFINITY;
            for (int64_t j = 0; j < len; ++j) {
                const double* k = &qkv[size_t(j * 3 * H + H + h * d)];
                double s = 0.0;
                for (int64_t e = 0; e < d; ++e) s += q[e] * k[e];
                p[size_t(j)] = s * scale;
                mx = std::max(mx, p[size_t(j)]);
            }
            double sum = 0.0;
            for (int64_t j = 0; j < len; ++j) {
                p[size_t(j)] = std::exp(p[size_t(j)] - mx);
                sum += p[size_t(j)];
            }
            double* o = &out[size_t(i * H + h * d)];
            for (int64_t j = 0; j < len; ++j) {
                const double* v = &qkv[size_t(j * 3 * H + 2 * H + h * d)];
                const double pj = p[size_t(j)] / sum;
                for (int64_t e = 0; e < d; ++e) o[e] += pj * v[e];
            }
        }
    }
    return out;
}

}  // namespace

std::vector<double> reference_sequence(const Config& c, const std::vector<LayerWeights>& layers,
                                       const std::vector<double>& x, int64_t len) {
    const int64_t H = c.hidden, F = c.ffn;
    Mat h = x;
    for (const LayerWeights& w : layers) {
        const Mat qkv = linear(h, len, H, w.t[kWqkv], w.t[kBqkv], 3 * H);
        const Mat ctx = attention(qkv, len, c);
        const Mat a = linear(ctx, len, H, w.t[kWo], w.t[kBo], H);
        const Mat h1 = add_layernorm(a, h, len, H, w.t[kLn1G], w.t[kLn1B], c.ln_eps);
        Mat f = linear(h1, len, H, w.t[kW1], w.t[kB1], F);
        for (double& v : f) v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
        const Mat g = linear(f, len, F, w.t[kW2], w.t[kB2], H);
        h = add_layernorm(g, h1, len, H, w.t[kLn2G], w.t[kLn2B], c.ln_eps);
    }
    return h;
}

}  // namespace bert
