// tops-bench CUDA device (built when CMake's TOPS_HAVE_CUDA is ON, which links
// CUDA::cudart into the bench only and defines TOPS_BENCH_CUDA). Buffers are
// device allocations; each call is bracketed by a pair of CUDA events on the
// bench's own stream (the stream the tops context runs on), so the timings
// are GPU time without host launch gaps between reps. The ceiling is a
// device-to-device cudaMemcpyAsync of 512 MiB, bytes = read + written.
#include "bench.hpp"

#ifdef TOPS_BENCH_CUDA

#include <chrono>
#include <stdexcept>

#include <cuda_runtime_api.h>

namespace bench {

namespace {

constexpr size_t kD2DBytes = size_t(512) << 20;
constexpr int kCopyWarmup = 3;
constexpr int kCopyReps = 20;
constexpr int kEventBatch = 64;  // event pairs in flight before a synchronize

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

class CudaDevice final : public Device {
public:
    explicit CudaDevice(int device) : device_(device) {
        check(cudaSetDevice(device), "cudaSetDevice");
        cudaDeviceProp prop{};
        check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
        name_ = prop.name;
        int l2 = 0;
        check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2)");
        l2_ = size_t(l2);
        check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
        events_.resize(2 * kEventBatch);
        for (cudaEvent_t& e : events_) check(cudaEventCreate(&e), "cudaEventCreate");
    }
    ~CudaDevice() override {
        for (cudaEvent_t e : events_) cudaEventDestroy(e);
        cudaStreamDestroy(stream_);
    }

    tops_backend_t backend() const override { return TOPS_BACKEND_CUDA; }

    void* alloc(size_t bytes) override {
        void* p = nullptr;
        check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
        return p;
    }
    void release(void* p) override { cudaFree(p); }
    void upload(void* dst, const void* src, size_t bytes) override {
        check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
    }
    void download(void* dst, const void* src, size_t bytes) override {
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
        check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    }
    void* stream() override { return stream_; }

    Timing time_calls(const std::function<void(int)>& call, const TimingOptions& opt, int) override {
        using Clock = std::chrono::steady_clock;
        const Clock::time_point w0 = Clock::now();
        for (int i = 0; i < opt.warmup || std::chrono::duration<double>(Clock::now() - w0).count() < opt.warmup_s;
             ++i) {
            call(i);
            check(cudaStreamSynchronize(stream_), "warm-up");
        }
        std::vector<double> samples;
        double total = 0;
        int rep = 0;
        while (rep < opt.max_reps && (rep < opt.min_reps || total < opt.min_time_s)) {
            const int batch = kEventBatch;
            for (int b = 0; b < batch; ++b) {
                check(cudaEventRecord(events_[2 * b], stream_), "cudaEventRecord");
                call(rep + b);
                check(cudaEventRecord(events_[2 * b + 1], stream_), "cudaEventRecord");
            }
            check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
            check(cudaGetLastError(), "kernel");
            for (int b = 0; b < batch; ++b) {
                float ms = 0;
                check(cudaEventElapsedTime(&ms, events_[2 * b], events_[2 * b + 1]), "cudaEventElapsedTime");
                samples.push_back(ms * 1e-3);
                total += ms * 1e-3;
            }
            rep += batch;
        }
        return {samples, -1};
    }

    std::vector<CopyCeiling> copy_ceilings(int, size_t) override {
        void* src = alloc(kD2DBytes);
        void* dst = alloc(kD2DBytes);
        check(cudaMemsetAsync(src, 0x5a, kD2DBytes, stream_), "cudaMemset");
        std::vector<double> samples;
        for (int rep = 0; rep < kCopyWarmup + kCopyReps; ++rep) {
            check(cudaEventRecord(events_[0], stream_), "cudaEventRecord");
            check(cudaMemcpyAsync(dst, src, kD2DBytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpy D2D");
            check(cudaEventRecord(events_[1], stream_), "cudaEventRecord");
            check(cudaEventSynchronize(events_[1]), "cudaEventSynchronize");
            float ms = 0;
            check(cudaEventElapsedTime(&ms, events_[0], events_[1]), "cudaEventElapsedTime");
            if (rep >= kCopyWarmup) samples.push_back(ms * 1e-3);
        }
        release(src);
        release(dst);
        return {{"d2d-copy", 2.0 * double(kD2DBytes), summarize(samples), double(kD2DBytes), -1}};
    }

    size_t llc_bytes() const override { return l2_; }

    std::string description() const override {
        return "cuda:" + std::to_string(device_) + " " + name_ + " (L2 " + std::to_string(l2_ >> 20) + " MiB)";
    }

private:
    int device_;
    std::string name_;
    size_t l2_ = 0;
    cudaStream_t stream_ = nullptr;
    std::vector<cudaEvent_t> events_;
};

}  // namespace

std::unique_ptr<Device> make_cuda_device(int device, std::string* why) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        *why = std::string("no usable CUDA runtime/driver: ") + cudaGetErrorString(e);
        return nullptr;
    }
    if (device >= count) {
        *why = "CUDA device " + std::to_string(device) + " not present (" + std::to_string(count) + " devices)";
        return nullptr;
    }
    try {
        return std::make_unique<CudaDevice>(device);
    } catch (const std::exception& ex) {
        *why = ex.what();
        return nullptr;
    }
}

}  // namespace bench

#else  // !TOPS_BENCH_CUDA

namespace bench {

std::unique_ptr<Device> make_cuda_device(int, std::string* why) {
    *why = "tops-bench built without CUDA (configure with a CUDA toolkit so TOPS_HAVE_CUDA is ON)";
    return nullptr;
}

}  // namespace bench

#endif
