// tops-bench: times tops ops over a shape list and reports each figure beside
// its ceiling (the copy bandwidth this tool measures at the same thread count)
// and, on the CPU, beside oneDNN on the same buffers. See --help.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <omp.h>

#include "json.hpp"
#include "runner.hpp"

namespace bench {

namespace {

constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kMinCopyArray = 256 * kMiB;  // each copy array is at least this, and >= the LLC
constexpr double kCudaSuiteMinTime = 0.15;     // s per CUDA measurement in a suite (>= 10 calls, most cases hundreds)

// ------------------------------------------------------------------ suites

Case softmax_case(tops_dtype_t dt, std::vector<int64_t> shape) {
    Case c;
    c.op = "softmax";
    c.dtype = dt;
    c.shape = std::move(shape);
    return c;
}

Case transpose_case(tops_dtype_t dt, std::vector<int64_t> shape, std::vector<int> perm) {
    Case c;
    c.op = "transpose";
    c.dtype = dt;
    c.shape = std::move(shape);
    c.perm = std::move(perm);
    return c;
}

Case op_case(const char* op, tops_dtype_t dt, std::vector<int64_t> shape, int axis = -1) {
    Case c;
    c.op = op;
    c.dtype = dt;
    c.shape = std::move(shape);
    c.axis = axis;
    return c;
}

Case gemm_case(tops_dtype_t dt, int64_t m, int64_t n, int64_t k, bool tf32 = false) {
    Case c = op_case("gemm", dt, {m, n, k});
    c.tf32 = tf32;
    return c;
}

// The standard lists: every op family on each backend. The CUDA list is the
// one bench/compare_torch.py runs in PyTorch (keep the two in step); the CPU
// list is smaller (a 2-core machine runs it in a few minutes at 1 and 2
// threads). Families: softmax, transpose, norm, reduce, eltwise, unpad / pad
// (memory-bound: GB/s and % of copy), gemm, attention, conv2d (compute-bound:
// TFLOP/s).
std::vector<Case> suite_cpu() {
    constexpr tops_dtype_t f32 = TOPS_DTYPE_F32;
    std::vector<Case> v = {
        softmax_case(f32, {4096, 128}),
        softmax_case(f32, {4096, 1024}),
        softmax_case(f32, {1024, 32768}),
        transpose_case(f32, {64, 512, 512}, {0, 2, 1}),
        transpose_case(f32, {8192, 8192}, {1, 0}),
        transpose_case(TOPS_DTYPE_F16, {32, 512, 12, 64}, {0, 2, 1, 3}),
        transpose_case(f32, {16, 32, 64, 64, 8}, {0, 4, 2, 3, 1}),
        op_case("layernorm", f32, {4096, 768}),
        op_case("layernorm", f32, {4096, 4096}),
        op_case("rmsnorm", f32, {4096, 768}),
        op_case("layernorm_residual", f32, {4096, 768}),
        op_case("reduce_sum", f32, {4096, 4096}, 1),
        op_case("reduce_sum", f32, {4096, 4096}, 0),
        op_case("reduce_max", f32, {4096, 4096}, 1),
        op_case("global_avg_pool", f32, {32, 256, 14, 14}),
        op_case("bias_gelu", f32, {4096, 4096}),
        op_case("prelu", f32, {32, 64, 56, 56}),
        op_case("weighted_sum3", f32, {4096, 4096}),
    };
    for (int64_t n : {512, 1024, 2048}) v.push_back(gemm_case(f32, n, n, n));
    for (int64_t s : {512, 1024, 2048}) v.push_back(op_case("attention", f32, {1, s, 16, 64}));
    for (int64_t s : {1024, 2048}) v.push_back(op_case("attention_causal", f32, {1, s, 16, 64}));
    // The six ResNet-50 layers of shared/anchors/gpu-h100.md at batch 1 (the stem also at batch 8),
    // NCHW (conv2d) and NHWC (conv2d_nhwc); oneDNN runs beside each when present.
    const std::vector<std::vector<int64_t>> convs = {
        {1, 64, 56, 56, 64, 3, 3, 1, 1}, {1, 128, 28, 28, 128, 3, 3, 1, 1}, {1, 256, 14, 14, 256, 3, 3, 1, 1},
        {1, 512, 7, 7, 512, 3, 3, 1, 1}, {1, 3, 224, 224, 64, 7, 7, 2, 3},  {8, 3, 224, 224, 64, 7, 7, 2, 3},
        {1, 256, 56, 56, 64, 1, 1, 1, 0}};
    for (const char* op : {"conv2d_nhwc", "conv2d"}) {
        for (const auto& cv : convs) v.push_back(op_case(op, f32, cv));
    }
    v.push_back(op_case("unpad", f32, {32, 128, 768}));
    v.push_back(op_case("pad", f32, {32, 128, 768}));
    return v;
}

// Attention as in FlashAttention-2's benchmark: B * S = 16k tokens, hidden 2048 (H = 2048 / D).
constexpr int64_t kAttnTokens = 16384;
constexpr int64_t kAttnHidden = 2048;

// The standard GPU list: the shapes of shared/anchors/gpu-h100.md.
std::vector<Case> suite_cuda() {
    std::vector<Case> v;
    const std::vector<std::vector<int64_t>> rows = {
        {65536, 128}, {16384, 1024}, {8192, 4096}, {4096, 32768}, {1024, 131072}};
    for (tops_dtype_t dt : {TOPS_DTYPE_F32, TOPS_DTYPE_F16}) {
        for (const auto& s : rows) v.push_back(softmax_case(dt, s));
    }
    Case masked = softmax_case(TOPS_DTYPE_F16, {32, 12, 512, 512});
    masked.scale = 0.125f;
    masked.mask = true;
    v.push_back(masked);
    Case padded = masked;
    padded.mask = false;
    padded.lengths = true;
    v.push_back(padded);
    v.push_back(transpose_case(TOPS_DTYPE_F32, {8192, 8192}, {1, 0}));
    v.push_back(transpose_case(TOPS_DTYPE_F16, {32, 512, 12, 64}, {0, 2, 1, 3}));
    v.push_back(transpose_case(TOPS_DTYPE_F32, {16, 32, 64, 64, 8}, {0, 4, 2, 3, 1}));
    for (tops_dtype_t dt : {TOPS_DTYPE_F16, TOPS_DTYPE_F32}) {
        for (const auto& s : std::vector<std::vector<int64_t>>{
                 {16384, 768}, {16384, 1024}, {8192, 4096}, {2048, 16384}, {256, 65536}}) {
            v.push_back(op_case("layernorm", dt, s));
        }
    }
    for (tops_dtype_t dt : {TOPS_DTYPE_F16, TOPS_DTYPE_F32}) {
        for (const auto& s : std::vector<std::vector<int64_t>>{{16384, 768}, {8192, 4096}, {256, 65536}}) {
            v.push_back(op_case("rmsnorm", dt, s));
        }
    }
    v.push_back(op_case("layernorm_residual", TOPS_DTYPE_F16, {16384, 768}));
    v.push_back(op_case("reduce_sum", TOPS_DTYPE_F32, {8192, 8192}, 1));
    v.push_back(op_case("reduce_sum", TOPS_DTYPE_F32, {8192, 8192}, 0));
    v.push_back(op_case("reduce_max", TOPS_DTYPE_F32, {8192, 8192}, 1));
    v.push_back(op_case("reduce_max", TOPS_DTYPE_F32, {8192, 8192}, 0));
    v.push_back(op_case("global_avg_pool", TOPS_DTYPE_F32, {64, 256, 56, 56}));
    v.push_back(op_case("global_avg_pool", TOPS_DTYPE_F16, {64, 256, 56, 56}));
    v.push_back(op_case("bias_gelu", TOPS_DTYPE_F16, {4096, 3072}));
    v.push_back(op_case("bias_gelu", TOPS_DTYPE_F32, {4096, 3072}));
    v.push_back(op_case("bias_gelu", TOPS_DTYPE_F16, {16384, 4096}));
    v.push_back(op_case("prelu", TOPS_DTYPE_F32, {32, 64, 56, 56}));
    v.push_back(op_case("weighted_sum3", TOPS_DTYPE_F16, {16384, 4096}));
    for (int64_t s : {128, 512}) {  // BERT-base batches of issue 9: B 32, hidden 768
        v.push_back(op_case("unpad", TOPS_DTYPE_F16, {32, s, 768}));
        v.push_back(op_case("pad", TOPS_DTYPE_F16, {32, s, 768}));
    }
    const std::vector<std::vector<int64_t>> gemms = {
        {4096, 4096, 4096}, {8192, 8192, 8192}, {4096, 3072, 768}, {4096, 768, 3072}, {16384, 4096, 4096}};
    for (tops_dtype_t dt : {TOPS_DTYPE_F16, TOPS_DTYPE_BF16, TOPS_DTYPE_F32}) {
        for (const auto& g : gemms) v.push_back(gemm_case(dt, g[0], g[1], g[2]));
    }
    for (const auto& g : gemms) v.push_back(gemm_case(TOPS_DTYPE_F32, g[0], g[1], g[2], true));
    // The six ResNet-50 layers of shared/anchors/gpu-h100.md: N, C, H, W, K, R, S, stride, pad.
    const std::vector<std::vector<int64_t>> convs = {
        {32, 64, 56, 56, 64, 3, 3, 1, 1},  {32, 128, 28, 28, 128, 3, 3, 1, 1}, {32, 256, 14, 14, 256, 3, 3, 1, 1},
        {32, 512, 7, 7, 512, 3, 3, 1, 1},  {32, 3, 224, 224, 64, 7, 7, 2, 3},  {32, 256, 56, 56, 64, 1, 1, 1, 0}};
    for (tops_dtype_t dt : {TOPS_DTYPE_F16, TOPS_DTYPE_F32}) {
        for (const auto& cv : convs) v.push_back(op_case("conv2d", dt, cv));
    }
    for (tops_dtype_t dt : {TOPS_DTYPE_F16, TOPS_DTYPE_BF16}) {
        for (int64_t d : {64, 128}) {
            for (const char* op : {"attention", "attention_causal"}) {
                for (int64_t s : {512, 1024, 2048, 4096, 8192, 16384}) {
                    const int64_t batch = std::max<int64_t>(1, kAttnTokens / s);
                    v.push_back(op_case(op, dt, {batch, s, kAttnHidden / d, d}));
                }
            }
        }
    }
    return v;
}

// ------------------------------------------------------------------ command line

struct Options {
    std::string op;
    std::string backend = "cpu";
    int device = 0;
    std::string suite;
    std::string dtype = "f32";
    std::vector<std::vector<int64_t>> shapes;
    int axis = -1;
    float scale = 1.0f;
    bool log = false, mask = false, lengths = false, tf32 = false;
    std::vector<int> perm;
    std::vector<int> threads;
    RunOptions run;
    bool min_time_set = false;
    std::string json;
    size_t copy_bytes = 0;  // 0: max(kMinCopyArray, LLC)
    bool list = false;
};

void usage() {
    std::printf(
        "usage: tops-bench [--suite cpu|cuda|all] [--op NAME] [options]\n"
        "  --suite cpu|cuda|all run the standard list of every op family (cpu: 1 and 2 threads, with\n"
        "                       oneDNN; all: every available backend, one after the other)\n"
        "  --op NAME            op to time (see --list); without --shape: the standard shapes\n"
        "  --backend cpu|cuda   (default cpu)       --device N   CUDA device (default 0)\n"
        "  --dtype f32|f16|bf16 (default f32)\n"
        "  --shape 4096x1024    x's dims; repeat for several shapes (also 4096,1024)\n"
        "  --axis N             softmax axis (default -1)\n"
        "  --scale S --log      softmax input scale, log-softmax\n"
        "  --mask --lengths     softmax key-padding mask (u8, dims of batch and axis) / lengths (i32)\n"
        "  --perm 0,2,1         transpose permutation (default: reverse)\n"
        "  --tf32               gemm: f32 inputs may use TF32 tensor cores (CUDA)\n"
        "  --threads 1,2        CPU thread counts (default: OpenMP default; suite cpu: 1,2)\n"
        "  --reps N             minimum timed repetitions (default 10)\n"
        "  --min-time S         minimum timed seconds per measurement (default 0.5; suite cuda 0.15)\n"
        "  --warmup N           minimum warm-up calls (default 3, and >= 50 ms)\n"
        "  --cache cold|warm    cold (default): rotate buffer sets > 2x LLC; warm: reuse one set\n"
        "  --max-pool-mib N     cap on the rotated buffer sets (default 2048)\n"
        "  --copy-mib N         size of each copy-ceiling array (default max(256, LLC))\n"
        "  --no-onednn          skip the oneDNN baseline\n"
        "  --json FILE          also write machine info, ceilings and results as JSON\n"
        "  --list               list ops and suites\n");
}

std::vector<int64_t> parse_dims(const std::string& s) {
    std::string body;  // "[4096, 1024]", "4096x1024" and "4096,1024" all read as 4096,1024
    for (char ch : s) {
        if (ch == 'x' || ch == 'X') body += ',';
        else if (ch != '[' && ch != ']' && ch != ' ') body += ch;
    }
    std::vector<int64_t> dims;
    std::stringstream ss(body);
    std::string tok;
    while (std::getline(ss, tok, ',')) {
        size_t pos = 0;
        const long long v = tok.empty() ? -1 : std::stoll(tok, &pos);
        if (v < 0 || pos != tok.size()) throw std::runtime_error("bad shape '" + s + "'");
        dims.push_back(v);
    }
    if (dims.empty()) throw std::runtime_error("bad shape '" + s + "'");
    return dims;
}

std::vector<int> parse_ints(const std::string& s) {
    std::vector<int> v;
    std::stringstream ss(s);
    std::string tok;
    while (std::getline(ss, tok, ',')) v.push_back(std::stoi(tok));
    return v;
}

tops_dtype_t parse_dtype(const std::string& s) {
    if (s == "f32") return TOPS_DTYPE_F32;
    if (s == "f16") return TOPS_DTYPE_F16;
    if (s == "bf16") return TOPS_DTYPE_BF16;
    throw std::runtime_error("unknown dtype '" + s + "' (f32, f16, bf16)");
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i], val;
        const size_t eq = a.find('=');
        bool has_inline = false;
        if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
            val = a.substr(eq + 1);
            a = a.substr(0, eq);
            has_inline = true;
        }
        auto next = [&]() -> std::string {
            if (has_inline) return val;
            if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--help" || a == "-h") { usage(); std::exit(0); }
        else if (a == "--list") o.list = true;
        else if (a == "--op") o.op = next();
        else if (a == "--backend") o.backend = next();
        else if (a == "--device") o.device = std::stoi(next());
        else if (a == "--suite") o.suite = next();
        else if (a == "--dtype") o.dtype = next();
        else if (a == "--shape") o.shapes.push_back(parse_dims(next()));
        else if (a == "--axis") o.axis = std::stoi(next());
        else if (a == "--scale") o.scale = std::stof(next());
        else if (a == "--log") o.log = true;
        else if (a == "--mask") o.mask = true;
        else if (a == "--lengths") o.lengths = true;
        else if (a == "--perm") o.perm = parse_ints(next());
        else if (a == "--tf32") o.tf32 = true;
        else if (a == "--threads") o.threads = parse_ints(next());
        else if (a == "--reps") o.run.timing.min_reps = std::stoi(next());
        else if (a == "--min-time") {
            o.run.timing.min_time_s = std::stod(next());
            o.min_time_set = true;
        }
        else if (a == "--warmup") o.run.timing.warmup = std::stoi(next());
        else if (a == "--cache") {
            const std::string m = next();
            if (m == "cold") o.run.cache = CacheMode::cold;
            else if (m == "warm") o.run.cache = CacheMode::warm;
            else throw std::runtime_error("--cache takes cold or warm");
        }
        else if (a == "--max-pool-mib") o.run.max_pool_bytes = size_t(std::stoull(next())) * kMiB;
        else if (a == "--copy-mib") o.copy_bytes = size_t(std::stoull(next())) * kMiB;
        else if (a == "--no-onednn") o.run.onednn = false;
        else if (a == "--json") o.json = next();
        else throw std::runtime_error("unknown option '" + a + "' (see --help)");
    }
    for (int t : o.threads) {
        if (t < 1) throw std::runtime_error("--threads entries must be >= 1");
    }
    if (!o.suite.empty()) {
        if (o.suite != "cpu" && o.suite != "cuda" && o.suite != "all") {
            throw std::runtime_error("--suite takes cpu, cuda or all");
        }
        if (o.suite != "all") o.backend = o.suite;
        if (o.threads.empty()) o.threads = {1, 2};  // CPU runs; CUDA ignores threads
    }
    if (o.backend != "cpu" && o.backend != "cuda") throw std::runtime_error("--backend takes cpu or cuda");
    return o;
}

