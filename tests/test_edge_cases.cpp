// Numerical edge cases and size safety, for every op on every backend:
//  - empty tensors (a dim of 0): create and execute succeed and write
//    nothing, or write what the header documents (reduce identities, GEMM
//    with K = 0, attention with no keys);
//  - NaN and Inf inputs: where the header says they go (propagation per row
//    or element, bitwise copies in transpose, C not read when beta = 0);
//  - tiny and huge scales, denormal inputs, constant rows.
// This file: empty tensors across the ops, and the row-wise and elementwise
// ops (softmax, reduce, transpose, eltwise, norm, pad); GEMM, attention and
// conv2d are in test_edge_cases_gemm_conv.cpp. Size safety (overflowing
// sizes, tensors over 2^31 elements) is in test_size_safety.cpp.
#include <cmath>
#include <limits>
#include <string>

#include "edge_cases.hpp"

using namespace edge_cases;

namespace {

// ------------------------------------------------------------------ empty tensors

TEST_P(EdgeTest, EmptyTensorsRunAndWriteNothing) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{0, 5}, {4, 0}, {2, 0, 3}}) {
        SCOPED_TRACE(dims_text(dims));
        Tensor x = filled(dt, dims, -1.0), y = poisoned(dt, dims);
        {
            RunSpec spec;
            spec.inputs = {{TOPS_ARG_X, &x}};
            spec.y = &y;
            EXPECT_TRUE(run_op(backend, softmax_creator(x, y), spec)) << "softmax";
        }
        {
            RunSpec spec;
            spec.inputs = {{TOPS_ARG_X, &x}};
            spec.y = &y;
            EXPECT_TRUE(run_op(backend, bias_act_creator(x, y, TOPS_ACT_GELU_ERF), spec)) << "bias_act";
        }
        {
            Tensor slope = filled(dt, std::vector<int64_t>(dims.size(), 1), 0.5);
            tops_prelu_desc_t d = tops_prelu_desc_default();
            d.x = x.desc();
            d.slope = slope.desc();
            d.y = y.desc();
            RunSpec spec;
            spec.inputs = {{TOPS_ARG_X, &x}, {TOPS_ARG_SLOPE, &slope}};
            spec.y = &y;
            EXPECT_TRUE(run_op(backend, [d](tops_context_t c, tops_op_t* op) { return tops_prelu_create(c, &d, op); },
                               spec)) << "prelu";
        }
        {
            tops_weighted_sum_desc_t d = tops_weighted_sum_desc_default();
            d.num_inputs = 1;
            d.inputs[0] = x.desc();
            d.coefs[0] = 2.0f;
            d.y = y.desc();
            RunSpec spec;
            spec.inputs = {{TOPS_ARG_INPUT0, &x}};
            spec.y = &y;
            spec.y_arg = TOPS_ARG_Y;
            EXPECT_TRUE(run_op(backend,
                               [d](tops_context_t c, tops_op_t* op) { return tops_weighted_sum_create(c, &d, op); },
                               spec)) << "weighted_sum";
        }
        {
            std::vector<int64_t> tdims(dims.rbegin(), dims.rend());
            Tensor ty = poisoned(dt, tdims);
            tops_transpose_desc_t d = tops_transpose_desc_default();
            d.x = x.desc();
            d.y = ty.desc();
            for (size_t i = 0; i < dims.size(); ++i) d.perm[i] = int32_t(dims.size() - 1 - i);
            RunSpec spec;
            spec.inputs = {{TOPS_ARG_X, &x}};
            spec.y = &ty;
            EXPECT_TRUE(run_op(backend, [d](tops_context_t c, tops_op_t* op) { return tops_transpose_create(c, &d, op); },
                               spec)) << "transpose";
        }
        if (dims.size() == 2 && dims.back() != 0) {  // rows of nothing have no mean
            RunSpec spec;
            spec.inputs = {{TOPS_ARG_X, &x}};
            spec.y = &y;
            EXPECT_TRUE(run_op(backend, norm_creator(x, y), spec)) << "norm";
        }
    }
}

// ------------------------------------------------------------------ NaN and Inf

