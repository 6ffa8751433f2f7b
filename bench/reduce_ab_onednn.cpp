// tops against oneDNN on one reduction, calls alternating one by one (tops-bench
// times each library in its own block, so a VM whose speed drifts biases its
// ratios): sum, max or mean of an f32 tensor over its last `k` axes (keepdims),
// cold buffers (sets rotated over about 700 MiB; WARM=1: one set; x
// page-aligned, OFFSET=<bytes> shifts it), median of `iters` pairs and the
// median of the per-pair ratios (> 1: tops is faster).
//   g++ -O2 -std=c++17 -Iinclude bench/reduce_ab_onednn.cpp -o /tmp/reduce_ab -L<build> -ltops -ldnnl -fopenmp
//   LD_LIBRARY_PATH=<build> /tmp/reduce_ab SHAPE sum|max|mean k threads iters
// e.g. `4096x4096 sum 1 1 150` (row sums), `32x256x14x14 mean 2 1 150` (global pool).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dnnl.hpp>
#include <memory>
#include <string>
#include <vector>

#include "tops/tops.h"

namespace {

constexpr int64_t kColdBytes = int64_t(700) << 20;
constexpr int kWarmupPairs = 5;
constexpr size_t kPage = 4096;

struct Free {
    void operator()(float* p) const { std::free(p); }
};

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 6) {
        std::fprintf(stderr, "usage: %s SHAPE sum|max|mean k threads iters\n", argv[0]);
        return 2;
    }
    std::vector<int64_t> xd;
    for (const char* c = argv[1]; *c != '\0';) {
        char* end = nullptr;
        xd.push_back(std::strtoll(c, &end, 10));
        c = *end == 'x' ? end + 1 : end;
        if (end == c && *c != '\0') break;
    }
    const std::string op_name = argv[2];
    const int k = std::atoi(argv[3]), threads = std::atoi(argv[4]), iters = std::atoi(argv[5]);
    const int rank = int(xd.size());
    if (rank < 1 || rank > 6 || k < 1 || k > rank || (op_name != "sum" && op_name != "max" && op_name != "mean")) {
        std::fprintf(stderr, "bad shape, op or k\n");
        return 2;
    }
    std::vector<int64_t> yd = xd;
    int64_t rows = 1, cols = 1;
    for (int i = 0; i < rank; ++i) {
        if (i >= rank - k) {
            cols *= xd[size_t(i)];
            yd[size_t(i)] = 1;
        } else {
            rows *= xd[size_t(i)];
        }
    }
    omp_set_num_threads(threads);
    const int64_t bytes = rows * cols * int64_t(sizeof(float));
    const int sets = std::getenv("WARM") ? 1 : int(std::max<int64_t>(4, kColdBytes / bytes));
    // Page-aligned like tops-bench's buffers; OFFSET=<bytes> shifts x.
    const size_t offset = std::getenv("OFFSET") ? size_t(std::atoll(std::getenv("OFFSET"))) : 0;
    const size_t x_bytes = size_t(rows * cols) * sizeof(float) + offset;
    std::vector<std::unique_ptr<float, Free>> x_bufs, ys;
    std::vector<float*> xs;
    for (int s = 0; s < sets; ++s) {
        x_bufs.emplace_back(static_cast<float*>(std::aligned_alloc(kPage, round_up(x_bytes, kPage))));
        ys.emplace_back(static_cast<float*>(std::aligned_alloc(kPage, round_up(size_t(rows) * sizeof(float), kPage))));
        xs.push_back(reinterpret_cast<float*>(reinterpret_cast<char*>(x_bufs.back().get()) + offset));
        for (int64_t i = 0; i < rows * cols; ++i) xs.back()[i] = float((uint64_t(i) * 2654435761u) % 1000) * 1e-3f;
    }

    tops_context_t ctx = nullptr;
    tops_op_t op = nullptr;
    tops_reduce_desc_t d = tops_reduce_desc_default();
    d.op = op_name == "max" ? TOPS_REDUCE_MAX : op_name == "mean" ? TOPS_REDUCE_MEAN : TOPS_REDUCE_SUM;
    tops_tensor_desc_init(&d.x, TOPS_DTYPE_F32, rank, xd.data(), nullptr);
    tops_tensor_desc_init(&d.y, TOPS_DTYPE_F32, rank, yd.data(), nullptr);
    d.axes = 0;
    for (int i = rank - k; i < rank; ++i) d.axes |= 1u << i;
    d.keepdims = 1;
    size_t ws_bytes = 0;
    if (tops_context_create(TOPS_BACKEND_CPU, 0, &ctx) != TOPS_SUCCESS ||
        tops_context_set_num_threads(ctx, threads) != TOPS_SUCCESS ||
        tops_reduce_create(ctx, &d, &op) != TOPS_SUCCESS || tops_op_workspace_size(op, &ws_bytes) != TOPS_SUCCESS) {
        std::fprintf(stderr, "tops: %s\n", tops_last_error());
        return 1;
    }
    std::vector<unsigned char> ws(ws_bytes);

    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream strm(eng);
    const dnnl::memory::dims sd(xd.begin(), xd.end()), dd(yd.begin(), yd.end());
    using tag = dnnl::memory::format_tag;
    const tag plain[] = {tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde, tag::abcdef};  // row-major by rank
    const dnnl::memory::desc src(sd, dnnl::memory::data_type::f32, plain[rank - 1]);
    const dnnl::memory::desc dst(dd, dnnl::memory::data_type::f32, plain[rank - 1]);
    const auto alg = op_name == "max"    ? dnnl::algorithm::reduction_max
                     : op_name == "mean" ? dnnl::algorithm::reduction_mean
                                         : dnnl::algorithm::reduction_sum;
    const dnnl::reduction::primitive_desc pd({alg, src, dst, 0.f, 0.f}, eng);
    const dnnl::reduction prim(pd);
    dnnl::memory ms(src, eng, DNNL_MEMORY_NONE), md(dst, eng, DNNL_MEMORY_NONE);

    std::vector<double> t_tops, t_dnnl, ratio;
    int next = 0;
    for (int it = 0; it < iters + kWarmupPairs; ++it) {
        double a = 0.0, b = 0.0;
        for (int o = 0; o < 2; ++o) {
            const bool run_tops = (o == 0) == (it % 2 == 0);  // alternate which library goes first
            const size_t s = size_t(next++ % sets);
            const double t0 = now();
            if (run_tops) {
                const tops_arg_t args[2] = {{TOPS_ARG_X, xs[s]}, {TOPS_ARG_Y, ys[s].get()}};
                if (tops_op_execute(ctx, op, args, 2, ws.data(), ws.size()) != TOPS_SUCCESS) {
                    std::fprintf(stderr, "tops: %s\n", tops_last_error());
                    return 1;
                }
                a = now() - t0;
            } else {
                ms.set_data_handle(xs[s]);
                md.set_data_handle(ys[s].get());
                prim.execute(strm, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_DST, md}});
                strm.wait();
                b = now() - t0;
            }
        }
        if (it >= kWarmupPairs) {
            t_tops.push_back(a);
            t_dnnl.push_back(b);
            ratio.push_back(b / a);
        }
    }
    std::printf("%s %s k%d thr %d: tops %.3f ms  oneDNN %.3f ms  ratio(med of pairs) %.3f  [%s | %s]\n",
                op_name.c_str(), argv[1], k, threads,
                median(t_tops) * 1e3, median(t_dnnl) * 1e3, median(ratio), tops_op_kernel_name(op),
                pd.impl_info_str());
    tops_op_destroy(op);
    tops_context_destroy(ctx);
    return 0;
}
