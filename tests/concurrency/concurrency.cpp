// Concurrency test, meant to run under ThreadSanitizer (preset tsan):
//  - ops created once and shared (softmax, reduce, norm, bias_act, GEMM,
//    attention, transpose): many threads, each with its own CPU context,
//    execute the same op objects at the same time and must reproduce the
//    outputs of a single-threaded run bit for bit;
//  - concurrent create/destroy of contexts and ops, including invalid
//    descriptors whose tops_last_error() text names a per-thread value (the
//    last error is per thread, so no thread may see another's message);
//  - the log callback switched on and off while other threads log through it.
// Contexts use one CPU thread: libgomp is not built with TSan, so its worker
// synchronization is invisible to TSan and would be reported as races.
#include <tops/tops.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 8;
constexpr int kIterations = 20;

std::atomic<int> g_failures{0};

void fail(const std::string& what) {
    std::fprintf(stderr, "concurrency: FAIL: %s\n", what.c_str());
    g_failures.fetch_add(1);
}

bool ok(tops_status_t s, const char* what) {
    if (s == TOPS_SUCCESS) return true;
    fail(std::string(what) + ": " + tops_status_string(s) + ": " + tops_last_error());
    return false;
}

tops_tensor_desc_t dense(tops_dtype_t dtype, std::vector<int64_t> dims) {
    tops_tensor_desc_t d;
    if (tops_tensor_desc_init(&d, dtype, static_cast<int32_t>(dims.size()), dims.data(), nullptr) != TOPS_SUCCESS)
        fail(std::string("tensor_desc_init: ") + tops_last_error());
    return d;
}

int64_t count(const tops_tensor_desc_t& d) {
    int64_t n = 1;
    for (int i = 0; i < d.rank; ++i) n *= d.dims[i];
    return n;
}

// One shared op with its f32 buffers: inputs filled once (read-only in the
// threads), outputs per thread.
struct SharedOp {
    const char* name = "";
    tops_op_t op = nullptr;
    std::vector<tops_arg_kind_t> in_kinds;
    std::vector<std::vector<float>> inputs;
    std::vector<tops_arg_kind_t> out_kinds;
    std::vector<int64_t> out_sizes;
    std::vector<std::vector<float>> expected;  // single-threaded outputs

    std::vector<std::vector<float>> run(tops_context_t ctx) const {
        std::vector<std::vector<float>> outs;
        for (int64_t n : out_sizes) outs.emplace_back(static_cast<size_t>(n), -7.0f);
        std::vector<tops_arg_t> args;
        for (size_t i = 0; i < inputs.size(); ++i) args.push_back({in_kinds[i], inputs[i].data()});
        for (size_t i = 0; i < outs.size(); ++i) args.push_back({out_kinds[i], outs[i].data()});
        size_t ws_bytes = 0;
        ok(tops_op_workspace_size(op, &ws_bytes), name);
        std::vector<unsigned char> ws(ws_bytes);
        ok(tops_op_execute(ctx, op, args.data(), args.size(), ws.data(), ws_bytes), name);
        return outs;
    }
};

std::vector<float> pattern(int64_t n, int seed) {
    std::vector<float> v(static_cast<size_t>(n));
    uint32_t s = 2463534242u + static_cast<uint32_t>(seed);
    for (float& x : v) {
        s ^= s << 13; s ^= s >> 17; s ^= s << 5;
        x = static_cast<float>(s % 2001) / 1000.0f - 1.0f;
    }
    return v;
}

void add_input(SharedOp& s, tops_arg_kind_t kind, const tops_tensor_desc_t& d) {
    s.in_kinds.push_back(kind);
    s.inputs.push_back(pattern(count(d), static_cast<int>(s.inputs.size()) + 1));
}

void add_output(SharedOp& s, tops_arg_kind_t kind, const tops_tensor_desc_t& d) {
    s.out_kinds.push_back(kind);
    s.out_sizes.push_back(count(d));
}

