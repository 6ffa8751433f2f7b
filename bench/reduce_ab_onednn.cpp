// tops against oneDNN on one reduction, calls alternating one by one (tops-bench
// times each library in its own block, so a VM whose speed drifts biases its
// ratios): sum or max of rows x cols f32 over the last axis, cold buffers
// (sets rotated over about 700 MiB; WARM=1: one set), median of `iters` pairs
// and the median of the per-pair ratios (> 1: tops is faster).
//   g++ -O2 -std=c++17 -Iinclude bench/reduce_ab_onednn.cpp -o /tmp/reduce_ab -L<build> -ltops -ldnnl -fopenmp
//   LD_LIBRARY_PATH=<build> /tmp/reduce_ab rows cols threads iters [max]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dnnl.hpp>
#include <vector>

#include "tops/tops.h"

namespace {

constexpr int64_t kColdBytes = int64_t(700) << 20;
constexpr int kWarmupPairs = 5;

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::fprintf(stderr, "usage: %s rows cols threads iters [max]\n", argv[0]);
        return 2;
    }
    const int64_t rows = std::atoll(argv[1]), cols = std::atoll(argv[2]);
    const int threads = std::atoi(argv[3]), iters = std::atoi(argv[4]);
    const bool is_max = argc > 5 && argv[5][0] == 'm';
    omp_set_num_threads(threads);
    const int64_t bytes = rows * cols * int64_t(sizeof(float));
    const int sets = std::getenv("WARM") ? 1 : int(std::max<int64_t>(4, kColdBytes / bytes));
    std::vector<std::vector<float>> xs(static_cast<size_t>(sets), std::vector<float>(static_cast<size_t>(rows * cols)));
    std::vector<std::vector<float>> ys(static_cast<size_t>(sets), std::vector<float>(static_cast<size_t>(rows)));
    for (auto& x : xs) {
        for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 2654435761u) % 1000) * 1e-3f;
    }

    tops_context_t ctx = nullptr;
    tops_op_t op = nullptr;
    tops_reduce_desc_t d = tops_reduce_desc_default();
    d.op = is_max ? TOPS_REDUCE_MAX : TOPS_REDUCE_SUM;
    const int64_t xd[2] = {rows, cols}, yd[2] = {rows, 1};
    tops_tensor_desc_init(&d.x, TOPS_DTYPE_F32, 2, xd, nullptr);
    tops_tensor_desc_init(&d.y, TOPS_DTYPE_F32, 2, yd, nullptr);
    d.axes = 2;
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
    const dnnl::memory::desc src({rows, cols}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
    const dnnl::memory::desc dst({rows, 1}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
    const auto alg = is_max ? dnnl::algorithm::reduction_max : dnnl::algorithm::reduction_sum;
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
                const tops_arg_t args[2] = {{TOPS_ARG_X, xs[s].data()}, {TOPS_ARG_Y, ys[s].data()}};
                if (tops_op_execute(ctx, op, args, 2, ws.data(), ws.size()) != TOPS_SUCCESS) {
                    std::fprintf(stderr, "tops: %s\n", tops_last_error());
                    return 1;
                }
                a = now() - t0;
            } else {
                ms.set_data_handle(xs[s].data());
                md.set_data_handle(ys[s].data());
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
    std::printf("%s %lldx%lld thr %d: tops %.3f ms  oneDNN %.3f ms  ratio(med of pairs) %.3f  [%s | %s]\n",
                is_max ? "max" : "sum", static_cast<long long>(rows), static_cast<long long>(cols), threads,
                median(t_tops) * 1e3, median(t_dnnl) * 1e3, median(ratio), tops_op_kernel_name(op),
                pd.impl_info_str());
    tops_op_destroy(op);
    tops_context_destroy(ctx);
    return 0;
}