std::vector<Case> build_cases(const Options& o, const std::string& backend) {
    const std::vector<Case> standard = backend == "cuda" ? suite_cuda() : suite_cpu();
    std::vector<Case> cases;
    if (!o.suite.empty() || o.shapes.empty()) {
        if (o.suite.empty() && o.op.empty()) throw std::runtime_error("give --suite, or --op (see --help)");
        for (const Case& c : standard) {
            if (o.op.empty() || c.op == o.op) cases.push_back(c);
        }
        if (cases.empty()) throw std::runtime_error("no standard shapes for op '" + o.op + "'");
        return cases;
    }
    if (!find_op(o.op)) throw std::runtime_error("unknown op '" + o.op + "' (see --list)");
    for (const auto& s : o.shapes) {
        Case c;
        c.op = o.op;
        c.dtype = parse_dtype(o.dtype);
        c.shape = s;
        c.axis = o.axis;
        c.scale = o.scale;
        c.log = o.log;
        c.mask = o.mask;
        c.lengths = o.lengths;
        c.perm = o.perm;
        c.tf32 = o.tf32;
        cases.push_back(c);
    }
    return cases;
}

// ------------------------------------------------------------------ output

std::string fixed(double v, int prec) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f", prec, v);
    return buf;
}

void print_header() {
    std::printf("%-18s %-5s %-18s %-44s %3s | %9s %5s %8s %6s %7s %4s | %9s %8s %7s | %s\n", "op", "dtype",
                "shape", "options", "thr", "ms", "iqr%", "GB/s", "%copy", "TFLOP/s", "cpu%", "oneDNN ms", "GB/s",
                "ratio", "check");
    std::printf("%s\n", std::string(184, '-').c_str());
}

