// GELU erf on the CUDA backend (and, with an absolute bound, the CPU backend's
// f32 path), element by element against an fp64 GELU
// computed through erfc (x * erfc(-x / sqrt2) / 2, accurate in the negative
// tail where 1 + erf(x / sqrt2) cancels): a dense sweep of [-12, 12] plus
// specials (signed zeros, infinities, NaN, |x| past the clamp, denormals),
// through bias + activation with no bias. Per-element bounds, stricter than
// the harness's Frobenius tolerance:
//   f32: relative error <= kMaxRelF32 wherever the result is a normal float;
//   f16 / bf16: within 1.05 half-ulps of the storage type (the activation's
//   own error is a few percent of that);
// below the normal range an absolute bound: half the f16 subnormal step for
// f16, FLT_MIN for f32 / bf16 (results in f32's subnormal range may flush
// to zero, as -ftz would).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "harness.hpp"

namespace {

using namespace tops_test;

// Device f32 GELU erf: 4.9e-7 measured over every float in [-13, 13] on an
// H100 (activation.cuh); the bound leaves room for other GPUs' MUFU.
constexpr double kMaxRelF32 = 1.5e-6;
constexpr int64_t kSweepPoints = int64_t(1) << 20;
constexpr double kSweepLo = -12.0;
constexpr double kSweepHi = 12.0;

double gelu_ref(double x) {
    if (std::isnan(x)) return x;
    // -inf: x * Phi(x) = -inf * 0, NaN (as PyTorch and the edge-case tests).
    if (std::isinf(x)) return x > 0 ? x : std::numeric_limits<double>::quiet_NaN();
    return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
}

struct Storage {
    int mantissa_bits;  // explicit bits of the significand
    double min_normal;
};

Storage storage_of(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F16: return {10, std::ldexp(1.0, -14)};
        case TOPS_DTYPE_BF16: return {7, double(FLT_MIN)};
        default: return {23, double(FLT_MIN)};
    }
}

std::vector<double> gelu_inputs() {
    std::vector<double> v;
    for (int64_t i = 0; i < kSweepPoints; ++i) {
        v.push_back(kSweepLo + (kSweepHi - kSweepLo) * double(i) / double(kSweepPoints - 1));
    }
    const double inf = std::numeric_limits<double>::infinity();
    for (double s : {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN(), 12.999, -12.999, 13.0, -13.0,
                     13.5, -13.5, 20.0, -20.0, 1e4, -1e4, 1e30, -1e30, double(FLT_MAX), -double(FLT_MAX),
                     double(FLT_MIN), -double(FLT_MIN), 1e-40, -1e-40, 1e-7, -1e-7, 0.5, -0.5, 1.0, -1.0}) {
        v.push_back(s);
    }
    return v;
}

// Every out[i] against gelu_ref(in[i]): a NaN or infinite reference needs the
// same special, a finite one a finite result that finite_ok(x, ref, got) accepts.
template <class FiniteOk>
void expect_each_gelu(const std::vector<double>& in, const std::vector<double>& out, const std::string& label,
                      FiniteOk&& finite_ok) {
    int failures = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        const double ref = gelu_ref(in[i]), got = out[i];
        bool ok;
        if (std::isnan(ref)) ok = std::isnan(got);
        else if (std::isinf(ref)) ok = got == ref;
        else ok = std::isfinite(got) && finite_ok(in[i], ref, got);
        if (!ok && ++failures <= 10) {
            ADD_FAILURE() << "gelu_erf(" << in[i] << ") = " << got << ", fp64 " << ref << " (" << label << ")";
        }
    }
    EXPECT_EQ(failures, 0) << label;
}

// Every out[i] against gelu_ref(in[i]) within the bounds of the file comment.
void expect_gelu_matches(tops_dtype_t dt, const std::vector<double>& in, const std::vector<double>& out,
                         const char* path) {
    const Storage st = storage_of(dt);
    const double half_ulp = std::ldexp(1.0, -st.mantissa_bits - 1);
    const double rel_bound = dt == TOPS_DTYPE_F32 ? kMaxRelF32 : 1.05 * half_ulp;
    const double abs_bound = dt == TOPS_DTYPE_F16 ? 1.05 * half_ulp * st.min_normal : double(FLT_MIN);
    double max_rel = 0.0, at = 0.0;
    expect_each_gelu(in, out, std::string(dtype_label(dt)) + ", " + path, [&](double x, double ref, double got) {
        const double err = std::fabs(got - ref);
        if (std::fabs(ref) < st.min_normal) return err <= abs_bound;
        const double rel = err / std::fabs(ref);
        if (rel > max_rel) max_rel = rel, at = x;
        return rel <= rel_bound;
    });
    std::printf("gelu_erf %s (%s): max relative error %.3g at x = %.9g over %zu points (bound %.3g)\n",
                dtype_label(dt), path, max_rel, at, in.size(), rel_bound);
}

// GELU erf of gelu_inputs() through bias + activation with no bias on
// `backend`: x and y as stored (x rounded to dt).
struct GeluRun {
    std::vector<double> x, y;
};

