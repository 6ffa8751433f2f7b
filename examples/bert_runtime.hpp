// Runtime pieces of the BERT encoder example: buffers in the backend's
// memory (host, or cudaMalloc when built with the CUDA runtime), the op list
// of a layer, and per-op / whole-run timers (wall clock on the CPU, where ops
// run synchronously; CUDA events on the stream otherwise).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#ifdef TOPS_BERT_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace bert {

// ---------------------------------------------------------------- memory
#ifdef TOPS_BERT_WITH_CUDA
inline void cuda_check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
#endif

// A buffer in the backend's memory (host for CPU, device for CUDA).
class Memory {
public:
    Memory() = default;
    Memory(bool cuda, size_t bytes) : bytes_(bytes), cuda_(cuda) {
        const size_t n = std::max<size_t>(bytes, 64);
#ifdef TOPS_BERT_WITH_CUDA
        if (cuda) {
            cuda_check(cudaMalloc(&ptr_, n), "cudaMalloc");
            return;
        }
#endif
        ptr_ = std::aligned_alloc(64, (n + 63) / 64 * 64);
        if (!ptr_) throw std::bad_alloc();
    }
    ~Memory() { release(); }
    Memory(const Memory&) = delete;
    Memory& operator=(const Memory&) = delete;
    Memory(Memory&& o) noexcept { *this = std::move(o); }
    Memory& operator=(Memory&& o) noexcept {
        std::swap(ptr_, o.ptr_);
        std::swap(bytes_, o.bytes_);
        std::swap(cuda_, o.cuda_);
        return *this;
    }

    void* get() const { return ptr_; }
    char* at(size_t byte_offset) const { return static_cast<char*>(ptr_) + byte_offset; }
    void upload(const void* src, size_t bytes) {
#ifdef TOPS_BERT_WITH_CUDA
        if (cuda_) {
            cuda_check(cudaMemcpy(ptr_, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
            return;
        }
#endif
        std::memcpy(ptr_, src, bytes);
    }
    void download(void* dst, size_t bytes) const {
#ifdef TOPS_BERT_WITH_CUDA
        if (cuda_) {
            cuda_check(cudaMemcpy(dst, ptr_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
            return;
        }
#endif
        std::memcpy(dst, ptr_, bytes);
    }

private:
    void release() {
        if (!ptr_) return;
#ifdef TOPS_BERT_WITH_CUDA
        if (cuda_) {
            cudaFree(ptr_);
            ptr_ = nullptr;
            return;
        }
#endif
        std::free(ptr_);
        ptr_ = nullptr;
    }

    void* ptr_ = nullptr;
    size_t bytes_ = 0;
    bool cuda_ = false;
};

enum OpId { kUnpad, kQkv, kAttention, kOutProj, kNorm1, kFfnUp, kFfnDown, kNorm2, kPad, kNumOps };
inline const char* const kOpNames[kNumOps] = {"unpad",         "qkv gemm+bias",       "attention (varlen)",
                                       "out gemm+bias", "layernorm1+residual", "ffn gemm+bias+gelu",
                                       "ffn gemm+bias", "layernorm2+residual", "pad"};

// Called after each op executes (timing hooks).
struct OpObserver {
    virtual ~OpObserver() = default;
    virtual void before_run() = 0;
    virtual void after(OpId op) = 0;
};

// ---------------------------------------------------------------- timing
inline double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

using Clock = std::chrono::steady_clock;
inline double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Per-op times of one run, summed over layers (ms).
struct OpTimes {
    double ms[kNumOps] = {};
};

// CPU ops run synchronously: wall clock between consecutive ops.
class CpuOpTimer final : public OpObserver {
public:
    void before_run() override {
        times = OpTimes{};
        last_ = Clock::now();
    }
    void after(OpId op) override {
        const Clock::time_point t = Clock::now();
        times.ms[op] += std::chrono::duration<double, std::milli>(t - last_).count();
        last_ = t;
    }
    OpTimes times;

private:
    Clock::time_point last_;
};

#ifdef TOPS_BERT_WITH_CUDA
// CUDA: an event after each op on the stream, read once the run is done.
class CudaOpTimer final : public OpObserver {
public:
    CudaOpTimer(cudaStream_t stream, size_t ops_per_run) : stream_(stream), events_(ops_per_run + 1), ids_(ops_per_run) {
        for (cudaEvent_t& e : events_) cuda_check(cudaEventCreate(&e), "cudaEventCreate");
    }
    ~CudaOpTimer() override {
        for (cudaEvent_t e : events_) cudaEventDestroy(e);
    }
    void before_run() override {
        n_ = 0;
        cuda_check(cudaEventRecord(events_[0], stream_), "cudaEventRecord");
    }
    void after(OpId op) override {
        ids_[n_] = op;
        ++n_;
        cuda_check(cudaEventRecord(events_[n_], stream_), "cudaEventRecord");
    }
    OpTimes finish() {
        cuda_check(cudaEventSynchronize(events_[n_]), "cudaEventSynchronize");
        OpTimes t;
        for (size_t i = 0; i < n_; ++i) {
            float ms = 0.0f;
            cuda_check(cudaEventElapsedTime(&ms, events_[i], events_[i + 1]), "cudaEventElapsedTime");
            t.ms[ids_[i]] += double(ms);
        }
        return t;
    }

private:
    cudaStream_t stream_;
    std::vector<cudaEvent_t> events_;
    std::vector<OpId> ids_;
    size_t n_ = 0;
};

// Median time of `iters` calls of fn() on the stream, each timed by an event pair.
template <class Fn>
double time_cuda(cudaStream_t stream, int iters, Fn fn) {
    cudaEvent_t a, b;
    cuda_check(cudaEventCreate(&a), "cudaEventCreate");
    cuda_check(cudaEventCreate(&b), "cudaEventCreate");
    std::vector<double> t;
    for (int i = 0; i < iters; ++i) {
        cuda_check(cudaEventRecord(a, stream), "cudaEventRecord");
        fn();
        cuda_check(cudaEventRecord(b, stream), "cudaEventRecord");
        cuda_check(cudaEventSynchronize(b), "cudaEventSynchronize");
        float ms = 0.0f;
        cuda_check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
        t.push_back(double(ms));
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return median(t);
}
#endif

}  // namespace bert
