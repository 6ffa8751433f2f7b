// GEMM on every backend x dtype pair x case, against the fp64 reference.
// Cases: 1x1x1, primes, K = 1, K = 0, tall / skinny, sizes around the
// register tiles of every ISA (6x8, 6x16, 14x32) and around the cache blocks
// (the defaults and small ones forced through TOPS_GEMM_BLOCKS, so that
// several M / N / K blocks, edge blocks and f32 partial sums across K slabs
// are covered with small shapes), trans_a / trans_b, alpha / beta, bias,
// every activation, padded and column-major layouts, inner stride 2, batches
// with a shared (batch stride 0) operand, D written in place over C,
// misaligned pointers and thread counts. Outputs are poisoned, so an
// unwritten element is a NaN and fails. CapiGemm* checks every validation
// rule of tops_gemm_create (status and a message naming the argument).
// GemmAutotunePick* checks how the CUDA plan picks among timed algorithms.
#include <cstdlib>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/gemm_autotune.hpp"
#include "harness.hpp"
#include "reference/gemm_ref.hpp"

namespace {

using tops_test::Layout;
using tops_test::ScopedEnv;
using tops_test::Tensor;

enum class Mat { dense, padded, col_major, col_padded, stride2, shared };

const char* mat_label(Mat m) {
    switch (m) {
        case Mat::padded: return "padded";
        case Mat::col_major: return "col_major";
        case Mat::col_padded: return "col_major_padded";
        case Mat::stride2: return "inner_stride2";
        case Mat::shared: return "batch_stride0";
        default: return "dense";
    }
}

struct GemmCase {
    std::string name;
    int64_t batch = 0;  // 0: rank-2 tensors
    int64_t m = 1, n = 1, k = 1;
    bool trans_a = false, trans_b = false;
    float alpha = 1.0f, beta = 0.0f;
    bool bias = false;
    tops_activation_t act = TOPS_ACT_NONE;
    Mat a = Mat::dense, b = Mat::dense, c = Mat::dense, d = Mat::dense;
    bool inplace = false;  // D is C
    const char* blocks = nullptr;  // TOPS_GEMM_BLOCKS while the op is created
    size_t misalign = 0;
    int threads = 0;

