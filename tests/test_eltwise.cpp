// Fused elementwise ops (bias + activation, PReLU, weighted sum): every op x
// dtype x backend x broadcast / layout class against the fp64 reference
// (tests/reference/eltwise_ref.*), in place, and every validation rule of
// capi/eltwise.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "harness.hpp"
#include "reference/eltwise_ref.hpp"

namespace {

using namespace tops_test;
using tops_ref::Act;

enum class Kind { bias_act, prelu, weighted_sum };

struct EltCase {
    std::string name;
    Kind kind = Kind::bias_act;
    Act act = Act::none;
    std::vector<int64_t> dims;                 // y
    std::vector<std::vector<int64_t>> inputs;  // bias_act: x [, bias]; prelu: x, slope; weighted_sum: inputs
    Layout layout = Layout::Dense;             // y and every input of y's dims
    bool inplace = false;                      // y written over input 0
};

constexpr float kCoefs[TOPS_MAX_SUM_INPUTS] = {0.5f, -1.25f, 2.0f, 0.75f, -0.3f, 1.5f, 1.0f, -2.0f};

const char* act_name(Act a) {
    static const char* const names[] = {"none", "relu", "gelu_erf", "gelu_tanh", "silu"};
    return names[int(a)];
}

class EltwiseTest : public ::testing::TestWithParam<std::tuple<tops_backend_t, tops_dtype_t, EltCase>> {};

TEST_P(EltwiseTest, MatchesReference) {
    const auto& [backend, dt, c] = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    TOPS_TRACE_SEED();
    Rng rng(test_seed());
    std::vector<Tensor> in;
    std::vector<tops_ref::BroadcastInput> ref_in;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
        const bool full = c.inputs[i] == c.dims;
        in.push_back(Tensor::make(dt, c.inputs[i], full ? c.layout : Layout::Dense));
        if (c.kind == Kind::prelu && i == 1) fill_uniform(in.back(), rng, 0.05, 0.5);
        else fill_uniform(in.back(), rng, -3.0, 3.0);
        ref_in.push_back({c.inputs[i], in.back().logical()});
    }
    Tensor y = Tensor::make(dt, c.dims, c.layout);
    y.poison();
    std::vector<double> ref;
    CreateFn create;
    RunSpec spec;
    spec.y = &y;
    spec.inplace = c.inplace;
    if (c.kind == Kind::bias_act) {
        tops_bias_act_desc_t d = tops_bias_act_desc_default();
        d.x = in[0].desc();
        if (in.size() > 1) d.bias = in[1].desc();
        d.y = y.desc();
        d.act = tops_activation_t(int(c.act));
        create = [d](tops_context_t ctx, tops_op_t* op) { return tops_bias_act_create(ctx, &d, op); };
        spec.inputs.push_back({TOPS_ARG_X, &in[0]});
        if (in.size() > 1) spec.inputs.push_back({TOPS_ARG_BIAS, &in[1]});
        ref = tops_ref::bias_act(c.dims, ref_in[0], in.size() > 1 ? ref_in[1] : tops_ref::BroadcastInput{}, c.act);
    } else if (c.kind == Kind::prelu) {
        tops_prelu_desc_t d = tops_prelu_desc_default();
        d.x = in[0].desc();
        d.slope = in[1].desc();
        d.y = y.desc();
        create = [d](tops_context_t ctx, tops_op_t* op) { return tops_prelu_create(ctx, &d, op); };
        spec.inputs = {{TOPS_ARG_X, &in[0]}, {TOPS_ARG_SLOPE, &in[1]}};
        ref = tops_ref::prelu(c.dims, ref_in[0], ref_in[1]);
    } else {
        tops_weighted_sum_desc_t d = tops_weighted_sum_desc_default();
        d.num_inputs = int32_t(in.size());
        std::vector<double> coefs;
        for (size_t i = 0; i < in.size(); ++i) {
            d.inputs[i] = in[i].desc();
            d.coefs[i] = kCoefs[i];
            coefs.push_back(kCoefs[i]);
            spec.inputs.push_back({tops_arg_kind_t(TOPS_ARG_INPUT0 + int(i)), &in[i]});
        }
        d.y = y.desc();
        create = [d](tops_context_t ctx, tops_op_t* op) { return tops_weighted_sum_create(ctx, &d, op); };
        ref = tops_ref::weighted_sum(c.dims, ref_in, coefs);
    }
    ASSERT_TRUE(run_op(backend, create, spec));
    EXPECT_TRUE(compare_values(y.logical(), ref, tolerance(dt), c.dims, "y"));
}