std::vector<SharedOp> make_ops(tops_context_t ctx) {
    std::vector<SharedOp> ops(7);
    {
        SharedOp& s = ops[0];
        s.name = "softmax";
        tops_softmax_desc_t d = tops_softmax_desc_default();
        d.x = dense(TOPS_DTYPE_F32, {8, 33});
        d.y = d.x;
        d.scale = 0.5f;
        add_input(s, TOPS_ARG_X, d.x);
        add_output(s, TOPS_ARG_Y, d.y);
        ok(tops_softmax_create(ctx, &d, &s.op), s.name);
    }
    {
        SharedOp& s = ops[1];
        s.name = "reduce";
        tops_reduce_desc_t d = tops_reduce_desc_default();
        d.op = TOPS_REDUCE_NORM2;
        d.x = dense(TOPS_DTYPE_F32, {6, 50});
        d.y = dense(TOPS_DTYPE_F32, {6});
        d.axes = 1u << 1;
        add_input(s, TOPS_ARG_X, d.x);
        add_output(s, TOPS_ARG_Y, d.y);
        ok(tops_reduce_create(ctx, &d, &s.op), s.name);
    }
    {
        SharedOp& s = ops[2];
        s.name = "norm";
        tops_norm_desc_t d = tops_norm_desc_default();
        d.x = dense(TOPS_DTYPE_F32, {4, 40});
        d.y = d.x;
        d.gamma = dense(TOPS_DTYPE_F32, {40});
        d.beta = d.gamma;
        d.rstd = dense(TOPS_DTYPE_F32, {4});
        add_input(s, TOPS_ARG_X, d.x);
        add_input(s, TOPS_ARG_GAMMA, d.gamma);
        add_input(s, TOPS_ARG_BETA, d.beta);
        add_output(s, TOPS_ARG_Y, d.y);
        add_output(s, TOPS_ARG_RSTD, d.rstd);
        ok(tops_norm_create(ctx, &d, &s.op), s.name);
    }
    {
        SharedOp& s = ops[3];
        s.name = "bias_act";
        tops_bias_act_desc_t d = tops_bias_act_desc_default();
        d.x = dense(TOPS_DTYPE_F32, {9, 20});
        d.bias = dense(TOPS_DTYPE_F32, {1, 20});
        d.y = d.x;
        d.act = TOPS_ACT_GELU_TANH;
        add_input(s, TOPS_ARG_X, d.x);
        add_input(s, TOPS_ARG_BIAS, d.bias);
        add_output(s, TOPS_ARG_Y, d.y);
        ok(tops_bias_act_create(ctx, &d, &s.op), s.name);
    }
    {
        SharedOp& s = ops[4];
        s.name = "gemm";
        tops_gemm_desc_t d = tops_gemm_desc_default();
        d.a = dense(TOPS_DTYPE_F32, {17, 13});
        d.b = dense(TOPS_DTYPE_F32, {13, 9});
        d.d = dense(TOPS_DTYPE_F32, {17, 9});
        d.bias = dense(TOPS_DTYPE_F32, {9});
        d.act = TOPS_ACT_RELU;
        add_input(s, TOPS_ARG_A, d.a);
        add_input(s, TOPS_ARG_B, d.b);
        add_input(s, TOPS_ARG_BIAS, d.bias);
        add_output(s, TOPS_ARG_D, d.d);
        ok(tops_gemm_create(ctx, &d, &s.op), s.name);
    }
    {
        SharedOp& s = ops[5];
        s.name = "attention";
        tops_attention_desc_t d = tops_attention_desc_default();
        d.q = dense(TOPS_DTYPE_F32, {2, 6, 2, 16});
        d.k = dense(TOPS_DTYPE_F32, {2, 9, 1, 16});
        d.v = d.k;
        d.o = d.q;
        d.lse = dense(TOPS_DTYPE_F32, {2, 2, 6});
        d.flags = TOPS_ATTN_CAUSAL;
        add_input(s, TOPS_ARG_Q, d.q);
        add_input(s, TOPS_ARG_K, d.k);
        add_input(s, TOPS_ARG_V, d.v);
        add_output(s, TOPS_ARG_O, d.o);
        add_output(s, TOPS_ARG_LSE, d.lse);
        ok(tops_attention_create(ctx, &d, &s.op), s.name);
    }
    {
        SharedOp& s = ops[6];
        s.name = "transpose";
        tops_transpose_desc_t d = tops_transpose_desc_default();
        d.x = dense(TOPS_DTYPE_F32, {5, 7, 3});
        d.y = dense(TOPS_DTYPE_F32, {3, 5, 7});
        d.perm[0] = 2;
        d.perm[1] = 0;
        d.perm[2] = 1;
        add_input(s, TOPS_ARG_X, d.x);
        add_output(s, TOPS_ARG_Y, d.y);
        ok(tops_transpose_create(ctx, &d, &s.op), s.name);
    }
    return ops;
}

