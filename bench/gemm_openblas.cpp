// tops-gemm-bench: f32 GEMM of tops against OpenBLAS cblas_sgemm, side by side
// in one process, beside the measured peak FMA rate of the CPU.
//
// For each size and thread count both libraries run the same row-major NN
// problem (D = A @ B, beta = 0, uniform [-1, 1) inputs) on the same buffers.
// Timing alternates between the two libraries in rounds (tops, OpenBLAS,
// OpenBLAS, tops, ...), each round a warm-up call and then calls until
// --round-s seconds have passed; a library's figure is the median over all
// its calls, and the spread of its per-round medians (min..max, in percent of
// the median) shows the noise of a shared machine. Each round starts after a
// pause, so the other library's idle worker threads have stopped spinning. The results are checked
// against each other (relative Frobenius difference).
//
// Peak: independent FMA chains (kFmaChains accumulators per thread, no
// memory traffic) at the widest ISA the CPU has (AVX-512F, else AVX2+FMA),
// on every thread at once.
//
//   tops-gemm-bench [--sizes 256,512,1024,2048] [--threads 1,2] [--rounds 5] [--round-s 0.3]
//                   [--only tops|openblas]   (one library alone, for diagnosis)
//                   [--json FILE]            (also write the table as JSON, for bench/plot.py)
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <cblas.h>
#include <tops/tops.h>

#include <fstream>

#include "json.hpp"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_config(void);

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kFmaChains = 16;
constexpr long kFmaIters = 200'000;
constexpr int kPeakReps = 300; // best of: short runs dodge other processes' time slices

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

__attribute__((target("avx512f"))) float fma_chains_avx512(long iters) {
    __m512 acc[kFmaChains];
    for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_set1_ps(float(i));
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < iters; ++it) {
        for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    }
    alignas(64) float t[16];
    float s = 0;
    for (int i = 0; i < kFmaChains; ++i) {
        _mm512_store_ps(t, acc[i]);
        for (float v : t) s += v;
    }
    return s;
}

__attribute__((target("avx2,fma"))) float fma_chains_avx2(long iters) {
    __m256 acc[kFmaChains];
    for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm256_set1_ps(float(i));
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < iters; ++it) {
        for (int i = 0; i < kFmaChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    }
    alignas(32) float t[8];
    float s = 0;
    for (int i = 0; i < kFmaChains; ++i) {
        _mm256_store_ps(t, acc[i]);
        for (float v : t) s += v;
    }
    return s;
}

// GFLOP/s of all `threads` threads running FMA chains at once (best of kPeakReps).
double peak_gflops(int threads, bool avx512, volatile float* sink) {
    const int lanes = avx512 ? 16 : 8;
    double best = 0;
    for (int rep = 0; rep < kPeakReps; ++rep) {
        const auto t0 = Clock::now();
#pragma omp parallel num_threads(threads)
        { sink[omp_get_thread_num()] = avx512 ? fma_chains_avx512(kFmaIters) : fma_chains_avx2(kFmaIters); }
        const double s = seconds_since(t0);
        best = std::max(best, 2.0 * lanes * kFmaChains * double(kFmaIters) * threads / s / 1e9);
    }
    return best;
}