std::vector<EltCase> eltwise_cases() {
    std::vector<EltCase> v;
    for (Act act : {Act::none, Act::relu, Act::gelu_erf, Act::gelu_tanh, Act::silu}) {
        const std::string a = act_name(act);
        for (int64_t h : {1, 3, 127, 769, 4097}) {
            const int64_t rows = h >= 4097 ? 5 : 33;
            v.push_back({"bias_" + a + "_row_h" + std::to_string(h), Kind::bias_act, act, {rows, h}, {{rows, h}, {1, h}}});
        }
        v.push_back({"bias_" + a + "_per_channel", Kind::bias_act, act, {2, 16, 7, 7}, {{2, 16, 7, 7}, {1, 16, 1, 1}}});
        v.push_back({"bias_" + a + "_none", Kind::bias_act, act, {33, 100}, {{33, 100}}});
        v.push_back({"bias_" + a + "_padded", Kind::bias_act, act, {17, 129}, {{17, 129}, {1, 129}}, Layout::Padded});
        v.push_back({"bias_" + a + "_stride2", Kind::bias_act, act, {17, 129}, {{17, 129}, {1, 129}},
                     Layout::InnerStride2});
    }
    // Rows of whole 16-byte vectors: the CUDA vector kernel, its grid a multiple of the
    // bias / slope period where that fits (one load per thread), over one or several steps.
    v.push_back({"bias_relu_row_h64", Kind::bias_act, Act::relu, {300, 64}, {{300, 64}, {1, 64}}});
    v.push_back({"bias_gelu_erf_row_h96", Kind::bias_act, Act::gelu_erf, {300, 96}, {{300, 96}, {1, 96}}});
    v.push_back({"bias_silu_row_long", Kind::bias_act, Act::silu, {8192, 320}, {{8192, 320}, {1, 320}}});
    v.push_back({"prelu_per_channel_vec", Kind::prelu, Act::none, {4, 16, 8, 8}, {{4, 16, 8, 8}, {1, 16, 1, 1}}});
    v.push_back({"prelu_per_channel_long", Kind::prelu, Act::none, {16, 64, 56, 56},
                 {{16, 64, 56, 56}, {1, 64, 1, 1}}});
    v.push_back({"bias_full_size", Kind::bias_act, Act::gelu_erf, {9, 50}, {{9, 50}, {9, 50}}});
    v.push_back({"bias_column", Kind::bias_act, Act::silu, {9, 50}, {{9, 50}, {9, 1}}});
    v.push_back({"bias_relu_column_major", Kind::bias_act, Act::relu, {31, 40}, {{31, 40}, {1, 40}}, Layout::Reversed});
    v.push_back({"bias_gelu_inplace", Kind::bias_act, Act::gelu_tanh, {33, 769}, {{33, 769}, {1, 769}},
                 Layout::Dense, true});
    v.push_back({"bias_silu_inplace_padded", Kind::bias_act, Act::silu, {33, 769}, {{33, 769}, {1, 769}},
                 Layout::Padded, true});
    // CPU f32: y of 8 MiB or more, written with non-temporal stores from unaligned row starts (in place) and
    // from aligned ones.
    v.push_back({"bias_gelu_erf_inplace_padded_long", Kind::bias_act, Act::gelu_erf, {2049, 1031},
                 {{2049, 1031}, {1, 1031}}, Layout::Padded, true});
    v.push_back({"wsum_2_long", Kind::weighted_sum, Act::none, {1031, 2049}, {{1031, 2049}, {1031, 2049}}});
    v.push_back({"prelu_per_channel", Kind::prelu, Act::none, {2, 16, 7, 7}, {{2, 16, 7, 7}, {1, 16, 1, 1}}});
    v.push_back({"prelu_row", Kind::prelu, Act::none, {33, 127}, {{33, 127}, {1, 127}}});
    v.push_back({"prelu_scalar", Kind::prelu, Act::none, {33, 127}, {{33, 127}, {1, 1}}});
    v.push_back({"prelu_full", Kind::prelu, Act::none, {5, 4097}, {{5, 4097}, {5, 4097}}});
    v.push_back({"prelu_rotated", Kind::prelu, Act::none, {3, 8, 5, 5}, {{3, 8, 5, 5}, {1, 8, 1, 1}}, Layout::Rotated});
    v.push_back({"prelu_inplace", Kind::prelu, Act::none, {2, 16, 7, 7}, {{2, 16, 7, 7}, {1, 16, 1, 1}},
                 Layout::Dense, true});
    for (int n = 1; n <= TOPS_MAX_SUM_INPUTS; ++n) {
        EltCase c{"wsum_" + std::to_string(n), Kind::weighted_sum, Act::none, {33, 769}, {}};
        for (int i = 0; i < n; ++i) {
            if (i == 2) c.inputs.push_back({1, 769});    // row broadcast
            else if (i == 5) c.inputs.push_back({33, 1});  // one value per row
            else c.inputs.push_back({33, 769});
        }
        v.push_back(c);
    }
    // Whole 16-byte vectors of every input: the CUDA pipelined weighted sums (2-4 inputs), dense with a
    // tail of single elements, and dense / const / row / column inputs over several grid steps.
    v.push_back({"wsum_3_vec_tail", Kind::weighted_sum, Act::none, {31, 1031}, {{31, 1031}, {31, 1031}, {31, 1031}}});
    v.push_back({"wsum_4_vec_modes", Kind::weighted_sum, Act::none, {512, 2048},
                 {{512, 2048}, {1, 1}, {1, 2048}, {512, 1}}});
    v.push_back({"wsum_3_per_channel", Kind::weighted_sum, Act::none, {2, 16, 7, 7},
                 {{2, 16, 7, 7}, {1, 16, 1, 1}, {2, 16, 7, 7}}});
    v.push_back({"wsum_4_stride2", Kind::weighted_sum, Act::none, {17, 129},
                 {{17, 129}, {17, 129}, {1, 129}, {17, 129}}, Layout::InnerStride2});
    v.push_back({"wsum_2_h65536", Kind::weighted_sum, Act::none, {2, 65536}, {{2, 65536}, {2, 65536}}});
    v.push_back({"wsum_3_inplace", Kind::weighted_sum, Act::none, {33, 769}, {{33, 769}, {1, 769}, {33, 769}},
                 Layout::Dense, true});
    v.push_back({"wsum_single_element", Kind::weighted_sum, Act::none, {1, 1}, {{1, 1}, {1, 1}}});
    return v;
}

