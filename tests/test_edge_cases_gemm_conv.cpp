// Numerical edge cases of GEMM, attention and conv2d on every backend (the
// fixture and its instantiation: edge_cases.hpp, test_edge_cases.cpp):
// empty dims, NaN reaching exactly the rows / columns / windows that see it,
// infinities and values near the f32 maximum through the tensor-core paths.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "edge_cases.hpp"

using namespace edge_cases;

namespace {

// Every value of the (rows, cols) row-major matrix is NaN where nan(r, c)
// holds and finite elsewhere.
template <class Pred>
void expect_nan_exactly_where(const std::vector<double>& values, int64_t rows, int64_t cols, Pred nan) {
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            const double v = values[size_t(r * cols + c)];
            if (nan(r, c)) EXPECT_TRUE(std::isnan(v)) << r << "," << c;
            else EXPECT_TRUE(std::isfinite(v)) << r << "," << c << " = " << v;
        }
    }
}

TEST_P(EdgeTest, GemmWithEmptyDims) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    // M = 0 and N = 0: nothing to write.
    for (const auto& [m, n] : {std::pair<int64_t, int64_t>{0, 5}, {3, 0}}) {
        Tensor a = filled(dt, {m, 4}, 0.5), b = filled(dt, {4, n}, 0.25), d = poisoned(dt, {m, n});
        RunSpec spec;
        spec.inputs = {{TOPS_ARG_A, &a}, {TOPS_ARG_B, &b}};
        spec.y = &d;
        spec.y_arg = TOPS_ARG_D;
        EXPECT_TRUE(run_op(backend, gemm_creator(a, b, nullptr, nullptr, d, 0.0f), spec)) << m << "x" << n;
    }
    // K = 0: op(A) @ op(B) is all zeros, so D = beta * C + bias.
    Tensor a = filled(dt, {3, 0}, 0.5), b = filled(dt, {0, 5}, 0.25);
    Tensor c = filled(dt, {3, 5}, -1.0), bias = filled(dt, {5}, 2.0), d = poisoned(dt, {3, 5});
    RunSpec spec;
    spec.inputs = {{TOPS_ARG_A, &a}, {TOPS_ARG_B, &b}, {TOPS_ARG_C, &c}, {TOPS_ARG_BIAS, &bias}};
    spec.y = &d;
    spec.y_arg = TOPS_ARG_D;
    ASSERT_TRUE(run_op(backend, gemm_creator(a, b, &c, &bias, d, 0.5f), spec));
    const std::vector<double> out = d.logical(), cv = c.logical(), bv = bias.logical();
    for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], round_to(dt, 0.5 * cv[i] + bv[i % 5])) << i;
}

TEST_P(EdgeTest, AttentionWithoutKeysGivesZeros) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    const int64_t head_dim = 64;
    auto run = [&](Tensor& q, Tensor& k, Tensor& v, Tensor& o) {
        RunSpec spec;
        spec.inputs = {{TOPS_ARG_Q, &q}, {TOPS_ARG_K, &k}, {TOPS_ARG_V, &v}};
        spec.y = &o;
        spec.y_arg = TOPS_ARG_O;
        return run_op(backend, attention_creator(q, k, v, o), spec);
    };
    Tensor q = filled(dt, {1, 3, 2, head_dim}, 0.1), o = poisoned(dt, {1, 3, 2, head_dim});
    Tensor k = filled(dt, {1, 0, 2, head_dim}, 0.2), v = filled(dt, {1, 0, 2, head_dim}, 0.3);
    ASSERT_TRUE(run(q, k, v, o));
    for (double val : o.logical()) EXPECT_EQ(val, 0.0);
    // No batch at all: nothing to write.
    Tensor q0 = filled(dt, {0, 3, 2, head_dim}, 0.1), o0 = poisoned(dt, {0, 3, 2, head_dim});
    Tensor k0 = filled(dt, {0, 4, 2, head_dim}, 0.2), v0 = filled(dt, {0, 4, 2, head_dim}, 0.3);
    EXPECT_TRUE(run(q0, k0, v0, o0));
}

