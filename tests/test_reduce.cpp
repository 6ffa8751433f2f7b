// Reduce: every op x dtype x backend x axis set / layout class against the
// fp64 reference (tests/reference/reduce_ref.*), output dtypes, keepdims both
// ways, empty reductions, NaN propagation, determinism across runs and thread
// counts, and every validation rule of capi/reduce.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "harness.hpp"
#include "reference/reduce_ref.hpp"

namespace {

using namespace tops_test;
using tops_ref::ReduceKind;

struct ReduceCase {
    std::string name;
    std::vector<int64_t> dims;
    uint32_t axes = 0;
    bool keepdims = false;
    Layout layout = Layout::Dense;
    tops_dtype_t y_dtype = TOPS_DTYPE_INVALID;  // INVALID: x's dtype
};

const char* kind_name(ReduceKind k) {
    static const char* const names[] = {"sum", "mean", "max", "min", "prod", "sumsq", "norm2"};
    return names[int(k)];
}

std::vector<int64_t> y_dims(const std::vector<int64_t>& dims, uint32_t axes, bool keepdims) {
    std::vector<int64_t> out;
    for (size_t d = 0; d < dims.size(); ++d) {
        if (!((axes >> d) & 1u)) out.push_back(dims[d]);
        else if (keepdims) out.push_back(1);
    }
    return out;
}

int64_t reduced_count(const std::vector<int64_t>& dims, uint32_t axes) {
    int64_t n = 1;
    for (size_t d = 0; d < dims.size(); ++d) {
        if ((axes >> d) & 1u) n *= dims[d];
    }
    return n;
}

// Inputs on which an f32 accumulation is well conditioned for the op.
void fill_for(ReduceKind k, Tensor& x, Rng& rng) {
    if (k == ReduceKind::sum || k == ReduceKind::mean) fill_uniform(x, rng, 0.25, 1.25);
    else if (k == ReduceKind::prod) fill_uniform(x, rng, 0.9, 1.1);
    else fill_uniform(x, rng, -1.0, 1.0);
}

CreateFn creator(ReduceKind k, const Tensor& x, const Tensor& y, uint32_t axes, bool keepdims) {
    tops_reduce_desc_t d = tops_reduce_desc_default();
    d.op = tops_reduce_op_t(int(k));
    d.x = x.desc();
    d.y = y.desc();
    d.axes = axes;
    d.keepdims = keepdims ? 1 : 0;
    return [d](tops_context_t ctx, tops_op_t* op) { return tops_reduce_create(ctx, &d, op); };
}

class ReduceTest
    : public ::testing::TestWithParam<std::tuple<tops_backend_t, tops_dtype_t, ReduceKind, ReduceCase>> {};

TEST_P(ReduceTest, MatchesReference) {
    const auto& [backend, dt, kind, c] = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    TOPS_TRACE_SEED();
    // The relative error of an f32 product grows with the number of factors.
    if (kind == ReduceKind::prod && reduced_count(c.dims, c.axes) > 5000) {
        GTEST_SKIP() << "prod over " << reduced_count(c.dims, c.axes) << " factors exceeds what f32 accumulation "
                     << "holds within the f32 tolerance";
    }
    Rng rng(test_seed());
    Tensor x = Tensor::make(dt, c.dims, c.layout);
    fill_for(kind, x, rng);
    const tops_dtype_t ydt = c.y_dtype == TOPS_DTYPE_INVALID ? dt : c.y_dtype;
    const std::vector<int64_t> yd = y_dims(c.dims, c.axes, c.keepdims);
    Tensor y = Tensor::make(ydt, yd, c.layout == Layout::Padded ? Layout::Padded : Layout::Dense);
    y.poison();
    RunSpec spec;
    spec.inputs = {{TOPS_ARG_X, &x}};
    spec.y = &y;
    ASSERT_TRUE(run_op(backend, creator(kind, x, y, c.axes, c.keepdims), spec));
    const std::vector<double> ref = tops_ref::reduce(c.dims, x.logical(), c.axes, kind);
    EXPECT_TRUE(compare_values(y.logical(), ref, tolerance(ydt), yd, "y"));
}

std::vector<ReduceCase> reduce_cases() {
    std::vector<ReduceCase> v;
    const std::vector<int64_t> small = {4, 5, 6};
    const std::pair<uint32_t, const char*> sets[] = {{0u, "none"},  {1u, "a0"},   {2u, "a1"},  {4u, "a2"},
                                                     {5u, "a02"},   {6u, "a12"},  {3u, "a01"}, {7u, "all"}};
    for (const auto& [axes, label] : sets) {
        for (bool keep : {false, true}) {
            v.push_back({std::string("4x5x6_") + label + (keep ? "_keep" : ""), small, axes, keep});
        }
    }
    for (int64_t h : {1, 3, 127, 769, 4097}) {
        v.push_back({"rows_h" + std::to_string(h), {37, h}, 2u, false});
        v.push_back({"cols_h" + std::to_string(h), {h, 37}, 1u, true});
    }
    // Rows of whole 16-byte vectors (CUDA's dense-rows kernel): one vector, one round of loads per lane, a
    // partial second round (f32) and two full rounds (f32); padded rows of 1024 (starts off the vector
    // grid) keep the general kernel.
    for (int64_t h : {8, 1024, 2056, 4096}) {
        v.push_back({"rows_whole_vectors_h" + std::to_string(h), {37, h}, 2u, false});
    }
    v.push_back({"rows_h1024_padded", {37, 1024}, 2u, false, Layout::Padded});
    // Wider than one column tile at some thread counts (tiles narrow as threads grow).
    v.push_back({"cols_wide", {600, 3000}, 1u, false});
    v.push_back({"rows_h769_padded", {65, 769}, 2u, true, Layout::Padded});
    v.push_back({"cols_h769_padded", {65, 769}, 1u, false, Layout::Padded});
    v.push_back({"global_pool_nchw", {2, 16, 7, 7}, 12u, true});
    v.push_back({"global_pool_nchw_56", {1, 8, 56, 56}, 12u, false});
    v.push_back({"long_rows_chunked", {3, 65536}, 2u, false});
    // x of at least 2 MiB (kReduceStreamMinBytes) in every dtype, rows of whole cache lines: the streamed
    // row kernel on AMD CPUs, also from padded (misaligned) row starts; odd rows (misaligned vectors, not
    // whole lines) keep the four accumulators (f32 output: the sums exceed the f16 range).
    v.push_back({"streamed_rows", {130, 8192}, 2u, false, Layout::Dense, TOPS_DTYPE_F32});
    v.push_back({"streamed_rows_padded", {130, 8192}, 2u, false, Layout::Padded, TOPS_DTYPE_F32});
    v.push_back({"rows_h8191", {130, 8191}, 2u, false, Layout::Dense, TOPS_DTYPE_F32});
    v.push_back({"all_axes_chunked", {70001}, 1u, false});
    // f32 output: a sum of 1e5 terms near 0.75 exceeds the f16 range.
    v.push_back({"long_cols_chunked", {100000, 3}, 1u, false, Layout::Dense, TOPS_DTYPE_F32});
    v.push_back({"middle_axis", {6, 50, 7}, 2u, false});
    v.push_back({"outer_and_inner", {6, 50, 7}, 5u, true});
    v.push_back({"column_major_rows", {33, 40}, 2u, false, Layout::Reversed});
    v.push_back({"column_major_cols", {33, 40}, 1u, false, Layout::Reversed});
    v.push_back({"stride2", {20, 30}, 2u, false, Layout::InnerStride2});
    v.push_back({"rotated_3d", {5, 6, 7}, 6u, false, Layout::Rotated});
    v.push_back({"y_f32", {9, 300}, 2u, false, Layout::Dense, TOPS_DTYPE_F32});
    v.push_back({"y_f16", {9, 300}, 2u, false, Layout::Dense, TOPS_DTYPE_F16});
    v.push_back({"y_bf16", {300, 9}, 1u, false, Layout::Dense, TOPS_DTYPE_BF16});
    return v;
}

INSTANTIATE_TEST_SUITE_P(
    Reduce, ReduceTest,
    ::testing::Combine(::testing::ValuesIn(all_backends()),
                       ::testing::Values(TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16),
                       ::testing::Values(ReduceKind::sum, ReduceKind::mean, ReduceKind::max, ReduceKind::min,
                                         ReduceKind::prod, ReduceKind::sumsq, ReduceKind::norm2),
                       ::testing::ValuesIn(reduce_cases())),
    [](const auto& info) {
        return std::string(tops_backend_name(std::get<0>(info.param))) + "_" + dtype_label(std::get<1>(info.param)) +
               "_" + kind_name(std::get<2>(info.param)) + "_" + std::get<3>(info.param).name;
    });

// ------------------------------------------------------------------ special values and determinism

class ReduceSpecialTest : public ::testing::TestWithParam<tops_backend_t> {};

TEST_P(ReduceSpecialTest, EmptyReductionsGiveIdentities) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const double inf = std::numeric_limits<double>::infinity();
    const std::pair<ReduceKind, double> expect[] = {{ReduceKind::sum, 0.0},   {ReduceKind::mean, NAN},
                                                    {ReduceKind::max, -inf},  {ReduceKind::min, inf},
                                                    {ReduceKind::prod, 1.0},  {ReduceKind::sumsq, 0.0},
                                                    {ReduceKind::norm2, 0.0}};
    for (const auto& [kind, value] : expect) {
        SCOPED_TRACE(kind_name(kind));
        Tensor x = Tensor::make(TOPS_DTYPE_F32, {3, 0, 4}, Layout::Dense);
        Tensor y = Tensor::make(TOPS_DTYPE_F32, {3, 4}, Layout::Dense);
        y.poison();
        RunSpec spec;
        spec.inputs = {{TOPS_ARG_X, &x}};
        spec.y = &y;
        ASSERT_TRUE(run_op(backend, creator(kind, x, y, 2u, false), spec));
        for (double v : y.logical()) {
            if (std::isnan(value)) EXPECT_TRUE(std::isnan(v)) << v;
            else EXPECT_EQ(v, value);
        }
    }
}