TEST_P(EdgeTest, SoftmaxMinusInfinityGivesZero) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    Tensor x = filled(dt, {2, 37}, -0.5), y = poisoned(dt, {2, 37});
    const int64_t minf_a[] = {0, 0}, minf_b[] = {0, 36};
    x.set_value(x.offset(minf_a), -kInf);
    x.set_value(x.offset(minf_b), -kInf);
    RunSpec spec;
    spec.inputs = {{TOPS_ARG_X, &x}};
    spec.y = &y;
    ASSERT_TRUE(run_op(backend, softmax_creator(x, y), spec));
    const std::vector<double> out = y.logical();
    for (int64_t c = 0; c < 37; ++c) {
        if (c == 0 || c == 36) EXPECT_EQ(out[c], 0.0) << "-inf entry, col " << c;
        else EXPECT_TRUE(std::isfinite(out[c]) && out[c] > 0.0) << "row with -inf, col " << c << " = " << out[c];
        EXPECT_TRUE(std::isfinite(out[37 + c]) && out[37 + c] > 0.0) << "finite row, col " << c;
    }
}

// A NaN, or a +inf (inf - inf), among the positions of a row that take part
// makes the whole row NaN; the other rows stay finite. Each layout reaches
// another CPU kernel: a unit-stride axis (lastdim), the axis outermost with a
// unit-stride dim beside it (axis), no unit stride at all (strided). A NaN
// past the row's valid length does not take part.
TEST_P(EdgeTest, SoftmaxNaNAndInfinityGiveNaNRows) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const int64_t rows = 4, n = 37;
    struct Case {
        const char* name;
        Layout layout;
        int32_t axis;  // of x [rows, n] (axis 1) or its transpose [n, rows] (axis 0)
    };
    const Case cases[] = {{"lastdim", Layout::Dense, 1}, {"axis", Layout::Dense, 0},
                          {"strided", Layout::InnerStride2, 1}};
    const std::vector<tops_dtype_t> dtypes = backend == TOPS_BACKEND_CUDA
                                                 ? std::vector<tops_dtype_t>{TOPS_DTYPE_F16, TOPS_DTYPE_BF16}
                                                 : std::vector<tops_dtype_t>{TOPS_DTYPE_F32, TOPS_DTYPE_F16};
    for (const Case& c : cases) {
        for (tops_dtype_t dt : dtypes) {
            for (uint32_t flags : {0u, TOPS_SOFTMAX_LOG}) {
                SCOPED_TRACE(std::string(c.name) + " " + dtype_label(dt) + (flags ? " log" : ""));
                const std::vector<int64_t> dims = c.axis == 1 ? std::vector<int64_t>{rows, n}
                                                              : std::vector<int64_t>{n, rows};
                Tensor x = Tensor::make(dt, dims, c.layout), y = Tensor::make(dt, dims, c.layout);
                Tensor len = Tensor::make(TOPS_DTYPE_I32, c.axis == 1 ? std::vector<int64_t>{rows, 1}
                                                                      : std::vector<int64_t>{1, rows},
                                          Layout::Dense);
                y.poison();
                // Row r, entry j of the softmax; row 0: NaN, row 1: +inf,
                // row 2: NaN past its length, row 3: finite.
                auto at = [&](const Tensor& t, int64_t r, int64_t j) {
                    const int64_t idx_row[] = {r, j}, idx_col[] = {j, r};
                    return t.offset(c.axis == 1 ? idx_row : idx_col);
                };
                for (int64_t r = 0; r < rows; ++r) {
                    for (int64_t j = 0; j < n; ++j) x.set_value(at(x, r, j), -0.5 + 0.125 * double((r + j) % 7));
                    len.set_value(r, double(r == 2 ? n - 3 : n));
                }
                x.set_value(at(x, 0, 5), kNaN);
                x.set_value(at(x, 1, 30), kInf);
                x.set_value(at(x, 2, n - 1), kNaN);
                tops_softmax_desc_t d = tops_softmax_desc_default();
                d.x = x.desc();
                d.y = y.desc();
                d.axis = c.axis;
                d.flags = flags;
                d.lengths = len.desc();
                RunSpec spec;
                spec.inputs = {{TOPS_ARG_X, &x}, {TOPS_ARG_LENGTHS, &len}};
                spec.y = &y;
                ASSERT_TRUE(run_op(backend, [d](tops_context_t ctx, tops_op_t* op) { return tops_softmax_create(ctx, &d, op); },
                                   spec));
                for (int64_t r = 0; r < rows; ++r) {
                    for (int64_t j = 0; j < n; ++j) {
                        const double v = y.value(at(y, r, j));
                        if (r < 2) EXPECT_TRUE(std::isnan(v)) << "row " << r << " col " << j << " = " << v;
                        else if (r == 2 && j >= n - 3) EXPECT_EQ(v, flags ? -kInf : 0.0) << "past length, col " << j;
                        else EXPECT_TRUE(std::isfinite(v)) << "row " << r << " col " << j << " = " << v;
                    }
                }
            }
        }
    }
}

