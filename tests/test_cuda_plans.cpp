// Plans that share one CUDA kernel with different shared-memory needs: a
// kernel's dynamic shared-memory limit is a process-wide attribute, so a plan
// created later (needing less) must not break an earlier plan (needing more).
// Softmax rows of 32768 and 20000 f32 both run the 1024-thread block kernel
// (128 KiB and 80 KiB of row cache); norm rows of 65536 and 40000 f32 both
// stream (the cache is the whole budget vs 160 KiB). Each pair is created
// big-then-small and executed big-then-small, then checked against fp64.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "tops/tops.h"

#if defined(TOPS_TEST_WITH_CUDA)
#include <cuda_runtime.h>
#endif

namespace {

#if !defined(TOPS_TEST_WITH_CUDA)

TEST(CudaPlans, SmallerPlanDoesNotBreakLargerOne) {
    GTEST_SKIP() << "built without the CUDA runtime (TOPS_HAVE_CUDA is OFF)";
}

#else

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr
#define TOPS_OK(expr) ASSERT_EQ((expr), TOPS_SUCCESS) << #expr << ": " << tops_last_error()

constexpr int64_t kRows = 3;
constexpr uint64_t kSeed = 0x9a11ace5;

struct DeviceBuffer {
    void* ptr = nullptr;
    ~DeviceBuffer() { cudaFree(ptr); }
};

// One f32 (rows, cols) problem: host input, device x / y, y poisoned with NaN.
struct Problem {
    int64_t cols = 0;
    std::vector<float> x;
    DeviceBuffer dx, dy;
};

void make_problem(int64_t cols, std::mt19937_64* rng, Problem* p) {
    p->cols = cols;
    p->x.resize(size_t(kRows * cols));
    std::normal_distribution<float> normal(0.5f, 2.0f);
    for (float& v : p->x) v = normal(*rng);
    const size_t bytes = p->x.size() * sizeof(float);
    CUDA_OK(cudaMalloc(&p->dx.ptr, bytes));
    CUDA_OK(cudaMalloc(&p->dy.ptr, bytes));
    CUDA_OK(cudaMemcpy(p->dx.ptr, p->x.data(), bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(p->dy.ptr, 0xff, bytes));
}

std::vector<float> fetch_y(const Problem& p) {
    std::vector<float> y(p.x.size());
    if (cudaMemcpy(y.data(), p.dy.ptr, y.size() * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) y.clear();
    return y;
}

double max_err_softmax(const Problem& p, const std::vector<float>& y) {
    double worst = 0.0;
    for (int64_t r = 0; r < kRows; ++r) {
        const float* x = p.x.data() + r * p.cols;
        double m = -INFINITY, s = 0.0;
        for (int64_t j = 0; j < p.cols; ++j) m = std::max(m, double(x[j]));
        for (int64_t j = 0; j < p.cols; ++j) s += std::exp(double(x[j]) - m);
        for (int64_t j = 0; j < p.cols; ++j) {
            const double ref = std::exp(double(x[j]) - m) / s;
            const double got = y[size_t(r * p.cols + j)];
            worst = std::isnan(got) ? INFINITY : std::max(worst, std::abs(got - ref) / ref);
        }
    }
    return worst;
}

double max_err_layernorm(const Problem& p, const std::vector<float>& y, float eps) {
    double worst = 0.0;
    for (int64_t r = 0; r < kRows; ++r) {
        const float* x = p.x.data() + r * p.cols;
        double mean = 0.0, var = 0.0;
        for (int64_t j = 0; j < p.cols; ++j) mean += x[j];
        mean /= double(p.cols);
        for (int64_t j = 0; j < p.cols; ++j) var += (x[j] - mean) * (x[j] - mean);
        const double rstd = 1.0 / std::sqrt(var / double(p.cols) + eps);
        for (int64_t j = 0; j < p.cols; ++j) {
            const double got = y[size_t(r * p.cols + j)];
            worst = std::isnan(got) ? INFINITY : std::max(worst, std::abs(got - (x[j] - mean) * rstd));
        }
    }
    return worst;
}

// A conv2d descriptor: NHWC x / y with a KRSC filter, or NCHW with KCRS;
// dims in the stored order, dense; no padding, stride 1.
tops_conv2d_desc_t conv_desc(tops_dtype_t dt, bool nhwc, const int64_t* x, const int64_t* w, const int64_t* y) {
    tops_conv2d_desc_t d = tops_conv2d_desc_default();
    d.layout = nhwc ? TOPS_CONV_NHWC : TOPS_CONV_NCHW;
    d.filter_layout = nhwc ? TOPS_CONV_FILTER_KRSC : TOPS_CONV_FILTER_KCRS;
    EXPECT_EQ(tops_tensor_desc_init(&d.x, dt, 4, x, nullptr), TOPS_SUCCESS) << tops_last_error();
    EXPECT_EQ(tops_tensor_desc_init(&d.w, dt, 4, w, nullptr), TOPS_SUCCESS) << tops_last_error();
    EXPECT_EQ(tops_tensor_desc_init(&d.y, dt, 4, y, nullptr), TOPS_SUCCESS) << tops_last_error();
    return d;
}

class CudaPlans : public ::testing::Test {
protected:
    void SetUp() override {
        const char* why = nullptr;
        if (!tops_backend_available(TOPS_BACKEND_CUDA, &why)) GTEST_SKIP() << "cuda backend unavailable: " << why;
        ASSERT_EQ(tops_context_create(TOPS_BACKEND_CUDA, 0, &ctx_), TOPS_SUCCESS) << tops_last_error();
        std::printf("seed 0x%llx\n", static_cast<unsigned long long>(kSeed));
    }
    void TearDown() override {
        for (tops_op_t op : ops_) tops_op_destroy(op);
        if (ctx_) tops_context_destroy(ctx_);
    }
    // The kernel a conv2d plan of d names, created with the plan-time switch
    // env set to value (env nullptr: the environment as it is); "" when the
    // create fails (the failure is recorded).
    std::string conv_kernel(const tops_conv2d_desc_t& d, const char* env = nullptr, const char* value = nullptr) {
        if (env) setenv(env, value, 1);
        tops_op_t op = nullptr;
        const tops_status_t s = tops_conv2d_create(ctx_, &d, &op);
        if (env) unsetenv(env);
        EXPECT_EQ(s, TOPS_SUCCESS) << tops_last_error();
        if (s != TOPS_SUCCESS) return std::string();
        ops_.push_back(op);
        return tops_op_kernel_name(op);
    }
    // Creates an op per problem (the larger first), executes them in that
    // order on the context's stream, then checks each output.
    template <class Create, class MaxErr>
    void create_run_check(std::initializer_list<const Problem*> probs, Create create, MaxErr max_err, double tol) {
        std::vector<tops_op_t> ops;
        for (const Problem* p : probs) {
            const int64_t dims[2] = {kRows, p->cols};
            tops_op_t op = nullptr;
            ASSERT_EQ(create(dims, &op), TOPS_SUCCESS) << "cols " << p->cols << ": " << tops_last_error();
            ops_.push_back(op);
            ops.push_back(op);
        }
        size_t i = 0;
        for (const Problem* p : probs) {
            const tops_arg_t args[] = {{TOPS_ARG_X, p->dx.ptr}, {TOPS_ARG_Y, p->dy.ptr}};
            TOPS_OK(tops_op_execute(ctx_, ops[i++], args, 2, nullptr, 0));
        }
        CUDA_OK(cudaDeviceSynchronize());
        for (const Problem* p : probs) {
            const std::vector<float> y = fetch_y(*p);
            ASSERT_FALSE(y.empty());
            EXPECT_LT(max_err(*p, y), tol) << "cols " << p->cols;
        }
    }

    tops_context_t ctx_ = nullptr;
    std::vector<tops_op_t> ops_;
};

TEST_F(CudaPlans, SoftmaxSmallerPlanDoesNotBreakLargerOne) {
    std::mt19937_64 rng(kSeed);
    Problem big, small;
    make_problem(32768, &rng, &big);
    make_problem(20000, &rng, &small);
    create_run_check(
        {&big, &small},
        [&](const int64_t* dims, tops_op_t* op) {
            tops_softmax_desc_t d = tops_softmax_desc_default();
            const tops_status_t init = tops_tensor_desc_init(&d.x, TOPS_DTYPE_F32, 2, dims, nullptr);
            if (init != TOPS_SUCCESS) return init;
            d.y = d.x;
            return tops_softmax_create(ctx_, &d, op);
        },
        [](const Problem& p, const std::vector<float>& y) { return max_err_softmax(p, y); }, 1e-5);
}

TEST_F(CudaPlans, NormSmallerPlanDoesNotBreakLargerOne) {
    std::mt19937_64 rng(kSeed + 1);
    Problem big, small;
    make_problem(65536, &rng, &big);
    make_problem(40000, &rng, &small);
    constexpr float kEps = 1e-5f;
    create_run_check(
        {&big, &small},
        [&](const int64_t* dims, tops_op_t* op) {
            tops_norm_desc_t d = tops_norm_desc_default();
            const tops_status_t init = tops_tensor_desc_init(&d.x, TOPS_DTYPE_F32, 2, dims, nullptr);
            if (init != TOPS_SUCCESS) return init;
            d.y = d.x;
            d.eps = kEps;
            return tops_norm_create(ctx_, &d, op);
        },
        [&](const Problem& p, const std::vector<float>& y) { return max_err_layernorm(p, y, kEps); }, 2e-5);
}

// x W^T + bias with GELU erf / SiLU in 16-bit dtypes runs the fused sm_90a
// kernel on a compute capability 9.0 device (its numerics are checked by
// GemmTest's linear_* cases; this pins that they do not silently take the
// cuBLASLt + activation-pass fallback), and the other path elsewhere.
TEST_F(CudaPlans, LinearGeluErfTakesFusedKernelOnSm90) {
    cudaDeviceProp prop{};
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    const bool sm90 = prop.major == 9 && prop.minor == 0;
    const int64_t x_dims[2] = {300, 264}, w_dims[2] = {520, 264}, d_dims[2] = {300, 520}, b_dims[1] = {520};
    for (tops_dtype_t dt : {TOPS_DTYPE_F16, TOPS_DTYPE_BF16}) {
        for (tops_activation_t act : {TOPS_ACT_GELU_ERF, TOPS_ACT_SILU, TOPS_ACT_GELU_TANH}) {
            tops_gemm_desc_t g = tops_gemm_desc_default();
            TOPS_OK(tops_tensor_desc_init(&g.a, dt, 2, x_dims, nullptr));
            TOPS_OK(tops_tensor_desc_init(&g.b, dt, 2, w_dims, nullptr));
            TOPS_OK(tops_tensor_desc_init(&g.d, dt, 2, d_dims, nullptr));
            TOPS_OK(tops_tensor_desc_init(&g.bias, dt, 1, b_dims, nullptr));
            g.trans_b = 1;
            g.act = act;
            tops_op_t op = nullptr;
            TOPS_OK(tops_gemm_create(ctx_, &g, &op));
            ops_.push_back(op);
            const std::string name = tops_op_kernel_name(op);
            const bool fused = name.find("sm90_tma_wgmma") != std::string::npos;
            EXPECT_EQ(fused, sm90 && act != TOPS_ACT_GELU_TANH) << "dtype " << int(dt) << " act " << int(act) << ": "
                                                               << name;
        }
    }
}

// Dense f16 / bf16 attention of head dim 64 or 128 whose query tiles fill
// the GPU takes the Hopper kernel on sm_90; varlen, other head dims and
// decode shapes keep the mma.sync kernels.
TEST_F(CudaPlans, DenseAttentionTakesHopperKernelOnSm90) {
    cudaDeviceProp prop{};
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    const bool sm90 = prop.major == 9 && prop.minor == 0;
    struct Shape {
        int64_t batch, seq_q, heads, dim;
        bool hopper;
    };
    // 4 x 16 x (1024 / 128) = 512 query tiles: more than any H100 has SMs.
    const Shape shapes[] = {{4, 1024, 16, 128, true}, {4, 1024, 16, 64, true}, {4, 1024, 16, 96, false},
                            {4, 1, 16, 128, false}};
    for (tops_dtype_t dt : {TOPS_DTYPE_F16, TOPS_DTYPE_BF16}) {
        for (const Shape& sh : shapes) {
            const int64_t dims[4] = {sh.batch, sh.seq_q, sh.heads, sh.dim};
            const int64_t kv_dims[4] = {sh.batch, 1024, sh.heads, sh.dim};
            tops_attention_desc_t d = tops_attention_desc_default();
            TOPS_OK(tops_tensor_desc_init(&d.q, dt, 4, dims, nullptr));
            TOPS_OK(tops_tensor_desc_init(&d.k, dt, 4, kv_dims, nullptr));
            TOPS_OK(tops_tensor_desc_init(&d.v, dt, 4, kv_dims, nullptr));
            TOPS_OK(tops_tensor_desc_init(&d.o, dt, 4, dims, nullptr));
            d.flags = TOPS_ATTN_CAUSAL;
            tops_op_t op = nullptr;
            TOPS_OK(tops_attention_create(ctx_, &d, &op));
            ops_.push_back(op);
            const std::string name = tops_op_kernel_name(op);
            const bool hopper = name.find("sm90_tma_wgmma") != std::string::npos;
            EXPECT_EQ(hopper, sm90 && sh.hopper) << "dtype " << int(dt) << " d " << sh.dim << " sq " << sh.seq_q
                                                 << ": " << name;
        }
    }
}

// Transposes that keep rows of >= 64 bytes (16-byte multiples) take the TMA
// kernel on compute capability 9.0 only; 18-byte rows keep the vector gather.
TEST_F(CudaPlans, RowTransposeTakesTmaKernelOnSm90) {
    cudaDeviceProp prop{};
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    const bool sm90 = prop.major == 9 && prop.minor == 0;
    for (const int64_t d : {int64_t(64), int64_t(9)}) {
        const int64_t x_dims[4] = {2, 37, 4, d}, y_dims[4] = {2, 4, 37, d};
        tops_transpose_desc_t desc = tops_transpose_desc_default();
        TOPS_OK(tops_tensor_desc_init(&desc.x, TOPS_DTYPE_F16, 4, x_dims, nullptr));
        TOPS_OK(tops_tensor_desc_init(&desc.y, TOPS_DTYPE_F16, 4, y_dims, nullptr));
        const int perm[4] = {0, 2, 1, 3};
        for (int k = 0; k < 4; ++k) desc.perm[k] = perm[k];
        tops_op_t op = nullptr;
        TOPS_OK(tops_transpose_create(ctx_, &desc, &op));
        ops_.push_back(op);
        const std::string name = tops_op_kernel_name(op);
        EXPECT_EQ(name.find("tma") != std::string::npos, sm90 && d == 64) << "head dim " << d << ": " << name;
    }
}

// Unmasked softmax (not log, positive scale) over aligned rows at one stride
// takes the dense-rows kernel where one lane group holds a row; log-softmax,
// a negative scale, a mask and outer dims that do not merge keep the general
// warp-rows kernel.
TEST_F(CudaPlans, UnmaskedSoftmaxRowsTakeDenseKernel) {
    struct Case {
        tops_dtype_t dt;
        int64_t rows, n;
        uint32_t flags;
        float scale;
        bool mask, unmerged, dense;
    };
    const Case cases[] = {
        {TOPS_DTYPE_F32, 64, 1024, 0, 1.0f, false, false, true},
        {TOPS_DTYPE_F32, 64, 128, 0, 0.125f, false, false, true},
        {TOPS_DTYPE_F16, 64, 1024, 0, 1.0f, false, false, true},
        {TOPS_DTYPE_BF16, 64, 1000, 0, 1.0f, false, false, true},
        {TOPS_DTYPE_F32, 64, 1024, TOPS_SOFTMAX_LOG, 1.0f, false, false, false},
        {TOPS_DTYPE_F32, 64, 1024, 0, -1.0f, false, false, false},
        {TOPS_DTYPE_F32, 64, 1024, 0, 1.0f, true, false, false},
        {TOPS_DTYPE_F32, 64, 1024, 0, 1.0f, false, true, false},
    };
    for (const Case& c : cases) {
        const int64_t dims[3] = {2, c.rows / 2, c.n};
        // unmerged: the outer dims of x are 2 x (rows / 2) with a gap between the halves
        const int64_t strides[3] = {(c.rows / 2 + 1) * c.n, c.n, 1};
        const int64_t mask_dims[3] = {1, 1, c.n};
        tops_softmax_desc_t d = tops_softmax_desc_default();
        TOPS_OK(tops_tensor_desc_init(&d.x, c.dt, 3, dims, c.unmerged ? strides : nullptr));
        TOPS_OK(tops_tensor_desc_init(&d.y, c.dt, 3, dims, nullptr));
        if (c.mask) {
            TOPS_OK(tops_tensor_desc_init(&d.mask, TOPS_DTYPE_U8, 3, mask_dims, nullptr));
        }
        d.flags = c.flags;
        d.scale = c.scale;
        tops_op_t op = nullptr;
        TOPS_OK(tops_softmax_create(ctx_, &d, &op));
        ops_.push_back(op);
        const std::string name = tops_op_kernel_name(op);
        EXPECT_EQ(name.find("_dense_") != std::string::npos, c.dense)
            << "dtype " << int(c.dt) << " n " << c.n << " flags " << c.flags << " scale " << c.scale << " mask "
            << c.mask << " unmerged " << c.unmerged << ": " << name;
    }
}

// LayerNorm / RMSNorm rows of 33-128 16-byte vectors (f32: up to 256, and
// 8193-16384 elements; 2-byte types also 2049-16384) with no bias, residual
// or pre-norm output, and gamma / beta in x's dtype, take the dense-rows
// kernel; a residual, f32 gamma under f16 x (2-byte rows of 4096 then keep
// the general one-vector teams), f32 rows of 2048 or 4096 or a streamed row
// keep the general kernels.
TEST_F(CudaPlans, PlainNormRowsTakeDenseKernel) {
    struct Case {
        tops_dtype_t dt;
        int64_t cols;
        bool rms, residual, f32_gamma, dense;
    };
    const Case cases[] = {
        {TOPS_DTYPE_F16, 1024, false, false, false, true}, {TOPS_DTYPE_BF16, 768, true, false, false, true},
        {TOPS_DTYPE_F32, 1024, false, false, false, true}, {TOPS_DTYPE_F32, 768, true, false, false, true},
        {TOPS_DTYPE_F16, 1024, false, true, false, false}, {TOPS_DTYPE_F16, 1024, false, false, true, false},
        {TOPS_DTYPE_F16, 4096, false, false, false, true},  {TOPS_DTYPE_BF16, 16384, true, false, false, true},
        {TOPS_DTYPE_F16, 4096, false, true, false, false},  {TOPS_DTYPE_BF16, 2056, true, false, false, true},
        {TOPS_DTYPE_F16, 65536, false, false, false, false}, {TOPS_DTYPE_F32, 16384, false, false, false, true},
        {TOPS_DTYPE_F32, 4096, true, false, false, false},   {TOPS_DTYPE_F32, 2048, false, false, false, false},
    };
    for (const Case& c : cases) {
        const int64_t dims[2] = {64, c.cols}, pdims[1] = {c.cols};
        tops_norm_desc_t d = tops_norm_desc_default();
        d.kind = c.rms ? TOPS_NORM_RMS : TOPS_NORM_LAYER;
        TOPS_OK(tops_tensor_desc_init(&d.x, c.dt, 2, dims, nullptr));
        TOPS_OK(tops_tensor_desc_init(&d.y, c.dt, 2, dims, nullptr));
        TOPS_OK(tops_tensor_desc_init(&d.gamma, c.f32_gamma ? TOPS_DTYPE_F32 : c.dt, 1, pdims, nullptr));
        if (c.residual) {
            TOPS_OK(tops_tensor_desc_init(&d.residual, c.dt, 2, dims, nullptr));
        }
        tops_op_t op = nullptr;
        TOPS_OK(tops_norm_create(ctx_, &d, &op));
        ops_.push_back(op);
        const std::string name = tops_op_kernel_name(op);
        EXPECT_EQ(name.find("_dense_") != std::string::npos, c.dense)
            << "dtype " << int(c.dt) << " cols " << c.cols << " rms " << c.rms << " residual " << c.residual
            << " f32 gamma " << c.f32_gamma << ": " << name;
    }
}

// Contiguous rows of whole 16-byte vectors, equally spaced and up to 4096
// elements (NCHW global pooling, dense last-dim rows), take the dense-rows
// reduce kernel; a ragged length, longer rows, strided row starts or columns
// keep the general kernels.
TEST_F(CudaPlans, WholeVectorRowsTakeDenseReduceKernel) {
    struct Case {
        tops_dtype_t dt;
        std::vector<int64_t> dims, strides;
        uint32_t axes;
        bool dense;
    };
    const Case cases[] = {
        {TOPS_DTYPE_F16, {8, 64, 56, 56}, {}, 12u, true},   {TOPS_DTYPE_F32, {8, 64, 56, 56}, {}, 12u, true},
        {TOPS_DTYPE_BF16, {512, 4096}, {}, 2u, true},       {TOPS_DTYPE_F32, {512, 300}, {}, 2u, true},
        {TOPS_DTYPE_F16, {512, 300}, {}, 2u, false},        {TOPS_DTYPE_F32, {512, 8192}, {}, 2u, false},
        {TOPS_DTYPE_F32, {512, 1024}, {1027, 1}, 2u, false}, {TOPS_DTYPE_F32, {4096, 512}, {}, 1u, false},
    };
    for (const Case& c : cases) {
        const int rank = int(c.dims.size());
        std::vector<int64_t> ydims;
        for (int i = 0; i < rank; ++i) {
            if (!((c.axes >> i) & 1u)) ydims.push_back(c.dims[i]);
        }
        tops_reduce_desc_t d = tops_reduce_desc_default();
        d.op = TOPS_REDUCE_MEAN;
        TOPS_OK(tops_tensor_desc_init(&d.x, c.dt, rank, c.dims.data(), c.strides.empty() ? nullptr : c.strides.data()));
        TOPS_OK(tops_tensor_desc_init(&d.y, c.dt, int(ydims.size()), ydims.data(), nullptr));
        d.axes = c.axes;
        tops_op_t op = nullptr;
        TOPS_OK(tops_reduce_create(ctx_, &d, &op));
        ops_.push_back(op);
        const std::string name = tops_op_kernel_name(op);
        EXPECT_EQ(name.find("_dense_rows_") != std::string::npos, c.dense)
            << "dtype " << int(c.dt) << " " << c.dims[0] << "x" << c.dims[1] << " axes " << c.axes << ": " << name;
    }
}

// A 3x3 stride-1 NHWC f16 / bf16 convolution takes the Hopper implicit GEMM
// on sm_90; stride 2 and NCHW keep the mma.sync kernel.
TEST_F(CudaPlans, NhwcConvTakesHopperKernelOnSm90) {
    cudaDeviceProp prop{};
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    const bool sm90 = prop.major == 9 && prop.minor == 0;
    for (tops_dtype_t dt : {TOPS_DTYPE_F16, TOPS_DTYPE_BF16}) {
        for (int variant = 0; variant < 3; ++variant) {
            const bool nhwc = variant != 2;
            const int64_t stride = variant == 1 ? 2 : 1;
            const int64_t out = stride == 1 ? 28 : 14;
            const int64_t x_nhwc[4] = {2, 28, 28, 64}, w_krsc[4] = {128, 3, 3, 64}, y_nhwc[4] = {2, out, out, 128};
            const int64_t x_nchw[4] = {2, 64, 28, 28}, w_kcrs[4] = {128, 64, 3, 3}, y_nchw[4] = {2, 128, out, out};
            tops_conv2d_desc_t d =
                conv_desc(dt, nhwc, nhwc ? x_nhwc : x_nchw, nhwc ? w_krsc : w_kcrs, nhwc ? y_nhwc : y_nchw);
            d.stride_h = d.stride_w = stride;
            d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
            tops_op_t op = nullptr;
            TOPS_OK(tops_conv2d_create(ctx_, &d, &op));
            ops_.push_back(op);
            const std::string name = tops_op_kernel_name(op);
            const bool hopper = name.find("sm90_tma_wgmma") != std::string::npos;
            EXPECT_EQ(hopper, sm90 && variant == 0) << "dtype " << int(dt) << " variant " << variant << ": " << name;
        }
    }
}

// f32 convolutions take a tensor-core implicit GEMM as 3xTF32 (NCHW and
// the 3-channel stem through the repack): on sm_90 the wgmma kernel where
// groups are 1, stride 1 and K at least 64, else the mma.sync one; grouped
// convolutions whose channels per group are not whole 16-byte chunks keep
// the f32 FMA kernel.
TEST_F(CudaPlans, F32ConvTakesThreeTf32Kernel) {
    cudaDeviceProp prop{};
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    const bool sm90 = prop.major == 9 && prop.minor == 0;
    struct Case {
        int64_t c, k, groups, r;
        bool nhwc, tensor_cores;
    };
    const Case cases[] = {
        {64, 64, 1, 3, false, true}, {64, 64, 1, 3, true, true}, {3, 16, 1, 7, false, true},
        {16, 16, 2, 3, false, true}, {6, 6, 2, 3, false, false},
    };
    for (const Case& c : cases) {
        const int64_t x_nhwc[4] = {2, 14, 14, c.c}, w_krsc[4] = {c.k, c.r, c.r, c.c / c.groups},
                      y_nhwc[4] = {2, 14, 14, c.k};
        const int64_t x_nchw[4] = {2, c.c, 14, 14}, w_kcrs[4] = {c.k, c.c / c.groups, c.r, c.r},
                      y_nchw[4] = {2, c.k, 14, 14};
        tops_conv2d_desc_t d = conv_desc(TOPS_DTYPE_F32, c.nhwc, c.nhwc ? x_nhwc : x_nchw, c.nhwc ? w_krsc : w_kcrs,
                                         c.nhwc ? y_nhwc : y_nchw);
        d.groups = int32_t(c.groups);
        d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = int32_t(c.r / 2);
        tops_op_t op = nullptr;
        TOPS_OK(tops_conv2d_create(ctx_, &d, &op));
        ops_.push_back(op);
        const std::string name = tops_op_kernel_name(op);
        constexpr int64_t kHopperMinK = 64;
        const bool hopper = sm90 && c.groups == 1 && c.k >= kHopperMinK;
        const bool igemm = name.find("_igemm_nhwc_") != std::string::npos && name.find("_3xtf32") != std::string::npos;
        const bool wgmma = name.find("_sm90_tma_wgmma_3xtf32_") != std::string::npos;
        const std::string what = "c " + std::to_string(c.c) + " groups " + std::to_string(c.groups) + " r " +
                                 std::to_string(c.r) + ": " + name;
        EXPECT_EQ(igemm || wgmma, c.tensor_cores) << what;
        EXPECT_EQ(wgmma, c.tensor_cores && hopper) << what;
        if (!c.tensor_cores) {
            EXPECT_NE(name.find("_simt_"), std::string::npos) << name;
        } else {  // TOPS_CONV_ALLOW_TF32 turns the same plan into one TF32 product per term
            d.flags = TOPS_CONV_ALLOW_TF32;
            TOPS_OK(tops_conv2d_create(ctx_, &d, &op));
            ops_.push_back(op);
            const std::string tf32 = tops_op_kernel_name(op);
            EXPECT_NE(tf32.find(hopper ? "_sm90_tma_wgmma_tf32_" : "_mma1688_tf32"), std::string::npos) << tf32;
        }
    }
}

// Fewer f16 / bf16 channels than a 16-byte chunk, groups 1 and undilated
// columns take the window kernel: 4 channels per window pixel where the
// column stride is even and C <= 4, else 8; filter rows over 64 reduction
// columns, dilated columns, f32, whole chunks and TOPS_CONV_SMALLC=0 do not.
TEST_F(CudaPlans, SmallChannelConvTakesWindowKernel) {
    struct Case {
        tops_dtype_t dtype;
        int64_t c, r, s, stride, dil_w;
        const char* expect;  // the kernel name's window tag, or nullptr: not the window kernel
    };
    const Case cases[] = {
        {TOPS_DTYPE_F16, 3, 7, 7, 2, 1, "_smallc_window_c4_"},  {TOPS_DTYPE_BF16, 5, 3, 3, 1, 1, "_smallc_window_c8_"},
        {TOPS_DTYPE_F16, 3, 3, 3, 1, 1, "_smallc_window_c8_"},  {TOPS_DTYPE_BF16, 6, 3, 3, 2, 1, "_smallc_window_c8_"},
        {TOPS_DTYPE_F16, 1, 1, 16, 2, 1, "_smallc_window_c4_"}, {TOPS_DTYPE_F16, 1, 1, 17, 2, 1, nullptr},
        {TOPS_DTYPE_F16, 3, 3, 3, 1, 2, nullptr},               {TOPS_DTYPE_F16, 8, 3, 3, 1, 1, nullptr},
        {TOPS_DTYPE_F32, 3, 7, 7, 2, 1, nullptr},
    };
    for (const Case& c : cases) {
        const int64_t h = 20, w = 24, p = (h - c.r) / c.stride + 1, q = (w - c.dil_w * (c.s - 1) - 1) / c.stride + 1;
        const int64_t x_nhwc[4] = {2, h, w, c.c}, w_krsc[4] = {16, c.r, c.s, c.c}, y_nhwc[4] = {2, p, q, 16};
        tops_conv2d_desc_t d = conv_desc(c.dtype, true, x_nhwc, w_krsc, y_nhwc);
        d.stride_h = d.stride_w = int32_t(c.stride);
        d.dilation_w = int32_t(c.dil_w);
        const std::string name = conv_kernel(d);
        const std::string what = "c " + std::to_string(c.c) + " " + std::to_string(c.r) + "x" + std::to_string(c.s) +
                                 " stride " + std::to_string(c.stride) + ": " + name;
        if (c.expect) {
            EXPECT_NE(name.find(c.expect), std::string::npos) << what;
            const std::string off = conv_kernel(d, "TOPS_CONV_SMALLC", "0");
            EXPECT_EQ(off.find("_smallc_"), std::string::npos) << off;
        } else {
            EXPECT_EQ(name.find("_smallc_"), std::string::npos) << what;
        }
    }
}

// Tap folding (with the window kernel off): the f16 stem (3 channels, 7 taps
// per filter row) folds each row's taps into 21 channels; f32 folds only
// where it saves a quarter of the chunks (1 channel over 3 taps, not the
// 3-channel stem), and TOPS_CONV_FOLD_TAPS=0 turns it off.
TEST_F(CudaPlans, SmallChannelConvFoldsFilterTaps) {
    struct NoWindowKernel {
        NoWindowKernel() { setenv("TOPS_CONV_SMALLC", "0", 1); }
        ~NoWindowKernel() { unsetenv("TOPS_CONV_SMALLC"); }
    } no_window;
    struct Case {
        tops_dtype_t dtype;
        int64_t c, r;
        bool fold;
    };
    const Case cases[] = {
        {TOPS_DTYPE_F16, 3, 7, true}, {TOPS_DTYPE_BF16, 5, 3, true}, {TOPS_DTYPE_F32, 3, 7, false},
        {TOPS_DTYPE_F32, 1, 3, true}, {TOPS_DTYPE_F16, 16, 3, false},
    };
    for (const Case& c : cases) {
        const int64_t x_nhwc[4] = {2, 14, 14, c.c}, w_krsc[4] = {16, c.r, c.r, c.c}, y_nhwc[4] = {2, 14, 14, 16};
        tops_conv2d_desc_t d = conv_desc(c.dtype, true, x_nhwc, w_krsc, y_nhwc);
        d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = int32_t(c.r / 2);
        const std::string name = conv_kernel(d);
        EXPECT_EQ(name.find("_fold") != std::string::npos, c.fold) << "c " << c.c << " r " << c.r << ": " << name;
        if (c.fold) {
            const std::string plain = conv_kernel(d, "TOPS_CONV_FOLD_TAPS", "0");
            EXPECT_EQ(plain.find("_fold"), std::string::npos) << plain;
            EXPECT_NE(plain.find("_igemm_nhwc_"), std::string::npos) << plain;
        }
    }
}

// ResNet's 7x7 K512 layer has 64 tiles of 128 channels: on an sm_90 device
// each runs split-K on a cluster of two CTAs, A read from a halo of x
// (TOPS_CONV_SM90_HALO=0: A tiles in the stages); TOPS_CONV_SM90_SPLIT=0
// keeps the 128 tiles of 64 channels.
TEST_F(CudaPlans, FewWideConvTilesSplitOverClusters) {
    const int64_t x[4] = {32, 7, 7, 512}, w[4] = {512, 3, 3, 512}, y[4] = {32, 7, 7, 512};
    tops_conv2d_desc_t d = conv_desc(TOPS_DTYPE_F16, true, x, w, y);
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
    const std::string name = conv_kernel(d);
    if (name.find("_sm90_") == std::string::npos) GTEST_SKIP() << "not on the Hopper kernel: " << name;
    EXPECT_NE(name.find("_128x128x64_splitk2_cluster_halo"), std::string::npos) << name;
    const std::string stages = conv_kernel(d, "TOPS_CONV_SM90_HALO", "0");
    EXPECT_NE(stages.find("_128x128x64_splitk2_cluster"), std::string::npos) << stages;
    EXPECT_EQ(stages.find("halo"), std::string::npos) << stages;
    const std::string plain = conv_kernel(d, "TOPS_CONV_SM90_SPLIT", "0");
    EXPECT_NE(plain.find("_128x64x64"), std::string::npos) << plain;
    EXPECT_EQ(plain.find("splitk"), std::string::npos) << plain;
}

// A row bias or channel slope that every step of a thread shares (the grid a
// multiple of its period), or no bias at all, takes the hoisted, pipelined
// elementwise kernel; TOPS_ELTWISE_PIPELINE=0 keeps the general vector kernel,
// and an x that is not dense (a broadcast view) the one-element kernel. The
// periods (256 vectors) divide any grid of 256-thread blocks, so both shapes
// hoist on every GPU; on 132 SMs they take 2-3 grid steps, the last one
// ragged. Checked exactly: bias + ReLU and PReLU in f32 round once, as the
// host does.
TEST_F(CudaPlans, HoistedInputTakesPipelinedEltwiseKernel) {
    std::mt19937_64 rng(kSeed);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (const bool prelu : {false, true}) {
        // (rows, cols) with a [1, cols] bias; (N, C, H, W) with a [1, C, 1, 1] slope.
        const std::vector<int64_t> dims =
            prelu ? std::vector<int64_t>{4352, 16, 8, 8} : std::vector<int64_t>{6144, 1024};
        const std::vector<int64_t> pdims = prelu ? std::vector<int64_t>{1, 16, 1, 1} : std::vector<int64_t>{1, 1024};
        const int rank = int(dims.size());
        int64_t n = 1, inner = 1;
        for (int64_t d : dims) n *= d;
        for (int i = 2; i < rank; ++i) inner *= dims[size_t(i)];
        std::vector<float> x(static_cast<size_t>(n)), par(static_cast<size_t>(dims[1]));
        for (float& v : x) v = normal(rng);
        for (float& v : par) v = normal(rng);
        // Forms: 0 the pipelined kernel, 1 TOPS_ELTWISE_PIPELINE=0; bias + ReLU only: 2 x a
        // broadcast view of its first row (row stride 0): not dense, so the one-element kernel;
        // 3 no bias (ReLU alone): pipelined.
        // ref[r]: the expected y of a dense x (forms 0, 1), the broadcast view, no bias.
        constexpr int kBiasForms = 4, kPreluForms = 2;
        std::vector<float> ref[3];
        for (int r = 0; r < (prelu ? 1 : 3); ++r) {
            ref[r].resize(x.size());
            for (int64_t i = 0; i < n; ++i) {
                const float v = x[size_t(r == 1 ? i % dims[1] : i)];
                if (prelu) {
                    const float a = par[size_t(i / inner % dims[1])];
                    ref[r][size_t(i)] = v > 0.0f ? v : a * v;
                } else {
                    ref[r][size_t(i)] = std::max(r == 2 ? v : v + par[size_t(i % dims[1])], 0.0f);
                }
            }
        }
        DeviceBuffer dx, dp, dy;
        CUDA_OK(cudaMalloc(&dx.ptr, x.size() * sizeof(float)));
        CUDA_OK(cudaMalloc(&dp.ptr, par.size() * sizeof(float)));
        CUDA_OK(cudaMalloc(&dy.ptr, x.size() * sizeof(float)));
        CUDA_OK(cudaMemcpy(dx.ptr, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemcpy(dp.ptr, par.data(), par.size() * sizeof(float), cudaMemcpyHostToDevice));
        const int64_t x_bcast_strides[2] = {0, 1};
        for (int form = 0; form < (prelu ? kPreluForms : kBiasForms); ++form) {
            if (form == 1) setenv("TOPS_ELTWISE_PIPELINE", "0", 1);
            tops_op_t op = nullptr;
            tops_status_t st;
            if (prelu) {
                tops_prelu_desc_t d = tops_prelu_desc_default();
                TOPS_OK(tops_tensor_desc_init(&d.x, TOPS_DTYPE_F32, rank, dims.data(), nullptr));
                TOPS_OK(tops_tensor_desc_init(&d.slope, TOPS_DTYPE_F32, rank, pdims.data(), nullptr));
                d.y = d.x;
                st = tops_prelu_create(ctx_, &d, &op);
            } else {
                tops_bias_act_desc_t d = tops_bias_act_desc_default();
                TOPS_OK(tops_tensor_desc_init(&d.y, TOPS_DTYPE_F32, rank, dims.data(), nullptr));
                TOPS_OK(tops_tensor_desc_init(&d.x, TOPS_DTYPE_F32, rank, dims.data(),
                                              form == 2 ? x_bcast_strides : nullptr));
                if (form != 3) {
                    TOPS_OK(tops_tensor_desc_init(&d.bias, TOPS_DTYPE_F32, rank, pdims.data(), nullptr));
                }
                d.act = TOPS_ACT_RELU;
                st = tops_bias_act_create(ctx_, &d, &op);
            }
            unsetenv("TOPS_ELTWISE_PIPELINE");
            TOPS_OK(st);
            ops_.push_back(op);
            const std::string name = tops_op_kernel_name(op);
            EXPECT_EQ(name.find("_dense_hoisted_v4_") != std::string::npos, form == 0 || form == 3) << name;
            if (form == 2) {
                EXPECT_NE(name.find("_dense_v1_"), std::string::npos) << name;
            }
            CUDA_OK(cudaMemset(dy.ptr, 0xff, x.size() * sizeof(float)));  // NaN
            CUDA_OK(cudaDeviceSynchronize());
            const tops_arg_t args[] = {{TOPS_ARG_X, dx.ptr}, {TOPS_ARG_Y, dy.ptr},
                                       {prelu ? TOPS_ARG_SLOPE : TOPS_ARG_BIAS, dp.ptr}};
            TOPS_OK(tops_op_execute(ctx_, op, args, form == 3 ? 2 : 3, nullptr, 0));
            CUDA_OK(cudaDeviceSynchronize());
            std::vector<float> y(x.size());
            CUDA_OK(cudaMemcpy(y.data(), dy.ptr, y.size() * sizeof(float), cudaMemcpyDeviceToHost));
            int64_t bad = 0;
            const std::vector<float>& want = ref[form >= 2 ? form - 1 : 0];
            for (size_t i = 0; i < y.size(); ++i) bad += y[i] != want[i];
            EXPECT_EQ(bad, 0) << name << ": " << bad << " of " << n << " elements differ";
        }
    }
}

// Weighted sums of 2-4 inputs that all load by 16-byte vectors take the
// pipelined kernel (one per input count); 5 inputs, an input that needs
// per-element index math, and TOPS_ELTWISE_PIPELINE=0 keep the general one.
TEST_F(CudaPlans, WeightedSumsOfTwoToFourInputsTakePipelinedKernel) {
    const int64_t dims[2] = {64, 1024}, gathered[2] = {64, 1024}, gathered_strides[2] = {1027, 1};
    for (int n = 2; n <= 5; ++n) {
        for (int variant = 0; variant < 3; ++variant) {
            // 0: dense inputs; 1: the last input padded (strided rows: per-element index math);
            // 2: dense, TOPS_ELTWISE_PIPELINE=0.
            tops_weighted_sum_desc_t d = tops_weighted_sum_desc_default();
            d.num_inputs = n;
            TOPS_OK(tops_tensor_desc_init(&d.y, TOPS_DTYPE_F16, 2, dims, nullptr));
            for (int i = 0; i < n; ++i) {
                d.inputs[i] = d.y;
                d.coefs[i] = 1.0f;
            }
            if (variant == 1) {
                TOPS_OK(tops_tensor_desc_init(&d.inputs[n - 1], TOPS_DTYPE_F16, 2, gathered, gathered_strides));
            }
            if (variant == 2) setenv("TOPS_ELTWISE_PIPELINE", "0", 1);
            tops_op_t op = nullptr;
            const tops_status_t st = tops_weighted_sum_create(ctx_, &d, &op);
            unsetenv("TOPS_ELTWISE_PIPELINE");
            TOPS_OK(st);
            ops_.push_back(op);
            const std::string name = tops_op_kernel_name(op);
            const bool pipelined = n <= 4 && variant == 0;
            EXPECT_EQ(name.find("_pipelined_") != std::string::npos, pipelined)
                << n << " inputs, variant " << variant << ": " << name;
            if (pipelined) {
                EXPECT_NE(name.find("weighted_sum" + std::to_string(n) + "_f16"), std::string::npos) << name;
            }
        }
    }
}

#endif

}  // namespace