void print_row(const Result& r) {
    const std::string thr = r.threads ? std::to_string(r.threads) : "-";
    std::printf("%-18s %-5s %-18s %-44s %3s | ", r.c.op.c_str(), tops_dtype_name(r.c.dtype),
                dims_string(r.c.shape).c_str(), r.args.c_str(), thr.c_str());
    if (r.tops.ok) {
        const bool compute = r.flops > 0;  // compute-bound: TFLOP/s, no % copy
        std::printf("%9s %5s %8s %6s %7s %4s | ", fixed(r.tops.stats.median_s * 1e3, 3).c_str(),
                    fixed(r.tops.stats.iqr_pct(), 1).c_str(), fixed(r.tops.gbs, 2).c_str(),
                    compute ? "-" : (fixed(r.pct_copy, 0) + "%").c_str(),
                    compute ? fixed(r.tops.tflops, 3).c_str() : "-",
                    r.tops.cpu_share >= 0 ? fixed(100 * r.tops.cpu_share, 0).c_str() : "-");
    } else {
        std::printf("%9s %5s %8s %6s %7s %4s | ", "-", "-", "-", "-", "-", "-");
    }
    if (r.onednn.ok) {
        std::printf("%9s %8s %7s | ", fixed(r.onednn.stats.median_s * 1e3, 3).c_str(),
                    fixed(r.onednn.gbs, 2).c_str(), r.ratio > 0 ? (fixed(r.ratio, 2) + "x").c_str() : "-");
    } else {
        std::printf("%9s %8s %7s | ", "-", "-", "-");
    }
    std::string check = r.tops.ok ? r.tops.check : "ERROR";
    if (r.onednn.ok && r.onednn.check != "ok") check += "; oneDNN: " + r.onednn.check;
    std::printf("%s\n", check.c_str());
    std::fflush(stdout);
}

