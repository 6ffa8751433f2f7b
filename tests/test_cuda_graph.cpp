// CUDA graph capture: a masked softmax followed by a transpose of its output
// are executed on a user stream while the stream is captured (global capture
// mode, so any synchronizing or allocating call inside execute would fail the
// capture), then the graph is replayed on fresh inputs and checked against an
// fp64 reference. Proves execute neither synchronizes nor allocates.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tops/tops.h"

#if defined(TOPS_TEST_WITH_CUDA)
#include <cuda_runtime.h>
#endif

namespace {

#if !defined(TOPS_TEST_WITH_CUDA)

TEST(CudaGraph, CaptureSoftmaxThenTranspose) {
    GTEST_SKIP() << "built without the CUDA runtime (TOPS_HAVE_CUDA is OFF)";
}

#else

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr << ": " << cudaGetErrorString(expr)
#define TOPS_OK(expr) ASSERT_EQ((expr), TOPS_SUCCESS) << #expr << ": " << tops_last_error()

// (batch, heads, n) softmax over the last dim with a (batch, 1, n) key mask and
// scale, then (batch, heads, n) -> (n, batch, heads) transpose of the result.
constexpr int64_t kBatch = 6;
constexpr int64_t kHeads = 5;
constexpr int64_t kN = 333;  // not a multiple of any vector width
constexpr float kScale = 0.37f;

struct DeviceBuffer {
    void* ptr = nullptr;
    ~DeviceBuffer() { cudaFree(ptr); }
};

void reference(const std::vector<float>& x, const std::vector<uint8_t>& mask, std::vector<double>* soft,
               std::vector<double>* trans) {
    soft->assign(x.size(), 0.0);
    trans->assign(x.size(), 0.0);
    for (int64_t b = 0; b < kBatch; ++b) {
        for (int64_t h = 0; h < kHeads; ++h) {
            const int64_t row = (b * kHeads + h) * kN;
            double m = -INFINITY;
            for (int64_t j = 0; j < kN; ++j) {
                if (mask[b * kN + j]) m = std::max(m, double(kScale) * x[row + j]);
            }
            double s = 0.0;
            for (int64_t j = 0; j < kN; ++j) {
                if (mask[b * kN + j]) s += std::exp(double(kScale) * x[row + j] - m);
            }
            for (int64_t j = 0; j < kN; ++j) {
                const double v = mask[b * kN + j] ? std::exp(double(kScale) * x[row + j] - m) / s : 0.0;
                (*soft)[row + j] = v;
                (*trans)[(j * kBatch + b) * kHeads + h] = v;
            }
        }
    }
}

double rel_error(const std::vector<float>& got, const std::vector<double>& ref) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double d = double(got[i]) - ref[i];
        if (std::isnan(got[i])) return INFINITY;
        num += d * d;
        den += ref[i] * ref[i];
    }
    return std::sqrt(num / den);
}

