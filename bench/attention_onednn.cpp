// tops-attention-bench: CPU attention forward of tops against the tops GEMM
// rate and against oneDNN's matmul + softmax + matmul composition, in one
// process on the same buffers.
//
// Shapes: Q, K, V, O (BH, N, D) f32, stored head-major ([B, H, S, D] with
// B = 1), the layout oneDNN's batched matmul wants; tops reads the same
// buffers through [1, N, BH, D] strides. FLOPs 4 * BH * N^2 * D, halved when
// causal (the useful work, whatever a library computes).
//   tops:   tops_attention (flash-style, no N x N buffer);
//   gemm:   tops_gemm f32 M = N = K = min(N, --gemm-max), the rate the
//           acceptance bar compares with;
//   oneDNN: S = scale * Q K^T (matmul with an output scale), [S += causal
//           mask (binary add of a 0 / -inf (N, N) matrix broadcast over
//           heads)], softmax over the last dim in place, O = S V (matmul);
//           heads run in chunks so the f32 S buffer stays <= 256 MiB.
// Timing alternates libraries in rounds (a warm-up call, then calls until
// --round-s seconds have passed); a figure is the median over all of its
// calls; share = process CPU time / (wall time x threads) while timing: well
// below 1 means other work shared the cores. The outputs of tops and oneDNN
// are compared (relative Frobenius difference).
//
// --cpu-time times each call by process CPU time instead of wall time: with
// one thread on a loaded machine that removes the time slices other
// processes took (not their cache pollution).
//
//   tops-attention-bench [--seqs 1024,4096] [--bh 16] [--dim 64] [--threads 1,2]
//                        [--rounds 3] [--round-s 0.5] [--gemm-max 2048] [--cpu-time]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>
#include <tops/tops.h>

namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxScoreBytes = int64_t(256) << 20;  // oneDNN's S buffer per chunk of heads

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double process_cpu_s() {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

std::vector<int64_t> parse_list(const char* s) {
    std::vector<int64_t> v;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) v.push_back(std::stoll(item));
    return v;
}

tops_tensor_desc_t tensor(std::vector<int64_t> dims, std::vector<int64_t> strides) {
    tops_tensor_desc_t d{};
    d.dtype = TOPS_DTYPE_F32;
    d.rank = int32_t(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
        d.dims[i] = dims[i];
        d.strides[i] = strides[i];
    }
    return d;
}

void check(tops_status_t st, const char* what) {
    if (st == TOPS_SUCCESS) return;
    std::fprintf(stderr, "%s: %s: %s\n", what, tops_status_string(st), tops_last_error());
    std::exit(1);
}

// One library's calls across all rounds.
struct Series {
    std::vector<double> calls;
    double wall = 0, cpu = 0;
    double median() const {
        std::vector<double> v = calls;
        std::sort(v.begin(), v.end());
        return v.empty() ? 0 : v[v.size() / 2];
    }
};

// cpu_time: a call's figure is the process CPU time it took instead of its
// wall time (meaningful with one thread on a machine other work shares).
void time_round(const std::function<void()>& f, double round_s, bool cpu_time, Series* s) {
    f();  // warm-up
    const double c0 = process_cpu_s();
    const auto r0 = Clock::now();
    do {
        const auto t0 = Clock::now();
        const double tc = process_cpu_s();
        f();
        s->calls.push_back(cpu_time ? process_cpu_s() - tc : seconds_since(t0));
    } while (seconds_since(r0) < round_s);
    s->wall += seconds_since(r0);
    s->cpu += process_cpu_s() - c0;
}

// oneDNN: S = scale Q K^T [+ mask], softmax(S), O = S V over chunks of heads.
class OnednnAttention {
public:
    OnednnAttention(int64_t bh, int64_t n, int64_t d, bool causal)
        : bh_(bh), n_(n), d_(d), causal_(causal), eng_(dnnl::engine::kind::cpu, 0), stream_(eng_) {
        using dnnl::memory;
        chunk_ = std::clamp<int64_t>(kMaxScoreBytes / (n * n * int64_t(sizeof(float))), 1, bh);
        while (bh % chunk_ != 0) --chunk_;
        s_.resize(size_t(chunk_ * n * n));
        const memory::desc qmd({chunk_, n, d}, memory::data_type::f32, memory::dims{n * d, d, 1});
        const memory::desc ktmd({chunk_, d, n}, memory::data_type::f32, memory::dims{n * d, 1, d});
        const memory::desc smd({chunk_, n, n}, memory::data_type::f32, memory::dims{n * n, n, 1});
        const memory::desc mmd({1, n, n}, memory::data_type::f32, memory::dims{n * n, n, 1});
        dnnl::primitive_attr scaled;
        scaled.set_output_scales(0, {1.0f / std::sqrt(float(d))});
        const dnnl::matmul::primitive_desc qk(dnnl::matmul::desc(qmd, ktmd, smd), scaled, eng_);
        const dnnl::matmul::primitive_desc pv(dnnl::matmul::desc(smd, qmd, qmd), eng_);
        const dnnl::softmax_forward::primitive_desc sm({dnnl::prop_kind::forward_inference, smd, 2}, eng_);
        qk_ = dnnl::matmul(qk);
        pv_ = dnnl::matmul(pv);
        sm_ = dnnl::softmax_forward(sm);
        impl_ = std::string(qk.impl_info_str()) + " + " + sm.impl_info_str();
        if (causal) {
            mask_.resize(size_t(n * n));
            for (int64_t i = 0; i < n; ++i) {
                for (int64_t j = 0; j < n; ++j) mask_[size_t(i * n + j)] = j <= i ? 0.0f : -INFINITY;
            }
            const dnnl::binary::primitive_desc add(dnnl::binary::desc(dnnl::algorithm::binary_add, smd, mmd, smd),
                                                   eng_);
            add_ = dnnl::binary(add);
            impl_ += std::string(" + ") + add.impl_info_str();
            mm_ = memory(mmd, eng_, mask_.data());
        }
        mq_ = memory(qmd, eng_, DNNL_MEMORY_NONE);
        mk_ = memory(ktmd, eng_, DNNL_MEMORY_NONE);
        mv_ = memory(qmd, eng_, DNNL_MEMORY_NONE);
        mo_ = memory(qmd, eng_, DNNL_MEMORY_NONE);
        ms_ = memory(smd, eng_, s_.data());
    }