void print_notes(const std::vector<Result>& results) {
    std::printf("\nnotes per case (tops kernel | oneDNN implementation | buffers):\n");
    std::string last;
    std::set<std::string> said;  // lines already printed for this case
    for (const Result& r : results) {
        const std::string key = r.c.op + " " + tops_dtype_name(r.c.dtype) + " " + dims_string(r.c.shape) + " " +
                                r.args;
        if (key != last) {
            std::printf("%s\n  tops %s | oneDNN %s | %s\n", key.c_str(), r.tops.impl.empty() ? "-" : r.tops.impl.c_str(),
                        r.onednn.impl.empty() ? "-" : r.onednn.impl.c_str(), r.cache_state.c_str());
            last = key;
            said.clear();
        }
        std::vector<std::string> lines;
        if (!r.tops.ok) lines.push_back("  tops: " + r.tops.error);
        if (r.tops.ok && r.tops.check != "ok") lines.push_back("  tops check FAILED: " + r.tops.check);
        if (!r.onednn.ok && !r.onednn.error.empty()) lines.push_back("  oneDNN: " + r.onednn.error);
        if (r.onednn.ok && r.onednn.check != "ok") lines.push_back("  oneDNN check FAILED: " + r.onednn.check);
        for (const std::string& l : lines) {
            if (said.insert(l).second) std::printf("%s\n", l.c_str());
        }
    }
}