    GemmCase& tr(bool ta, bool tb) { trans_a = ta; trans_b = tb; return *this; }
    GemmCase& scale(float al, float be) { alpha = al; beta = be; return *this; }
    GemmCase& with_bias() { bias = true; return *this; }
    GemmCase& activation(tops_activation_t x) { act = x; return *this; }
    GemmCase& layouts(Mat la, Mat lb, Mat lc, Mat ld) { a = la; b = lb; c = lc; d = ld; return *this; }
    GemmCase& batched(int64_t n_batch) { batch = n_batch; return *this; }
    GemmCase& in_place() { inplace = true; return *this; }
    GemmCase& block_sizes(const char* mc_kc_nc) { blocks = mc_kc_nc; return *this; }
    GemmCase& misaligned(size_t elems) { misalign = elems; return *this; }
    GemmCase& num_threads(int t) { threads = t; return *this; }
};

void PrintTo(const GemmCase& c, std::ostream* os) {
    *os << c.name << " batch " << c.batch << " m " << c.m << " n " << c.n << " k " << c.k << (c.trans_a ? " A^T" : "")
        << (c.trans_b ? " B^T" : "") << " alpha " << c.alpha << " beta " << c.beta << (c.bias ? " bias" : "")
        << " act " << int(c.act) << " a " << mat_label(c.a) << " b " << mat_label(c.b) << " c " << mat_label(c.c)
        << " d " << mat_label(c.d) << (c.inplace ? " in place" : "") << " blocks " << (c.blocks ? c.blocks : "default")
        << " misalign " << c.misalign << " threads " << c.threads;
}

GemmCase gc(std::string name, int64_t m, int64_t n, int64_t k) {
    GemmCase c;
    c.name = std::move(name);
    c.m = m;
    c.n = n;
    c.k = k;
    return c;
}

GemmCase sized(int64_t m, int64_t n, int64_t k) {
    return gc("m" + std::to_string(m) + "_n" + std::to_string(n) + "_k" + std::to_string(k), m, n, k);
}

// Small blocks: mc 28 (rounded up to the tile), kc 16, nc 64.
constexpr const char* kSmallBlocks = "28,16,64";

std::vector<GemmCase> cases() {
    std::vector<GemmCase> v = {
        gc("one", 1, 1, 1),
        sized(7, 13, 17), sized(31, 37, 41), sized(67, 71, 73),
        gc("k1", 33, 35, 1),
        gc("k0_beta_bias_relu", 9, 10, 0).scale(1.0f, 0.5f).with_bias().activation(TOPS_ACT_RELU),
        gc("k0_no_epilogue", 5, 6, 0),
        gc("tall", 1000, 3, 7), gc("wide", 3, 1000, 9), gc("row_vector", 1, 257, 300), gc("col_vector", 257, 1, 300),
        // register tiles: 6x8 (sse4), 6x16 (avx2), 14x32 (avx512), each -1 / 0 / +1
        sized(5, 7, 19), sized(6, 8, 19), sized(7, 9, 19), sized(6, 16, 19), sized(7, 17, 19),
        sized(13, 31, 19), sized(14, 32, 19), sized(15, 33, 19), sized(27, 63, 19), sized(28, 64, 19),
        sized(29, 65, 19),
        // default cache blocks: KC 168..1024, MC ~1000 (L2 2 MiB), NC 4096
        sized(23, 41, 255), sized(23, 41, 257), sized(17, 19, 513), sized(9, 11, 1025),
        sized(1023, 33, 20), sized(1025, 33, 20), sized(3, 4095, 5), sized(3, 4097, 5),
        // small forced blocks: several blocks in M, N and K, each edge -1 / 0 / +1
        sized(27, 63, 15).block_sizes(kSmallBlocks), sized(28, 64, 16).block_sizes(kSmallBlocks),
        sized(29, 65, 17).block_sizes(kSmallBlocks), sized(57, 129, 33).block_sizes(kSmallBlocks),
        sized(85, 191, 47).block_sizes(kSmallBlocks).scale(0.5f, 2.0f).with_bias().activation(TOPS_ACT_GELU_ERF),
        sized(85, 191, 47).block_sizes(kSmallBlocks).num_threads(2),
        sized(85, 191, 47).block_sizes(kSmallBlocks).tr(true, true).layouts(Mat::padded, Mat::col_major,
                                                                           Mat::dense, Mat::col_padded),
        // flags
        sized(45, 47, 49).tr(true, false), sized(45, 47, 49).tr(false, true), sized(45, 47, 49).tr(true, true),
        gc("alpha_beta", 37, 29, 31).scale(0.75f, -1.5f),
        gc("alpha0_beta1", 37, 29, 31).scale(0.0f, 1.0f),
        gc("bias", 37, 29, 31).with_bias(),
        gc("relu", 37, 29, 31).with_bias().scale(1.0f, 0.5f).activation(TOPS_ACT_RELU),
        gc("gelu_erf", 37, 29, 31).with_bias().scale(1.0f, 0.5f).activation(TOPS_ACT_GELU_ERF),
        gc("gelu_tanh", 37, 29, 31).with_bias().scale(1.0f, 0.5f).activation(TOPS_ACT_GELU_TANH),
        gc("silu", 37, 29, 31).with_bias().scale(1.0f, 0.5f).activation(TOPS_ACT_SILU),
        gc("epilogue_full_tiles", 56, 64, 40).with_bias().scale(-0.5f, 0.25f).activation(TOPS_ACT_GELU_TANH),
        // layouts
        gc("a_col_major", 40, 50, 60).layouts(Mat::col_major, Mat::dense, Mat::dense, Mat::dense),
        gc("b_col_major", 40, 50, 60).layouts(Mat::dense, Mat::col_major, Mat::dense, Mat::dense),
        gc("d_col_major", 40, 50, 60).scale(1.0f, 1.0f).layouts(Mat::dense, Mat::dense, Mat::col_major,
                                                                Mat::col_major),
        gc("all_col_major", 40, 50, 60).scale(1.0f, 1.0f).with_bias().layouts(Mat::col_major, Mat::col_major,
                                                                               Mat::col_major, Mat::col_major),
        gc("padded_ld", 40, 70, 60).scale(1.0f, -1.0f).with_bias().layouts(Mat::padded, Mat::padded, Mat::padded,
                                                                            Mat::padded),
        gc("col_padded_ld", 40, 70, 60).scale(1.0f, 2.0f).layouts(Mat::col_padded, Mat::col_padded, Mat::padded,
                                                                  Mat::col_padded),
        gc("inner_stride2", 30, 40, 50).scale(1.0f, 1.0f).layouts(Mat::stride2, Mat::stride2, Mat::stride2,
                                                                  Mat::stride2),
        // batches
        gc("batch3", 20, 30, 40).batched(3),
        gc("batch3_shared_a", 20, 30, 40).batched(3).layouts(Mat::shared, Mat::dense, Mat::dense, Mat::dense),
        gc("batch3_shared_b_c", 20, 30, 40).batched(3).scale(1.0f, 0.5f).with_bias().layouts(
            Mat::dense, Mat::shared, Mat::shared, Mat::dense),
        gc("batch2_shared_b_transposed", 33, 65, 47).batched(2).tr(true, true).layouts(Mat::padded, Mat::shared,
                                                                                       Mat::dense, Mat::dense),
        gc("batch4_small_blocks", 29, 65, 33).batched(4).block_sizes(kSmallBlocks).num_threads(2).layouts(
            Mat::dense, Mat::shared, Mat::dense, Mat::dense),
        // in place, misaligned, threads, larger
        gc("in_place", 37, 29, 31).scale(1.0f, 0.5f).in_place(),
        gc("in_place_small_blocks", 57, 129, 33).scale(2.0f, -1.0f).with_bias().in_place().block_sizes(kSmallBlocks),
        gc("in_place_padded", 37, 29, 31).scale(1.0f, 1.0f).layouts(Mat::dense, Mat::dense, Mat::padded,
                                                                   Mat::padded).in_place(),
        gc("misaligned", 45, 67, 39).scale(1.0f, 1.0f).with_bias().misaligned(1),
        gc("threads1", 130, 150, 170).num_threads(1),
        gc("threads2", 130, 150, 170).num_threads(2),
        gc("threads3_clamped", 130, 150, 170).num_threads(3),
        gc("large", 300, 520, 600).scale(1.0f, 1.0f).with_bias().activation(TOPS_ACT_SILU),
        // x W^T with GELU erf / SiLU: the fused Hopper kernel's cases (16-bit
        // dtypes, K-contiguous A and B^T, N a multiple of 8). Tiles are
        // 128 x 256 x 64: exact tiles, M / N / K edges, K below one block, one
        // row, padded A and W, a batch with a shared W, more tiles than SMs
        // (144: a CTA walks two); the 4-stage ring wraps inside a tile at
        // K = 264 and across tiles at 136. Then the fallbacks: odd N, a
        // padded D, a misaligned pointer.
        gc("linear_gelu_erf_exact_tile", 128, 256, 64).tr(false, true).activation(TOPS_ACT_GELU_ERF),
        gc("linear_gelu_erf_edges", 300, 520, 264).tr(false, true).with_bias().activation(TOPS_ACT_GELU_ERF),
        gc("linear_silu_edges", 129, 264, 72).tr(false, true).with_bias().scale(0.5f, 0.0f).activation(TOPS_ACT_SILU),
        gc("linear_gelu_erf_k8", 77, 296, 8).tr(false, true).with_bias().activation(TOPS_ACT_GELU_ERF),
        gc("linear_gelu_erf_row", 1, 304, 40).tr(false, true).with_bias().activation(TOPS_ACT_GELU_ERF),
        gc("linear_gelu_erf_padded_a_w", 70, 304, 125).tr(false, true).with_bias().activation(TOPS_ACT_GELU_ERF)
            .layouts(Mat::padded, Mat::padded, Mat::dense, Mat::dense),
        gc("linear_gelu_erf_odd_n", 70, 301, 128).tr(false, true).with_bias().activation(TOPS_ACT_GELU_ERF),
        gc("linear_gelu_erf_padded_d", 70, 301, 125).tr(false, true).with_bias().activation(TOPS_ACT_GELU_ERF).layouts(
            Mat::padded, Mat::padded, Mat::dense, Mat::padded),
        gc("linear_silu_batch3_shared_w", 100, 296, 136).batched(3).tr(false, true).with_bias().activation(
            TOPS_ACT_SILU).layouts(Mat::dense, Mat::shared, Mat::dense, Mat::dense),
        gc("linear_gelu_erf_many_tiles", 1410, 2824, 136).tr(false, true).with_bias().activation(TOPS_ACT_GELU_ERF),
        gc("linear_gelu_erf_misaligned", 45, 67, 40).tr(false, true).with_bias().activation(TOPS_ACT_GELU_ERF)
            .misaligned(1),
    };
    return v;
}

struct DtypePair {
    tops_dtype_t in, out;
};

void PrintTo(const DtypePair& p, std::ostream* os) {
    *os << tops_test::dtype_label(p.in) << "->" << tops_test::dtype_label(p.out);
}

const DtypePair kDtypes[] = {{TOPS_DTYPE_F32, TOPS_DTYPE_F32},
                             {TOPS_DTYPE_F16, TOPS_DTYPE_F16},
                             {TOPS_DTYPE_F16, TOPS_DTYPE_F32},
                             {TOPS_DTYPE_BF16, TOPS_DTYPE_BF16},
                             {TOPS_DTYPE_BF16, TOPS_DTYPE_F32}};

// Strides of a (batch?, rows, cols) matrix stored per `layout`.
std::vector<int64_t> matrix_strides(const std::vector<int64_t>& dims, Mat layout) {
    const size_t r = dims.size() - 2;
    const int64_t rows = dims[r], cols = dims[r + 1];
    constexpr int64_t kPad = 3;
    std::vector<int64_t> s(dims.size());
    int64_t matrix = 0;
    switch (layout) {
        case Mat::col_major:
        case Mat::col_padded: {
            const int64_t ld = rows + (layout == Mat::col_padded ? kPad : 0);
            s[r] = 1;
            s[r + 1] = ld;
            matrix = ld * cols;
            break;
        }
        case Mat::padded:
            s[r] = cols + kPad;
            s[r + 1] = 1;
            matrix = (cols + kPad) * rows;
            break;
        case Mat::stride2:
            s[r] = 2 * cols;
            s[r + 1] = 2;
            matrix = 2 * cols * rows;
            break;
        default:
            s[r] = cols;
            s[r + 1] = 1;
            matrix = cols * rows;
            break;
    }
    if (r == 1) s[0] = layout == Mat::shared ? 0 : matrix;
    return s;
}

Tensor make_matrix(tops_dtype_t dtype, int64_t batch, int64_t rows, int64_t cols, Mat layout) {
    std::vector<int64_t> dims = {rows, cols};
    if (batch > 0) dims.insert(dims.begin(), batch);
    return Tensor::make(dtype, dims, matrix_strides(dims, layout));
}

// (batch, rows, cols) of op(t) as doubles, row-major; a rank-2 t repeats.
std::vector<double> op_values(const Tensor& t, int64_t batch, bool trans) {
    const size_t r = t.dims.size() - 2;
    const int64_t rows = trans ? t.dims[r + 1] : t.dims[r];
    const int64_t cols = trans ? t.dims[r] : t.dims[r + 1];
    std::vector<double> out;
    out.reserve(size_t(batch * rows * cols));
    for (int64_t b = 0; b < batch; ++b) {
        for (int64_t i = 0; i < rows; ++i) {
            for (int64_t j = 0; j < cols; ++j) {
                const int64_t idx3[3] = {b, trans ? j : i, trans ? i : j};
                out.push_back(t.value(t.offset(r == 1 ? idx3 : idx3 + 1)));
            }
        }
    }
    return out;
}

using Param = std::tuple<tops_backend_t, DtypePair, GemmCase>;

class GemmTest : public ::testing::TestWithParam<Param> {};

TEST_P(GemmTest, MatchesFp64Reference) {
    const auto& [backend, dt, c] = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    TOPS_TRACE_SEED();
    tops_test::Rng rng(tops_test::test_seed());
    const int64_t nb = c.batch > 0 ? c.batch : 1;

    Tensor a = c.trans_a ? make_matrix(dt.in, c.batch, c.k, c.m, c.a) : make_matrix(dt.in, c.batch, c.m, c.k, c.a);
    Tensor b = c.trans_b ? make_matrix(dt.in, c.batch, c.n, c.k, c.b) : make_matrix(dt.in, c.batch, c.k, c.n, c.b);
    Tensor d = make_matrix(dt.out, c.batch, c.m, c.n, c.d);
    const bool has_c = c.beta != 0.0f || c.inplace;
    Tensor cm = make_matrix(dt.out, c.batch, c.m, c.n, c.inplace ? c.d : c.c);
    Tensor bias = Tensor::make(dt.out, {c.n}, Layout::Dense);
    tops_test::fill_uniform(a, rng, -1.0, 1.0);
    tops_test::fill_uniform(b, rng, -1.0, 1.0);
    tops_test::fill_uniform(cm, rng, -1.0, 1.0);
    tops_test::fill_uniform(bias, rng, -1.0, 1.0);

    tops_ref::GemmProblem p;
    p.batch = nb;
    p.m = c.m;
    p.n = c.n;
    p.k = c.k;
    p.a = op_values(a, nb, c.trans_a);
    p.b = op_values(b, nb, c.trans_b);
    if (has_c && c.beta != 0.0f) p.c = op_values(cm, nb, false);
    if (c.bias) p.bias = bias.logical();
    p.alpha = c.alpha;
    p.beta = c.beta;
    p.act = tops_ref::GemmAct(int(c.act));
    const std::vector<double> ref = tops_ref::gemm(p);

    const tops_test::CreateFn create = [&](tops_context_t ctx, tops_op_t* op) {
        tops_gemm_desc_t g = tops_gemm_desc_default();
        g.a = a.desc();
        g.b = b.desc();
        g.d = d.desc();
        if (has_c) g.c = cm.desc();
        if (c.bias) g.bias = bias.desc();
        g.trans_a = c.trans_a;
        g.trans_b = c.trans_b;
        g.alpha = c.alpha;
        g.beta = c.beta;
        g.act = c.act;
        ScopedEnv env("TOPS_GEMM_BLOCKS", c.blocks);
        return tops_gemm_create(ctx, &g, op);
    };
    tops_test::RunSpec spec;
    if (c.inplace) spec.inputs.push_back({TOPS_ARG_C, &cm});  // D is written through C's buffer
    spec.inputs.push_back({TOPS_ARG_A, &a});
    spec.inputs.push_back({TOPS_ARG_B, &b});
    if (has_c && !c.inplace) spec.inputs.push_back({TOPS_ARG_C, &cm});
    if (c.bias) spec.inputs.push_back({TOPS_ARG_BIAS, &bias});
    if (c.inplace) {
        d = cm;
        spec.inplace = true;
    } else {
        d.poison();
    }
    spec.y = &d;
    spec.y_arg = TOPS_ARG_D;
    spec.misalign_elems = c.misalign;
    spec.num_threads = c.threads;
    ASSERT_TRUE(tops_test::run_op(backend, create, spec));
    const std::vector<double> out = op_values(d, nb, false);
    EXPECT_TRUE(tops_test::compare_values(out, ref, tops_test::tolerance(dt.out), {nb, c.m, c.n}, "gemm d"));
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
    const auto& [backend, dt, c] = info.param;
    std::string s = std::string(tops_backend_name(backend)) + "_" + tops_test::dtype_label(dt.in) + "_" +
                    tops_test::dtype_label(dt.out) + "_" + c.name + "_" + std::to_string(info.index);
    for (char& ch : s) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    return s;
}

INSTANTIATE_TEST_SUITE_P(All, GemmTest,
                         ::testing::Combine(::testing::ValuesIn(tops_test::all_backends()),
                                            ::testing::ValuesIn(kDtypes), ::testing::ValuesIn(cases())),
                         param_name);

// ------------------------------------------------------------------ validation

using tops_test::fails_with;

class CapiGemm : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx_.ctx), TOPS_SUCCESS); }

    // A [4, 5] @ B [5, 6] -> D [4, 6], f32.
    static tops_gemm_desc_t desc() {
        tops_gemm_desc_t g = tops_gemm_desc_default();
        g.a = tops_test::tensor_desc(TOPS_DTYPE_F32, {4, 5});
        g.b = tops_test::tensor_desc(TOPS_DTYPE_F32, {5, 6});
        g.d = tops_test::tensor_desc(TOPS_DTYPE_F32, {4, 6});
        return g;
    }

    tops_status_t create(const tops_gemm_desc_t& g) {
        op_.reset();
        return tops_gemm_create(ctx_.ctx, &g, &op_.op);
    }

    tops_test::ContextHandle ctx_;
    tops_test::OpHandle op_;
};

