// The activations on the CUDA backend (and, with an absolute bound, the CPU
// backend's f32 path), element by element against fp64:
// GELU erf through erfc (x * erfc(-x / sqrt2) / 2, accurate in the negative
// tail where 1 + erf(x / sqrt2) cancels), GELU tanh and SiLU as x / (1 +
// exp(-z)): a dense sweep of [-12, 12] plus specials (signed zeros,
// infinities, NaN, |x| past the clamp, denormals), through bias + activation
// with no bias; GELU tanh and SiLU also over [-110, -12], where x e^z is a
// normal float while e^z alone is not. Per-element bounds, stricter than the
// harness's Frobenius tolerance:
//   f32: relative error <= kMaxRelF32 wherever the result is a normal float,
//        times max(1, |z|) for x sigmoid(z) (z's own rounding, a few ulp of
//        it, moves e^z by that much relatively);
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
#include <tuple>
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
constexpr int64_t kTailPoints = int64_t(1) << 16;
constexpr double kTailLo = -110.0;

// z of x sigmoid(z) for GELU tanh (0.5 x (1 + tanh(u)) = x sigmoid(2u)) and SiLU.
double sigmoid_arg(tops_activation_t act, double x) {
    if (act == TOPS_ACT_SILU) return x;
    return 2.0 * std::sqrt(2.0 / 3.141592653589793) * (x + 0.044715 * x * x * x);
}

double act_ref(tops_activation_t act, double x) {
    if (std::isnan(x)) return x;
    // -inf: x * Phi(x) (or x * sigmoid) = -inf * 0, NaN (as PyTorch and the edge-case tests).
    if (std::isinf(x)) return x > 0 ? x : std::numeric_limits<double>::quiet_NaN();
    switch (act) {
        case TOPS_ACT_GELU_TANH:
        case TOPS_ACT_SILU: return x / (1.0 + std::exp(-sigmoid_arg(act, x)));  // without tanh's cancellation
        default: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    }
}

