// CUDA graph capture of unpad -> pad: both ops are executed on a user stream
// under global-mode capture (a synchronizing or allocating call inside
// execute fails the capture), then the graph is replayed with new lengths
// written into the same device buffer. The packed offsets are scanned on the
// device, so each replay must follow its own lengths without re-capture: the
// round trip gives back the valid rows bit for bit and zeros elsewhere, and
// cu_seqlens matches the lengths of that replay.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tops/tops.h"

#if defined(TOPS_TEST_WITH_CUDA)
#include <cuda_runtime.h>
#endif

namespace {

#if !defined(TOPS_TEST_WITH_CUDA)

TEST(CudaGraph, CaptureUnpadThenPad) { GTEST_SKIP() << "built without the CUDA runtime (TOPS_HAVE_CUDA is OFF)"; }

#else

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr
#define TOPS_OK(expr) ASSERT_EQ((expr), TOPS_SUCCESS) << #expr << ": " << tops_last_error()

constexpr int64_t kBatch = 7;
constexpr int64_t kSeq = 37;
constexpr int64_t kHidden = 200;  // 400-byte f16 rows: 16-byte vectors

struct DeviceBuffer {
    void* ptr = nullptr;
    ~DeviceBuffer() { cudaFree(ptr); }
};

TEST(CudaGraph, CaptureUnpadThenPad) {
    const char* why = nullptr;
    if (!tops_backend_available(TOPS_BACKEND_CUDA, &why)) GTEST_SKIP() << "cuda backend unavailable: " << why;
    const size_t padded_bytes = size_t(kBatch * kSeq * kHidden) * 2;
    std::vector<uint16_t> x(size_t(kBatch * kSeq * kHidden));
    std::mt19937 rng(7);
    for (uint16_t& v : x) v = uint16_t(rng() & 0x7bff);  // finite f16 bit patterns, never 0x7c00+
    DeviceBuffer dx, dpacked, dy, dlen, dcu;
    CUDA_OK(cudaMalloc(&dx.ptr, padded_bytes));
    CUDA_OK(cudaMalloc(&dpacked.ptr, padded_bytes));  // capacity B * S rows
    CUDA_OK(cudaMalloc(&dy.ptr, padded_bytes));
    CUDA_OK(cudaMalloc(&dlen.ptr, kBatch * 4));
    CUDA_OK(cudaMalloc(&dcu.ptr, (kBatch + 1) * 4));
    CUDA_OK(cudaMemcpy(dx.ptr, x.data(), padded_bytes, cudaMemcpyHostToDevice));

    tops_context_t ctx = nullptr;
    TOPS_OK(tops_context_create(TOPS_BACKEND_CUDA, 0, &ctx));
    cudaStream_t stream = nullptr;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    TOPS_OK(tops_context_set_stream(ctx, stream));
    tops_pad_desc_t d = tops_pad_desc_default();
    const int64_t pd[] = {kBatch, kSeq, kHidden}, kd[] = {kBatch * kSeq, kHidden}, ld[] = {kBatch}, cd[] = {kBatch + 1};
    TOPS_OK(tops_tensor_desc_init(&d.padded, TOPS_DTYPE_F16, 3, pd, nullptr));
    TOPS_OK(tops_tensor_desc_init(&d.packed, TOPS_DTYPE_F16, 2, kd, nullptr));
    TOPS_OK(tops_tensor_desc_init(&d.lengths, TOPS_DTYPE_I32, 1, ld, nullptr));
    TOPS_OK(tops_tensor_desc_init(&d.cu_seqlens, TOPS_DTYPE_I32, 1, cd, nullptr));
    tops_op_t unpad = nullptr, pad = nullptr;
    TOPS_OK(tops_unpad_create(ctx, &d, &unpad));
    d.lengths.dtype = TOPS_DTYPE_INVALID;
    TOPS_OK(tops_pad_create(ctx, &d, &pad));

    const tops_arg_t unpad_args[] = {{TOPS_ARG_X, dx.ptr}, {TOPS_ARG_Y, dpacked.ptr}, {TOPS_ARG_LENGTHS, dlen.ptr},
                                     {TOPS_ARG_CU_SEQLENS, dcu.ptr}};
    const tops_arg_t pad_args[] = {{TOPS_ARG_X, dpacked.ptr}, {TOPS_ARG_CU_SEQLENS, dcu.ptr}, {TOPS_ARG_Y, dy.ptr}};
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const tops_status_t s1 = tops_op_execute(ctx, unpad, unpad_args, 4, nullptr, 0);
    const tops_status_t s2 = tops_op_execute(ctx, pad, pad_args, 3, nullptr, 0);
    CUDA_OK(cudaStreamEndCapture(stream, &graph));
    ASSERT_EQ(s1, TOPS_SUCCESS) << tops_last_error();
    ASSERT_EQ(s2, TOPS_SUCCESS) << tops_last_error();
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));

    const std::vector<std::vector<int32_t>> replays = {
        {37, 1, 0, 20, 36, 37, 5}, {0, 0, 0, 0, 0, 0, 0}, {3, 37, 37, 37, 2, 9, 37}, {40, -1, 12, 37, 0, 1, 2}};
    for (const std::vector<int32_t>& lengths : replays) {
        SCOPED_TRACE(::testing::Message() << "lengths " << ::testing::PrintToString(lengths));
        CUDA_OK(cudaMemcpy(dlen.ptr, lengths.data(), kBatch * 4, cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemset(dy.ptr, 0xff, padded_bytes));  // poison: NaN f16
        CUDA_OK(cudaGraphLaunch(exec, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        std::vector<uint16_t> y(x.size());
        std::vector<int32_t> cu(kBatch + 1);
        CUDA_OK(cudaMemcpy(y.data(), dy.ptr, padded_bytes, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(cu.data(), dcu.ptr, cu.size() * 4, cudaMemcpyDeviceToHost));
        int32_t acc = 0;
        EXPECT_EQ(cu[0], 0);
        for (int64_t b = 0; b < kBatch; ++b) {
            const int32_t len = std::min<int32_t>(std::max<int32_t>(lengths[size_t(b)], 0), int32_t(kSeq));
            acc += len;
            EXPECT_EQ(cu[size_t(b) + 1], acc) << "b " << b;
            for (int64_t s = 0; s < kSeq; ++s) {
                const size_t row = size_t((b * kSeq + s) * kHidden);
                if (s < len) {
                    EXPECT_EQ(std::memcmp(&y[row], &x[row], kHidden * 2), 0) << "valid row b " << b << " s " << s;
                } else {
                    for (int64_t k = 0; k < kHidden; ++k) ASSERT_EQ(y[row + size_t(k)], 0) << "padding b " << b << " s " << s;
                }
            }
        }
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    tops_op_destroy(unpad);
    tops_op_destroy(pad);
    tops_context_destroy(ctx);
    cudaStreamDestroy(stream);
}

#endif

}  // namespace