TEST_F(CapiGemm, ValidDescriptorsAreAccepted) {
    tops_gemm_desc_t g = desc();
    EXPECT_EQ(create(g), TOPS_SUCCESS) << tops_last_error();
    g.c = g.d;
    g.beta = 1.0f;
    g.bias = tops_test::tensor_desc(TOPS_DTYPE_F32, {6});
    g.act = TOPS_ACT_GELU_TANH;
    EXPECT_EQ(create(g), TOPS_SUCCESS) << tops_last_error();
    g = desc();
    g.a = tops_test::tensor_desc(TOPS_DTYPE_BF16, {5, 4});
    g.trans_a = 1;
    g.b = tops_test::tensor_desc(TOPS_DTYPE_BF16, {3, 6, 5});
    g.trans_b = 1;
    g.d = tops_test::tensor_desc(TOPS_DTYPE_F32, {3, 4, 6});
    EXPECT_EQ(create(g), TOPS_SUCCESS) << tops_last_error();
    EXPECT_NE(std::string(tops_op_kernel_name(op_.op)).find("gemm_bf16_f32out_"), std::string::npos)
        << tops_op_kernel_name(op_.op);
}

TEST_F(CapiGemm, StructSizeAndTensors) {
    tops_gemm_desc_t g = desc();
    g.struct_size = 8;
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_STRUCT_SIZE, {"gemm", "struct_size"}));
    g = desc();
    g.a.dims[0] = -1;
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_SHAPE, {"gemm: a", "negative"}));
    g = desc();
    g.b.strides[1] = -1;
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_STRIDE, {"gemm: b", "negative"}));
    g = desc();
    g.a = tops_test::tensor_desc(TOPS_DTYPE_F32, {2, 2, 4, 5});
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_RANK, {"gemm: a.rank 4", "2 or 3"}));
    g = desc();
    g.b = tops_test::tensor_desc(TOPS_DTYPE_F32, {30});
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_RANK, {"gemm: b.rank 1"}));
    g = desc();
    g.d = tops_test::tensor_desc(TOPS_DTYPE_F32, {24});
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_RANK, {"gemm: d.rank 1"}));
    g = desc();
    g.d.strides[0] = 1;  // rows overlap
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_STRIDE, {"gemm: d"}));
}