void write_stats(JsonWriter& j, const char* key, const Measurement& m) {
    if (!m.ok) {
        j.begin_object(key).value("ok", false).value("error", m.error).end_object();
        return;
    }
    j.begin_object(key)
        .value("ok", true)
        .value("impl", m.impl)
        .value("median_ms", m.stats.median_s * 1e3)
        .value("q1_ms", m.stats.q1_s * 1e3)
        .value("q3_ms", m.stats.q3_s * 1e3)
        .value("iqr_pct", m.stats.iqr_pct())
        .value("min_ms", m.stats.min_s * 1e3)
        .value("reps", m.stats.reps)
        .value("gbs", m.gbs)
        .value("tflops", m.tflops > 0 ? m.tflops : NAN)
        .value("cpu_share", m.cpu_share >= 0 ? m.cpu_share : NAN)
        .value("check", m.check)
        .end_object();
}

// One backend's part of a run: its device, copy ceilings and results.
struct BackendRun {
    std::string backend;  // "cpu", "cuda"
    std::string device;
    std::map<int, std::vector<CopyCeiling>> ceilings;
    std::vector<Result> results;
};

void write_json(const std::string& path, const std::string& command, const MachineInfo& mi, const Options& o,
                const std::vector<BackendRun>& runs) {
    std::ofstream f(path);
    if (!f) throw std::runtime_error("cannot write " + path);
    std::string backends, devices;
    for (const BackendRun& b : runs) {
        backends += (backends.empty() ? "" : ",") + b.backend;
        devices += (devices.empty() ? "" : "; ") + b.device;
    }
    JsonWriter j(f);
    j.begin_object();
    j.value("tool", "tops-bench").value("command", command).value("suite", o.suite);
    j.begin_object("machine")
        .value("cpu_model", mi.cpu_model)
        .value("logical_cpus", mi.logical_cpus)
        .value("llc_bytes", static_cast<long long>(mi.llc_bytes))
        .value("cpu_isa", mi.isa)
        .value("tops_version", mi.tops_version)
        .value("load_average_at_start", mi.load_average)
        .value("device", devices)
        .value("onednn", onednn_compiled() ? onednn_version() : std::string("not built"))
        .end_object();
    j.value("backend", backends);
    j.begin_object("timing")
        .value("warmup_calls", o.run.timing.warmup)
        .value("min_reps", o.run.timing.min_reps)
        .value("min_time_s", o.run.timing.min_time_s)
        .value("cache", o.run.cache == CacheMode::cold ? "cold" : "warm")
        .value("statistic", "median of per-call times; iqr = (q3 - q1) / median")
        .value("bytes", "each input read once + each output written once")
        .value("flops", "gemm 2 M N K; attention 4 B H S^2 D, halved when causal; conv2d 2 N K P Q C R S")
        .end_object();
    j.begin_array("ceilings");
    for (const BackendRun& b : runs) {
        for (const auto& [t, list] : b.ceilings) {
            for (size_t k = 0; k < list.size(); ++k) {
                j.begin_object()
                    .value("backend", b.backend)
                    .value("threads", t)
                    .value("name", list[k].name)
                    .value("primary", k == 0)
                    .value("bytes_per_call", list[k].bytes)
                    .value("array_bytes", list[k].array_bytes)
                    .value("calls", list[k].stats.reps)
                    .value("cpu_share", list[k].cpu_share >= 0 ? list[k].cpu_share : NAN)
                    .value("median_ms", list[k].stats.median_s * 1e3)
                    .value("iqr_pct", list[k].stats.iqr_pct())
                    .value("gbs", list[k].gbs())
                    .end_object();
            }
        }
    }
    j.end_array();
    j.begin_array("results");
    for (const BackendRun& b : runs) {
        for (const Result& r : b.results) {
            j.begin_object()
                .value("backend", b.backend)
                .value("op", r.c.op)
                .value("kind", r.flops > 0 ? "compute" : "memory")
                .value("dtype", tops_dtype_name(r.c.dtype))
                .array("shape", r.c.shape)
                .value("options", r.args)
                .value("threads", r.threads)
                .value("bytes", r.bytes)
                .value("flops", r.flops)
                .value("buffer_sets", r.pool_sets)
                .value("buffer_bytes", r.pool_bytes)
                .value("cache_state", r.cache_state);
            write_stats(j, "tops", r.tops);
            j.value("pct_copy", r.tops.ok && r.flops == 0 ? r.pct_copy : NAN);
            j.value("pct_copy_nt", r.tops.ok && r.pct_copy_nt > 0 ? r.pct_copy_nt : NAN);
            write_stats(j, "onednn", r.onednn);
            j.value("ratio_tops_over_onednn", r.ratio > 0 ? r.ratio : NAN);
            j.end_object();
        }
    }
    j.end_array();
    j.end_object();
}