    void run(const float* q, const float* k, const float* v, float* o) {
        for (int64_t h0 = 0; h0 + chunk_ <= bh_; h0 += chunk_) {
            const int64_t off = h0 * n_ * d_;
            mq_.set_data_handle(const_cast<float*>(q + off));
            mk_.set_data_handle(const_cast<float*>(k + off));
            mv_.set_data_handle(const_cast<float*>(v + off));
            mo_.set_data_handle(o + off);
            qk_.execute(stream_, {{DNNL_ARG_SRC, mq_}, {DNNL_ARG_WEIGHTS, mk_}, {DNNL_ARG_DST, ms_}});
            if (causal_) add_.execute(stream_, {{DNNL_ARG_SRC_0, ms_}, {DNNL_ARG_SRC_1, mm_}, {DNNL_ARG_DST, ms_}});
            sm_.execute(stream_, {{DNNL_ARG_SRC, ms_}, {DNNL_ARG_DST, ms_}});
            pv_.execute(stream_, {{DNNL_ARG_SRC, ms_}, {DNNL_ARG_WEIGHTS, mv_}, {DNNL_ARG_DST, mo_}});
        }
        stream_.wait();
    }
    int64_t chunk() const { return chunk_; }
    const std::string& impl() const { return impl_; }

private:
    int64_t bh_, n_, d_, chunk_ = 1;
    bool causal_;
    dnnl::engine eng_;
    dnnl::stream stream_;
    dnnl::matmul qk_, pv_;
    dnnl::softmax_forward sm_;
    dnnl::binary add_;
    dnnl::memory mq_, mk_, mv_, mo_, ms_, mm_;
    std::vector<float> s_, mask_;
    std::string impl_;
};

}  // namespace