// The same rules on rows of 16-byte vectors with no mask (the CUDA dense-rows
// kernel for 128- and 1024-element rows): row 0 all -inf writes 0, row 1 with
// a NaN and row 2 with a +inf are NaN, row 3's -inf entries write 0.
TEST_P(EdgeTest, SoftmaxVectorRowsNonFinite) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    for (tops_dtype_t dt : {TOPS_DTYPE_F32, TOPS_DTYPE_F16}) {
        for (int64_t n : {128, 1024}) {
            SCOPED_TRACE(std::string(dtype_label(dt)) + " n " + std::to_string(n));
            const int64_t rows = 4;
            Tensor x = filled(dt, {rows, n}, -0.5), y = poisoned(dt, {rows, n});
            auto at = [n](int64_t r, int64_t j) { return r * n + j; };
            for (int64_t j = 0; j < n; ++j) x.set_value(at(0, j), -kInf);
            x.set_value(at(1, n / 2), kNaN);
            x.set_value(at(2, n - 1), kInf);
            x.set_value(at(3, 0), -kInf);
            x.set_value(at(3, n - 5), -kInf);
            RunSpec spec;
            spec.inputs = {{TOPS_ARG_X, &x}};
            spec.y = &y;
            ASSERT_TRUE(run_op(backend, softmax_creator(x, y), spec));
            for (int64_t j = 0; j < n; ++j) {
                EXPECT_EQ(y.value(at(0, j)), 0.0) << "all -inf row, col " << j;
                EXPECT_TRUE(std::isnan(y.value(at(1, j)))) << "NaN row, col " << j;
                EXPECT_TRUE(std::isnan(y.value(at(2, j)))) << "+inf row, col " << j;
                const double v = y.value(at(3, j));
                if (j == 0 || j == n - 5) EXPECT_EQ(v, 0.0) << "-inf entry, col " << j;
                else EXPECT_TRUE(std::isfinite(v) && v > 0.0) << "col " << j << " = " << v;
            }
        }
    }
}

// A huge scale turns each row into a one-hot at its maximum (exp of a huge
// negative difference is exactly 0, never NaN).
TEST_P(EdgeTest, SoftmaxHugeScaleGivesOneHotRows) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    const int64_t rows = 3, n = 45;
    Tensor x = poisoned(dt, {rows, n}), y = poisoned(dt, {rows, n});
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < n; ++j) {
            const int64_t idx[] = {r, j};
            x.set_value(x.offset(idx), j == 7 * (r + 1) ? 1.0 : -1.0 + double(j) / 64.0);
        }
    }
    RunSpec spec;
    spec.inputs = {{TOPS_ARG_X, &x}};
    spec.y = &y;
    ASSERT_TRUE(run_op(backend, softmax_creator(x, y, 1e30f), spec));
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < n; ++j) {
            const int64_t idx[] = {r, j};
            EXPECT_EQ(y.value(y.offset(idx)), j == 7 * (r + 1) ? 1.0 : 0.0) << r << "," << j;
        }
    }
}