INSTANTIATE_TEST_SUITE_P(Eltwise, EltwiseTest,
                         ::testing::Combine(::testing::ValuesIn(all_backends()),
                                            ::testing::Values(TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16),
                                            ::testing::ValuesIn(eltwise_cases())),
                         [](const auto& info) {
                             return std::string(tops_backend_name(std::get<0>(info.param))) + "_" +
                                    dtype_label(std::get<1>(info.param)) + "_" + std::get<2>(info.param).name;
                         });

// ------------------------------------------------------------------ validation

tops_tensor_desc_t tdesc(tops_dtype_t dt, std::vector<int64_t> dims, std::vector<int64_t> strides = {}) {
    tops_tensor_desc_t t{};
    tops_tensor_desc_init(&t, dt, int32_t(dims.size()), dims.data(), strides.empty() ? nullptr : strides.data());
    return t;
}

// Status of a create call and tops_last_error() right after it (before the
// op handle is destroyed, which resets the thread's last error).
struct Outcome {
    tops_status_t status;
    std::string message;
};

void expect_message(const Outcome& got, tops_status_t want, const char* needle) {
    EXPECT_EQ(got.status, want) << got.message;
    EXPECT_NE(got.message.find(needle), std::string::npos)
        << "message: " << got.message << " (expected to mention '" << needle << "')";
}

class CapiEltwiseValidation : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx_.ctx), TOPS_SUCCESS); }
    ContextHandle ctx_;
};

TEST_F(CapiEltwiseValidation, BiasAct) {
    auto valid = [] {
        tops_bias_act_desc_t d = tops_bias_act_desc_default();
        d.x = tdesc(TOPS_DTYPE_F16, {4, 8});
        d.y = d.x;
        d.bias = tdesc(TOPS_DTYPE_F16, {1, 8});
        d.act = TOPS_ACT_GELU_ERF;
        return d;
    };
    OpHandle op;
    tops_bias_act_desc_t d = valid();
    EXPECT_EQ(tops_bias_act_create(ctx_.ctx, &d, &op.op), TOPS_SUCCESS) << tops_last_error();
    auto create = [&](const tops_bias_act_desc_t& desc) {
        OpHandle o;
        const tops_status_t st = tops_bias_act_create(ctx_.ctx, &desc, &o.op);
        return Outcome{st, tops_last_error()};
    };
    d = valid();
    d.struct_size = 2;
    expect_message(create(d), TOPS_ERROR_BAD_STRUCT_SIZE, "bias_act");
    d = valid();
    d.act = tops_activation_t(9);
    expect_message(create(d), TOPS_ERROR_INVALID_ARGUMENT, "act 9");
    d = valid();
    d.y = tdesc(TOPS_DTYPE_I32, {4, 8});
    expect_message(create(d), TOPS_ERROR_BAD_DTYPE, "y.dtype");
    d = valid();
    d.x = tdesc(TOPS_DTYPE_F32, {4, 8});
    expect_message(create(d), TOPS_ERROR_BAD_DTYPE, "x.dtype");
    d = valid();
    d.x = tdesc(TOPS_DTYPE_F16, {1, 8});
    expect_message(create(d), TOPS_ERROR_BAD_SHAPE, "x");
    d = valid();
    d.bias = tdesc(TOPS_DTYPE_F16, {2, 8});
    expect_message(create(d), TOPS_ERROR_BAD_SHAPE, "bias");
    d = valid();
    d.bias = tdesc(TOPS_DTYPE_BF16, {1, 8});
    expect_message(create(d), TOPS_ERROR_BAD_DTYPE, "bias.dtype");
    d = valid();
    d.y = tdesc(TOPS_DTYPE_F16, {4, 8}, {1, 1});
    expect_message(create(d), TOPS_ERROR_BAD_STRIDE, "y");
}

