// tops-bench runner: times one case at one thread count on a device, with the
// oneDNN baseline beside it on the CPU.
#pragma once

#include <map>

#include "bench.hpp"

namespace bench {

enum class CacheMode {
    cold,  // rotate among buffer sets whose total exceeds 2x the last-level cache
    warm   // one buffer set, reused: cache-resident when it fits
};

struct RunOptions {
    TimingOptions timing;
    CacheMode cache = CacheMode::cold;
    size_t max_pool_bytes = size_t(2048) << 20;  // cap on all buffer sets together
    bool onednn = true;
};

struct Measurement {
    bool ok = false;
    std::string error;   // why there is no figure
    Stats stats;
    double gbs = 0;
    double tflops = 0;   // compute-bound ops only (flops > 0)
    double cpu_share = -1;  // see Timing
    std::string impl;    // kernel name (tops) or implementation (oneDNN)
    std::string check;   // "ok" or the first mismatch
};

struct Result {
    Case c;
    std::string args;
    int threads = 0;     // 0 on CUDA
    double bytes = 0;    // inputs read once + outputs written once
    double flops = 0;    // > 0: a compute-bound op, reported as TFLOP/s (no % copy)
    int pool_sets = 0;
    double pool_bytes = 0;
    std::string cache_state;  // "cold: ...", "cache-resident: ..."
    Measurement tops;
    Measurement onednn;  // error says why when absent
    double pct_copy = 0;     // of the primary (normal-store) copy ceiling
    double pct_copy_nt = 0;  // of the non-temporal copy, when measured
    double ratio = 0;        // tops GB/s / oneDNN GB/s
};

// Runs c at each thread count; ceilings[threads] must already hold that thread
// count's copy ceilings (the primary first).
std::vector<Result> run_case(Device& dev, tops_context_t ctx, const Case& c, const std::vector<int>& threads,
                             const RunOptions& opt, const std::map<int, std::vector<CopyCeiling>>& ceilings);

}  // namespace bench