TEST_P(EdgeTest, SoftmaxTinyScaleAndDenormalsGiveUniformRows) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = TOPS_DTYPE_F32;
    const int64_t n = 50;
    Tensor x = filled(dt, {2, n}, -3.0), y = poisoned(dt, {2, n});
    for (int64_t c = 0; c < n; ++c) {  // row 1: denormals
        const int64_t idx[] = {1, c};
        x.set_value(x.offset(idx), double(c + 1) * double(std::numeric_limits<float>::denorm_min()));
    }
    RunSpec spec;
    spec.inputs = {{TOPS_ARG_X, &x}};
    spec.y = &y;
    ASSERT_TRUE(run_op(backend, softmax_creator(x, y, 1e-30f), spec));
    for (double v : y.logical()) EXPECT_NEAR(v, 1.0 / double(n), 1e-7);
}

TEST_P(EdgeTest, ReduceNonFiniteInputs) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    // Row 0: NaN; row 1: +inf; row 2: +inf and -inf; row 3: finite.
    Tensor x = filled(TOPS_DTYPE_F32, {4, 70}, 0.25), y = poisoned(TOPS_DTYPE_F32, {4});
    const int64_t i0[] = {0, 3}, i1[] = {1, 69}, i2a[] = {2, 10}, i2b[] = {2, 11};
    x.set_value(x.offset(i0), kNaN);
    x.set_value(x.offset(i1), kInf);
    x.set_value(x.offset(i2a), kInf);
    x.set_value(x.offset(i2b), -kInf);
    for (tops_reduce_op_t kind : {TOPS_REDUCE_SUM, TOPS_REDUCE_MEAN, TOPS_REDUCE_SUMSQ}) {
        SCOPED_TRACE(int(kind));
        y.poison();
        RunSpec spec;
        spec.inputs = {{TOPS_ARG_X, &x}};
        spec.y = &y;
        ASSERT_TRUE(run_op(backend, reduce_creator(x, y, kind, 2u), spec));
        const std::vector<double> out = y.logical();
        EXPECT_TRUE(std::isnan(out[0])) << out[0];
        EXPECT_EQ(out[1], kInf);
        if (kind == TOPS_REDUCE_SUMSQ) EXPECT_EQ(out[2], kInf);  // squares are both +inf
        else EXPECT_TRUE(std::isnan(out[2])) << out[2];
        EXPECT_TRUE(std::isfinite(out[3])) << out[3];
    }
}

TEST_P(EdgeTest, TransposeCopiesNonFiniteBitsExactly) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    for (tops_dtype_t dt : {TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16}) {
        SCOPED_TRACE(dtype_label(dt));
        Tensor x = filled(dt, {5, 9}, 1.0), y = poisoned(dt, {9, 5});
        const uint64_t nonfinite[] = {to_bits(dt, kNaN) | 1u, to_bits(dt, kInf), to_bits(dt, -kInf),
                                      to_bits(dt, -kNaN)};
        for (int64_t i = 0; i < x.slots(); i += 3) x.set_bits(i, nonfinite[(i / 3) % 4]);
        tops_transpose_desc_t d = tops_transpose_desc_default();
        d.x = x.desc();
        d.y = y.desc();
        d.perm[0] = 1;
        d.perm[1] = 0;
        RunSpec spec;
        spec.inputs = {{TOPS_ARG_X, &x}};
        spec.y = &y;
        ASSERT_TRUE(run_op(backend, [d](tops_context_t c, tops_op_t* op) { return tops_transpose_create(c, &d, op); },
                           spec));
        for (int64_t r = 0; r < 5; ++r) {
            for (int64_t c = 0; c < 9; ++c) {
                const int64_t xi[] = {r, c}, yi[] = {c, r};
                EXPECT_EQ(y.bits(y.offset(yi)), x.bits(x.offset(xi))) << r << "," << c;
            }
        }
    }
}