TEST_F(CapiEltwiseValidation, Prelu) {
    auto valid = [] {
        tops_prelu_desc_t d = tops_prelu_desc_default();
        d.x = tdesc(TOPS_DTYPE_F32, {2, 3, 4, 4});
        d.y = d.x;
        d.slope = tdesc(TOPS_DTYPE_F32, {1, 3, 1, 1});
        return d;
    };
    auto create = [&](const tops_prelu_desc_t& desc) {
        OpHandle o;
        const tops_status_t st = tops_prelu_create(ctx_.ctx, &desc, &o.op);
        return Outcome{st, tops_last_error()};
    };
    tops_prelu_desc_t d = valid();
    EXPECT_EQ(create(d).status, TOPS_SUCCESS) << create(d).message;
    d.struct_size = 1;
    expect_message(create(d), TOPS_ERROR_BAD_STRUCT_SIZE, "prelu");
    d = valid();
    d.slope = tops_tensor_desc_t{};
    expect_message(create(d), TOPS_ERROR_BAD_DTYPE, "slope");
    d = valid();
    d.slope = tdesc(TOPS_DTYPE_F32, {1, 2, 1, 1});
    expect_message(create(d), TOPS_ERROR_BAD_SHAPE, "slope");
    d = valid();
    d.slope = tdesc(TOPS_DTYPE_F32, {3});
    expect_message(create(d), TOPS_ERROR_BAD_RANK, "slope");
    d = valid();
    d.y = tdesc(TOPS_DTYPE_F32, {2, 3, 4, 5});
    expect_message(create(d), TOPS_ERROR_BAD_SHAPE, "x");
}

TEST_F(CapiEltwiseValidation, WeightedSum) {
    auto valid = [] {
        tops_weighted_sum_desc_t d = tops_weighted_sum_desc_default();
        d.num_inputs = 3;
        d.y = tdesc(TOPS_DTYPE_BF16, {4, 8});
        d.inputs[0] = d.y;
        d.inputs[1] = tdesc(TOPS_DTYPE_BF16, {1, 8});
        d.inputs[2] = tdesc(TOPS_DTYPE_BF16, {4, 1});
        return d;
    };
    auto create = [&](const tops_weighted_sum_desc_t& desc) {
        OpHandle o;
        const tops_status_t st = tops_weighted_sum_create(ctx_.ctx, &desc, &o.op);
        return Outcome{st, tops_last_error()};
    };
    tops_weighted_sum_desc_t d = valid();
    EXPECT_EQ(create(d).status, TOPS_SUCCESS) << create(d).message;
    d.struct_size = 5;
    expect_message(create(d), TOPS_ERROR_BAD_STRUCT_SIZE, "weighted_sum");
    d = valid();
    d.num_inputs = 0;
    expect_message(create(d), TOPS_ERROR_INVALID_ARGUMENT, "num_inputs 0");
    d.num_inputs = 9;
    expect_message(create(d), TOPS_ERROR_INVALID_ARGUMENT, "num_inputs 9");
    d = valid();
    d.coefs[1] = INFINITY;
    expect_message(create(d), TOPS_ERROR_INVALID_ARGUMENT, "coefs[1]");
    d = valid();
    d.inputs[2] = tdesc(TOPS_DTYPE_F16, {4, 1});
    expect_message(create(d), TOPS_ERROR_BAD_DTYPE, "inputs[2].dtype");
    d = valid();
    d.inputs[1] = tdesc(TOPS_DTYPE_BF16, {3, 8});
    expect_message(create(d), TOPS_ERROR_BAD_SHAPE, "inputs[1]");
    d = valid();
    d.y = tdesc(TOPS_DTYPE_U8, {4, 8});
    expect_message(create(d), TOPS_ERROR_BAD_DTYPE, "y.dtype");
}

}  // namespace