TEST_P(ReduceSpecialTest, NaNPropagatesThroughMaxAndMin) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    TOPS_TRACE_SEED();
    Rng rng(test_seed());
    // Row (axis 1) and column (axis 0) kernels, NaN at [3, 57]; row 5 holds +inf and -inf, which fail the
    // row kernel's NaN check for max / min (its redo must give +inf / -inf). 64 rows of 8192: x of 2 MiB,
    // streamed on AMD CPUs.
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{8, 100}, std::vector<int64_t>{64, 8192}}) {
        for (uint32_t axes : {2u, 1u}) {
            for (ReduceKind kind : {ReduceKind::max, ReduceKind::min}) {
                SCOPED_TRACE(std::string(kind_name(kind)) + " axes " + std::to_string(axes) + " " + dims_text(dims));
                Tensor x = Tensor::make(TOPS_DTYPE_F32, dims, Layout::Dense);
                fill_uniform(x, rng, -1.0, 1.0);
                const int64_t idx[] = {3, 57}, pos_inf[] = {5, 10}, neg_inf[] = {5, 90};
                x.set_value(x.offset(idx), std::nan(""));
                x.set_value(x.offset(pos_inf), INFINITY);
                x.set_value(x.offset(neg_inf), -INFINITY);
                const std::vector<int64_t> yd{axes == 2u ? dims[0] : dims[1]};
                Tensor y = Tensor::make(TOPS_DTYPE_F32, yd, Layout::Dense);
                y.poison();
                RunSpec spec;
                spec.inputs = {{TOPS_ARG_X, &x}};
                spec.y = &y;
                ASSERT_TRUE(run_op(backend, creator(kind, x, y, axes, false), spec));
                const std::vector<double> out = y.logical();
                const std::vector<double> ref = tops_ref::reduce(dims, x.logical(), axes, kind);
                for (size_t i = 0; i < out.size(); ++i) {
                    const bool nan_expected = i == (axes == 2u ? 3u : 57u);
                    EXPECT_EQ(std::isnan(out[i]), nan_expected) << "output " << i << " = " << out[i];
                    if (!nan_expected) {
                        EXPECT_EQ(out[i], ref[i]) << "output " << i;
                    }
                }
            }
        }
    }
}