TEST_P(EdgeTest, ElementwiseNonFiniteInputs) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    Tensor x = filled(dt, {3, 8}, 0.0), y = poisoned(dt, {3, 8});
    const double special[] = {kNaN, kInf, -kInf};
    for (int64_t c = 0; c < 3; ++c) x.set_value(c, special[c]);
    struct Expect {
        tops_activation_t act;
        double nan_out, inf_out, minf_out;  // NaN here means "NaN expected"
    };
    // GELU and SiLU compute x * g(x) with g(-inf) = 0: -inf * 0 is NaN (as PyTorch).
    // ReLU is max(x, 0), which maps NaN to 0.
    const Expect cases[] = {{TOPS_ACT_NONE, kNaN, kInf, -kInf},
                            {TOPS_ACT_RELU, 0.0, kInf, 0.0},
                            {TOPS_ACT_GELU_ERF, kNaN, kInf, kNaN},
                            {TOPS_ACT_SILU, kNaN, kInf, kNaN}};
    for (const Expect& e : cases) {
        SCOPED_TRACE(int(e.act));
        y.poison();
        RunSpec spec;
        spec.inputs = {{TOPS_ARG_X, &x}};
        spec.y = &y;
        ASSERT_TRUE(run_op(backend, bias_act_creator(x, y, e.act), spec));
        const std::vector<double> out = y.logical();
        if (std::isnan(e.nan_out)) EXPECT_TRUE(std::isnan(out[0])) << "act(NaN) = " << out[0];
        else EXPECT_EQ(out[0], e.nan_out) << "act(NaN)";
        EXPECT_EQ(out[1], e.inf_out) << "act(+inf)";
        if (std::isnan(e.minf_out)) EXPECT_TRUE(std::isnan(out[2])) << "act(-inf) = " << out[2];
        else EXPECT_EQ(out[2], e.minf_out) << "act(-inf)";
        for (size_t i = 3; i < out.size(); ++i) EXPECT_TRUE(std::isfinite(out[i])) << i;
    }
}

TEST_P(EdgeTest, NormNaNStaysInItsRow) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    Tensor x = filled(dt, {3, 64}, -0.3), y = poisoned(dt, {3, 64});
    const int64_t idx[] = {1, 17};
    x.set_value(x.offset(idx), kNaN);
    RunSpec spec;
    spec.inputs = {{TOPS_ARG_X, &x}};
    spec.y = &y;
    ASSERT_TRUE(run_op(backend, norm_creator(x, y), spec));
    const std::vector<double> out = y.logical();
    for (int64_t r = 0; r < 3; ++r) {
        for (int64_t c = 0; c < 64; ++c) {
            const double v = out[size_t(r * 64 + c)];
            if (r == 1) EXPECT_TRUE(std::isnan(v)) << r << "," << c << " = " << v;
            else EXPECT_TRUE(std::isfinite(v)) << r << "," << c << " = " << v;
        }
    }
}

// A constant row has variance 0: it normalizes to 0 (beta), not NaN; a row
// holding +inf is NaN under LayerNorm (inf - inf), and under RMSNorm has
// rstd 0 (the +inf entry NaN, the others 0); denormal rows give finite
// outputs; other rows stay finite.
TEST_P(EdgeTest, NormConstantInfiniteAndDenormalRows) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    const int64_t cols = 48;
    Tensor x = filled(dt, {4, cols}, -0.3), y = poisoned(dt, {4, cols});
    for (int64_t c = 0; c < cols; ++c) {
        const int64_t r0[] = {0, c}, r2[] = {2, c};
        x.set_value(x.offset(r0), 2.5);
        x.set_value(x.offset(r2), double(c % 5) * 1e-40);  // f32 denormals (0 in f16)
    }
    const int64_t inf_idx[] = {1, 9};
    x.set_value(x.offset(inf_idx), kInf);
    for (tops_norm_kind_t kind : {TOPS_NORM_LAYER, TOPS_NORM_RMS}) {
        SCOPED_TRACE(kind == TOPS_NORM_LAYER ? "layer" : "rms");
        y.poison();
        tops_norm_desc_t d = tops_norm_desc_default();
        d.kind = kind;
        d.x = x.desc();
        d.y = y.desc();
        RunSpec spec;
        spec.inputs = {{TOPS_ARG_X, &x}};
        spec.y = &y;
        ASSERT_TRUE(run_op(backend, [d](tops_context_t c, tops_op_t* op) { return tops_norm_create(c, &d, op); }, spec));
        for (int64_t c = 0; c < cols; ++c) {
            const int64_t r0[] = {0, c}, r1[] = {1, c}, r2[] = {2, c}, r3[] = {3, c};
            if (kind == TOPS_NORM_LAYER) EXPECT_EQ(y.value(y.offset(r0)), 0.0) << "constant row, col " << c;
            else EXPECT_TRUE(std::isfinite(y.value(y.offset(r0)))) << "constant row, col " << c;
            const double inf_row = y.value(y.offset(r1));
            if (kind == TOPS_NORM_LAYER || c == 9) EXPECT_TRUE(std::isnan(inf_row)) << "+inf row, col " << c;
            else EXPECT_EQ(inf_row, 0.0) << "+inf row (rstd 0), col " << c;
            EXPECT_TRUE(std::isfinite(y.value(y.offset(r2)))) << "denormal row, col " << c;
            EXPECT_TRUE(std::isfinite(y.value(y.offset(r3)))) << "finite row, col " << c;
        }
    }
}