TEST_P(EdgeTest, GemmNaNStaysInItsRow) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    const int64_t m = 20, n = 24, k = 16;
    Tensor a = filled(dt, {m, k}, -0.2), b = filled(dt, {k, n}, 0.1), d = poisoned(dt, {m, n});
    const int64_t idx[] = {7, 3};
    a.set_value(a.offset(idx), kNaN);
    RunSpec spec;
    spec.inputs = {{TOPS_ARG_A, &a}, {TOPS_ARG_B, &b}};
    spec.y = &d;
    spec.y_arg = TOPS_ARG_D;
    ASSERT_TRUE(run_op(backend, gemm_creator(a, b, nullptr, nullptr, d, 0.0f), spec));
    expect_nan_exactly_where(d.logical(), m, n, [](int64_t r, int64_t) { return r == 7; });
}

// A NaN in the bias makes its column NaN; a NaN in B makes its column NaN;
// the other columns stay finite.
TEST_P(EdgeTest, GemmNaNInBiasOrBReachesItsColumn) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    const int64_t m = 9, n = 20, k = 12;
    Tensor a = filled(dt, {m, k}, -0.2), b = filled(dt, {k, n}, 0.1);
    Tensor bias = filled(dt, {n}, 0.25), d = poisoned(dt, {m, n});
    const int64_t bias_nan[] = {4}, b_nan[] = {6, 13};
    bias.set_value(bias.offset(bias_nan), kNaN);
    b.set_value(b.offset(b_nan), kNaN);
    RunSpec spec;
    spec.inputs = {{TOPS_ARG_A, &a}, {TOPS_ARG_B, &b}, {TOPS_ARG_BIAS, &bias}};
    spec.y = &d;
    spec.y_arg = TOPS_ARG_D;
    ASSERT_TRUE(run_op(backend, gemm_creator(a, b, nullptr, &bias, d, 0.0f), spec));
    expect_nan_exactly_where(d.logical(), m, n, [](int64_t, int64_t col) { return col == 4 || col == 13; });
}

// A NaN in K reaches exactly the query rows that see that key (causal mask:
// rows at or after it). A NaN in V (key j, column c) reaches column c of
// the rows that see key j; rows where key j is masked may get it too
// (0 * NaN in the P V product of a shared tile), so only the other columns
// of those rows must stay finite.
TEST_P(EdgeTest, AttentionNaNReachesTheRowsThatSeeIt) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    const int64_t s = 6, head_dim = 64, nan_key = 3;
    for (tops_arg_kind_t where : {TOPS_ARG_K, TOPS_ARG_V}) {
        SCOPED_TRACE(where == TOPS_ARG_K ? "NaN in K" : "NaN in V");
        Tensor q = filled(dt, {1, s, 1, head_dim}, 0.1), k = filled(dt, {1, s, 1, head_dim}, -0.2);
        Tensor v = filled(dt, {1, s, 1, head_dim}, 0.3), o = poisoned(dt, {1, s, 1, head_dim});
        const int64_t idx[] = {0, nan_key, 0, 5};
        (where == TOPS_ARG_K ? k : v).set_value(k.offset(idx), kNaN);
        tops_attention_desc_t d = tops_attention_desc_default();
        d.q = q.desc();
        d.k = k.desc();
        d.v = v.desc();
        d.o = o.desc();
        d.flags = TOPS_ATTN_CAUSAL;
        {
            ContextHandle ctx;
            ASSERT_EQ(tops_context_create(backend, 0, &ctx.ctx), TOPS_SUCCESS) << tops_last_error();
            OpHandle probe;
            const tops_status_t st = tops_attention_create(ctx.ctx, &d, &probe.op);
            if (st == TOPS_ERROR_NOT_SUPPORTED && backend != TOPS_BACKEND_CPU) {
                GTEST_SKIP() << tops_backend_name(backend) << ": " << tops_last_error();
            }
        }
        RunSpec spec;
        spec.inputs = {{TOPS_ARG_Q, &q}, {TOPS_ARG_K, &k}, {TOPS_ARG_V, &v}};
        spec.y = &o;
        spec.y_arg = TOPS_ARG_O;
        ASSERT_TRUE(run_op(backend, [d](tops_context_t c, tops_op_t* op) { return tops_attention_create(c, &d, op); },
                           spec));
        for (int64_t i = 0; i < s; ++i) {
            for (int64_t e = 0; e < head_dim; ++e) {
                const int64_t oi[] = {0, i, 0, e};
                const double val = o.value(o.offset(oi));
                const bool nan_expected = i >= nan_key && (where == TOPS_ARG_K || e == 5);
                const bool unspecified = where == TOPS_ARG_V && e == 5 && i < nan_key;
                if (nan_expected) {
                    EXPECT_TRUE(std::isnan(val)) << "row " << i << " col " << e << " = " << val;
                } else if (!unspecified) {
                    EXPECT_TRUE(std::isfinite(val)) << "row " << i << " col " << e << " = " << val;
                }
            }
        }
    }
}