std::vector<int> parse_list(const char* s) {
    std::vector<int> v;
    for (const char* p = s; *p;) {
        v.push_back(std::atoi(p));
        while (*p && *p != ',') ++p;
        if (*p == ',') ++p;
    }
    return v;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One row of the table, kept for --json.
struct Row {
    int n, threads;
    double peak, tops, tops_best, blas, blas_best, rel;
    std::string tops_spread, blas_spread, kernel;
};

void write_json(const std::string& path, const std::string& command, const std::string& load, int rounds,
                double round_s, const std::vector<Row>& rows) {
    std::ofstream f(path);
    if (!f) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        std::exit(1);
    }
    bench::JsonWriter j(f);
    j.begin_object()
        .value("tool", "tops-gemm-bench")
        .value("command", command)
        .value("tops_version", tops_version())
        .value("openblas", openblas_get_config())
        .value("load_average_at_start", load)
        .value("rounds", rounds)
        .value("round_s", round_s)
        .value("problem", "f32 row-major NN, beta 0, M = N = K")
        .value("statistic", "median over all calls of all rounds; best = fastest call; spread = min..max of the "
                            "per-round medians relative to the median");
    j.begin_array("results");
    for (const Row& r : rows) {
        j.begin_object()
            .value("n", r.n)
            .value("threads", r.threads)
            .value("peak_gflops", r.peak)
            .value("tops_gflops", r.tops)
            .value("tops_best_gflops", r.tops_best)
            .value("tops_spread_pct", r.tops_spread)
            .value("openblas_gflops", r.blas)
            .value("openblas_best_gflops", r.blas_best)
            .value("openblas_spread_pct", r.blas_spread)
            .value("ratio", r.tops / r.blas)
            .value("kernel", r.kernel)
            .value("rel_diff", r.rel)
            .end_object();
    }
    j.end_array();
    j.end_object();
}

struct Series {
    std::vector<double> calls;         // seconds per call, every round
    std::vector<double> round_median;  // per round
};

constexpr double kSettleS = 0.3;  // OpenBLAS workers spin ~2^28 cycles after a call before sleeping

template <class F>
void time_round(F&& call, double round_s, Series* s) {
    // Let the other library's idle threads stop spinning, then warm up.
    std::this_thread::sleep_for(std::chrono::duration<double>(kSettleS));
    call();
    std::vector<double> r;
    const auto start = Clock::now();
    do {
        const auto t0 = Clock::now();
        call();
        r.push_back(seconds_since(t0));
    } while (seconds_since(start) < round_s || r.size() < 3);
    s->calls.insert(s->calls.end(), r.begin(), r.end());
    s->round_median.push_back(median(r));
}

tops_tensor_desc_t dense(int64_t rows, int64_t cols) {
    tops_tensor_desc_t d{};
    d.dtype = TOPS_DTYPE_F32;
    d.rank = 2;
    d.dims[0] = rows;
    d.dims[1] = cols;
    d.strides[0] = cols;
    d.strides[1] = 1;
    return d;
}

