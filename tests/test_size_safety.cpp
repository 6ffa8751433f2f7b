// Size safety, for every op (conv2d and unpad/pad included) on every backend:
//  - element counts, largest element offsets and byte extents are computed
//    in checked int64 arithmetic: a descriptor where one overflows is refused
//    at create with a status and a message, never wrapped;
//  - a descriptor far larger than memory but within int64 creates an op;
//  - on a GPU host with enough memory, CUDA softmax and transpose over more
//    than 2^31 f16 elements (byte offsets past 4 GiB) write the right values
//    in the rows after the 2^31st element.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "harness.hpp"

#ifdef TOPS_TEST_WITH_CUDA
#include <cuda_runtime.h>
#endif

using namespace tops_test;

namespace {

tops_dtype_t float_dtype(tops_backend_t backend) {
    return backend == TOPS_BACKEND_CUDA ? TOPS_DTYPE_F16 : TOPS_DTYPE_F32;
}

// Each test gets a context on its backend (skipped where that backend is
// unavailable) and the float dtype it tests there.
class SizeSafetyTest : public ::testing::TestWithParam<tops_backend_t> {
protected:
    void SetUp() override {
        TOPS_SKIP_UNLESS_READY(backend);
        ASSERT_EQ(tops_context_create(backend, 0, &ctx.ctx), TOPS_SUCCESS) << tops_last_error();
    }
    const tops_backend_t backend = GetParam();
    const tops_dtype_t dt = float_dtype(backend);
    ContextHandle ctx;
};

// Every op's create refuses `bad` (as x, y and every other main tensor) with
// `want` and a message, and leaves *op NULL.
// `also` is a second accepted status (the rank-4 attention variant of a
// descriptor may overflow at another step of the check).
void expect_every_op_rejects(tops_context_t ctx, const tops_tensor_desc_t& bad, tops_status_t want,
                             tops_status_t also = TOPS_SUCCESS) {
    auto expect_rejected = [want, also](tops_status_t s, tops_op_t op, const char* what) {
        EXPECT_TRUE(s == want || (also != TOPS_SUCCESS && s == also))
            << what << ": " << tops_status_string(s) << ": " << tops_last_error();
        EXPECT_NE(tops_last_error()[0], '\0') << what << ": no message";
        EXPECT_EQ(op, nullptr) << what;
        tops_op_destroy(op);
    };
    tops_op_t op = nullptr;
    {
        tops_softmax_desc_t d = tops_softmax_desc_default();
        d.x = d.y = bad;
        op = nullptr;
        expect_rejected(tops_softmax_create(ctx, &d, &op), op, "softmax");
    }
    {
        tops_transpose_desc_t d = tops_transpose_desc_default();
        d.x = d.y = bad;
        op = nullptr;
        expect_rejected(tops_transpose_create(ctx, &d, &op), op, "transpose");
    }
    {
        tops_reduce_desc_t d = tops_reduce_desc_default();
        d.x = bad;
        d.y = bad;
        d.y.rank = bad.rank - 1;
        for (int i = 0; i < d.y.rank; ++i) {
            d.y.dims[i] = bad.dims[i + 1];
            d.y.strides[i] = bad.strides[i + 1];
        }
        d.axes = 1u;
        op = nullptr;
        expect_rejected(tops_reduce_create(ctx, &d, &op), op, "reduce");
    }
    {
        tops_norm_desc_t d = tops_norm_desc_default();
        d.x = d.y = bad;
        op = nullptr;
        expect_rejected(tops_norm_create(ctx, &d, &op), op, "norm");
    }
    {
        tops_bias_act_desc_t d = tops_bias_act_desc_default();
        d.x = d.y = bad;
        op = nullptr;
        expect_rejected(tops_bias_act_create(ctx, &d, &op), op, "bias_act");
    }
    {
        tops_prelu_desc_t d = tops_prelu_desc_default();
        d.x = d.y = d.slope = bad;
        op = nullptr;
        expect_rejected(tops_prelu_create(ctx, &d, &op), op, "prelu");
    }
    {
        tops_weighted_sum_desc_t d = tops_weighted_sum_desc_default();
        d.num_inputs = 1;
        d.inputs[0] = d.y = bad;
        op = nullptr;
        expect_rejected(tops_weighted_sum_create(ctx, &d, &op), op, "weighted_sum");
    }
    {
        tops_gemm_desc_t d = tops_gemm_desc_default();
        d.a = d.b = d.d = bad;
        op = nullptr;
        expect_rejected(tops_gemm_create(ctx, &d, &op), op, "gemm");
    }
    {
        tops_attention_desc_t d = tops_attention_desc_default();
        tops_tensor_desc_t t = bad;
        t.rank = 4;
        t.dims[2] = 1;
        t.dims[3] = 64;
        t.strides[2] = t.strides[3] = 1;
        d.q = d.k = d.v = d.o = t;
        op = nullptr;
        expect_rejected(tops_attention_create(ctx, &d, &op), op, "attention");
    }
    {
        tops_conv2d_desc_t d = tops_conv2d_desc_default();
        tops_tensor_desc_t t = bad;  // [N, C, H, W] with bad's dims as N and C
        t.rank = 4;
        t.dims[2] = t.dims[3] = 3;
        t.strides[2] = t.strides[3] = 1;
        d.x = d.y = t;
        d.w = t;
        op = nullptr;
        expect_rejected(tops_conv2d_create(ctx, &d, &op), op, "conv2d");
    }
    {
        tops_pad_desc_t d = tops_pad_desc_default();
        d.padded = d.packed = bad;
        d.cu_seqlens = bad;
        d.cu_seqlens.dtype = TOPS_DTYPE_I32;
        op = nullptr;
        expect_rejected(tops_pad_create(ctx, &d, &op), op, "pad");
        d.lengths = d.cu_seqlens;
        op = nullptr;
        expect_rejected(tops_unpad_create(ctx, &d, &op), op, "unpad");
    }
}

tops_tensor_desc_t rank2(tops_dtype_t dt, int64_t d0, int64_t d1, int64_t s0, int64_t s1) {
    tops_tensor_desc_t t{};
    t.dtype = dt;
    t.rank = 2;
    t.dims[0] = d0;
    t.dims[1] = d1;
    t.strides[0] = s0;
    t.strides[1] = s1;
    return t;
}

// Sizes are computed in checked int64 arithmetic: an element count, a largest
// element offset or a byte extent that does not fit is refused, never wrapped.
TEST_P(SizeSafetyTest, SizeOverflowIsRejected) {
    const int64_t big = int64_t{1} << 33, max64 = std::numeric_limits<int64_t>::max();
    {
        SCOPED_TRACE("element count 2^33 * 2^33");
        expect_every_op_rejects(ctx.ctx, rank2(dt, big, big, 1, 1), TOPS_ERROR_BAD_SHAPE);
        tops_tensor_desc_t tmp;
        const int64_t dims[] = {big, big};
        EXPECT_EQ(tops_tensor_desc_init(&tmp, dt, 2, dims, nullptr), TOPS_ERROR_BAD_SHAPE);
    }
    {
        SCOPED_TRACE("largest offset 2^62 + 2^62");
        const int64_t s = int64_t{1} << 62;
        expect_every_op_rejects(ctx.ctx, rank2(dt, 2, 2, s, s), TOPS_ERROR_BAD_STRIDE);
    }
    {
        SCOPED_TRACE("empty tensor whose dim * stride overflows (2^40 * 2^40)");
        const int64_t s = int64_t{1} << 40;
        expect_every_op_rejects(ctx.ctx, rank2(dt, 0, s, 1, s), TOPS_ERROR_BAD_STRIDE);
    }
    {
        SCOPED_TRACE("largest offset INT64_MAX (extent INT64_MAX + 1)");
        expect_every_op_rejects(ctx.ctx, rank2(dt, 2, 1, max64, 1), TOPS_ERROR_BAD_SHAPE, TOPS_ERROR_BAD_STRIDE);
    }
    {
        SCOPED_TRACE("byte extent 2^62 elements * element size");
        const int64_t n = int64_t{1} << 62;
        expect_every_op_rejects(ctx.ctx, rank2(dt, 1, n, 1, 1), TOPS_ERROR_BAD_SHAPE);
        tops_tensor_desc_t tmp;
        const int64_t dims[] = {n};
        EXPECT_EQ(tops_tensor_desc_init(&tmp, dt, 1, dims, nullptr), TOPS_ERROR_BAD_SHAPE);
    }
    {
        SCOPED_TRACE("dense strides of 2^40 * 2^40 elements");
        const int64_t dims[] = {int64_t{1} << 40, int64_t{1} << 40};
        tops_tensor_desc_t tmp;
        EXPECT_EQ(tops_tensor_desc_init(&tmp, dt, 2, dims, nullptr), TOPS_ERROR_BAD_SHAPE);
    }
}

// A descriptor far larger than memory but within int64 is a valid request:
// create needs no memory for it and answers success (or a documented
// NOT_SUPPORTED), and the workspace size query does not overflow.
TEST_P(SizeSafetyTest, HugeValidDescriptorCreatesWithoutOverflow) {
    const int64_t rows = int64_t{1} << 24, cols = int64_t{1} << 24;  // 2^48 elements
    tops_softmax_desc_t d = tops_softmax_desc_default();
    d.x = d.y = rank2(dt, rows, cols, cols, 1);
    OpHandle op;
    const tops_status_t s = tops_softmax_create(ctx.ctx, &d, &op.op);
    if (s == TOPS_ERROR_NOT_SUPPORTED) GTEST_SKIP() << "softmax of 2^48 elements: " << tops_last_error();
    ASSERT_EQ(s, TOPS_SUCCESS) << status_text(s);
    size_t ws = 0;
    ASSERT_EQ(tops_op_workspace_size(op.op, &ws), TOPS_SUCCESS) << tops_last_error();
    EXPECT_LT(ws, size_t{1} << 40) << "workspace of a softmax";
}

// conv2d with no output channels whose N * P * Q passes int64 (x is empty
// too: its width 0, padded by 1 on each side, gives 2 output columns): an
// empty request that every backend plans as a no-op and runs without
// touching memory (buffers of a few bytes stand in for x, w and y).
TEST_P(SizeSafetyTest, EmptyConv2dWithHugeDimsRuns) {
    const int64_t n = int64_t{1} << 32, h = int64_t{1} << 30, out_w = 2;  // x: N * C * H = 2^62
    tops_conv2d_desc_t d = tops_conv2d_desc_default();
    d.pad_left = d.pad_right = 1;
    d.x = tensor_desc(dt, {n, 1, h, 0}, {1, 1, 1, 1});       // NCHW [N, C, H, W]
    d.w = tensor_desc(dt, {0, 1, 1, 1}, {1, 1, 1, 1});       // KCRS [K, C, R, S]
    d.y = tensor_desc(dt, {n, 0, h, out_w}, {1, 1, 1, 1});   // [N, K, P, Q]: N * P * Q = 2^63
    OpHandle op;
    ASSERT_EQ(tops_conv2d_create(ctx.ctx, &d, &op.op), TOPS_SUCCESS) << tops_last_error();
    size_t ws = 0;
    ASSERT_EQ(tops_op_workspace_size(op.op, &ws), TOPS_SUCCESS) << tops_last_error();
    EXPECT_EQ(ws, 0u);
    constexpr size_t kStandIn = 16;
    Buffer x(backend, kStandIn), w(backend, kStandIn), y(backend, kStandIn);
    const std::vector<uint8_t> poison(kStandIn, 0xa5);
    for (Buffer* b : {&x, &w, &y}) b->upload(poison);
    const tops_arg_t args[] = {{TOPS_ARG_X, x.ptr()}, {TOPS_ARG_W, w.ptr()}, {TOPS_ARG_Y, y.ptr()}};
    ASSERT_EQ(tops_op_execute(ctx.ctx, op.op, args, 3, nullptr, 0), TOPS_SUCCESS) << tops_last_error();
    ASSERT_TRUE(sync_backend(backend));
    for (Buffer* b : {&x, &w, &y}) {
        EXPECT_EQ(b->download(), poison);
        EXPECT_EQ(b->error(), "");
    }
}

INSTANTIATE_TEST_SUITE_P(Size, SizeSafetyTest, ::testing::ValuesIn(all_backends()),
                         [](const ::testing::TestParamInfo<tops_backend_t>& info) {
                             return std::string(tops_backend_name(info.param));
                         });

// ------------------------------------------------------------------ over 2^31 elements (CUDA)

#ifdef TOPS_TEST_WITH_CUDA

constexpr int64_t kRowLen = 1024;
constexpr int64_t kRows = (int64_t{1} << 21) + 3;  // 2^31 + 3072 elements
constexpr size_t kSlack = size_t{512} << 20;       // left free for the context and kernels

// Rows holding a pattern (the others are 0): the first, the rows on either
// side of element 2^31, the last.
const int64_t kPatternRows[] = {0, (int64_t{1} << 21) - 1, int64_t{1} << 21, kRows - 1};

double pattern(int64_t row, int64_t j) { return 0.25 * double((j * 7 + row) % 16) - 2.0; }

std::vector<uint16_t> f16_row(int64_t row) {
    std::vector<uint16_t> h(size_t(kRowLen), 0);
    for (int64_t j = 0; j < kRowLen; ++j) h[size_t(j)] = uint16_t(to_bits(TOPS_DTYPE_F16, pattern(row, j)));
    return h;
}

double f16_value(uint16_t bits) { return from_bits(TOPS_DTYPE_F16, bits); }

// Device buffers of the test, freed on every exit path.
struct DeviceBuffers {
    void* x = nullptr;
    void* y = nullptr;
    void* ws = nullptr;
    ~DeviceBuffers() {
        cudaFree(x);
        cudaFree(y);
        cudaFree(ws);
    }
};

::testing::AssertionResult cuda_ok(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << what << ": " << cudaGetErrorString(e);
}

::testing::AssertionResult run_cuda(tops_context_t ctx, tops_op_t op, const void* x, void* y, DeviceBuffers& b) {
    size_t ws = 0;
    if (tops_op_workspace_size(op, &ws) != TOPS_SUCCESS) return ::testing::AssertionFailure() << tops_last_error();
    cudaFree(b.ws);
    b.ws = nullptr;
    if (ws > 0) {
        ::testing::AssertionResult r = cuda_ok(cudaMalloc(&b.ws, ws), "workspace");
        if (!r) return r;
    }
    const tops_arg_t args[] = {{TOPS_ARG_X, x}, {TOPS_ARG_Y, y}};
    const tops_status_t s = tops_op_execute(ctx, op, args, 2, b.ws, ws);
    if (s != TOPS_SUCCESS) return ::testing::AssertionFailure() << status_text(s);
    return cuda_ok(cudaDeviceSynchronize(), "execute");
}

TEST(SizeSafety, CudaOver2Pow31Elements) {
    std::string why;
    if (!backend_ready(TOPS_BACKEND_CUDA, &why)) GTEST_SKIP() << "no usable CUDA device: " << why;
    const size_t bytes = size_t(kRows * kRowLen) * sizeof(uint16_t);
    size_t free_bytes = 0, total_bytes = 0;
    ASSERT_TRUE(cuda_ok(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
    if (free_bytes < 2 * bytes + kSlack) {
        GTEST_SKIP() << "needs " << ((2 * bytes + kSlack) >> 20) << " MiB of free GPU memory, "
                     << (free_bytes >> 20) << " MiB free";
    }
    DeviceBuffers b;
    ASSERT_TRUE(cuda_ok(cudaMalloc(&b.x, bytes), "x"));
    ASSERT_TRUE(cuda_ok(cudaMalloc(&b.y, bytes), "y"));
    auto* x = static_cast<uint16_t*>(b.x);
    auto* y = static_cast<uint16_t*>(b.y);
    ASSERT_TRUE(cuda_ok(cudaMemset(x, 0, bytes), "memset x"));
    for (int64_t r : kPatternRows) {
        const std::vector<uint16_t> h = f16_row(r);
        ASSERT_TRUE(cuda_ok(cudaMemcpy(x + r * kRowLen, h.data(), h.size() * 2, cudaMemcpyHostToDevice), "row"));
    }
    ContextHandle ctx;
    ASSERT_EQ(tops_context_create(TOPS_BACKEND_CUDA, 0, &ctx.ctx), TOPS_SUCCESS) << tops_last_error();
    const int64_t dims[] = {kRows, kRowLen}, tdims[] = {kRowLen, kRows};
    tops_tensor_desc_t xd, td;
    ASSERT_EQ(tops_tensor_desc_init(&xd, TOPS_DTYPE_F16, 2, dims, nullptr), TOPS_SUCCESS) << tops_last_error();
    ASSERT_EQ(tops_tensor_desc_init(&td, TOPS_DTYPE_F16, 2, tdims, nullptr), TOPS_SUCCESS) << tops_last_error();

    {
        SCOPED_TRACE("softmax over rows of 1024, 2^31 + 3072 elements");
        ASSERT_TRUE(cuda_ok(cudaMemset(y, 0xff, bytes), "poison y"));  // f16 NaN
        tops_softmax_desc_t d = tops_softmax_desc_default();
        d.x = d.y = xd;
        OpHandle op;
        ASSERT_EQ(tops_softmax_create(ctx.ctx, &d, &op.op), TOPS_SUCCESS) << tops_last_error();
        ASSERT_TRUE(run_cuda(ctx.ctx, op.op, x, y, b));
        std::vector<uint16_t> h(static_cast<size_t>(kRowLen));
        for (int64_t r : {int64_t{0}, int64_t{1}, (int64_t{1} << 21) - 1, int64_t{1} << 21, (int64_t{1} << 21) + 1,
                          kRows - 2, kRows - 1}) {
            ASSERT_TRUE(cuda_ok(cudaMemcpy(h.data(), y + r * kRowLen, h.size() * 2, cudaMemcpyDeviceToHost), "y row"));
            const bool has_pattern = std::count(std::begin(kPatternRows), std::end(kPatternRows), r) > 0;
            std::vector<double> out(h.size()), ref(h.size());
            double mx = -INFINITY, sum = 0.0;
            for (int64_t j = 0; j < kRowLen; ++j) mx = std::max(mx, has_pattern ? pattern(r, j) : 0.0);
            for (int64_t j = 0; j < kRowLen; ++j) sum += std::exp((has_pattern ? pattern(r, j) : 0.0) - mx);
            for (int64_t j = 0; j < kRowLen; ++j) {
                out[size_t(j)] = f16_value(h[size_t(j)]);
                ref[size_t(j)] = std::exp((has_pattern ? pattern(r, j) : 0.0) - mx) / sum;
            }
            EXPECT_TRUE(compare_values(out, ref, tolerance(TOPS_DTYPE_F16), {kRowLen}, "softmax row"))
                << "row " << r;
        }
    }
    {
        SCOPED_TRACE("transpose [2^21 + 3, 1024] -> [1024, 2^21 + 3]");
        ASSERT_TRUE(cuda_ok(cudaMemset(y, 0xff, bytes), "poison y"));
        tops_transpose_desc_t d = tops_transpose_desc_default();
        d.x = xd;
        d.y = td;
        d.perm[0] = 1;
        d.perm[1] = 0;
        OpHandle op;
        ASSERT_EQ(tops_transpose_create(ctx.ctx, &d, &op.op), TOPS_SUCCESS) << tops_last_error();
        ASSERT_TRUE(run_cuda(ctx.ctx, op.op, x, y, b));
        // Column r of y is row r of x.
        std::vector<uint16_t> col(static_cast<size_t>(kRowLen));
        for (int64_t r : {int64_t{0}, int64_t{1}, (int64_t{1} << 21) - 1, int64_t{1} << 21, kRows - 2, kRows - 1}) {
            ASSERT_TRUE(cuda_ok(cudaMemcpy2D(col.data(), 2, y + r, size_t(kRows) * 2, 2, size_t(kRowLen),
                                             cudaMemcpyDeviceToHost), "y column"));
            const bool has_pattern = std::count(std::begin(kPatternRows), std::end(kPatternRows), r) > 0;
            for (int64_t j = 0; j < kRowLen; ++j) {
                const double want = has_pattern ? pattern(r, j) : 0.0;
                ASSERT_EQ(f16_value(col[size_t(j)]), want) << "y[" << j << ", " << r << "]";
            }
        }
        // The last row of y ends at byte 2 * (2^31 + 3072) - 2.
        std::vector<uint16_t> last(static_cast<size_t>(kRows % 4096 + 4096));
        const int64_t tail_begin = kRowLen * kRows - int64_t(last.size());
        ASSERT_TRUE(cuda_ok(cudaMemcpy(last.data(), y + tail_begin, last.size() * 2, cudaMemcpyDeviceToHost), "tail"));
        for (size_t i = 0; i < last.size(); ++i) {
            const int64_t e = tail_begin + int64_t(i), j = e / kRows, r = e % kRows;
            const bool has_pattern = std::count(std::begin(kPatternRows), std::end(kPatternRows), r) > 0;
            ASSERT_EQ(f16_value(last[i]), has_pattern ? pattern(r, j) : 0.0) << "y[" << j << ", " << r << "]";
        }
    }
}

#else

TEST(SizeSafety, CudaOver2Pow31Elements) {
    GTEST_SKIP() << "built without the CUDA toolkit: the tensor over 2^31 elements runs on a GPU host only";
}

#endif

}  // namespace
