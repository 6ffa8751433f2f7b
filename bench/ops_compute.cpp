// tops-bench op entries of the compute-bound ops (reported as TFLOP/s, not %
// of copy): GEMM and conv2d. Each entry
// is a create function (dense row-major tensors + the created op, FLOPs in
// OpInstance::flops) and a check that recomputes sampled outputs in fp64.
#include <cmath>
#include <random>
#include <sstream>

#include "bench.hpp"

namespace bench {

namespace {

constexpr int kGemmCheckSamples = 512;  // elements of D recomputed in fp64
constexpr int kConvCheckSamples = 256;  // elements of y recomputed in fp64
constexpr size_t kConvShapeRank = 9;    // --shape N,C,H,W,K,R,S,stride,pad

// Tolerance of one element of D relative to sum_k |a_ik b_kj|: f32 accumulation
// over K, TF32 inputs (10-bit mantissa), f16 / bf16 rounding of the stored D.
double gemm_tolerance(tops_dtype_t dtype, bool tf32) {
    if (dtype == TOPS_DTYPE_F32) return tf32 ? 2e-3 : 2e-5;
    return dtype == TOPS_DTYPE_F16 ? 2e-3 : 1.6e-2;
}

// gemm: --shape M,N,K; D[M,N] = A[M,K] @ B[K,N], row-major, beta 0, no epilogue.
tops_status_t gemm_create(const Case& c, tops_context_t ctx, OpInstance* out, std::string* err) {
    if (c.shape.size() != 3) {
        *err = "gemm: --shape must be M,N,K";
        return TOPS_ERROR_BAD_RANK;
    }
    const int64_t m = c.shape[0], n = c.shape[1], k = c.shape[2];
    out->tensors.push_back({"a", TOPS_ARG_A, c.dtype, {m, k}, false, Fill::uniform});
    out->tensors.push_back({"b", TOPS_ARG_B, c.dtype, {k, n}, false, Fill::uniform});
    out->tensors.push_back({"d", TOPS_ARG_D, c.dtype, {m, n}, true, Fill::none});
    out->flops = 2.0 * double(m) * double(n) * double(k);
    std::ostringstream a;
    a << "MxNxK, NN" << (c.tf32 ? ", tf32" : "") << " GFLOP/call=" << out->flops / 1e9;
    out->args = a.str();
    tops_gemm_desc_t d = tops_gemm_desc_default();
    d.flags = c.tf32 ? TOPS_GEMM_ALLOW_TF32 : 0u;
    tops_tensor_desc_t* descs[] = {&d.a, &d.b, &d.d};
    for (size_t i = 0; i < 3; ++i) {
        const TensorSpec& t = out->tensors[i];
        const tops_status_t s = tops_tensor_desc_init(descs[i], t.dtype, 2, t.dims.data(), nullptr);
        if (s != TOPS_SUCCESS) {
            *err = tops_last_error();
            return s;
        }
    }
    const tops_status_t s = tops_gemm_create(ctx, &d, &out->op);
    if (s != TOPS_SUCCESS) *err = tops_last_error();
    return s;
}

std::string gemm_check(const Case& c, const OpInstance&, const HostTensors& host) {
    const int64_t m = c.shape[0], n = c.shape[1], k = c.shape[2];
    if (m * n == 0) return "";
    const double tol = gemm_tolerance(c.dtype, c.tf32);
    std::mt19937_64 rng(19);
    for (int s = 0; s < kGemmCheckSamples; ++s) {
        const int64_t i = int64_t(rng() % uint64_t(m)), j = int64_t(rng() % uint64_t(n));
        double want = 0, scale = 0;
        for (int64_t p = 0; p < k; ++p) {
            const double prod = load_element(host[0].data(), c.dtype, i * k + p) *
                                load_element(host[1].data(), c.dtype, p * n + j);
            want += prod;
            scale += std::fabs(prod);
        }
        const double got = load_element(host[2].data(), c.dtype, i * n + j);
        if (!(std::fabs(got - want) <= tol * scale)) {
            std::ostringstream msg;
            msg << "gemm d[" << i << "," << j << "] = " << got << ", fp64 " << want;
            return msg.str();
        }
    }
    return "";
}

// conv2d: --shape N,C,H,W,K,R,S,stride,pad (symmetric stride and padding, no
// dilation, groups 1). f16 / bf16 run channels-last (NHWC x and y, KRSC w:
// the fast path), f32 NCHW / KCRS, as bench/compare_torch.py does.
struct ConvGeometry {
    int64_t n, c, h, w, k, r, s, stride, pad, p, q;
    bool nhwc;
    int64_t x_index(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
        return nhwc ? ((in * h + ih) * w + iw) * c + ic : ((in * c + ic) * h + ih) * w + iw;
    }
    int64_t w_index(int64_t ok, int64_t ic, int64_t ir, int64_t is) const {
        return nhwc ? ((ok * r + ir) * s + is) * c + ic : ((ok * c + ic) * r + ir) * s + is;
    }
};

ConvGeometry conv_geometry(const Case& c) {
    const std::vector<int64_t>& v = c.shape;
    ConvGeometry g{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], 0, 0,
                   c.dtype != TOPS_DTYPE_F32 || c.op == "conv2d_nhwc"};
    g.p = g.stride > 0 ? (g.h + 2 * g.pad - g.r) / g.stride + 1 : 0;
    g.q = g.stride > 0 ? (g.w + 2 * g.pad - g.s) / g.stride + 1 : 0;
    return g;
}

tops_status_t conv2d_create(const Case& c, tops_context_t ctx, OpInstance* out, std::string* err) {
    if (c.shape.size() != kConvShapeRank) {
        *err = "conv2d: --shape must be N,C,H,W,K,R,S,stride,pad";
        return TOPS_ERROR_BAD_RANK;
    }
    const ConvGeometry g = conv_geometry(c);
    if (g.stride < 1 || g.p < 1 || g.q < 1) {
        *err = "conv2d: stride must be >= 1 and the output at least 1x1";
        return TOPS_ERROR_BAD_SHAPE;
    }
    const std::vector<int64_t> xd = g.nhwc ? std::vector<int64_t>{g.n, g.h, g.w, g.c}
                                           : std::vector<int64_t>{g.n, g.c, g.h, g.w};
    const std::vector<int64_t> wd = g.nhwc ? std::vector<int64_t>{g.k, g.r, g.s, g.c}
                                           : std::vector<int64_t>{g.k, g.c, g.r, g.s};
    const std::vector<int64_t> yd = g.nhwc ? std::vector<int64_t>{g.n, g.p, g.q, g.k}
                                           : std::vector<int64_t>{g.n, g.k, g.p, g.q};
    out->tensors.push_back({"x", TOPS_ARG_X, c.dtype, xd, false, Fill::uniform});
    out->tensors.push_back({"w", TOPS_ARG_W, c.dtype, wd, false, Fill::uniform});
    out->tensors.push_back({"y", TOPS_ARG_Y, c.dtype, yd, true, Fill::none});
    out->flops = 2.0 * double(g.n * g.k * g.p * g.q) * double(g.c * g.r * g.s);
    std::ostringstream a;
    a << (g.nhwc ? "NHWC/KRSC" : "NCHW/KCRS") << " " << g.r << "x" << g.s << " s" << g.stride << " p" << g.pad
      << (c.tf32 ? ", tf32" : "") << " GFLOP/call=" << out->flops / 1e9;
    out->args = a.str();
    tops_conv2d_desc_t d = tops_conv2d_desc_default();
    d.layout = g.nhwc ? TOPS_CONV_NHWC : TOPS_CONV_NCHW;
    d.filter_layout = g.nhwc ? TOPS_CONV_FILTER_KRSC : TOPS_CONV_FILTER_KCRS;
    d.stride_h = d.stride_w = int32_t(g.stride);
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = int32_t(g.pad);
    d.flags = c.tf32 ? TOPS_CONV_ALLOW_TF32 : 0u;
    tops_tensor_desc_t* descs[] = {&d.x, &d.w, &d.y};
    for (size_t i = 0; i < 3; ++i) {
        const TensorSpec& t = out->tensors[i];
        const tops_status_t s = tops_tensor_desc_init(descs[i], t.dtype, 4, t.dims.data(), nullptr);
        if (s != TOPS_SUCCESS) {
            *err = tops_last_error();
            return s;
        }
    }
    const tops_status_t s = tops_conv2d_create(ctx, &d, &out->op);
    if (s != TOPS_SUCCESS) *err = tops_last_error();
    return s;
}

std::string conv2d_check(const Case& c, const OpInstance&, const HostTensors& host) {
    const ConvGeometry g = conv_geometry(c);
    const int64_t outputs = g.n * g.k * g.p * g.q;
    if (outputs == 0) return "";
    const double tol = gemm_tolerance(c.dtype, c.tf32);  // same f32-accumulated dot products
    std::mt19937_64 rng(23);
    for (int smp = 0; smp < kConvCheckSamples; ++smp) {
        const int64_t on = int64_t(rng() % uint64_t(g.n)), ok = int64_t(rng() % uint64_t(g.k));
        const int64_t op = int64_t(rng() % uint64_t(g.p)), oq = int64_t(rng() % uint64_t(g.q));
        double want = 0, scale = 0;
        for (int64_t ic = 0; ic < g.c; ++ic) {
            for (int64_t ir = 0; ir < g.r; ++ir) {
                const int64_t ih = op * g.stride - g.pad + ir;
                if (ih < 0 || ih >= g.h) continue;
                for (int64_t is = 0; is < g.s; ++is) {
                    const int64_t iw = oq * g.stride - g.pad + is;
                    if (iw < 0 || iw >= g.w) continue;
                    const double prod = load_element(host[0].data(), c.dtype, g.x_index(on, ic, ih, iw)) *
                                        load_element(host[1].data(), c.dtype, g.w_index(ok, ic, ir, is));
                    want += prod;
                    scale += std::fabs(prod);
                }
            }
        }
        const int64_t yi = g.nhwc ? ((on * g.p + op) * g.q + oq) * g.k + ok : ((on * g.k + ok) * g.p + op) * g.q + oq;
        const double got = load_element(host[2].data(), c.dtype, yi);
        if (!(std::fabs(got - want) <= tol * scale)) {
            std::ostringstream msg;
            msg << "conv2d y[n" << on << ",k" << ok << ",p" << op << ",q" << oq << "] = " << got << ", fp64 " << want;
            return msg.str();
        }
    }
    return "";
}

}  // namespace

std::vector<OpEntry> compute_op_entries() {
    return {
        {"gemm", "D = A @ B row-major, --shape M,N,K (--tf32 for f32 on tensor cores)", gemm_create, gemm_check},
        {"conv2d", "--shape N,C,H,W,K,R,S,stride,pad; f16/bf16 NHWC+KRSC, f32 NCHW+KCRS", conv2d_create,
         conv2d_check},
        {"conv2d_nhwc", "conv2d with NHWC x / y and KRSC w for every dtype (the CPU fast path), --shape as conv2d",
         conv2d_create, conv2d_check},
    };
}

}  // namespace bench