void check(tops_status_t st, const char* what) {
    if (st != TOPS_SUCCESS) {
        std::fprintf(stderr, "%s: %s: %s\n", what, tops_status_string(st), tops_last_error());
        std::exit(1);
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> sizes = {256, 512, 1024, 2048}, threads = {1, 2};
    int rounds = 5;
    double round_s = 0.3;
    std::string only;  // "tops" or "openblas": time one library alone (diagnosis)
    std::string json;
    std::vector<Row> rows;
    std::string command = "tops-gemm-bench";
    for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--sizes")) sizes = parse_list(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--threads")) threads = parse_list(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--round-s")) round_s = std::atof(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];
        else if (!std::strcmp(argv[i], "--json")) json = argv[i + 1];
    }
    const bool avx512 = __builtin_cpu_supports("avx512f");
    std::printf("tops-gemm-bench: f32 row-major NN, beta 0; tops %s vs %s\n", tops_version(),
                openblas_get_config());
    std::FILE* la = std::fopen("/proc/loadavg", "r");
    char load[128] = "?";
    if (la) {
        if (!std::fgets(load, sizeof load, la)) std::strcpy(load, "?");
        std::fclose(la);
    }
    std::printf("load average at start: %s", load);
    std::printf("rounds %d x %.2f s per library, interleaved; value = median over all calls; spread = min..max "
                "of the per-round medians; best = fastest call\n\n",
                rounds, round_s);

    std::vector<float> sink(256);
    tops_context_t ctx = nullptr;
    check(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx), "context");
    std::printf("%-6s %3s | %-8s %9s | %9s %6s %12s %7s | %9s %6s %12s %7s | %6s | %s\n", "M=N=K", "thr", "peak",
                "GFLOP/s", "tops", "%peak", "spread%", "best", "openblas", "%peak", "spread%", "best", "ratio",
                "kernel / check");
    for (int t : threads) {
        const double peak = peak_gflops(t, avx512, sink.data());
        for (int n : sizes) {
            const size_t nn = size_t(n) * size_t(n);
            std::vector<float> a(nn), b(nn), d_tops(nn), d_blas(nn);
            std::mt19937 rng(12345u + unsigned(n));
            std::uniform_real_distribution<float> u(-1.0f, 1.0f);
            for (float& x : a) x = u(rng);
            for (float& x : b) x = u(rng);

            tops_gemm_desc_t g = tops_gemm_desc_default();
            g.a = dense(n, n);
            g.b = dense(n, n);
            g.d = dense(n, n);
            tops_op_t op = nullptr;
            check(tops_context_set_num_threads(ctx, t), "threads");
            check(tops_gemm_create(ctx, &g, &op), "gemm create");
            size_t ws_bytes = 0;
            check(tops_op_workspace_size(op, &ws_bytes), "workspace");
            std::vector<unsigned char> ws(ws_bytes);
            const tops_arg_t args[] = {{TOPS_ARG_A, a.data()}, {TOPS_ARG_B, b.data()}, {TOPS_ARG_D, d_tops.data()}};
            auto run_tops = [&] { check(tops_op_execute(ctx, op, args, 3, ws.data(), ws_bytes), "execute"); };
            openblas_set_num_threads(t);
            auto run_blas = [&] {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                            d_blas.data(), n);
            };
            Series st, sb;
            for (int r = 0; r < rounds; ++r) {
                if (only == "tops") {
                    time_round(run_tops, round_s, &st);
                    sb = st;
                } else if (only == "openblas") {
                    time_round(run_blas, round_s, &sb);
                    st = sb;
                } else if (r % 2 == 0) {
                    time_round(run_tops, round_s, &st);
                    time_round(run_blas, round_s, &sb);
                } else {
                    time_round(run_blas, round_s, &sb);
                    time_round(run_tops, round_s, &st);
                }
            }
            double num = 0, den = 0;
            for (size_t i = 0; i < nn; ++i) {
                num += double(d_tops[i] - d_blas[i]) * double(d_tops[i] - d_blas[i]);
                den += double(d_blas[i]) * double(d_blas[i]);
            }
            const double rel = std::sqrt(num / den);
            const double flops = 2.0 * n * double(n) * n;
            auto gf = [&](const Series& s) { return flops / median(s.calls) / 1e9; };
            auto best = [&](const Series& s) { return flops / *std::min_element(s.calls.begin(), s.calls.end()) / 1e9; };
            auto spread = [&](const Series& s) {
                const auto [lo, hi] = std::minmax_element(s.round_median.begin(), s.round_median.end());
                const double m = median(s.calls);
                char buf[64];
                std::snprintf(buf, sizeof buf, "%+.0f..%+.0f", 100.0 * (*lo - m) / m, 100.0 * (*hi - m) / m);
                return std::string(buf);
            };
            std::printf("%-6d %3d | %-8s %9.1f | %9.1f %6.1f %12s %7.1f | %9.1f %6.1f %12s %7.1f | %6.2f | %s rel.diff "
                        "%.1e%s\n",
                        n, t, avx512 ? "avx512" : "avx2", peak, gf(st), 100.0 * gf(st) / peak, spread(st).c_str(),
                        best(st), gf(sb), 100.0 * gf(sb) / peak, spread(sb).c_str(), best(sb), gf(st) / gf(sb),
                        tops_op_kernel_name(op), rel, rel < 1e-5 ? " ok" : " MISMATCH");
            std::fflush(stdout);
            rows.push_back({n, t, peak, gf(st), best(st), gf(sb), best(sb), rel, spread(st), spread(sb),
                            tops_op_kernel_name(op)});
            tops_op_destroy(op);
        }
    }
    tops_context_destroy(ctx);
    if (!json.empty()) {
        std::string l = load;
        if (!l.empty() && l.back() == '\n') l.pop_back();
        write_json(json, command, l, rounds, round_s, rows);
        std::printf("wrote %s\n", json.c_str());
    }
    return 0;
}
