// LayerNorm / RMSNorm: every feature x dtype x backend x shape class against
// the fp64 reference (tests/reference/norm_ref.*), in-place forms, thread
// determinism, and every validation rule of capi/norm.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness.hpp"
#include "reference/norm_ref.hpp"

namespace {

using namespace tops_test;

// Which output shares storage with which input (the in-place forms capi allows).
enum class Alias { none, y_x, y_res, pre_x, pre_res, pre_x_y_res };

struct NormCase {
    std::string name;
    std::vector<int64_t> dims;
    int k = 1;  // normalized_rank
    bool rms = false;
    bool gamma = true, beta = true, bias = false, residual = false, prenorm = false, stats = false;
    bool f32_params = false;  // gamma / beta / bias in f32 whatever x's dtype
    Layout layout = Layout::Dense;
    Alias alias = Alias::none;
    double x_offset = 0;  // added to x's values (stability: a mean far from 0 next to the spread)
};

// x is uniform over [kXLow, kXHigh) (plus NormCase::x_offset).
constexpr double kXLow = -2.0;
constexpr double kXHigh = 3.0;

// Rows whose mean is far from 0 next to their spread: a stable variance
// (two passes, Welford / Chan merges) errs by a few f32 ulps of the offset
// relative to the spread, as the mean itself is rounded to f32 (2^-24 * 1000
// is 6e-5 against a standard deviation of 1.44: y within ~4e-5); E[x^2] -
// E[x]^2 in f32 cancels to a relative error near 2^-24 * offset^2 / var,
// about 3e-2 here, so a bound of 16 such ulps (6.6e-4) tells the two apart.
// The output's own rounding (16-bit y) is the larger where it is.
constexpr double kStableUlps = 16;
Tolerance stable_tolerance(const NormCase& c, Tolerance base) {
    const double spread = (kXHigh - kXLow) / std::sqrt(12.0);  // standard deviation of x
    const double b = kStableUlps * std::ldexp(1.0, -24) * std::fabs(c.x_offset) / spread;
    return {std::max(base.rel_fro, b), std::max(base.max_abs, b)};
}

// One argument of a multi-output run; `alias` names the input slot whose
// buffer an output reuses (-1: its own buffer).
struct Slot {
    tops_arg_kind_t kind;
    Tensor* tensor;
    bool output;
    int alias = -1;
};

// Runs an op with several outputs (some possibly aliasing inputs) and
// downloads every output into its tensor. Checks guard zones and that gaps
// between elements of each output are untouched.
::testing::AssertionResult run_slots(tops_backend_t backend, const CreateFn& create, std::vector<Slot>& slots,
                                     int num_threads = 0) {
    ContextHandle ctx;
    tops_status_t st = tops_context_create(backend, 0, &ctx.ctx);
    if (st != TOPS_SUCCESS) return ::testing::AssertionFailure() << "context: " << status_text(st);
    if (num_threads > 0) tops_context_set_num_threads(ctx.ctx, num_threads);
    OpHandle op;
    st = create(ctx.ctx, &op.op);
    if (st != TOPS_SUCCESS) return ::testing::AssertionFailure() << "create: " << status_text(st);
    size_t ws_bytes = 0;
    tops_op_workspace_size(op.op, &ws_bytes);
    std::vector<std::unique_ptr<Buffer>> bufs(slots.size());
    std::vector<std::vector<uint8_t>> before(slots.size());
    std::vector<tops_arg_t> args;
    for (size_t i = 0; i < slots.size(); ++i) {
        before[i] = slots[i].tensor->storage;
        if (slots[i].alias >= 0) {
            before[i] = slots[size_t(slots[i].alias)].tensor->storage;
            args.push_back({slots[i].kind, bufs[size_t(slots[i].alias)]->ptr()});
            continue;
        }
        bufs[i] = std::make_unique<Buffer>(backend, slots[i].tensor->storage.size());
        bufs[i]->upload(slots[i].tensor->storage);
        if (!bufs[i]->error().empty()) return ::testing::AssertionFailure() << "buffer: " << bufs[i]->error();
        args.push_back({slots[i].kind, bufs[i]->ptr()});
    }
    Buffer ws(backend, ws_bytes);
    st = tops_op_execute(ctx.ctx, op.op, args.data(), args.size(), ws_bytes ? ws.ptr() : nullptr, ws_bytes);
    if (st != TOPS_SUCCESS) {
        return ::testing::AssertionFailure() << "execute (" << tops_op_kernel_name(op.op) << "): " << status_text(st);
    }
    ::testing::AssertionResult synced = sync_backend(backend);
    if (!synced) return synced;
    for (size_t i = 0; i < slots.size(); ++i) {
        if (!slots[i].output) continue;
        Buffer* b = slots[i].alias >= 0 ? bufs[size_t(slots[i].alias)].get() : bufs[i].get();
        slots[i].tensor->storage = b->download();
        if (!b->error().empty()) return ::testing::AssertionFailure() << tops_op_kernel_name(op.op) << ": " << b->error();
        const std::vector<char> covered = slots[i].tensor->covered();
        const size_t esz = slots[i].tensor->esize();
        for (size_t s = 0; s < covered.size(); ++s) {
            if (!covered[s] && std::memcmp(before[i].data() + s * esz, slots[i].tensor->storage.data() + s * esz, esz)) {
                return ::testing::AssertionFailure() << tops_op_kernel_name(op.op) << " wrote gap slot " << s;
            }
        }
    }
    return ::testing::AssertionSuccess();
}

std::vector<int64_t> lead_dims(const NormCase& c) { return {c.dims.begin(), c.dims.end() - c.k}; }
std::vector<int64_t> tail_dims(const NormCase& c) { return {c.dims.end() - c.k, c.dims.end()}; }

struct NormRun {
    Tensor x, residual, gamma, beta, bias, y, prenorm, mean, rstd;
    tops_ref::NormResult ref;
};

// Builds inputs and the reference; `run` executes on a backend and fills outputs.
NormRun prepare(const NormCase& c, tops_dtype_t dt, Rng& rng) {
    NormRun r;
    const tops_dtype_t pdt = c.f32_params ? TOPS_DTYPE_F32 : dt;
    r.x = Tensor::make(dt, c.dims, c.layout);
    fill_uniform(r.x, rng, kXLow + c.x_offset, kXHigh + c.x_offset);
    if (c.residual) {
        r.residual = Tensor::make(dt, c.dims, c.layout);
        fill_uniform(r.residual, rng, -1.0, 1.0);
    }
    if (c.gamma) {
        r.gamma = Tensor::make(pdt, tail_dims(c), Layout::Dense);
        fill_uniform(r.gamma, rng, 0.5, 1.5);
    }
    if (c.beta) {
        r.beta = Tensor::make(pdt, tail_dims(c), Layout::Dense);
        fill_uniform(r.beta, rng, -0.5, 0.5);
    }
    if (c.bias) {
        r.bias = Tensor::make(pdt, tail_dims(c), Layout::Dense);
        fill_uniform(r.bias, rng, -0.5, 0.5);
    }
    r.y = Tensor::make(dt, c.dims, c.layout);
    r.y.poison();
    if (c.prenorm) {
        r.prenorm = Tensor::make(dt, c.dims, c.layout);
        r.prenorm.poison();
    }
    if (c.stats) {
        if (!c.rms) {
            r.mean = Tensor::make(TOPS_DTYPE_F32, lead_dims(c), Layout::Dense);
            r.mean.poison();
        }
        r.rstd = Tensor::make(TOPS_DTYPE_F32, lead_dims(c), Layout::Dense);
        r.rstd.poison();
    }
    tops_ref::NormProblem p;
    p.cols = numel(tail_dims(c));
    p.rows = numel(lead_dims(c));
    p.rms = c.rms;
    p.eps = 1e-5;
    p.x = r.x.logical();
    if (c.residual) p.residual = r.residual.logical();
    if (c.gamma) p.gamma = r.gamma.logical();
    if (c.beta) p.beta = r.beta.logical();
    if (c.bias) p.bias = r.bias.logical();
    r.ref = tops_ref::norm(p);
    return r;
}

tops_norm_desc_t make_desc(const NormCase& c, const NormRun& r) {
    tops_norm_desc_t d = tops_norm_desc_default();
    d.kind = c.rms ? TOPS_NORM_RMS : TOPS_NORM_LAYER;
    d.x = r.x.desc();
    d.y = r.y.desc();
    d.normalized_rank = c.k;
    d.eps = 1e-5f;
    if (c.gamma) d.gamma = r.gamma.desc();
    if (c.beta) d.beta = r.beta.desc();
    if (c.bias) d.bias = r.bias.desc();
    if (c.residual) d.residual = r.residual.desc();
    if (c.prenorm) d.prenorm = r.prenorm.desc();
    if (c.stats && !c.rms) d.mean = r.mean.desc();
    if (c.stats) d.rstd = r.rstd.desc();
    return d;
}

::testing::AssertionResult execute(tops_backend_t backend, const NormCase& c, NormRun& r, int threads = 0) {
    const tops_norm_desc_t d = make_desc(c, r);
    std::vector<Slot> slots;
    slots.push_back({TOPS_ARG_X, &r.x, false});
    const int res_slot = c.residual ? int(slots.size()) : -1;
    if (c.residual) slots.push_back({TOPS_ARG_RESIDUAL, &r.residual, false});
    if (c.gamma) slots.push_back({TOPS_ARG_GAMMA, &r.gamma, false});
    if (c.beta) slots.push_back({TOPS_ARG_BETA, &r.beta, false});
    if (c.bias) slots.push_back({TOPS_ARG_BIAS, &r.bias, false});
    int y_alias = -1, pre_alias = -1;
    if (c.alias == Alias::y_x) y_alias = 0;
    if (c.alias == Alias::y_res || c.alias == Alias::pre_x_y_res) y_alias = res_slot;
    if (c.alias == Alias::pre_x || c.alias == Alias::pre_x_y_res) pre_alias = 0;
    if (c.alias == Alias::pre_res) pre_alias = res_slot;
    slots.push_back({TOPS_ARG_Y, &r.y, true, y_alias});
    if (c.prenorm) slots.push_back({TOPS_ARG_PRENORM, &r.prenorm, true, pre_alias});
    if (c.stats && !c.rms) slots.push_back({TOPS_ARG_MEAN, &r.mean, true});
    if (c.stats) slots.push_back({TOPS_ARG_RSTD, &r.rstd, true});
    return run_slots(
        backend, [&](tops_context_t ctx, tops_op_t* op) { return tops_norm_create(ctx, &d, op); }, slots, threads);
}

class NormTest : public ::testing::TestWithParam<std::tuple<tops_backend_t, tops_dtype_t, NormCase>> {};

TEST_P(NormTest, MatchesReference) {
    const auto& [backend, dt, c] = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    TOPS_TRACE_SEED();
    Rng rng(test_seed());
    NormRun r = prepare(c, dt, rng);
    ASSERT_TRUE(execute(backend, c, r));
    EXPECT_TRUE(compare_values(r.y.logical(), r.ref.y, stable_tolerance(c, tolerance(dt)), c.dims, "y"));
    if (c.prenorm) {
        EXPECT_TRUE(compare_values(r.prenorm.logical(), r.ref.prenorm, tolerance(dt), c.dims, "prenorm"));
    }
    if (c.stats && !c.rms) {
        EXPECT_TRUE(compare_values(r.mean.logical(), r.ref.mean, tolerance(TOPS_DTYPE_F32), lead_dims(c), "mean"));
    }
    if (c.stats) {
        EXPECT_TRUE(compare_values(r.rstd.logical(), r.ref.rstd, stable_tolerance(c, tolerance(TOPS_DTYPE_F32)),
                                   lead_dims(c), "rstd"));
    }
}

// Rows are independent: 1 and 2 threads, and two runs, give the same bits.
TEST_P(NormTest, DeterministicAcrossRunsAndThreads) {
    const auto& [backend, dt, c] = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    if (c.alias != Alias::none || numel(c.dims) < 4096) GTEST_SKIP() << "covered by larger out-of-place cases";
    Rng rng(test_seed());
    NormRun a = prepare(c, dt, rng);
    NormRun b = a;
    NormRun d = a;
    ASSERT_TRUE(execute(backend, c, a, 1));
    ASSERT_TRUE(execute(backend, c, b, 2));
    ASSERT_TRUE(execute(backend, c, d, 2));
    EXPECT_TRUE(bits_equal(b.y, a.y, "y, 2 threads vs 1"));
    EXPECT_TRUE(bits_equal(d.y, b.y, "y, second run"));
}

std::vector<NormCase> norm_cases() {
    std::vector<NormCase> v;
    // Hidden sizes: LayerNorm dense, RMSNorm with padded rows.
    for (int64_t cols : {1, 3, 127, 769, 4097, 65536}) {
        const int64_t rows = cols >= 65536 ? 3 : cols >= 4097 ? 9 : cols >= 769 ? 33 : 65;
        NormCase ln;
        ln.name = "ln_h" + std::to_string(cols);
        ln.dims = {rows, cols};
        v.push_back(ln);
        NormCase rms;
        rms.name = "rms_h" + std::to_string(cols) + "_padded";
        rms.dims = {rows, cols};
        rms.rms = true;
        rms.beta = false;
        rms.layout = Layout::Padded;
        v.push_back(rms);
    }
    NormCase c;
    c.name = "ln_fused_residual_bias_prenorm_stats";
    c.dims = {2, 5, 384};
    c.bias = c.residual = c.prenorm = c.stats = true;
    v.push_back(c);
    c.name = "rms_fused_residual_bias_prenorm_stats";
    c.rms = true;
    c.beta = false;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_fused_h4097_padded";
    c.dims = {5, 4097};
    c.bias = c.residual = c.prenorm = c.stats = true;
    c.layout = Layout::Padded;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_rank2_normalized";
    c.dims = {4, 6, 50};
    c.k = 2;
    c.stats = true;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_no_affine";
    c.dims = {17, 300};
    c.gamma = c.beta = false;
    v.push_back(c);
    c.name = "rms_no_gamma_stats";
    c.rms = true;
    c.stats = true;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_f32_params";
    c.dims = {8, 769};
    c.bias = c.residual = c.prenorm = true;
    c.f32_params = true;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_strided_cols";
    c.dims = {7, 129};
    c.bias = c.residual = c.prenorm = c.stats = true;
    c.layout = Layout::InnerStride2;
    v.push_back(c);
    c.name = "rms_column_major";
    c.rms = true;
    c.beta = false;
    c.layout = Layout::Reversed;
    v.push_back(c);
    // In place.
    const std::pair<Alias, const char*> aliases[] = {{Alias::y_x, "y_is_x"},
                                                     {Alias::y_res, "y_is_residual"},
                                                     {Alias::pre_x, "prenorm_is_x"},
                                                     {Alias::pre_res, "prenorm_is_residual"},
                                                     {Alias::pre_x_y_res, "prenorm_is_x_y_is_residual"}};
    for (const auto& [alias, name] : aliases) {
        c = NormCase{};
        c.name = std::string("ln_inplace_") + name;
        c.dims = {6, 769};
        c.bias = c.residual = c.prenorm = c.stats = true;
        c.alias = alias;
        v.push_back(c);
    }
    c = NormCase{};
    c.name = "rms_inplace_y_is_x_strided";
    c.dims = {6, 100};
    c.rms = true;
    c.beta = false;
    c.residual = true;
    c.layout = Layout::InnerStride2;
    c.alias = Alias::y_x;
    v.push_back(c);
    // Streaming rows (CUDA), in place: longer than the shared-memory cache and
    // the register-held part (pass 2 re-reads a tail), and more rows than
    // resident blocks (132 on an H100: each block's next row is copied in
    // while the current one is written).
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 131072}, std::vector<int64_t>{264, 40000}}) {
        c = NormCase{};
        c.name = "ln_rows" + std::to_string(dims[0]) + "_h" + std::to_string(dims[1]) + "_inplace_y_is_x";
        c.dims = dims;
        c.stats = true;
        c.alias = Alias::y_x;
        v.push_back(c);
    }
    // Streaming rows with f32 gamma / beta and statistics, in place (CUDA:
    // more rows than resident blocks).
    c = NormCase{};
    c.name = "ln_rows140_h40000_f32_params_stats_inplace_y_is_x";
    c.dims = {140, 40000};
    c.f32_params = true;
    c.stats = true;
    c.alias = Alias::y_x;
    v.push_back(c);
    c = NormCase{};
    c.name = "rms_rows264_h40000";
    c.dims = {264, 40000};
    c.rms = true;
    c.beta = false;
    v.push_back(c);
    // Rows of mean 1000.5 and standard deviation 1.44 (stable_tolerance), one
    // per CUDA row strategy: warp teams, dense warp rows, block teams, dense
    // block rows, streaming rows cached raw (whole, and beyond the cache)
    // and as f32 sums (with a residual).
    for (int64_t cols : {100, 768, 2000, 4096, 65536, 131072}) {
        c = NormCase{};
        c.name = "ln_offset1000_h" + std::to_string(cols);
        c.dims = {3, cols};
        c.gamma = c.beta = false;
        c.stats = true;
        c.x_offset = 1000;
        v.push_back(c);
    }
    c.name = "ln_offset1000_h65536_residual";
    c.dims = {3, 65536};
    c.residual = true;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_fused_h65536_inplace_prenorm_is_x_y_is_residual";
    c.dims = {2, 65536};
    c.bias = c.residual = c.prenorm = c.stats = true;
    c.alias = Alias::pre_x_y_res;
    v.push_back(c);
    // Dense rows (CUDA: a warp per row of 33-128 16-byte vectors, or 256 for
    // f32, 128- / 512-thread teams for 2-byte rows of 2049-4096 / 4097-16384
    // and 1024-thread teams for f32 rows of 8193-16384; gamma / beta
    // staged in shared memory): rows ending inside a lane's vectors, stats,
    // in place, gamma only, more rows than a block or the grid holds; f32
    // gamma / beta under f16 / bf16 x keep the general kernel.
    c = NormCase{};
    c.name = "ln_dense_h1024_stats";
    c.dims = {37, 1024};
    c.stats = true;
    v.push_back(c);
    c = NormCase{};
    c.name = "rms_dense_h768";
    c.dims = {70, 768};
    c.rms = true;
    c.beta = false;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_dense_h264_inplace_y_is_x";
    c.dims = {9, 264};
    c.alias = Alias::y_x;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_dense_gamma_only_h520";
    c.dims = {301, 520};
    c.beta = false;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_dense_rows300_h8200_stats";  // 512-thread teams, more rows than resident blocks
    c.dims = {300, 8200};
    c.stats = true;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_dense_rows300_h4096_stats";  // 128-thread teams, more rows than resident blocks
    c.dims = {300, 4096};
    c.stats = true;
    v.push_back(c);
    c = NormCase{};
    c.name = "rms_dense_h2056_inplace_y_is_x";  // 128-thread teams, the last vectors in a few threads
    c.dims = {7, 2056};
    c.rms = true;
    c.beta = false;
    c.alias = Alias::y_x;
    v.push_back(c);
    c = NormCase{};
    c.name = "rms_dense_h16384_inplace_y_is_x";
    c.dims = {5, 16384};
    c.rms = true;
    c.beta = false;
    c.alias = Alias::y_x;
    v.push_back(c);
    c = NormCase{};
    c.name = "rms_padded_rows128_h16387";  // CPU f32: y of 8 MiB or more, streamed from unaligned row starts
    c.dims = {128, 16387};
    c.rms = true;
    c.beta = false;
    c.layout = Layout::Padded;
    v.push_back(c);
    // CPU f32: prenorm of 8 MiB or more, streamed beside y (unaligned row starts; in place).
    c = NormCase{};
    c.name = "ln_fused_padded_rows128_h16387_prenorm";
    c.dims = {128, 16387};
    c.bias = c.residual = c.prenorm = c.stats = true;
    c.layout = Layout::Padded;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_fused_rows128_h16384_inplace_prenorm_is_x_y_is_residual";
    c.dims = {128, 16384};
    c.bias = c.residual = c.prenorm = true;
    c.alias = Alias::pre_x_y_res;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_dense_f32_params_h512";
    c.dims = {11, 512};
    c.f32_params = true;
    v.push_back(c);
    c = NormCase{};
    c.name = "ln_zero_rows";
    c.dims = {0, 64};
    c.stats = true;
    v.push_back(c);
    return v;
}