// Bitwise the same on every run and for 1 and 2 threads (chunked row, streamed
// row, column (one and two tiles wide) and global-pool reductions, the last
// streamed on AMD CPUs).
TEST_P(ReduceSpecialTest, DeterministicAcrossRunsAndThreads) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    TOPS_TRACE_SEED();
    Rng rng(test_seed());
    const std::pair<std::vector<int64_t>, uint32_t> shapes[] = {
        {{4, 300000}, 2u}, {{130, 8192}, 2u}, {{130, 8191}, 2u}, {{200000, 20}, 1u}, {{600, 3000}, 1u},
        {{1000000}, 1u},   {{8, 64, 14, 14}, 12u}, {{4, 64, 56, 56}, 12u}};
    for (const auto& [dims, axes] : shapes) {
        SCOPED_TRACE(dims_text(dims));
        Tensor x = Tensor::make(TOPS_DTYPE_F32, dims, Layout::Dense);
        fill_for(ReduceKind::sum, x, rng);
        Tensor y = Tensor::make(TOPS_DTYPE_F32, y_dims(dims, axes, false), Layout::Dense);
        y.poison();
        std::vector<Tensor> outs;
        for (int threads : {1, 2, 2}) {
            Tensor out = y;
            RunSpec spec;
            spec.inputs = {{TOPS_ARG_X, &x}};
            spec.y = &out;
            spec.num_threads = threads;
            ASSERT_TRUE(run_op(backend, creator(ReduceKind::sum, x, out, axes, false), spec));
            outs.push_back(out);
        }
        EXPECT_TRUE(bits_equal(outs[1], outs[0], "2 threads vs 1"));
        EXPECT_TRUE(bits_equal(outs[2], outs[1], "second run"));
        EXPECT_TRUE(compare_values(outs[0].logical(), tops_ref::reduce(dims, x.logical(), axes, ReduceKind::sum),
                                   tolerance(TOPS_DTYPE_F32), y.dims, "y"));
    }
}