::testing::AssertionResult run_bias_gelu(tops_backend_t backend, tops_dtype_t dt, GeluRun* out) {
    const std::vector<double> xs = gelu_inputs();
    const std::vector<int64_t> dims = {int64_t(xs.size())};
    Tensor x = Tensor::make(dt, dims, Layout::Dense);
    for (int64_t i = 0; i < x.count(); ++i) x.set_value(i, xs[size_t(i)]);
    Tensor y = Tensor::make(dt, dims, Layout::Dense);
    y.poison();
    tops_bias_act_desc_t d = tops_bias_act_desc_default();
    d.x = x.desc();
    d.y = y.desc();
    d.act = TOPS_ACT_GELU_ERF;
    RunSpec spec;
    spec.y = &y;
    spec.inputs.push_back({TOPS_ARG_X, &x});
    ::testing::AssertionResult ran = run_op(
        backend, [d](tops_context_t ctx, tops_op_t* op) { return tops_bias_act_create(ctx, &d, op); }, spec);
    out->x = x.logical();
    out->y = y.logical();
    return ran;
}

class GeluAccuracyTest : public ::testing::TestWithParam<tops_dtype_t> {};

TEST_P(GeluAccuracyTest, SweepAndSpecialsMatchFp64) {
    const tops_dtype_t dt = GetParam();
    TOPS_SKIP_UNLESS_READY(TOPS_BACKEND_CUDA);
    GeluRun r;
    ASSERT_TRUE(run_bias_gelu(TOPS_BACKEND_CUDA, dt, &r));
    expect_gelu_matches(dt, r.x, r.y, "bias_act");
}

// The same bounds through a GEMM's epilogue (on sm_90 the fused kernel, which
// takes GELU of value pairs): D = act(X I^T) with I the 8x8 identity gives
// D = act(X) exactly before the activation. Finite inputs only (inf * 0 in
// the product would make NaN).
TEST_P(GeluAccuracyTest, GemmEpilogueMatchesFp64) {
    const tops_dtype_t dt = GetParam();
    TOPS_SKIP_UNLESS_READY(TOPS_BACKEND_CUDA);
    constexpr int64_t kCols = 8;
    std::vector<double> xs = gelu_inputs();
    xs.resize((xs.size() + kCols - 1) / kCols * kCols, 0.0);
    const int64_t rows = int64_t(xs.size()) / kCols;
    Tensor x = Tensor::make(dt, {rows, kCols}, Layout::Dense);
    for (int64_t i = 0; i < x.count(); ++i) x.set_value(i, xs[size_t(i)]);
    // Non-finite values (the specials, and those the storage type cannot
    // hold) become 0, or the product would spread NaN along their row.
    const std::vector<double> stored = x.logical();
    for (int64_t i = 0; i < x.count(); ++i) {
        if (!std::isfinite(stored[size_t(i)])) x.set_value(i, 0.0);
    }
    Tensor eye = Tensor::make(dt, {kCols, kCols}, Layout::Dense);
    for (int64_t i = 0; i < eye.count(); ++i) eye.set_value(i, i / kCols == i % kCols ? 1.0 : 0.0);
    Tensor y = Tensor::make(dt, {rows, kCols}, Layout::Dense);
    y.poison();
    tops_gemm_desc_t g = tops_gemm_desc_default();
    g.a = x.desc();
    g.b = eye.desc();
    g.d = y.desc();
    g.trans_b = 1;
    g.act = TOPS_ACT_GELU_ERF;
    RunSpec spec;
    spec.y = &y;
    spec.y_arg = TOPS_ARG_D;
    spec.inputs.push_back({TOPS_ARG_A, &x});
    spec.inputs.push_back({TOPS_ARG_B, &eye});
    ASSERT_TRUE(run_op(
        TOPS_BACKEND_CUDA, [g](tops_context_t ctx, tops_op_t* op) { return tops_gemm_create(ctx, &g, op); }, spec));
    expect_gelu_matches(dt, x.logical(), y.logical(), "gemm epilogue");
}

// The CPU backend's f32 GELU erf, an absolute bound: Abramowitz & Stegun's erf
// (|error| <= 1.5e-7) evaluated in f32 gives |y - ref| <= kCpuAbs max(1, |x|)
// (measured 1.72e-7; the form before it, with a division and xsimd::exp,
// 1.86e-7). Specials as above: NaN stays NaN, +inf -> +inf, -inf -> NaN.
TEST(GeluAccuracyCpu, EltwiseSweepAndSpecialsWithinErfBound) {
    TOPS_SKIP_UNLESS_READY(TOPS_BACKEND_CPU);
    constexpr double kCpuAbs = 2.5e-7;
    GeluRun r;
    ASSERT_TRUE(run_bias_gelu(TOPS_BACKEND_CPU, TOPS_DTYPE_F32, &r));
    double max_err = 0.0, at = 0.0;
    expect_each_gelu(r.x, r.y, "cpu f32", [&](double x, double ref, double got) {
        const double scaled = std::fabs(got - ref) / std::max(1.0, std::fabs(x));
        if (scaled > max_err) max_err = scaled, at = x;
        return scaled <= kCpuAbs;
    });
    std::printf("cpu gelu_erf f32: max |error| / max(1, |x|) %.3g at x = %.9g over %zu points\n", max_err, at,
                r.x.size());
}

INSTANTIATE_TEST_SUITE_P(GeluAccuracy, GeluAccuracyTest,
                         ::testing::Values(TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16),
                         [](const auto& info) { return std::string("cuda_") + dtype_label(info.param); });

}  // namespace