INSTANTIATE_TEST_SUITE_P(Norm, NormTest,
                         ::testing::Combine(::testing::ValuesIn(all_backends()),
                                            ::testing::Values(TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16),
                                            ::testing::ValuesIn(norm_cases())),
                         [](const auto& info) {
                             return std::string(tops_backend_name(std::get<0>(info.param))) + "_" +
                                    dtype_label(std::get<1>(info.param)) + "_" + std::get<2>(info.param).name;
                         });

// ------------------------------------------------------------------ validation

class CapiNormValidation : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx_.ctx), TOPS_SUCCESS); }

    // A valid LayerNorm over [4, 8] with every optional tensor.
    tops_norm_desc_t valid() const {
        tops_norm_desc_t d = tops_norm_desc_default();
        d.x = desc(TOPS_DTYPE_F32, {4, 8});
        d.y = d.x;
        d.gamma = desc(TOPS_DTYPE_F32, {8});
        d.beta = d.gamma;
        d.bias = d.gamma;
        d.residual = d.x;
        d.prenorm = d.x;
        d.mean = desc(TOPS_DTYPE_F32, {4});
        d.rstd = d.mean;
        return d;
    }

    static tops_tensor_desc_t desc(tops_dtype_t dt, std::vector<int64_t> dims, std::vector<int64_t> strides = {}) {
        tops_tensor_desc_t t{};
        tops_tensor_desc_init(&t, dt, int32_t(dims.size()), dims.data(), strides.empty() ? nullptr : strides.data());
        return t;
    }

    // Creating d fails with `status` and a message containing `needle`.
    void expect_error(const tops_norm_desc_t& d, tops_status_t status, const char* needle) {
        OpHandle op;
        const tops_status_t st = tops_norm_create(ctx_.ctx, &d, &op.op);
        EXPECT_EQ(st, status) << tops_last_error();
        EXPECT_NE(std::string(tops_last_error()).find(needle), std::string::npos)
            << "message: " << tops_last_error() << " (expected to mention '" << needle << "')";
    }

    ContextHandle ctx_;
};