INSTANTIATE_TEST_SUITE_P(Reduce, ReduceSpecialTest, ::testing::ValuesIn(all_backends()),
                         [](const auto& info) { return std::string(tops_backend_name(info.param)); });

// ------------------------------------------------------------------ validation

tops_tensor_desc_t tdesc(tops_dtype_t dt, std::vector<int64_t> dims, std::vector<int64_t> strides = {}) {
    tops_tensor_desc_t t{};
    tops_tensor_desc_init(&t, dt, int32_t(dims.size()), dims.data(), strides.empty() ? nullptr : strides.data());
    return t;
}

void expect_reduce_error(tops_context_t ctx, const tops_reduce_desc_t& d, tops_status_t status, const char* needle) {
    OpHandle op;
    EXPECT_EQ(tops_reduce_create(ctx, &d, &op.op), status) << tops_last_error();
    EXPECT_NE(std::string(tops_last_error()).find(needle), std::string::npos)
        << "message: " << tops_last_error() << " (expected to mention '" << needle << "')";
}

TEST(CapiReduceValidation, EveryRuleReportsItsArgument) {
    ContextHandle ctx;
    ASSERT_EQ(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx.ctx), TOPS_SUCCESS);
    auto valid = [] {
        tops_reduce_desc_t d = tops_reduce_desc_default();
        d.x = tdesc(TOPS_DTYPE_F32, {4, 5, 6});
        d.y = tdesc(TOPS_DTYPE_F32, {4, 6});
        d.axes = 2u;
        return d;
    };
    {
        const tops_reduce_desc_t d = valid();
        OpHandle op;
        EXPECT_EQ(tops_reduce_create(ctx.ctx, &d, &op.op), TOPS_SUCCESS) << tops_last_error();
    }
    tops_reduce_desc_t d = valid();
    d.struct_size = 3;
    expect_reduce_error(ctx.ctx, d, TOPS_ERROR_BAD_STRUCT_SIZE, "reduce");
    d = valid();
    d.op = tops_reduce_op_t(42);
    expect_reduce_error(ctx.ctx, d, TOPS_ERROR_INVALID_ARGUMENT, "op 42");
    d = valid();
    d.x = tdesc(TOPS_DTYPE_U8, {4, 5, 6});
    expect_reduce_error(ctx.ctx, d, TOPS_ERROR_BAD_DTYPE, "x.dtype");
    d = valid();
    d.y = tdesc(TOPS_DTYPE_I32, {4, 6});
    expect_reduce_error(ctx.ctx, d, TOPS_ERROR_BAD_DTYPE, "y.dtype");
    d = valid();
    d.axes = 8u;
    expect_reduce_error(ctx.ctx, d, TOPS_ERROR_BAD_AXIS, "axes");
    d = valid();
    d.keepdims = 1;
    expect_reduce_error(ctx.ctx, d, TOPS_ERROR_BAD_RANK, "y.rank 2 should be 3");
    d = valid();
    d.y = tdesc(TOPS_DTYPE_F32, {4, 5});
    expect_reduce_error(ctx.ctx, d, TOPS_ERROR_BAD_SHAPE, "y.dims[1] = 5 should be 6");
    d = valid();
    d.y = tdesc(TOPS_DTYPE_F32, {4, 6}, {1, 1});
    expect_reduce_error(ctx.ctx, d, TOPS_ERROR_BAD_STRIDE, "y");
}

}  // namespace