const char* act_name(tops_activation_t act) {
    switch (act) {
        case TOPS_ACT_GELU_TANH: return "gelu_tanh";
        case TOPS_ACT_SILU: return "silu";
        default: return "gelu_erf";
    }
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

// gelu_inputs() and the negative tail [kTailLo, kSweepLo).
std::vector<double> sigmoid_inputs() {
    std::vector<double> v = gelu_inputs();
    for (int64_t i = 0; i < kTailPoints; ++i) v.push_back(kTailLo + (kSweepLo - kTailLo) * double(i) / kTailPoints);
    return v;
}

// Every out[i] against act_ref(act, in[i]): a NaN or infinite reference needs
// the same special, a finite one a finite result that finite_ok(x, ref, got)
// accepts.
template <class FiniteOk>
void expect_each(tops_activation_t act, const std::vector<double>& in, const std::vector<double>& out,
                 const std::string& label, FiniteOk&& finite_ok) {
    int failures = 0;
    for (size_t i = 0; i < in.size(); ++i) {
        const double ref = act_ref(act, in[i]), got = out[i];
        bool ok;
        if (std::isnan(ref)) ok = std::isnan(got);
        else if (std::isinf(ref)) ok = got == ref;
        else ok = std::isfinite(got) && finite_ok(in[i], ref, got);
        if (!ok && ++failures <= 10) {
            ADD_FAILURE() << act_name(act) << "(" << in[i] << ") = " << got << ", fp64 " << ref << " (" << label << ")";
        }
    }
    EXPECT_EQ(failures, 0) << label;
}

// Every out[i] against act_ref(act, in[i]) within the bounds of the file comment.
void expect_act_matches(tops_activation_t act, tops_dtype_t dt, const std::vector<double>& in,
                        const std::vector<double>& out, const char* path) {
    const Storage st = storage_of(dt);
    const double half_ulp = std::ldexp(1.0, -st.mantissa_bits - 1);
    const double abs_bound = dt == TOPS_DTYPE_F16 ? 1.05 * half_ulp * st.min_normal : double(FLT_MIN);
    double max_rel = 0.0, at = 0.0;
    expect_each(act, in, out, std::string(dtype_label(dt)) + ", " + path, [&](double x, double ref, double got) {
        const double err = std::fabs(got - ref);
        if (std::fabs(ref) < st.min_normal) return err <= abs_bound;
        const double cond = act == TOPS_ACT_GELU_ERF ? 1.0 : std::max(1.0, std::fabs(sigmoid_arg(act, x)));
        const double rel = err / std::fabs(ref) / (dt == TOPS_DTYPE_F32 ? cond : 1.0);
        if (rel > max_rel) max_rel = rel, at = x;
        return rel <= (dt == TOPS_DTYPE_F32 ? kMaxRelF32 : 1.05 * half_ulp);
    });
    std::printf("%s %s (%s): max relative error%s %.3g at x = %.9g over %zu points\n", act_name(act),
                dtype_label(dt), path, dt == TOPS_DTYPE_F32 && act != TOPS_ACT_GELU_ERF ? " / max(1, |z|)" : "",
                max_rel, at, in.size());
}

// act of gelu_inputs() through bias + activation with no bias on `backend`:
// x and y as stored (x rounded to dt).
struct GeluRun {
    std::vector<double> x, y;
};

::testing::AssertionResult run_bias_act(tops_backend_t backend, tops_dtype_t dt, tops_activation_t act,
                                        GeluRun* out, const std::vector<double>& xs = gelu_inputs()) {
    const std::vector<int64_t> dims = {int64_t(xs.size())};
    Tensor x = Tensor::make(dt, dims, Layout::Dense);
    for (int64_t i = 0; i < x.count(); ++i) x.set_value(i, xs[size_t(i)]);
    Tensor y = Tensor::make(dt, dims, Layout::Dense);
    y.poison();
    tops_bias_act_desc_t d = tops_bias_act_desc_default();
    d.x = x.desc();
    d.y = y.desc();
    d.act = act;
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
    ASSERT_TRUE(run_bias_act(TOPS_BACKEND_CUDA, dt, TOPS_ACT_GELU_ERF, &r));
    expect_act_matches(TOPS_ACT_GELU_ERF, dt, r.x, r.y, "bias_act");
}

// GELU tanh and SiLU (x sigmoid(z)) on the CUDA backend, tails included.
class SigmoidActivationAccuracyCuda
    : public ::testing::TestWithParam<std::tuple<tops_activation_t, tops_dtype_t>> {};

TEST_P(SigmoidActivationAccuracyCuda, SweepTailAndSpecialsMatchFp64) {
    const auto [act, dt] = GetParam();
    TOPS_SKIP_UNLESS_READY(TOPS_BACKEND_CUDA);
    GeluRun r;
    ASSERT_TRUE(run_bias_act(TOPS_BACKEND_CUDA, dt, act, &r, sigmoid_inputs()));
    expect_act_matches(act, dt, r.x, r.y, "bias_act");
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
    expect_act_matches(TOPS_ACT_GELU_ERF, dt, x.logical(), y.logical(), "gemm epilogue");
}

// The CPU backend's f32 activations. GELU erf and tanh, an absolute bound:
// |y - ref| <= kCpuGeluAbs max(1, |x|) (measured: AVX-512's tables 1.1e-7 for
// both; on AVX2 / SSE4 Abramowitz & Stegun's erf, |error| <= 1.5e-7, in f32
// 1.7-1.9e-7, and GELU tanh as v sigmoid(2u) 1.8-2.0e-7). SiLU a relative
// bound (measured: AVX-512 1.4e-7, AVX2 / SSE4 1.6-1.7e-7): v / (1 +
// exp(-v)) with a Cody-Waite-reduced exp keeps the negative tail's
// precision. Specials as above: NaN stays NaN, +inf -> +inf, -inf -> NaN.
constexpr double kCpuGeluAbs = 2.5e-7;
constexpr double kCpuSiluRel = 5e-7;

class ActivationAccuracyCpu : public ::testing::TestWithParam<tops_activation_t> {};

TEST_P(ActivationAccuracyCpu, EltwiseSweepAndSpecialsWithinBound) {
    const tops_activation_t act = GetParam();
    TOPS_SKIP_UNLESS_READY(TOPS_BACKEND_CPU);
    GeluRun r;
    ASSERT_TRUE(run_bias_act(TOPS_BACKEND_CPU, TOPS_DTYPE_F32, act, &r));
    const bool relative = act == TOPS_ACT_SILU;
    double max_err = 0.0, at = 0.0;
    expect_each(act, r.x, r.y, "cpu f32", [&](double x, double ref, double got) {
        const double err = std::fabs(got - ref);
        if (relative && std::fabs(ref) < double(FLT_MIN)) return err <= double(FLT_MIN);
        const double scaled = relative ? err / std::fabs(ref) : err / std::max(1.0, std::fabs(x));
        if (scaled > max_err) max_err = scaled, at = x;
        return scaled <= (relative ? kCpuSiluRel : kCpuGeluAbs);
    });
    std::printf("cpu %s f32: max %s %.3g at x = %.9g over %zu points\n", act_name(act),
                relative ? "relative error" : "|error| / max(1, |x|)", max_err, at, r.x.size());
}

INSTANTIATE_TEST_SUITE_P(Activations, ActivationAccuracyCpu,
                         ::testing::Values(TOPS_ACT_GELU_ERF, TOPS_ACT_GELU_TANH, TOPS_ACT_SILU),
                         [](const auto& info) { return std::string(act_name(info.param)); });

INSTANTIATE_TEST_SUITE_P(Activations, SigmoidActivationAccuracyCuda,
                         ::testing::Combine(::testing::Values(TOPS_ACT_GELU_TANH, TOPS_ACT_SILU),
                                            ::testing::Values(TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16)),
                         [](const auto& info) {
                             return std::string(act_name(std::get<0>(info.param))) + "_cuda_" +
                                    dtype_label(std::get<1>(info.param));
                         });

INSTANTIATE_TEST_SUITE_P(GeluAccuracy, GeluAccuracyTest,
                         ::testing::Values(TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16),
                         [](const auto& info) { return std::string("cuda_") + dtype_label(info.param); });

}  // namespace