tops_context_t make_context() {
    tops_context_t ctx = nullptr;
    if (!ok(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx), "context_create")) return nullptr;
    ok(tops_context_set_num_threads(ctx, 1), "set_num_threads");
    return ctx;
}

void execute_shared(const std::vector<SharedOp>& ops) {
    tops_context_t ctx = make_context();
    if (!ctx) return;
    for (int it = 0; it < kIterations; ++it) {
        for (const SharedOp& s : ops) {
            std::vector<std::vector<float>> outs = s.run(ctx);
            for (size_t i = 0; i < outs.size(); ++i) {
                if (std::memcmp(outs[i].data(), s.expected[i].data(), outs[i].size() * sizeof(float)) != 0)
                    fail(std::string(s.name) + ": concurrent output differs from the single-threaded one");
            }
        }
    }
    tops_context_destroy(ctx);
}

// Contexts and ops created and destroyed in a loop; every other create is
// invalid with a thread-specific dim, and the error text must name it.
void create_destroy(int tid) {
    for (int it = 0; it < kIterations; ++it) {
        tops_context_t ctx = make_context();
        if (!ctx) return;
        tops_softmax_desc_t d = tops_softmax_desc_default();
        d.x = dense(TOPS_DTYPE_F32, {3, 4 + tid});
        d.y = d.x;
        tops_op_t op = nullptr;
        ok(tops_softmax_create(ctx, &d, &op), "softmax_create");
        std::vector<float> x = pattern(count(d.x), tid), y(x.size());
        tops_arg_t args[2] = {{TOPS_ARG_X, x.data()}, {TOPS_ARG_Y, y.data()}};
        ok(tops_op_execute(ctx, op, args, 2, nullptr, 0), "softmax execute");
        tops_op_destroy(op);

        tops_transpose_desc_t t = tops_transpose_desc_default();
        t.x = dense(TOPS_DTYPE_F32, {2, 3});
        t.y = t.x;
        t.y.dims[1] = -(100 + tid);
        tops_op_t bad = nullptr;
        const tops_status_t s = tops_transpose_create(ctx, &t, &bad);
        const std::string want = std::to_string(-(100 + tid));
        const std::string got = tops_last_error();
        if (s == TOPS_SUCCESS || bad != nullptr) {
            fail("invalid transpose accepted");
            tops_op_destroy(bad);
        } else if (got.find(want) == std::string::npos) {
            fail("thread " + std::to_string(tid) + " sees last error \"" + got + "\" (want " + want + ")");
        }
        const char* why = nullptr;
        (void)tops_backend_available(TOPS_BACKEND_CUDA, &why);
        if (why == nullptr) fail("backend_available gave no reason");
        tops_context_destroy(ctx);
    }
}

std::atomic<long> g_log_lines{0};

void on_log(int level, const char* message, void* user_data) {
    (void)level;
    if (message == nullptr || user_data != &g_log_lines) fail("log callback arguments");
    g_log_lines.fetch_add(1);
}

void toggle_logging() {
    for (int it = 0; it < kIterations; ++it) {
        ok(tops_set_log_callback(on_log, &g_log_lines, it % 2 == 0 ? 2 : 0), "set_log_callback");
        std::this_thread::yield();
    }
}

}  // namespace

int main() {
    ok(tops_set_log_callback(on_log, &g_log_lines, 1), "set_log_callback");
    tops_context_t ctx = make_context();
    if (!ctx) return 1;
    std::vector<SharedOp> ops = make_ops(ctx);
    for (SharedOp& s : ops) {
        if (s.op == nullptr) return 1;
        s.expected = s.run(ctx);
    }

    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(execute_shared, std::cref(ops));
    for (int t = 0; t < kThreads / 2; ++t) threads.emplace_back(create_destroy, t);
    threads.emplace_back(toggle_logging);
    for (std::thread& t : threads) t.join();

    for (SharedOp& s : ops) tops_op_destroy(s.op);
    tops_context_destroy(ctx);
    ok(tops_set_log_callback(nullptr, nullptr, 0), "set_log_callback off");
    if (g_log_lines.load() == 0) fail("the log callback never ran");
    const int failures = g_failures.load();
    std::printf("concurrency: %d threads, %d shared ops, %ld log lines, %d failures\n",
                kThreads + kThreads / 2 + 1, static_cast<int>(ops.size()), g_log_lines.load(), failures);
    return failures == 0 ? 0 : 1;
}