TEST(CudaGraph, CaptureSoftmaxThenTranspose) {
    const char* why = nullptr;
    if (!tops_backend_available(TOPS_BACKEND_CUDA, &why)) GTEST_SKIP() << "cuda backend unavailable: " << why;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device for the harness";

    const int64_t numel = kBatch * kHeads * kN;
    const size_t bytes = size_t(numel) * sizeof(float);
    DeviceBuffer dx, dsoft, dtrans, dmask;
    CUDA_OK(cudaMalloc(&dx.ptr, bytes));
    CUDA_OK(cudaMalloc(&dsoft.ptr, bytes));
    CUDA_OK(cudaMalloc(&dtrans.ptr, bytes));
    CUDA_OK(cudaMalloc(&dmask.ptr, size_t(kBatch * kN)));
    cudaStream_t stream = nullptr;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    tops_context_t ctx = nullptr;
    TOPS_OK(tops_context_create(TOPS_BACKEND_CUDA, 0, &ctx));
    TOPS_OK(tops_context_set_stream(ctx, stream));

    const int64_t dims[3] = {kBatch, kHeads, kN};
    const int64_t mdims[3] = {kBatch, 1, kN};
    tops_softmax_desc_t sd = tops_softmax_desc_default();
    TOPS_OK(tops_tensor_desc_init(&sd.x, TOPS_DTYPE_F32, 3, dims, nullptr));
    sd.y = sd.x;
    TOPS_OK(tops_tensor_desc_init(&sd.mask, TOPS_DTYPE_U8, 3, mdims, nullptr));
    sd.scale = kScale;
    tops_op_t softmax = nullptr;
    TOPS_OK(tops_softmax_create(ctx, &sd, &softmax));

    const int64_t tdims[3] = {kN, kBatch, kHeads};
    tops_transpose_desc_t td = tops_transpose_desc_default();
    TOPS_OK(tops_tensor_desc_init(&td.x, TOPS_DTYPE_F32, 3, dims, nullptr));
    TOPS_OK(tops_tensor_desc_init(&td.y, TOPS_DTYPE_F32, 3, tdims, nullptr));
    td.perm[0] = 2;
    td.perm[1] = 0;
    td.perm[2] = 1;
    tops_op_t transpose = nullptr;
    TOPS_OK(tops_transpose_create(ctx, &td, &transpose));

    const tops_arg_t sargs[] = {{TOPS_ARG_X, dx.ptr}, {TOPS_ARG_Y, dsoft.ptr}, {TOPS_ARG_MASK, dmask.ptr}};
    const tops_arg_t targs[] = {{TOPS_ARG_X, dsoft.ptr}, {TOPS_ARG_Y, dtrans.ptr}};

    cudaGraph_t graph = nullptr;
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const tops_status_t s1 = tops_op_execute(ctx, softmax, sargs, 3, nullptr, 0);
    const std::string e1 = tops_last_error();
    const tops_status_t s2 = tops_op_execute(ctx, transpose, targs, 2, nullptr, 0);
    const std::string e2 = tops_last_error();
    const cudaError_t end = cudaStreamEndCapture(stream, &graph);
    ASSERT_EQ(s1, TOPS_SUCCESS) << "softmax during capture: " << e1;
    ASSERT_EQ(s2, TOPS_SUCCESS) << "transpose during capture: " << e2;
    ASSERT_EQ(end, cudaSuccess) << "capture broken: " << cudaGetErrorString(end);
    size_t nodes = 0;
    CUDA_OK(cudaGraphGetNodes(graph, nullptr, &nodes));
    EXPECT_EQ(nodes, 2u) << "one kernel node per op";
    cudaGraphExec_t exec = nullptr;
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));

    std::mt19937_64 rng(0x5eed0c0da);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::bernoulli_distribution keep(0.7);
    for (int replay = 0; replay < 3; ++replay) {
        std::vector<float> x(static_cast<size_t>(numel));
        for (float& v : x) v = normal(rng);
        std::vector<uint8_t> mask(static_cast<size_t>(kBatch * kN));
        for (uint8_t& m : mask) m = keep(rng) ? 1 : 0;
        if (replay == 2) std::fill(mask.begin(), mask.begin() + kN, uint8_t(0));  // batch 0 fully masked
        CUDA_OK(cudaMemcpyAsync(dx.ptr, x.data(), bytes, cudaMemcpyHostToDevice, stream));
        CUDA_OK(cudaMemcpyAsync(dmask.ptr, mask.data(), mask.size(), cudaMemcpyHostToDevice, stream));
        CUDA_OK(cudaMemsetAsync(dsoft.ptr, 0xff, bytes, stream));  // NaN poison
        CUDA_OK(cudaMemsetAsync(dtrans.ptr, 0xff, bytes, stream));
        CUDA_OK(cudaGraphLaunch(exec, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        std::vector<float> soft(static_cast<size_t>(numel)), trans(static_cast<size_t>(numel));
        CUDA_OK(cudaMemcpy(soft.data(), dsoft.ptr, bytes, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(trans.data(), dtrans.ptr, bytes, cudaMemcpyDeviceToHost));
        std::vector<double> rsoft, rtrans;
        reference(x, mask, &rsoft, &rtrans);
        EXPECT_LT(rel_error(soft, rsoft), 1e-5) << "softmax, replay " << replay;
        // The transpose must move the softmax output bit for bit.
        for (int64_t j = 0; j < kN; ++j) {
            for (int64_t b = 0; b < kBatch; ++b) {
                for (int64_t h = 0; h < kHeads; ++h) {
                    const float a = trans[size_t((j * kBatch + b) * kHeads + h)];
                    const float e = soft[size_t((b * kHeads + h) * kN + j)];
                    ASSERT_EQ(std::memcmp(&a, &e, sizeof a), 0) << "transpose at (" << j << "," << b << "," << h
                                                                << "), replay " << replay;
                }
            }
        }
        if (replay == 2) {
            for (int64_t i = 0; i < kHeads * kN; ++i) ASSERT_EQ(soft[size_t(i)], 0.0f) << "fully masked row";
        }
    }

    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    tops_op_destroy(transpose);
    tops_op_destroy(softmax);
    tops_context_destroy(ctx);
    cudaStreamDestroy(stream);
}

#endif

}  // namespace