TEST_F(CapiGemm, Dtypes) {
    tops_gemm_desc_t g = desc();
    g.a.dtype = g.b.dtype = TOPS_DTYPE_I32;
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_DTYPE, {"gemm: a.dtype", "i32"}));
    g = desc();
    g.b.dtype = TOPS_DTYPE_F16;
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_DTYPE, {"gemm: b.dtype", "f16", "differs"}));
    g = desc();
    g.d.dtype = TOPS_DTYPE_F16;
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_DTYPE, {"gemm: d.dtype", "f16"}));
    g = desc();
    g.a.dtype = g.b.dtype = TOPS_DTYPE_F16;
    g.d.dtype = TOPS_DTYPE_BF16;
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_DTYPE, {"gemm: d.dtype", "bf16"}));
    g = desc();
    g.c = tops_test::tensor_desc(TOPS_DTYPE_F16, {4, 6});
    g.beta = 1.0f;
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_DTYPE, {"gemm: c.dtype", "differs"}));
    g = desc();
    g.bias = tops_test::tensor_desc(TOPS_DTYPE_BF16, {6});
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_DTYPE, {"gemm: bias.dtype", "differs"}));
}

TEST_F(CapiGemm, Shapes) {
    tops_gemm_desc_t g = desc();
    g.a = tops_test::tensor_desc(TOPS_DTYPE_F32, {3, 5});
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_SHAPE, {"gemm: op(a) has 3 rows", "d has 4"}));
    g = desc();
    g.b = tops_test::tensor_desc(TOPS_DTYPE_F32, {5, 7});
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_SHAPE, {"gemm: op(b) has 7 columns", "d has 6"}));
    g = desc();
    g.b = tops_test::tensor_desc(TOPS_DTYPE_F32, {4, 6});
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_SHAPE, {"op(a) has 5 columns", "op(b) has 4 rows"}));
    g = desc();
    g.trans_a = 1;  // op(a) becomes [5, 4]
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_SHAPE, {"op(a) has 5 rows"}));
    g = desc();
    g.a = tops_test::tensor_desc(TOPS_DTYPE_F32, {2, 4, 5});
    g.d = tops_test::tensor_desc(TOPS_DTYPE_F32, {3, 4, 6});
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_SHAPE, {"gemm: a batch 2", "d's batch 3"}));
    g = desc();
    g.b = tops_test::tensor_desc(TOPS_DTYPE_F32, {2, 5, 6});
    g.d = tops_test::tensor_desc(TOPS_DTYPE_F32, {3, 4, 6});
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_SHAPE, {"gemm: b batch 2"}));
    g = desc();
    g.c = tops_test::tensor_desc(TOPS_DTYPE_F32, {4, 5});
    g.beta = 1.0f;
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_SHAPE, {"gemm: c is 4x5", "d is 4x6"}));
    g = desc();
    g.c = tops_test::tensor_desc(TOPS_DTYPE_F32, {2, 4, 6});
    g.d = tops_test::tensor_desc(TOPS_DTYPE_F32, {3, 4, 6});
    g.a = tops_test::tensor_desc(TOPS_DTYPE_F32, {3, 4, 5});
    g.beta = 1.0f;
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_SHAPE, {"gemm: c batch 2"}));
    g = desc();
    g.bias = tops_test::tensor_desc(TOPS_DTYPE_F32, {4});
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_SHAPE, {"gemm: bias must be [N] = [6]"}));
    g = desc();
    g.bias = tops_test::tensor_desc(TOPS_DTYPE_F32, {1, 6});
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_BAD_SHAPE, {"gemm: bias", "rank 2"}));
}