// y = conv(x, w) for NHWC x [N, H, W, C], KRSC w [K, R, S, C], the same
// stride and padding on both axes: y [N, P, Q, K].
::testing::AssertionResult run_conv_nhwc(tops_backend_t backend, Tensor& x, Tensor& wt, Tensor& y, int32_t stride,
                                         int32_t pad) {
    tops_conv2d_desc_t d = tops_conv2d_desc_default();
    d.layout = TOPS_CONV_NHWC;
    d.filter_layout = TOPS_CONV_FILTER_KRSC;
    d.x = x.desc();
    d.w = wt.desc();
    d.y = y.desc();
    d.stride_h = d.stride_w = stride;
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = pad;
    RunSpec spec;
    spec.inputs = {{TOPS_ARG_X, &x}, {TOPS_ARG_W, &wt}};
    spec.y = &y;
    return run_op(backend, [d](tops_context_t ctx, tops_op_t* op) { return tops_conv2d_create(ctx, &d, op); }, spec);
}

// conv2d: a NaN in x reaches exactly the outputs whose window covers it, in
// every output channel (padding taps read 0, never NaN); a batch of 0 runs and
// writes nothing.
TEST_P(EdgeTest, Conv2dNaNReachesItsWindowAndEmptyBatchRuns) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    const int64_t c = 8, k = 8, h = 6, w = 7, nan_h = 2, nan_w = 4;
    for (int64_t batch : {int64_t{1}, int64_t{0}}) {
        SCOPED_TRACE("batch " + std::to_string(batch));
        // NHWC x [N, H, W, C], KRSC w [K, 3, 3, C], pad 1: y [N, H, W, K].
        Tensor x = filled(dt, {batch, h, w, c}, -0.25), wt = filled(dt, {k, 3, 3, c}, 0.05);
        Tensor y = poisoned(dt, {batch, h, w, k});
        if (batch > 0) {
            const int64_t idx[] = {0, nan_h, nan_w, 3};
            x.set_value(x.offset(idx), kNaN);
        }
        ASSERT_TRUE(run_conv_nhwc(backend, x, wt, y, 1, 1));
        if (batch == 0) continue;
        // y [1, H, W, K] as (H * W pixels, K channels)
        expect_nan_exactly_where(y.logical(), h * w, k, [&](int64_t pixel, int64_t) {
            return std::abs(pixel / w - nan_h) <= 1 && std::abs(pixel % w - nan_w) <= 1;
        });
    }
}