// Runs the cases on one backend ("cpu" or "cuda"): ceilings, then every case.
BackendRun run_backend(const Options& o, const std::string& name, const std::vector<Case>& cases,
                       std::unique_ptr<Device> dev) {
    BackendRun br;
    br.backend = name;
    br.device = dev->description();
    const bool is_cpu = name == "cpu";
    const tops_backend_t backend = is_cpu ? TOPS_BACKEND_CPU : TOPS_BACKEND_CUDA;
    std::vector<int> threads = o.threads;
    if (threads.empty() || !is_cpu) threads = {is_cpu ? omp_get_max_threads() : 0};
    RunOptions run = o.run;
    if (!is_cpu && !o.suite.empty() && !o.min_time_set) run.timing.min_time_s = kCudaSuiteMinTime;

    tops_context_t ctx = nullptr;
    if (tops_context_create(backend, o.device, &ctx) != TOPS_SUCCESS) {
        throw std::runtime_error(std::string("tops_context_create: ") + tops_last_error());
    }
    if (!is_cpu) tops_context_set_stream(ctx, dev->stream());

    std::printf("\n=== backend %s: %zu cases\n", name.c_str(), cases.size());
    std::printf("device     : %s\n", br.device.c_str());
    std::printf("timing     : >= %d warm-up calls and >= %.0f ms, then >= %d reps and >= %.2f s; median, IQR\n",
                run.timing.warmup, run.timing.warmup_s * 1e3, run.timing.min_reps, run.timing.min_time_s);
    if (is_cpu) {
        std::printf("cpu%%       : process CPU time / (wall time x threads) while timing tops; well under 100 "
                    "means other work shared the cores\n");
    }
    const size_t copy_bytes = o.copy_bytes ? o.copy_bytes : std::max(kMinCopyArray, dev->llc_bytes());
    for (int t : threads) {
        br.ceilings[t] = dev->copy_ceilings(is_cpu ? t : 1, copy_bytes);
        for (size_t k = 0; k < br.ceilings[t].size(); ++k) {
            const CopyCeiling& c = br.ceilings[t][k];
            std::printf("ceiling    : %-8s %s%-3s %8.2f GB/s  (median of %d calls of %.0f MiB read + written, "
                        "arrays of %.0f MiB, iqr %.1f%%%s)%s\n",
                        c.name, is_cpu ? "threads " : "", is_cpu ? std::to_string(t).c_str() : "", c.gbs(),
                        c.stats.reps, c.bytes / double(kMiB), c.array_bytes / double(kMiB), c.stats.iqr_pct(),
                        c.cpu_share >= 0 ? (", cpu share " + fixed(100 * c.cpu_share, 0) + "%").c_str() : "",
                        k == 0 ? "  <- %copy uses this" : "");
        }
    }
    std::printf("\n");
    print_header();
    for (const Case& c : cases) {
        for (const Result& r : run_case(*dev, ctx, c, threads, run, br.ceilings)) {
            print_row(r);
            br.results.push_back(r);
        }
    }
    print_notes(br.results);
    tops_context_destroy(ctx);
    return br;
}