// Denormals are not flushed: sums of denormals are exact; a NaN reaches max
// and min (documented: NaN propagates).
TEST_P(EdgeTest, ReduceDenormalsAndNaNMaxMin) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const double tiny = double(std::numeric_limits<float>::denorm_min());
    Tensor x = poisoned(TOPS_DTYPE_F32, {3, 100}), y = poisoned(TOPS_DTYPE_F32, {3});
    for (int64_t c = 0; c < 100; ++c) {
        const int64_t i0[] = {0, c}, i1[] = {1, c}, i2[] = {2, c};
        x.set_value(x.offset(i0), tiny * double(c % 4));
        x.set_value(x.offset(i1), double(c) - 50.0);
        x.set_value(x.offset(i2), double(c) - 50.0);
    }
    const int64_t nan_idx[] = {1, 77};
    x.set_value(x.offset(nan_idx), kNaN);
    for (tops_reduce_op_t kind : {TOPS_REDUCE_SUM, TOPS_REDUCE_MAX, TOPS_REDUCE_MIN}) {
        SCOPED_TRACE(int(kind));
        y.poison();
        RunSpec spec;
        spec.inputs = {{TOPS_ARG_X, &x}};
        spec.y = &y;
        ASSERT_TRUE(run_op(backend, reduce_creator(x, y, kind, 2u), spec));
        const std::vector<double> out = y.logical();
        const double want0 = kind == TOPS_REDUCE_SUM ? 150.0 * tiny : kind == TOPS_REDUCE_MAX ? 3.0 * tiny : 0.0;
        EXPECT_EQ(out[0], want0) << "denormal row";
        EXPECT_TRUE(std::isnan(out[1])) << "row with NaN: " << out[1];
        const double want2 = kind == TOPS_REDUCE_SUM ? -50.0 : kind == TOPS_REDUCE_MAX ? 49.0 : -50.0;
        EXPECT_EQ(out[2], want2) << "finite row";
    }
}