TEST_F(CapiNormValidation, ValidDescriptorIsAccepted) {
    const tops_norm_desc_t d = valid();
    OpHandle op;
    EXPECT_EQ(tops_norm_create(ctx_.ctx, &d, &op.op), TOPS_SUCCESS) << tops_last_error();
}

TEST_F(CapiNormValidation, EveryRuleReportsItsArgument) {
    tops_norm_desc_t d = valid();
    d.struct_size = 4;
    expect_error(d, TOPS_ERROR_BAD_STRUCT_SIZE, "norm");
    d = valid();
    d.kind = tops_norm_kind_t(7);
    expect_error(d, TOPS_ERROR_INVALID_ARGUMENT, "kind 7");
    d = valid();
    d.x = desc(TOPS_DTYPE_I32, {4, 8});
    expect_error(d, TOPS_ERROR_BAD_DTYPE, "x.dtype");
    d = valid();
    d.normalized_rank = 0;
    expect_error(d, TOPS_ERROR_BAD_AXIS, "normalized_rank 0");
    d.normalized_rank = 3;
    expect_error(d, TOPS_ERROR_BAD_AXIS, "normalized_rank 3");
    d = valid();
    d.eps = -1.0f;
    expect_error(d, TOPS_ERROR_INVALID_ARGUMENT, "eps");
    d.eps = NAN;
    expect_error(d, TOPS_ERROR_INVALID_ARGUMENT, "eps");
    d = valid();
    d.y = desc(TOPS_DTYPE_F16, {4, 8});
    expect_error(d, TOPS_ERROR_BAD_DTYPE, "y.dtype");
    d = valid();
    d.y = desc(TOPS_DTYPE_F32, {4, 9});
    expect_error(d, TOPS_ERROR_BAD_SHAPE, "y");
    d = valid();
    d.y = desc(TOPS_DTYPE_F32, {4, 8}, {0, 1});
    expect_error(d, TOPS_ERROR_BAD_STRIDE, "y");
    d = valid();
    d.kind = TOPS_NORM_RMS;
    d.mean = tops_tensor_desc_t{};
    expect_error(d, TOPS_ERROR_INVALID_ARGUMENT, "beta");
    d.beta = tops_tensor_desc_t{};
    d.mean = desc(TOPS_DTYPE_F32, {4});
    expect_error(d, TOPS_ERROR_INVALID_ARGUMENT, "mean");
    d = valid();
    d.residual = desc(TOPS_DTYPE_F32, {4, 7});
    expect_error(d, TOPS_ERROR_BAD_SHAPE, "residual");
    d = valid();
    d.residual = desc(TOPS_DTYPE_BF16, {4, 8});
    expect_error(d, TOPS_ERROR_BAD_DTYPE, "residual.dtype");
    d = valid();
    d.prenorm = desc(TOPS_DTYPE_F32, {3, 8});
    expect_error(d, TOPS_ERROR_BAD_SHAPE, "prenorm");
    d = valid();
    d.gamma = desc(TOPS_DTYPE_F32, {9});
    expect_error(d, TOPS_ERROR_BAD_SHAPE, "gamma");
    d = valid();
    d.beta = desc(TOPS_DTYPE_F16, {8});
    expect_error(d, TOPS_ERROR_BAD_DTYPE, "beta.dtype");
    d = valid();
    d.bias = desc(TOPS_DTYPE_F32, {2, 4});
    expect_error(d, TOPS_ERROR_BAD_RANK, "bias");
    d = valid();
    d.mean = desc(TOPS_DTYPE_F16, {4});
    expect_error(d, TOPS_ERROR_BAD_DTYPE, "mean.dtype");
    d = valid();
    d.rstd = desc(TOPS_DTYPE_F32, {5});
    expect_error(d, TOPS_ERROR_BAD_SHAPE, "rstd");
    d = valid();
    d.rstd = desc(TOPS_DTYPE_F32, {4}, {0});
    expect_error(d, TOPS_ERROR_BAD_STRIDE, "rstd");
    // No element (no row), but normalized dims whose product passes 2^63.
    d = valid();
    d.x = d.y = desc(TOPS_DTYPE_F32, {0, int64_t(1) << 40, int64_t(1) << 40}, {1, 1, 1});
    d.normalized_rank = 2;
    d.gamma = d.beta = d.bias = d.residual = d.prenorm = d.mean = d.rstd = tops_tensor_desc_t{};
    expect_error(d, TOPS_ERROR_BAD_SHAPE, "normalized dims of x");
    d = valid();
    d.x = desc(TOPS_DTYPE_F32, {4, 8, 8}, {128, 1, 8});  // normalized dims [8, 8] transposed
    d.y = desc(TOPS_DTYPE_F32, {4, 8, 8});
    d.normalized_rank = 2;
    d.gamma = d.beta = d.bias = d.residual = d.prenorm = tops_tensor_desc_t{};
    d.mean = d.rstd = desc(TOPS_DTYPE_F32, {4});
    expect_error(d, TOPS_ERROR_NOT_SUPPORTED, "normalized dims of x");
}

// y may be x (exact in place), never a partial overlap of it.
TEST_F(CapiNormValidation, PartialOverlapIsRejectedAtExecute) {
    tops_norm_desc_t d = tops_norm_desc_default();
    d.x = desc(TOPS_DTYPE_F32, {4, 8});
    d.y = d.x;
    OpHandle op;
    ASSERT_EQ(tops_norm_create(ctx_.ctx, &d, &op.op), TOPS_SUCCESS) << tops_last_error();
    std::vector<float> buf(64, 1.0f);
    const tops_arg_t args[] = {{TOPS_ARG_X, buf.data()}, {TOPS_ARG_Y, buf.data() + 3}};
    EXPECT_NE(tops_op_execute(ctx_.ctx, op.op, args, 2, nullptr, 0), TOPS_SUCCESS);
    EXPECT_NE(std::string(tops_last_error()).find("y"), std::string::npos) << tops_last_error();
    const tops_arg_t same[] = {{TOPS_ARG_X, buf.data()}, {TOPS_ARG_Y, buf.data()}};
    EXPECT_EQ(tops_op_execute(ctx_.ctx, op.op, same, 2, nullptr, 0), TOPS_SUCCESS) << tops_last_error();
}

}  // namespace