int run(int argc, char** argv) {
    Options o = parse(argc, argv);
    if (o.list) {
        std::printf("ops:\n");
        for (const OpEntry& e : op_table()) std::printf("  %-18s %s\n", e.name, e.help);
        std::printf("suites:\n  cpu        %zu cases x threads 1,2, with oneDNN\n  cuda       %zu cases\n"
                    "  all        cpu, then cuda when a CUDA device is usable\n",
                    suite_cpu().size(), suite_cuda().size());
        return 0;
    }
    // Backends to run, with their devices; --suite all skips an unusable CUDA with a note.
    std::vector<std::pair<std::string, std::unique_ptr<Device>>> backends;
    const std::vector<std::string> wanted =
        o.suite == "all" ? std::vector<std::string>{"cpu", "cuda"} : std::vector<std::string>{o.backend};
    for (const std::string& b : wanted) {
        if (b == "cpu") {
            backends.emplace_back(b, make_cpu_device());
            continue;
        }
        std::string why;
        std::unique_ptr<Device> dev = make_cuda_device(o.device, &why);
        if (dev) {
            backends.emplace_back(b, std::move(dev));
        } else if (o.suite == "all") {
            std::printf("backend cuda skipped: %s\n", why.c_str());
        } else {
            throw std::runtime_error("--backend cuda: " + why);
        }
    }

    std::string command = "tops-bench";
    for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
    const MachineInfo mi = machine_info();
    std::printf("tops-bench  %s\n", mi.tops_version.c_str());
    std::printf("machine    : %s, %d logical cpus, LLC %zu MiB, tops cpu isa %s\n", mi.cpu_model.c_str(),
                mi.logical_cpus, mi.llc_bytes >> 20, mi.isa.c_str());
    std::printf("load avg   : %s (1/5/15 min, at start; more than the thread count means shared cores)\n",
                mi.load_average.c_str());
    std::printf("oneDNN     : %s\n", onednn_compiled() ? onednn_version().c_str() : "not built in");
    std::printf("bytes      : each input read once + each output written once; GB = 1e9 bytes\n");
    std::printf("flops      : gemm 2 M N K; attention 4 B H S^2 D (halved when causal); conv2d 2 N K P Q C R S; "
                "TFLOP/s = 1e12\n");

    std::vector<BackendRun> runs;
    for (auto& [name, dev] : backends) runs.push_back(run_backend(o, name, build_cases(o, name), std::move(dev)));
    if (!o.json.empty()) {
        write_json(o.json, command, mi, o, runs);
        std::printf("\nwrote %s\n", o.json.c_str());
    }
    int failures = 0;
    for (const BackendRun& b : runs) {
        for (const Result& r : b.results) {
            if (!r.tops.ok || r.tops.check != "ok") ++failures;
        }
    }
    return failures ? 1 : 0;
}

}  // namespace

}  // namespace bench

int main(int argc, char** argv) {
    try {
        return bench::run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tops-bench: %s\n", e.what());
        return 2;
    }
}