TEST_F(CapiGemm, ScalarsActivationFlagsAndC) {
    tops_gemm_desc_t g = desc();
    g.alpha = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_INVALID_ARGUMENT, {"gemm: alpha", "finite"}));
    g = desc();
    g.c = g.d;
    g.beta = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_INVALID_ARGUMENT, {"beta", "finite"}));
    g = desc();
    g.act = tops_activation_t(99);
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_INVALID_ARGUMENT, {"gemm: act 99"}));
    g = desc();
    g.flags = 0x10;
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_INVALID_ARGUMENT, {"gemm: unknown flags"}));
    g = desc();
    g.beta = 0.5f;
    EXPECT_TRUE(fails_with(create(g), TOPS_ERROR_INVALID_ARGUMENT, {"gemm: beta", "c is absent"}));
}

TEST_F(CapiGemm, ExecuteArgumentsAndWorkspace) {
    tops_gemm_desc_t g = desc();
    g.bias = tops_test::tensor_desc(TOPS_DTYPE_F32, {6});
    ASSERT_EQ(create(g), TOPS_SUCCESS) << tops_last_error();
    std::vector<float> a(20, 1.0f), b(30, 1.0f), d(24, 0.0f), bias(6, 0.5f);
    size_t ws_bytes = 0;
    ASSERT_EQ(tops_op_workspace_size(op_.op, &ws_bytes), TOPS_SUCCESS);
    ASSERT_GT(ws_bytes, 0u) << "packing buffers come from the workspace";
    std::vector<unsigned char> ws(ws_bytes);
    std::vector<tops_arg_t> args = {{TOPS_ARG_A, a.data()}, {TOPS_ARG_B, b.data()}, {TOPS_ARG_D, d.data()}};
    EXPECT_TRUE(fails_with(tops_op_execute(ctx_.ctx, op_.op, args.data(), args.size(), ws.data(), ws_bytes),
                           TOPS_ERROR_MISSING_ARGUMENT, {"gemm", "missing"}));
    args.push_back({TOPS_ARG_BIAS, bias.data()});
    EXPECT_TRUE(fails_with(tops_op_execute(ctx_.ctx, op_.op, args.data(), args.size(), ws.data(), ws_bytes - 1),
                           TOPS_ERROR_WORKSPACE_TOO_SMALL, {"gemm"}));
    ASSERT_EQ(tops_op_execute(ctx_.ctx, op_.op, args.data(), args.size(), ws.data(), ws_bytes), TOPS_SUCCESS)
        << tops_last_error();
    for (float x : d) EXPECT_EQ(x, 5.5f);
}

}  // namespace

