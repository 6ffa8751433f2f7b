// tops-bench CPU device: host buffers, wall-clock timing per call, and the
// STREAM-like copy ceiling. The copy is a plain OpenMP loop over two arrays
// larger than the last-level cache, each thread copying the part it
// first-touched; it is measured with ordinary stores (the primary ceiling: it
// pays the write-allocate read of the destination, like any kernel that stores
// normally) and with non-temporal stores (no write-allocate; an upper bound).
// Both use 16-byte SSE2 moves, available on every x86-64, so the ceiling does
// not depend on the ISA the bench was compiled for.
// The ceiling is timed the way ops are: one timed call copies one slice of
// kCopySlice bytes, successive calls walk through the arrays (so every slice
// is cold), and the figure is the median over all calls. A machine shared
// with other work then deflates the ceiling and the ops alike, instead of
// preempting every long whole-array pass while short op calls slip through.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <ctime>

#include <emmintrin.h>
#include <omp.h>
#include <unistd.h>

#include "bench.hpp"

namespace bench {

namespace {

constexpr size_t kAlign = 4096;
constexpr size_t kCopySlice = size_t(16) << 20;  // bytes read per timed copy call
constexpr int kCopyWarmupPasses = 1;
constexpr int kCopyPasses = 3;
constexpr size_t kVec = sizeof(__m128i);
constexpr uint8_t kCopyPattern = 0x5a;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

double process_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Loop distribution into memcpy/memset calls is turned off so the copy stays
// the plain load/store loop it claims to be (glibc's memcpy may switch to
// non-temporal stores on its own).
#if defined(__GNUC__) && !defined(__clang__)
#define BENCH_NO_MEMCPY_IDIOM __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define BENCH_NO_MEMCPY_IDIOM
#endif

// Copies n16 16-byte vectors, 4 per iteration; n16 is a multiple of 4.
BENCH_NO_MEMCPY_IDIOM void copy_store_sse2(const __m128i* src, __m128i* dst, size_t n16) {
    for (size_t i = 0; i < n16; i += 4) {
        const __m128i a = _mm_load_si128(src + i), b = _mm_load_si128(src + i + 1);
        const __m128i c = _mm_load_si128(src + i + 2), d = _mm_load_si128(src + i + 3);
        _mm_store_si128(dst + i, a);
        _mm_store_si128(dst + i + 1, b);
        _mm_store_si128(dst + i + 2, c);
        _mm_store_si128(dst + i + 3, d);
    }
}

BENCH_NO_MEMCPY_IDIOM void copy_stream_sse2(const __m128i* src, __m128i* dst, size_t n16) {
    for (size_t i = 0; i < n16; i += 4) {
        const __m128i a = _mm_load_si128(src + i), b = _mm_load_si128(src + i + 1);
        const __m128i c = _mm_load_si128(src + i + 2), d = _mm_load_si128(src + i + 3);
        _mm_stream_si128(dst + i, a);
        _mm_stream_si128(dst + i + 1, b);
        _mm_stream_si128(dst + i + 2, c);
        _mm_stream_si128(dst + i + 3, d);
    }
    _mm_sfence();
}

// Chunk [begin, end) of n16 vectors for thread t of nt, a multiple of 4 vectors.
void thread_chunk(size_t n16, int t, int nt, size_t* begin, size_t* end) {
    const size_t blocks = n16 / 4;
    *begin = blocks * size_t(t) / size_t(nt) * 4;
    *end = blocks * size_t(t + 1) / size_t(nt) * 4;
}

size_t read_sysfs_cache_kib(const char* path) {
    std::ifstream f(path);
    std::string s;
    if (!(f >> s) || s.empty()) return 0;
    size_t mult = 1;
    if (s.back() == 'K') mult = 1024, s.pop_back();
    else if (s.back() == 'M') mult = 1024 * 1024, s.pop_back();
    return size_t(std::strtoull(s.c_str(), nullptr, 10)) * mult;
}

size_t detect_llc_bytes() {
    long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (v > 0) return size_t(v);
    size_t s = read_sysfs_cache_kib("/sys/devices/system/cpu/cpu0/cache/index3/size");
    if (s) return s;
    v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? size_t(v) : size_t(32) << 20;
}

class CpuDevice final : public Device {
public:
    tops_backend_t backend() const override { return TOPS_BACKEND_CPU; }