// PReLU and the weighted sum follow IEEE arithmetic: NaN stays NaN, +-inf
// scale by the slope / coefficient (a coefficient of 0 times inf is NaN).
TEST_P(EdgeTest, PreluAndWeightedSumNonFiniteInputs) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    Tensor x = filled(dt, {2, 16}, 0.0), y = poisoned(dt, {2, 16});
    const double special[] = {kNaN, kInf, -kInf};
    for (int64_t c = 0; c < 3; ++c) x.set_value(c, special[c]);
    {
        Tensor slope = filled(dt, {1, 1}, 0.0);
        slope.set_value(0, 0.5);
        tops_prelu_desc_t d = tops_prelu_desc_default();
        d.x = x.desc();
        d.slope = slope.desc();
        d.y = y.desc();
        RunSpec spec;
        spec.inputs = {{TOPS_ARG_X, &x}, {TOPS_ARG_SLOPE, &slope}};
        spec.y = &y;
        ASSERT_TRUE(run_op(backend, [d](tops_context_t c, tops_op_t* op) { return tops_prelu_create(c, &d, op); }, spec));
        const std::vector<double> out = y.logical();
        EXPECT_TRUE(std::isnan(out[0])) << "prelu(NaN) = " << out[0];
        EXPECT_EQ(out[1], kInf);
        EXPECT_EQ(out[2], -kInf);
        for (size_t i = 3; i < out.size(); ++i) EXPECT_TRUE(std::isfinite(out[i])) << i;
    }
    {
        Tensor x2 = filled(dt, {2, 16}, 1.0);
        y.poison();
        tops_weighted_sum_desc_t d = tops_weighted_sum_desc_default();
        d.num_inputs = 2;
        d.inputs[0] = x.desc();
        d.inputs[1] = x2.desc();
        d.coefs[0] = 2.0f;
        d.coefs[1] = 0.0f;
        d.y = y.desc();
        x2.set_value(20, kInf);  // times coefficient 0: NaN
        RunSpec spec;
        spec.inputs = {{TOPS_ARG_INPUT0, &x}, {tops_arg_kind_t(TOPS_ARG_INPUT0 + 1), &x2}};
        spec.y = &y;
        ASSERT_TRUE(run_op(backend,
                           [d](tops_context_t c, tops_op_t* op) { return tops_weighted_sum_create(c, &d, op); }, spec));
        const std::vector<double> out = y.logical();
        EXPECT_TRUE(std::isnan(out[0])) << "2 * NaN = " << out[0];
        EXPECT_EQ(out[1], kInf);
        EXPECT_EQ(out[2], -kInf);
        EXPECT_TRUE(std::isnan(out[20])) << "0 * inf = " << out[20];
        for (size_t i = 3; i < out.size(); ++i) {
            if (i == 20) continue;
            EXPECT_TRUE(std::isfinite(out[i])) << i;
        }
    }
}

// pad copies token rows bit for bit (NaN payloads, infinities, -0) and
// writes all-zero bits past each sequence's length; a batch of 0 runs.
TEST_P(EdgeTest, PadCopiesNonFiniteBitsAndZeroesPadding) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = float_dtype(backend);
    const int64_t features = 5;
    for (int64_t batch : {int64_t{2}, int64_t{0}}) {
        SCOPED_TRACE("batch " + std::to_string(batch));
        const int64_t seq = 4, total = batch == 0 ? 0 : 5;  // lengths 3 and 2
        Tensor packed = filled(dt, {total, features}, 1.0), padded = poisoned(dt, {batch, seq, features});
        Tensor cu = Tensor::make(TOPS_DTYPE_I32, {batch + 1}, Layout::Dense);
        const double cu_values[] = {0, 3, 5};
        for (int64_t b = 0; b <= batch; ++b) cu.set_value(b, cu_values[b]);
        const uint64_t special[] = {to_bits(dt, kNaN) | 1u, to_bits(dt, kInf), to_bits(dt, -kInf), to_bits(dt, -0.0)};
        for (int64_t i = 0; i < packed.slots(); i += 2) packed.set_bits(i, special[(i / 2) % 4]);
        tops_pad_desc_t d = tops_pad_desc_default();
        d.padded = padded.desc();
        d.packed = packed.desc();
        d.cu_seqlens = cu.desc();
        RunSpec spec;
        spec.inputs = {{TOPS_ARG_X, &packed}, {TOPS_ARG_CU_SEQLENS, &cu}};
        spec.y = &padded;
        ASSERT_TRUE(run_op(backend, [d](tops_context_t ctx, tops_op_t* op) { return tops_pad_create(ctx, &d, op); },
                           spec));
        for (int64_t b = 0; b < batch; ++b) {
            const int64_t start = int64_t(cu_values[b]), len = int64_t(cu_values[b + 1]) - start;
            for (int64_t s = 0; s < seq; ++s) {
                for (int64_t f = 0; f < features; ++f) {
                    const int64_t yi[] = {b, s, f}, xi[] = {start + s, f};
                    const uint64_t want = s < len ? packed.bits(packed.offset(xi)) : 0u;
                    EXPECT_EQ(padded.bits(padded.offset(yi)), want) << b << "," << s << "," << f;
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Edge, EdgeTest, ::testing::ValuesIn(all_backends()),
                         [](const ::testing::TestParamInfo<tops_backend_t>& info) {
                             return std::string(tops_backend_name(info.param));
                         });

}  // namespace