// f32 conv2d (3xTF32 on CUDA splits each operand into two TF32 parts): +inf
// in x makes exactly the outputs whose window covers it +inf (every term is
// positive), and a value next to the f32 maximum, which rounds past the range
// as TF32, still gives finite outputs of the right size.
TEST_P(EdgeTest, Conv2dF32InfinityAndHugeValues) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = TOPS_DTYPE_F32;
    // x in [0.25, 1], w in [0.05, 0.8]: a plain output is below 72 * 0.8,
    // one that sums huge * w is at least huge * 0.05.
    const double huge = double(std::numeric_limits<float>::max()), weight = 0.05, kPlainBound = 100.0;
    const int64_t c = 8, k = 8, h = 6, w = 9, inf_h = 1, inf_w = 1, huge_h = 4, huge_w = 7;
    // NHWC x [1, H, W, C], KRSC w [K, 3, 3, C], pad 1: y [1, H, W, K].
    Tensor x = filled(dt, {1, h, w, c}, 0.25), wt = filled(dt, {k, 3, 3, c}, weight);
    Tensor y = poisoned(dt, {1, h, w, k});
    const int64_t at_inf[] = {0, inf_h, inf_w, 5}, at_huge[] = {0, huge_h, huge_w, 2};
    x.set_value(x.offset(at_inf), kInf);
    x.set_value(x.offset(at_huge), huge);
    ASSERT_TRUE(run_conv_nhwc(backend, x, wt, y, 1, 1));
    for (int64_t p = 0; p < h; ++p) {
        for (int64_t q = 0; q < w; ++q) {
            const bool by_inf = std::abs(p - inf_h) <= 1 && std::abs(q - inf_w) <= 1;
            const bool by_huge = std::abs(p - huge_h) <= 1 && std::abs(q - huge_w) <= 1;
            for (int64_t o = 0; o < k; ++o) {
                const int64_t idx[] = {0, p, q, o};
                const double v = y.value(y.offset(idx));
                if (by_inf) {
                    EXPECT_EQ(v, kInf) << p << "," << q << "," << o;
                } else if (by_huge) {
                    EXPECT_TRUE(std::isfinite(v) && v >= huge * weight) << p << "," << q << "," << o << " = " << v;
                } else {
                    EXPECT_TRUE(std::isfinite(v) && v < kPlainBound) << p << "," << q << "," << o << " = " << v;
                }
            }
        }
    }
}

// conv2d with fewer channels than a 16-byte chunk, 7x7 stride 2 (the stem;
// on CUDA the window kernel, whose padded reduction columns hold the next
// pixels' data): a NaN in x reaches exactly the outputs whose window covers
// it, in f16 and bf16.
TEST_P(EdgeTest, Conv2dSmallChannelNaNReachesItsWindowOnly) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    constexpr int32_t kTaps = 7, kStride = 2, kPad = 3;
    const int64_t c = 3, k = 16, h = 12, w = 20, nan_h = 4, nan_w = 8;
    const int64_t p_out = (h + 2 * kPad - kTaps) / kStride + 1, q_out = (w + 2 * kPad - kTaps) / kStride + 1;
    for (tops_dtype_t dt : {TOPS_DTYPE_F16, TOPS_DTYPE_BF16}) {
        SCOPED_TRACE(tops_dtype_name(dt));
        Tensor x = filled(dt, {1, h, w, c}, 0.25), wt = filled(dt, {k, kTaps, kTaps, c}, 0.05);
        Tensor y = poisoned(dt, {1, p_out, q_out, k});
        const int64_t idx[] = {0, nan_h, nan_w, 1};
        x.set_value(x.offset(idx), kNaN);
        ASSERT_TRUE(run_conv_nhwc(backend, x, wt, y, kStride, kPad));
        auto covers = [](int64_t out, int64_t at) {
            return at >= out * kStride - kPad && at < out * kStride - kPad + kTaps;
        };
        // y [1, P, Q, K] as (P * Q pixels, K channels)
        expect_nan_exactly_where(y.logical(), p_out * q_out, k, [&](int64_t pixel, int64_t) {
            return covers(pixel / q_out, nan_h) && covers(pixel % q_out, nan_w);
        });
    }
}

}  // namespace