    void* alloc(size_t bytes) override {
        const size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
        void* p = std::aligned_alloc(kAlign, rounded);
        if (!p) throw std::runtime_error("out of host memory allocating " + std::to_string(bytes) + " bytes");
        return p;
    }
    void release(void* p) override { std::free(p); }
    void upload(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
    void download(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }

    Timing time_calls(const std::function<void(int)>& call, const TimingOptions& opt, int threads) override {
        const Clock::time_point w0 = Clock::now();
        for (int i = 0; i < opt.warmup || seconds_since(w0) < opt.warmup_s; ++i) call(i);
        Timing out;
        double total = 0;
        const double cpu0 = process_cpu_seconds();
        const Clock::time_point start = Clock::now();
        for (int rep = 0; rep < opt.max_reps && (rep < opt.min_reps || total < opt.min_time_s); ++rep) {
            const Clock::time_point t0 = Clock::now();
            call(rep);
            const double dt = seconds_since(t0);
            out.seconds.push_back(dt);
            total += dt;
        }
        const double wall = seconds_since(start);
        out.cpu_share = wall > 0 ? (process_cpu_seconds() - cpu0) / (wall * std::max(threads, 1)) : -1;
        return out;
    }

    std::vector<CopyCeiling> copy_ceilings(int threads, size_t array_bytes) override {
        const size_t slice16 = kCopySlice / kVec;
        const size_t slices = std::max<size_t>(1, array_bytes / kCopySlice);
        const size_t n16 = slices * slice16;
        auto* src = static_cast<__m128i*>(alloc(n16 * kVec));
        auto* dst = static_cast<__m128i*>(alloc(n16 * kVec));
        // First touch by the thread that later copies that part of each slice.
        for (size_t k = 0; k < slices; ++k) {
#pragma omp parallel num_threads(threads)
            {
                size_t b, e;
                thread_chunk(slice16, omp_get_thread_num(), omp_get_num_threads(), &b, &e);
                std::memset(src + k * slice16 + b, kCopyPattern, (e - b) * kVec);
                std::memset(dst + k * slice16 + b, 0, (e - b) * kVec);
            }
        }
        std::vector<CopyCeiling> out;
        struct Variant {
            const char* name;
            CopyFn fn;
        };
        const Variant variants[] = {{"copy", copy_store_sse2}, {"copy-nt", copy_stream_sse2}};
        for (const Variant& v : variants) {
            double share = -1;
            const Stats st = measure_copy(src, dst, slices, slice16, threads, v.fn, &share);
            out.push_back({v.name, 2.0 * double(kCopySlice), st, double(n16 * kVec), share});
        }
        release(src);
        release(dst);
        return out;
    }

    size_t llc_bytes() const override { return llc_; }

    std::string description() const override { return "cpu"; }

private:
    using CopyFn = void (*)(const __m128i*, __m128i*, size_t);

    static Stats measure_copy(const __m128i* src, __m128i* dst, size_t slices, size_t slice16, int threads,
                              CopyFn fn, double* cpu_share) {
        std::vector<double> samples;
        const double cpu0 = process_cpu_seconds();
        double wall = 0;
        for (int pass = 0; pass < kCopyWarmupPasses + kCopyPasses; ++pass) {
            for (size_t k = 0; k < slices; ++k) {
                const Clock::time_point t0 = Clock::now();
#pragma omp parallel num_threads(threads)
                {
                    size_t b, e;
                    thread_chunk(slice16, omp_get_thread_num(), omp_get_num_threads(), &b, &e);
                    fn(src + k * slice16 + b, dst + k * slice16 + b, e - b);
                }
                const double dt = seconds_since(t0);
                if (pass >= kCopyWarmupPasses) samples.push_back(dt);
                wall += dt;
            }
        }
        *cpu_share = (process_cpu_seconds() - cpu0) / (wall * std::max(threads, 1));
        return summarize(samples);
    }

    size_t llc_ = detect_llc_bytes();
};

}  // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

Stats summarize(std::vector<double> s) {
    Stats st;
    if (s.empty()) return st;
    std::sort(s.begin(), s.end());
    auto quantile = [&](double q) {
        const double pos = q * double(s.size() - 1);
        const size_t lo = size_t(pos);
        const size_t hi = std::min(lo + 1, s.size() - 1);
        return s[lo] + (pos - double(lo)) * (s[hi] - s[lo]);
    };
    st.median_s = quantile(0.5);
    st.q1_s = quantile(0.25);
    st.q3_s = quantile(0.75);
    st.min_s = s.front();
    st.reps = int(s.size());
    return st;
}

MachineInfo machine_info() {
    MachineInfo m;
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line)) {
        if (line.rfind("model name", 0) == 0) {
            const size_t colon = line.find(':');
            if (colon != std::string::npos) m.cpu_model = line.substr(colon + 2);
            break;
        }
    }
    if (m.cpu_model.empty()) m.cpu_model = "unknown";
    m.logical_cpus = int(sysconf(_SC_NPROCESSORS_ONLN));
    m.llc_bytes = detect_llc_bytes();
    m.isa = tops_cpu_isa();
    m.tops_version = tops_version();
    std::ifstream la("/proc/loadavg");
    std::string one, five, fifteen;
    if (la >> one >> five >> fifteen) m.load_average = one + " " + five + " " + fifteen;
    return m;
}

}  // namespace bench