int main(int argc, char** argv) {
    std::vector<int64_t> seqs = {1024, 4096}, threads = {1, 2};
    int64_t bh = 16, dim = 64, gemm_max = 2048;
    int rounds = 3;
    double round_s = 0.5;
    bool cpu_time = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char* next = i + 1 < argc ? argv[i + 1] : "";
        if (a == "--seqs") seqs = parse_list(next), ++i;
        else if (a == "--threads") threads = parse_list(next), ++i;
        else if (a == "--bh") bh = std::stoll(next), ++i;
        else if (a == "--dim") dim = std::stoll(next), ++i;
        else if (a == "--rounds") rounds = std::stoi(next), ++i;
        else if (a == "--round-s") round_s = std::stod(next), ++i;
        else if (a == "--gemm-max") gemm_max = std::stoll(next), ++i;
        else if (a == "--cpu-time") cpu_time = true;
        else {
            std::fprintf(stderr, "usage: %s [--seqs 1024,4096] [--bh 16] [--dim 64] [--threads 1,2] [--rounds 3] "
                                 "[--round-s 0.5] [--gemm-max 2048] [--cpu-time]\n", argv[0]);
            return 2;
        }
    }
    const dnnl_version_t* dv = dnnl::version();
    std::printf("tops-attention-bench: f32, Q/K/V/O (BH, N, D) head-major; %s vs oneDNN %d.%d.%d\n",
                tops_version(), dv->major, dv->minor, dv->patch);
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
        char load[128] = {};
        if (std::fgets(load, sizeof load, f)) std::printf("load average at start: %s", load);
        std::fclose(f);
    }
    std::printf("timing: %s\n", cpu_time ? "process CPU time per call (--cpu-time)" : "wall time per call");
    std::printf("rounds %d x %.2f s per library, interleaved; value = median over all calls (GFLOP/s = 1e9 "
                "FLOP/s; attention 4*BH*N^2*D, halved when causal; GEMM 2*M*N*K); share = CPU time / (wall x threads)\n",
                rounds, round_s);
    std::printf("%5s %3s %6s %3s | %9s %8s %5s | %6s %9s %5s | %9s %8s %5s | %6s %6s | %s\n", "N", "BH", "causal",
                "thr", "tops", "ms", "share", "gemm", "GFLOP/s", "share", "oneDNN", "ms", "share", "t/gemm", "t/dnn",
                "rel.diff");
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> uni(-2.0f, 2.0f);
    for (const int64_t n : seqs) {
        std::vector<float> q(size_t(bh * n * dim)), k(q.size()), v(q.size()), o(q.size()), o_ref(q.size());
        for (std::vector<float>* t : {&q, &k, &v}) {
            for (float& x : *t) x = uni(rng);
        }
        const int64_t g = std::min(n, gemm_max);
        std::vector<float> ga(size_t(g * g)), gb(ga.size()), gd(ga.size());
        for (float& x : ga) x = uni(rng);
        for (float& x : gb) x = uni(rng);
        for (const bool causal : {false, true}) {
            for (const int64_t t : threads) {
                omp_set_num_threads(int(t));
                tops_context_t ctx = nullptr;
                check(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx), "context");
                check(tops_context_set_num_threads(ctx, int(t)), "threads");
                tops_attention_desc_t ad = tops_attention_desc_default();
                ad.q = ad.k = ad.v = ad.o = tensor({1, n, bh, dim}, {bh * n * dim, dim, n * dim, 1});
                ad.flags = causal ? TOPS_ATTN_CAUSAL : 0u;
                tops_op_t attn = nullptr;
                check(tops_attention_create(ctx, &ad, &attn), "attention create");
                size_t ws_bytes = 0;
                tops_op_workspace_size(attn, &ws_bytes);
                std::vector<unsigned char> ws(ws_bytes);
                const tops_arg_t aargs[] = {
                    {TOPS_ARG_Q, q.data()}, {TOPS_ARG_K, k.data()}, {TOPS_ARG_V, v.data()}, {TOPS_ARG_O, o.data()}};
                tops_gemm_desc_t gdesc = tops_gemm_desc_default();
                gdesc.a = gdesc.b = gdesc.d = tensor({g, g}, {g, 1});
                tops_op_t gemm = nullptr;
                check(tops_gemm_create(ctx, &gdesc, &gemm), "gemm create");
                size_t gws_bytes = 0;
                tops_op_workspace_size(gemm, &gws_bytes);
                std::vector<unsigned char> gws(gws_bytes);
                const tops_arg_t gargs[] = {{TOPS_ARG_A, ga.data()}, {TOPS_ARG_B, gb.data()}, {TOPS_ARG_D, gd.data()}};
                OnednnAttention dnn(bh, n, dim, causal);
                const std::function<void()> run_tops = [&] {
                    check(tops_op_execute(ctx, attn, aargs, 4, ws.data(), ws_bytes), "attention");
                };
                const std::function<void()> run_gemm = [&] {
                    check(tops_op_execute(ctx, gemm, gargs, 3, gws.data(), gws_bytes), "gemm");
                };
                const std::function<void()> run_dnn = [&] { dnn.run(q.data(), k.data(), v.data(), o_ref.data()); };
                Series st, sg, sd;
                for (int r = 0; r < rounds; ++r) {
                    time_round(run_tops, round_s, cpu_time, &st);
                    time_round(run_gemm, round_s, cpu_time, &sg);
                    time_round(run_dnn, round_s, cpu_time, &sd);
                }
                double num = 0, den = 0;
                for (size_t i = 0; i < o.size(); ++i) {
                    num += double(o[i] - o_ref[i]) * double(o[i] - o_ref[i]);
                    den += double(o_ref[i]) * double(o_ref[i]);
                }
                const double flops = 4.0 * double(bh) * double(n) * double(n) * double(dim) * (causal ? 0.5 : 1.0);
                const double gflops = 2.0 * double(g) * double(g) * double(g);
                const double rt = flops / st.median() / 1e9, rg = gflops / sg.median() / 1e9;
                const double rd = flops / sd.median() / 1e9;
                auto share = [&](const Series& s) { return s.cpu / (s.wall * double(t)); };
                std::printf("%5lld %3lld %6s %3lld | %9.1f %8.1f %5.2f | %6lld %9.1f %5.2f | %9.1f %8.1f %5.2f | %6.2f %6.2f "
                            "| %.1e\n",
                            (long long)n, (long long)bh, causal ? "yes" : "no", (long long)t, rt, st.median() * 1e3,
                            share(st), (long long)g, rg, share(sg), rd, sd.median() * 1e3, share(sd), rt / rg, rt / rd,
                            std::sqrt(num / den));
                std::fflush(stdout);
                if (n == seqs.front() && !causal && t == threads.front()) {
                    std::printf("      tops kernel %s, workspace %zu bytes; oneDNN %s, heads per chunk %lld\n",
                                tops_op_kernel_name(attn), ws_bytes, dnn.impl().c_str(), (long long)dnn.chunk());
                }
                tops_op_destroy(gemm);
                tops_op_destroy(attn);
                tops_context_destroy(ctx);
            }
        }
    }
    return 0;
}
