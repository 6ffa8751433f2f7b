// Times the fused Hopper GEMM kernel alone (src/cuda/gemm_sm90.cu, compiled
// into this file): D = GELU_erf(A B^T + bias), f16, 4096x3072x768 by default
// (the BERT FFN shape), launched back to back; prints the median time per
// launch and the host cost of one launch call (three tensor-map encodings).
// The development timings of docs/performance.md ("drv") came from the
// driver this file was cleaned up from (this copy has been compiled, not yet
// run); the acceptance figures come from bench/compare_torch.py.
//
//   nvcc -std=c++17 -O3 -arch=sm_90a --expt-relaxed-constexpr -Iinclude -I. -Isrc \
//        bench/gemm_sm90_probe.cu -o gemm_sm90_probe && ./gemm_sm90_probe [M N K]
#include "src/cuda/gemm_sm90.cu"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kBackToBack = 20;
constexpr int kRounds = 8;
constexpr int kHostCalls = 100;

// Uniform values in [-1, 1) from a hash of the index: no zeros, no cache-friendly pattern.
__global__ void fill_f16(__half* p, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        const uint32_t h = (uint32_t(i) ^ seed) * 2654435761u;
        p[i] = __float2half(float((h >> 8) & 0xffff) / 32768.0f - 1.0f);
    }
}

}  // namespace

int main(int argc, char** argv) {
    using namespace tops::cuda;
    const int64_t m = argc > 3 ? std::atoll(argv[1]) : 4096;
    const int64_t n = argc > 3 ? std::atoll(argv[2]) : 3072;
    const int64_t k = argc > 3 ? std::atoll(argv[3]) : 768;
    __half *a = nullptr, *b = nullptr, *d = nullptr, *bias = nullptr;
    cudaMalloc(&a, size_t(m * k) * 2);
    cudaMalloc(&b, size_t(n * k) * 2);
    cudaMalloc(&d, size_t(m * n) * 2);
    cudaMalloc(&bias, size_t(n) * 2);
    fill_f16<<<1024, 256>>>(a, size_t(m * k), 1);
    fill_f16<<<1024, 256>>>(b, size_t(n * k), 2);
    fill_f16<<<64, 256>>>(bias, size_t(n), 3);
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    DeviceInfo dev;
    if (query_device_info(0, &dev) != cudaSuccess) {
        std::printf("no CUDA device\n");
        return 1;
    }
    GemmSm90Problem q;
    q.dtype = TOPS_DTYPE_F16;
    q.act = tops::Activation::gelu_erf;
    q.m = m;
    q.n = n;
    q.k = k;
    q.lda = k;
    q.ldb = k;
    q.ldd = n;
    const std::string why = gemm_sm90_unusable(q, dev);
    if (!why.empty()) {
        std::printf("fused kernel unusable here: %s\n", why.c_str());
        return 1;
    }
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> us;
    for (int r = 0; r < kRounds; ++r) {
        cudaEventRecord(e0);
        for (int i = 0; i < kBackToBack; ++i) {
            if (!launch_gemm_sm90(q, a, b, d, bias, dev.sm_count, nullptr).is_ok()) {
                std::printf("launch failed\n");
                return 1;
            }
        }
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, e0, e1);
        us.push_back(ms * 1000.0f / kBackToBack);
    }
    std::sort(us.begin(), us.end());
    const auto h0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kHostCalls; ++i) launch_gemm_sm90(q, a, b, d, bias, dev.sm_count, nullptr);
    const auto h1 = std::chrono::steady_clock::now();
    cudaDeviceSynchronize();
    const double median = us[us.size() / 2];
    std::printf("%s %lldx%lldx%lld f16 GELU erf: median %.1f us per launch (%.0f TFLOP/s), host %.1f us per call\n",
                prop.name, (long long)m, (long long)n, (long long)k, median, 2.0 * m * n * k / median / 1e6,
                std::chrono::duration<double, std::micro>(h1 - h0).count() / kHostCalls);
    cudaFree(a);
    cudaFree(b);
    cudaFree(d);
    cudaFree(bias);
    return 0;
}