// ------------------------------------------------------------------ autotune pick
// The CUDA GEMM's choice among timed cuBLASLt candidates (src/cuda/gemm_autotune.hpp),
// on scripted timings: no GPU needed.

namespace {

constexpr tops::cuda::AutotuneRules kRules{2, 10, 2, 20, 0.03f};

// Candidate i takes round_ms[i] in the rounds and confirm_ms[i] when timed
// against candidate 0; a negative time means it cannot run.
struct Script {
    std::vector<float> round_ms, confirm_ms;
    int calls = 0;
    int pick(float* ms) {
        const int n = int(round_ms.size());
        bool confirming = false;
        int timed_in_rounds = 0;
        auto run = [&](int i) { return round_ms[size_t(i)] >= 0; };
        auto time_one = [&](int i, int, float* t) {
            ++calls;
            if (round_ms[size_t(i)] < 0) return false;
            confirming = confirming || timed_in_rounds >= kRules.rounds * kRules.reps * n;
            ++timed_in_rounds;
            *t = confirming ? confirm_ms[size_t(i)] : round_ms[size_t(i)];
            return true;
        };
        return tops::cuda::autotune_pick(n, kRules, run, time_one, ms);
    }
};

TEST(GemmAutotunePick, KeepsTheHeuristicsPickUnlessBeatenByTheMargin) {
    Script s{{1.00f, 0.98f, 1.20f}, {1.00f, 0.98f, 1.20f}};
    float ms = 0.0f;
    EXPECT_EQ(s.pick(&ms), 0);  // 2% faster is not enough
    EXPECT_FLOAT_EQ(ms, 1.00f);
}

TEST(GemmAutotunePick, TakesAChallengerThatWinsTwice) {
    Script s{{1.00f, 0.90f, 0.95f}, {1.00f, 0.90f, 0.95f}};
    float ms = 0.0f;
    EXPECT_EQ(s.pick(&ms), 1);
    EXPECT_FLOAT_EQ(ms, 0.90f);
    EXPECT_EQ(s.calls, kRules.rounds * kRules.reps * 3 + 2 * kRules.confirm_reps);
}

TEST(GemmAutotunePick, DropsAChallengerThatLosesCallByCall) {
    Script s{{1.00f, 0.90f}, {1.00f, 1.05f}};  // won the rounds, slower side by side
    float ms = 0.0f;
    EXPECT_EQ(s.pick(&ms), 0);
    EXPECT_FLOAT_EQ(ms, 1.00f);
}

TEST(GemmAutotunePick, SkipsCandidatesThatDoNotRun) {
    Script s{{-1.0f, 0.80f, -1.0f}, {-1.0f, 0.80f, -1.0f}};  // the heuristic's pick fails: no confirmation
    float ms = 0.0f;
    EXPECT_EQ(s.pick(&ms), 1);
    EXPECT_FLOAT_EQ(ms, 0.80f);
    Script none{{-1.0f, -1.0f}, {-1.0f, -1.0f}};
    ms = 7.0f;
    EXPECT_EQ(none.pick(&ms), -1);
    EXPECT_FLOAT_EQ(ms, 7.0f);  // untouched
}

}  // namespace
