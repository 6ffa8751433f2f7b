// bert_encoder: a BERT-base encoder stack built from tops ops, with padding
// removal (the "effective transformer" layout): every layer takes the padded
// batch [B, S, H] and gives it back, but between unpad and pad it runs on the
// packed valid tokens only [T, H], T = sum of the lengths:
//
//   unpad -> QKV GEMM + bias -> varlen attention reading Q, K, V out of the
//   packed QKV buffer by strides -> output GEMM + bias -> LayerNorm(+ residual)
//   -> GEMM + bias + GELU -> GEMM + bias -> LayerNorm(+ residual) -> pad
//
// Weights and inputs are deterministic (bert_model.hpp; bench/bert_torch.py
// rebuilds the same ones). Prints a per-op timing table and the total, then
// verifies the output: a CUDA run against the CPU backend in f32, a CPU run
// against an fp64 reference. --graph replays the whole stack as a CUDA graph.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bert_model.hpp"
#include "bert_runtime.hpp"
#include "tops/tops.hpp"

#ifdef TOPS_BERT_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace {

using bert::Clock;
using bert::Config;
using bert::LayerWeights;
using bert::Memory;
using bert::OpId;
using bert::OpObserver;
using bert::OpTimes;
using bert::kNumOps;
using bert::kOpNames;
using bert::median;
using bert::ms_since;
using bert::CpuOpTimer;
using bert::kUnpad, bert::kQkv, bert::kAttention, bert::kOutProj, bert::kNorm1, bert::kFfnUp, bert::kFfnDown,
    bert::kNorm2, bert::kPad;
#ifdef TOPS_BERT_WITH_CUDA
using bert::cuda_check;
using bert::CudaOpTimer;
using bert::time_cuda;
#endif

// ---------------------------------------------------------------- options
struct Options {
    Config c;
    tops_backend_t backend = TOPS_BACKEND_DEFAULT;
    tops_dtype_t dtype = TOPS_DTYPE_INVALID;  // default per backend
    int iters = 0, warmup = -1;               // default per backend
    int threads = 0;
    int verify_seqs = -1;                     // -1: default per backend, 0: all
    bool verify = true;
    bool graph = false;
    bool pack_once = false;
    std::string json_path, output_path;
    bool set_layers = false, set_batch = false, set_seq = false, set_min_len = false;
};

void usage() {
    std::printf(
        "usage: bert_encoder [options]\n"
        "  --backend cpu|cuda|default   default: cuda when usable, else cpu\n"
        "  --dtype f32|f16|bf16         default: f16 on cuda, f32 on cpu\n"
        "  --layers N --batch B --seq S default: 12 x 32 x 128 on cuda, 2 x 4 x 128 on cpu\n"
        "  --min-len L                  lengths uniform in [L, S] (default S/2)\n"
        "  --hidden H --heads N --ffn F default: 768, 12, 3072 (BERT-base)\n"
        "  --seed N                     weights, inputs and lengths (default 1, < 65536)\n"
        "  --iters N --warmup N         timed iterations (median) and warm-up runs\n"
        "  --threads N                  CPU threads (default: OpenMP's)\n"
        "  --graph                      also capture the stack in a CUDA graph and time its replay\n"
        "  --pack-once                  unpad before the first layer and pad after the last only\n"
        "  --verify-seqs N              sequences checked against the reference (0: all)\n"
        "  --no-verify                  skip the check\n"
        "  --json FILE                  write the configuration, timings and error as JSON\n"
        "  --save-output FILE           write the padded output [B, S, H] as raw little-endian f32\n");
}

int64_t parse_int(const char* flag, const char* v) {
    char* end = nullptr;
    const long long x = std::strtoll(v, &end, 10);
    if (!*v || *end || x < 0) throw std::runtime_error(std::string(flag) + ": expected a non-negative integer, got '" + v + "'");
    return x;
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--help" || a == "-h") {
            usage();
            std::exit(0);
        } else if (a == "--backend") {
            const std::string v = value();
            if (v == "cpu") o.backend = TOPS_BACKEND_CPU;
            else if (v == "cuda") o.backend = TOPS_BACKEND_CUDA;
            else if (v == "default") o.backend = TOPS_BACKEND_DEFAULT;
            else throw std::runtime_error("--backend: expected cpu, cuda or default, got '" + v + "'");
        } else if (a == "--dtype") {
            const std::string v = value();
            if (v == "f32") o.dtype = TOPS_DTYPE_F32;
            else if (v == "f16") o.dtype = TOPS_DTYPE_F16;
            else if (v == "bf16") o.dtype = TOPS_DTYPE_BF16;
            else throw std::runtime_error("--dtype: expected f32, f16 or bf16, got '" + v + "'");
        } else if (a == "--layers") {
            o.c.layers = parse_int("--layers", value());
            o.set_layers = true;
        } else if (a == "--batch") {
            o.c.batch = parse_int("--batch", value());
            o.set_batch = true;
        } else if (a == "--seq") {
            o.c.seqlen = parse_int("--seq", value());
            o.set_seq = true;
        } else if (a == "--min-len") {
            o.c.min_len = parse_int("--min-len", value());
            o.set_min_len = true;
        } else if (a == "--hidden") {
            o.c.hidden = parse_int("--hidden", value());
        } else if (a == "--heads") {
            o.c.heads = parse_int("--heads", value());
        } else if (a == "--ffn") {
            o.c.ffn = parse_int("--ffn", value());
        } else if (a == "--seed") {
            o.c.seed = uint64_t(parse_int("--seed", value()));
        } else if (a == "--iters") {
            o.iters = int(parse_int("--iters", value()));
        } else if (a == "--warmup") {
            o.warmup = int(parse_int("--warmup", value()));
        } else if (a == "--threads") {
            o.threads = int(parse_int("--threads", value()));
        } else if (a == "--verify-seqs") {
            o.verify_seqs = int(parse_int("--verify-seqs", value()));
        } else if (a == "--no-verify") {
            o.verify = false;
        } else if (a == "--graph") {
            o.graph = true;
        } else if (a == "--pack-once") {
            o.pack_once = true;
        } else if (a == "--json") {
            o.json_path = value();
        } else if (a == "--save-output") {
            o.output_path = value();
        } else {
            throw std::runtime_error("unknown option '" + a + "' (--help lists them)");
        }
    }
    return o;
}

// Fills what the user left unset from the backend the run got.
void apply_defaults(Options& o, bool cuda) {
    Config& c = o.c;
    if (!o.set_layers) c.layers = cuda ? 12 : 2;
    if (!o.set_batch) c.batch = cuda ? 32 : 4;
    if (!o.set_seq) c.seqlen = 128;
    if (!o.set_min_len) c.min_len = std::max<int64_t>(1, c.seqlen / 2);
    if (o.dtype == TOPS_DTYPE_INVALID) o.dtype = cuda ? TOPS_DTYPE_F16 : TOPS_DTYPE_F32;
    if (o.iters <= 0) o.iters = cuda ? 20 : 3;
    if (o.warmup < 0) o.warmup = cuda ? 3 : 1;
    if (o.verify_seqs < 0) o.verify_seqs = cuda ? 4 : 0;
    if (c.heads < 1 || c.hidden % c.heads != 0) throw std::runtime_error("--hidden must be a multiple of --heads");
    if (c.min_len > c.seqlen) throw std::runtime_error("--min-len must be <= --seq");
    if (c.seed >= 65536) throw std::runtime_error("--seed must be < 65536");
    if (c.batch < 1 || c.seqlen < 1 || c.layers < 1) throw std::runtime_error("--batch, --seq and --layers must be >= 1");
}

// ---------------------------------------------------------------- the encoder

class Encoder {
public:
    // x: the padded input [B, S, H], weights: per layer, all as dtype-rounded f32 values.
    Encoder(const tops::Context& ctx, bool cuda, const Config& c, tops_dtype_t dt, bool pack_once,
            const std::vector<int32_t>& lengths, std::vector<float> x, const std::vector<LayerWeights>& weights)
        : ctx_(ctx), c_(c), dt_(dt), pack_once_(pack_once), lengths_(lengths) {
        const int64_t B = c.batch, S = c.seqlen, H = c.hidden, F = c.ffn;
        for (int32_t l : lengths) {
            total_ += l;
            max_len_ = std::max<int64_t>(max_len_, l);
        }
        const size_t e = bert::dtype_bytes(dt);
        const int64_t T = std::max<int64_t>(total_, 1);
        input_ = upload(cuda, bert::to_storage(x, dt));
        for (Memory& p : padded_) p = Memory(cuda, size_t(B * S * H) * e);
        h_ = Memory(cuda, size_t(T * H) * e);
        qkv_ = Memory(cuda, size_t(T * 3 * H) * e);
        ctx_out_ = Memory(cuda, size_t(T * H) * e);
        a_ = Memory(cuda, size_t(T * H) * e);
        h1_ = Memory(cuda, size_t(T * H) * e);
        f_ = Memory(cuda, size_t(T * F) * e);
        cu_ = Memory(cuda, size_t(B + 1) * 4);
        len_ = Memory(cuda, size_t(B) * 4);
        len_.upload(lengths.data(), size_t(B) * 4);
        for (const LayerWeights& w : weights) {
            std::vector<Memory> layer;
            for (int k = 0; k < bert::kNumTensors; ++k) {
                std::vector<float> v = w.t[k];
                layer.push_back(upload(cuda, bert::to_storage(v, dt)));
            }
            weights_.push_back(std::move(layer));
        }
        create_ops();
        size_t ws = 0;
        for (const tops::Op& op : ops_) ws = std::max(ws, op.workspace_size());
        ws_bytes_ = ws;
        if (ws) workspace_ = Memory(cuda, ws);
    }

    // Runs the whole stack once; the output is in output().
    void run(OpObserver* obs = nullptr) {
        if (obs) obs->before_run();
        const void* in = input_.get();
        for (int64_t l = 0; l < c_.layers; ++l) {
            const bool first = l == 0, last = l + 1 == c_.layers;
            void* out = padded_[l % 2].get();
            if (!pack_once_ || first) exec(kUnpad, {{TOPS_ARG_X, in}, {TOPS_ARG_Y, h_.get()}, {TOPS_ARG_LENGTHS, len_.get()},
                                                    {TOPS_ARG_CU_SEQLENS, cu_.get()}}, obs);
            layer(weights_[size_t(l)], obs);
            if (!pack_once_ || last) exec(kPad, {{TOPS_ARG_X, h_.get()}, {TOPS_ARG_CU_SEQLENS, cu_.get()}, {TOPS_ARG_Y, out}}, obs);
            in = out;
            out_index_ = int(l % 2);
        }
    }

    std::vector<float> output() const {
        std::vector<uint8_t> s(size_t(c_.batch * c_.seqlen * c_.hidden) * bert::dtype_bytes(dt_));
        padded_[out_index_].download(s.data(), s.size());
        return bert::from_storage(s, dt_);
    }

    const char* kernel(OpId op) const { return ops_[op].kernel_name(); }
    int64_t total_tokens() const { return total_; }
    int64_t max_len() const { return max_len_; }
    // Executes of each op in one run.
    int64_t count(OpId op) const {
        if (op == kUnpad || op == kPad) return pack_once_ ? 1 : c_.layers;
        return c_.layers;
    }

private:
    static Memory upload(bool cuda, const std::vector<uint8_t>& bytes) {
        Memory m(cuda, bytes.size());
        m.upload(bytes.data(), bytes.size());
        return m;
    }

    void exec(OpId op, std::initializer_list<tops_arg_t> args, OpObserver* obs) {
        ops_[op].execute(ctx_, args, workspace_.get(), ws_bytes_);
        if (obs) obs->after(op);
    }

    void layer(const std::vector<Memory>& w, OpObserver* obs) {
        const int64_t H = c_.hidden;
        const size_t e = bert::dtype_bytes(dt_);
        const char* qkv = qkv_.at(0);
        exec(kQkv, {{TOPS_ARG_A, h_.get()}, {TOPS_ARG_B, w[bert::kWqkv].get()}, {TOPS_ARG_BIAS, w[bert::kBqkv].get()},
                    {TOPS_ARG_D, qkv_.get()}}, obs);
        exec(kAttention, {{TOPS_ARG_Q, qkv}, {TOPS_ARG_K, qkv + size_t(H) * e}, {TOPS_ARG_V, qkv + size_t(2 * H) * e},
                          {TOPS_ARG_O, ctx_out_.get()}, {TOPS_ARG_CU_SEQLENS_Q, cu_.get()},
                          {TOPS_ARG_CU_SEQLENS_K, cu_.get()}}, obs);
        exec(kOutProj, {{TOPS_ARG_A, ctx_out_.get()}, {TOPS_ARG_B, w[bert::kWo].get()}, {TOPS_ARG_BIAS, w[bert::kBo].get()},
                        {TOPS_ARG_D, a_.get()}}, obs);
        exec(kNorm1, {{TOPS_ARG_X, a_.get()}, {TOPS_ARG_RESIDUAL, h_.get()}, {TOPS_ARG_GAMMA, w[bert::kLn1G].get()},
                      {TOPS_ARG_BETA, w[bert::kLn1B].get()}, {TOPS_ARG_Y, h1_.get()}}, obs);
        exec(kFfnUp, {{TOPS_ARG_A, h1_.get()}, {TOPS_ARG_B, w[bert::kW1].get()}, {TOPS_ARG_BIAS, w[bert::kB1].get()},
                      {TOPS_ARG_D, f_.get()}}, obs);
        exec(kFfnDown, {{TOPS_ARG_A, f_.get()}, {TOPS_ARG_B, w[bert::kW2].get()}, {TOPS_ARG_BIAS, w[bert::kB2].get()},
                        {TOPS_ARG_D, a_.get()}}, obs);
        exec(kNorm2, {{TOPS_ARG_X, a_.get()}, {TOPS_ARG_RESIDUAL, h1_.get()}, {TOPS_ARG_GAMMA, w[bert::kLn2G].get()},
                      {TOPS_ARG_BETA, w[bert::kLn2B].get()}, {TOPS_ARG_Y, h_.get()}}, obs);
    }

    // y[T, n] = x[T, k] @ W[n, k]^T + bias, then act.
    tops::Op gemm(int64_t k, int64_t n, tops_activation_t act) const {
        tops_gemm_desc_t d = tops_gemm_desc_default();
        d.a = tops::tensor(dt_, {total_, k});
        d.b = tops::tensor(dt_, {n, k});
        d.trans_b = 1;
        d.d = tops::tensor(dt_, {total_, n});
        d.bias = tops::tensor(dt_, {n});
        d.act = act;
        tops_op_t op = nullptr;
        tops::check(tops_gemm_create(ctx_.get(), &d, &op));
        return tops::Op(op);
    }

    tops::Op norm() const {
        tops_norm_desc_t d = tops_norm_desc_default();
        d.x = tops::tensor(dt_, {total_, c_.hidden});
        d.y = d.x;
        d.residual = d.x;
        d.gamma = tops::tensor(dt_, {c_.hidden});
        d.beta = d.gamma;
        d.eps = float(c_.ln_eps);
        tops_op_t op = nullptr;
        tops::check(tops_norm_create(ctx_.get(), &d, &op));
        return tops::Op(op);
    }

    void create_ops() {
        const int64_t B = c_.batch, S = c_.seqlen, H = c_.hidden, F = c_.ffn, N = c_.heads, D = c_.head_dim();
        ops_.resize(kNumOps);
        tops_pad_desc_t pd = tops_pad_desc_default();
        pd.padded = tops::tensor(dt_, {B, S, H});
        pd.packed = tops::tensor(dt_, {total_, H});
        pd.lengths = tops::tensor(TOPS_DTYPE_I32, {B});
        pd.cu_seqlens = tops::tensor(TOPS_DTYPE_I32, {B + 1});
        ops_[kUnpad] = tops::Op::unpad(ctx_, pd);
        pd.lengths.dtype = TOPS_DTYPE_INVALID;
        ops_[kPad] = tops::Op::pad(ctx_, pd);
        ops_[kQkv] = gemm(H, 3 * H, TOPS_ACT_NONE);
        ops_[kOutProj] = gemm(H, H, TOPS_ACT_NONE);
        ops_[kFfnUp] = gemm(H, F, TOPS_ACT_GELU_ERF);
        ops_[kFfnDown] = gemm(F, H, TOPS_ACT_NONE);
        ops_[kNorm1] = norm();
        ops_[kNorm2] = norm();
        // Q, K and V are column blocks of the packed [T, 3H] QKV buffer: [T, N, D] views with row stride 3H.
        tops_attention_desc_t ad = tops_attention_desc_default();
        ad.q = tops::tensor(dt_, {total_, N, D}, {3 * H, D, 1});
        ad.k = ad.q;
        ad.v = ad.q;
        ad.o = tops::tensor(dt_, {total_, N, D});
        ad.cu_seqlens_q = tops::tensor(TOPS_DTYPE_I32, {B + 1});
        ad.cu_seqlens_k = ad.cu_seqlens_q;
        ad.max_seqlen_q = int32_t(max_len_);
        ad.max_seqlen_k = int32_t(max_len_);
        tops_op_t op = nullptr;
        tops::check(tops_attention_create(ctx_.get(), &ad, &op));
        ops_[kAttention] = tops::Op(op);
    }

    const tops::Context& ctx_;
    Config c_;
    tops_dtype_t dt_;
    bool pack_once_;
    std::vector<int32_t> lengths_;
    int64_t total_ = 0, max_len_ = 0;
    Memory input_, padded_[2], h_, qkv_, ctx_out_, a_, h1_, f_, cu_, len_, workspace_;
    size_t ws_bytes_ = 0;
    std::vector<std::vector<Memory>> weights_;
    std::vector<tops::Op> ops_;
    int out_index_ = 0;
};


struct Timings {
    OpTimes per_op;        // medians over iterations
    double total_ms = 0;   // median of back-to-back runs without per-op hooks
    double graph_ms = -1;  // median graph replay (--graph)
    bool graph_same = true;
};

// ---------------------------------------------------------------- verification
struct Check {
    bool done = false;
    std::string against;
    int64_t sequences = 0, tokens = 0;
    double max_abs = 0, rel_fro = 0, tolerance = 0;
    int64_t nonzero_padding = 0, non_finite = 0;
    bool pass() const { return !done || (non_finite == 0 && nonzero_padding == 0 && rel_fro <= tolerance); }
};

// Relative Frobenius error allowed for the whole stack's output. f32: well
// under 1e-5 per op (DESIGN.md), over the ~10 ops of a layer; f16 / bf16:
// a few units of the storage rounding (2^-11 / 2^-8) carried through.
double stack_tolerance(tops_dtype_t dt) {
    switch (dt) {
        case TOPS_DTYPE_F16: return 1e-2;
        case TOPS_DTYPE_BF16: return 3e-2;
        default: return 1e-4;
    }
}

std::vector<int64_t> pick_sequences(int64_t batch, int n) {
    std::vector<int64_t> sel;
    if (n <= 0 || n >= batch) {
        for (int64_t b = 0; b < batch; ++b) sel.push_back(b);
        return sel;
    }
    for (int i = 0; i < n; ++i) {
        const int64_t b = n == 1 ? 0 : int64_t(i) * (batch - 1) / (n - 1);
        if (sel.empty() || sel.back() != b) sel.push_back(b);
    }
    return sel;
}

// Adds one sequence's comparison: out and ref are [S, H] and [len, H].
void accumulate(Check& ck, const float* out, const double* ref, int64_t len, const Config& c, double* err2, double* ref2) {
    const int64_t H = c.hidden;
    for (int64_t s = 0; s < c.seqlen; ++s) {
        for (int64_t k = 0; k < H; ++k) {
            const double o = out[s * H + k];
            if (s >= len) {
                if (o != 0.0) ++ck.nonzero_padding;
                continue;
            }
            if (!std::isfinite(o)) {
                ++ck.non_finite;
                continue;
            }
            const double r = ref[s * H + k];
            ck.max_abs = std::max(ck.max_abs, std::fabs(o - r));
            *err2 += (o - r) * (o - r);
            *ref2 += r * r;
        }
    }
    ck.tokens += len;
    ++ck.sequences;
}

Check verify(const Options& o, bool cuda, const std::vector<int32_t>& lengths, const std::vector<float>& x,
             const std::vector<LayerWeights>& weights, const std::vector<float>& out) {
    Check ck;
    ck.done = true;
    ck.tolerance = stack_tolerance(o.dtype);
    const Config& c = o.c;
    const int64_t S = c.seqlen, H = c.hidden;
    const std::vector<int64_t> sel = pick_sequences(c.batch, o.verify_seqs);
    double err2 = 0, ref2 = 0;
    if (cuda) {
        // The same stack on the CPU backend in f32 (inputs and weights hold the same dtype-rounded values).
        ck.against = "the CPU backend in f32";
        Config sub = c;
        sub.batch = int64_t(sel.size());
        std::vector<int32_t> sub_len;
        std::vector<float> sub_x;
        for (int64_t b : sel) {
            sub_len.push_back(lengths[size_t(b)]);
            sub_x.insert(sub_x.end(), x.begin() + b * S * H, x.begin() + (b + 1) * S * H);
        }
        tops::Context cpu(TOPS_BACKEND_CPU);
        if (o.threads > 0) cpu.set_num_threads(o.threads);
        Encoder ref(cpu, false, sub, TOPS_DTYPE_F32, false, sub_len, sub_x, weights);
        ref.run();
        const std::vector<float> r = ref.output();
        std::vector<double> rd(size_t(S * H));
        for (size_t i = 0; i < sel.size(); ++i) {
            std::copy(r.begin() + int64_t(i) * S * H, r.begin() + int64_t(i + 1) * S * H, rd.begin());
            accumulate(ck, &out[size_t(sel[i] * S * H)], rd.data(), sub_len[i], c, &err2, &ref2);
        }
    } else {
        ck.against = "an fp64 reference";
        for (int64_t b : sel) {
            const int64_t len = lengths[size_t(b)];
            std::vector<double> xs(x.begin() + b * S * H, x.begin() + (b * S + len) * H);
            const std::vector<double> r = bert::reference_sequence(c, weights, xs, len);
            accumulate(ck, &out[size_t(b * S * H)], r.data(), len, c, &err2, &ref2);
        }
    }
    ck.rel_fro = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    return ck;
}

// ---------------------------------------------------------------- report
const char* dtype_label(tops_dtype_t dt) { return tops_dtype_name(dt); }

std::string device_text(bool cuda, int threads) {
#ifdef TOPS_BERT_WITH_CUDA
    if (cuda) {
        cudaDeviceProp prop;
        if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) return prop.name;
        return "CUDA device 0";
    }
#endif
    (void)cuda;
    return std::string("CPU, ") + tops_cpu_isa() + (threads > 0 ? ", " + std::to_string(threads) + " threads" : "");
}

void write_json(const Options& o, bool cuda, const std::string& device, const std::vector<int32_t>& lengths,
                const Encoder& enc, const Timings& t, const Check& ck, double flops) {
    FILE* f = std::fopen(o.json_path.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + o.json_path);
    const Config& c = o.c;
    std::fprintf(f, "{\n  \"backend\": \"%s\",\n  \"device\": \"%s\",\n  \"dtype\": \"%s\",\n", cuda ? "cuda" : "cpu",
                 device.c_str(), dtype_label(o.dtype));
    std::fprintf(f,
                 "  \"layers\": %lld,\n  \"hidden\": %lld,\n  \"heads\": %lld,\n  \"ffn\": %lld,\n  \"batch\": %lld,\n"
                 "  \"seqlen\": %lld,\n  \"min_len\": %lld,\n  \"seed\": %llu,\n  \"ln_eps\": %g,\n  \"pack_once\": %s,\n",
                 (long long)c.layers, (long long)c.hidden, (long long)c.heads, (long long)c.ffn, (long long)c.batch,
                 (long long)c.seqlen, (long long)c.min_len, (unsigned long long)c.seed, c.ln_eps,
                 o.pack_once ? "true" : "false");
    std::fprintf(f, "  \"lengths\": [");
    for (size_t i = 0; i < lengths.size(); ++i) std::fprintf(f, "%s%d", i ? ", " : "", lengths[i]);
    std::fprintf(f, "],\n  \"tokens\": %lld,\n  \"iters\": %d,\n  \"per_op_ms\": {", (long long)enc.total_tokens(), o.iters);
    for (int op = 0; op < kNumOps; ++op) {
        std::fprintf(f, "%s\n    \"%s\": {\"ms\": %.6f, \"kernel\": \"%s\", \"count\": %lld}", op ? "," : "", kOpNames[op],
                     t.per_op.ms[op], enc.kernel(OpId(op)), (long long)enc.count(OpId(op)));
    }
    std::fprintf(f, "\n  },\n  \"total_ms\": %.6f,\n  \"tflops\": %.4f,\n", t.total_ms, flops / (t.total_ms * 1e9));
    if (t.graph_ms >= 0) std::fprintf(f, "  \"graph_ms\": %.6f,\n  \"graph_output_identical\": %s,\n", t.graph_ms, t.graph_same ? "true" : "false");
    std::fprintf(f, "  \"verify\": {\"done\": %s, \"against\": \"%s\", \"sequences\": %lld, \"max_abs_err\": %.6g, "
                    "\"rel_fro_err\": %.6g, \"tolerance\": %g, \"nonzero_padding\": %lld, \"non_finite\": %lld, \"pass\": %s}\n}\n",
                 ck.done ? "true" : "false", ck.against.c_str(), (long long)ck.sequences, ck.max_abs, ck.rel_fro, ck.tolerance,
                 (long long)ck.nonzero_padding, (long long)ck.non_finite, ck.pass() ? "true" : "false");
    std::fclose(f);
}

int run(Options o) {
    bool cuda = false;
    const char* why = nullptr;
    const int cuda_ok = tops_backend_available(TOPS_BACKEND_CUDA, &why);
#ifdef TOPS_BERT_WITH_CUDA
    const bool runtime = true;
#else
    const bool runtime = false;
#endif
    if (o.backend == TOPS_BACKEND_CUDA) {
        if (!runtime) throw std::runtime_error("this build of bert_encoder has no CUDA runtime (configure with a CUDA toolkit)");
        if (!cuda_ok) throw std::runtime_error(std::string("CUDA backend unavailable: ") + why);
        cuda = true;
    } else if (o.backend == TOPS_BACKEND_DEFAULT) {
        cuda = runtime && cuda_ok;
    }
    apply_defaults(o, cuda);
    const Config& c = o.c;
    const std::string device = device_text(cuda, o.threads);

    const Clock::time_point t_setup = Clock::now();
    const std::vector<int32_t> lengths = bert::make_lengths(c);
    std::vector<float> x = bert::make_input(c, o.dtype);
    std::vector<LayerWeights> weights;
    for (int64_t l = 0; l < c.layers; ++l) weights.push_back(bert::make_layer(c, l, o.dtype));

    tops::Context ctx(cuda ? TOPS_BACKEND_CUDA : TOPS_BACKEND_CPU);
    if (o.threads > 0) ctx.set_num_threads(o.threads);
#ifdef TOPS_BERT_WITH_CUDA
    cudaStream_t stream = nullptr;
    if (cuda) {
        cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
        ctx.set_stream(stream);
    }
    auto sync = [&]() {
        if (cuda) cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    };
#else
    auto sync = []() {};
#endif
    Encoder enc(ctx, cuda, c, o.dtype, o.pack_once, lengths, x, weights);
    const int64_t T = enc.total_tokens();
    int64_t attn_pairs = 0;
    for (int32_t l : lengths) attn_pairs += int64_t(l) * l;
    const double flops = double(c.layers) * (2.0 * double(T) * double(c.hidden) * double(4 * c.hidden + 2 * c.ffn) +
                                             4.0 * double(attn_pairs) * double(c.hidden));

    std::printf("tops BERT encoder: %lld layers, hidden %lld, %lld heads, FFN %lld, GELU (erf), post-LayerNorm\n",
                (long long)c.layers, (long long)c.hidden, (long long)c.heads, (long long)c.ffn);
    std::printf("backend %s (%s), dtype %s, batch %lld x seq %lld, lengths in [%lld, %lld] (seed %llu): %lld of %lld tokens (%.0f%%)%s\n",
                cuda ? "cuda" : "cpu", device.c_str(), dtype_label(o.dtype), (long long)c.batch, (long long)c.seqlen,
                (long long)c.min_len, (long long)c.seqlen, (unsigned long long)c.seed, (long long)T,
                (long long)(c.batch * c.seqlen), 100.0 * double(T) / double(c.batch * c.seqlen),
                o.pack_once ? ", unpad/pad once per stack" : ", unpad/pad in every layer");
    std::printf("setup (weights, upload, op creation): %.0f ms\n", ms_since(t_setup));

    for (int i = 0; i < o.warmup; ++i) enc.run();
    sync();

    Timings t;
    std::vector<double> op_samples[kNumOps];
    std::vector<double> totals;
    for (int i = 0; i < o.iters; ++i) {
        OpTimes one;
#ifdef TOPS_BERT_WITH_CUDA
        if (cuda) {
            CudaOpTimer timer(stream, size_t(kNumOps * c.layers));
            enc.run(&timer);
            one = timer.finish();
        }
#endif
        if (!cuda) {
            // CPU ops run synchronously and the hooks cost a clock read: these runs give the total too.
            CpuOpTimer timer;
            const Clock::time_point t0 = Clock::now();
            enc.run(&timer);
            totals.push_back(ms_since(t0));
            one = timer.times;
        }
        for (int op = 0; op < kNumOps; ++op) op_samples[op].push_back(one.ms[op]);
    }
    for (int op = 0; op < kNumOps; ++op) t.per_op.ms[op] = median(op_samples[op]);
#ifdef TOPS_BERT_WITH_CUDA
    if (cuda) t.total_ms = time_cuda(stream, o.iters, [&]() { enc.run(); });
#endif
    if (!cuda) t.total_ms = median(totals);
    std::vector<float> out = enc.output();

    if (o.graph) {
#ifdef TOPS_BERT_WITH_CUDA
        if (cuda) {
            cudaGraph_t graph = nullptr;
            cudaGraphExec_t exec = nullptr;
            cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
            enc.run();
            cuda_check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
            cuda_check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
            for (int i = 0; i < o.warmup; ++i) cuda_check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
            t.graph_ms = time_cuda(stream, o.iters, [&]() { cuda_check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch"); });
            t.graph_same = enc.output() == out;
            cudaGraphExecDestroy(exec);
            cudaGraphDestroy(graph);
        }
#endif
        if (!cuda) std::printf("--graph: CUDA graphs need the CUDA backend; skipped on the CPU\n");
    }

    double op_sum = 0;
    for (int op = 0; op < kNumOps; ++op) op_sum += t.per_op.ms[op];
    std::printf("\n%-20s %6s  %-34s %10s %7s\n", "op", "calls", "kernel", "ms/run", "share");
    for (int op = 0; op < kNumOps; ++op) {
        std::printf("%-20s %6lld  %-34s %10.3f %6.1f%%\n", kOpNames[op], (long long)enc.count(OpId(op)), enc.kernel(OpId(op)),
                    t.per_op.ms[op], op_sum > 0 ? 100.0 * t.per_op.ms[op] / op_sum : 0.0);
    }
    std::printf("%-20s %6s  %-34s %10.3f\n", "sum of ops", "", "(each op timed alone)", op_sum);
    std::printf("\ntotal: %.3f ms per run (median of %d): %.0f tokens/s, %.2f TFLOP/s\n", t.total_ms, o.iters,
                double(T) / (t.total_ms * 1e-3), flops / (t.total_ms * 1e9));
    if (t.graph_ms >= 0) {
        std::printf("cuda graph replay: %.3f ms per run (median of %d), output %s the stream run's\n", t.graph_ms, o.iters,
                    t.graph_same ? "identical to" : "DIFFERS from");
    }

    Check ck;
    if (o.verify) {
        const Clock::time_point t0 = Clock::now();
        ck = verify(o, cuda, lengths, x, weights, out);
        std::printf("\nverify: %lld sequences (%lld tokens) against %s: max abs err %.3g, rel Frobenius err %.3g "
                    "(tolerance %.0e), padding rows %s, %s [%.0f ms]\n",
                    (long long)ck.sequences, (long long)ck.tokens, ck.against.c_str(), ck.max_abs, ck.rel_fro, ck.tolerance,
                    ck.nonzero_padding ? "NOT zero" : "zero", ck.pass() ? "PASS" : "FAIL", ms_since(t0));
        if (ck.non_finite) std::printf("verify: %lld non-finite outputs\n", (long long)ck.non_finite);
    }
    if (!o.json_path.empty()) write_json(o, cuda, device, lengths, enc, t, ck, flops);
    if (!o.output_path.empty()) {
        FILE* f = std::fopen(o.output_path.c_str(), "wb");
        if (!f || std::fwrite(out.data(), sizeof(float), out.size(), f) != out.size()) {
            throw std::runtime_error("cannot write " + o.output_path);
        }
        std::fclose(f);
    }
#ifdef TOPS_BERT_WITH_CUDA
    if (stream) cudaStreamDestroy(stream);
#endif
    return ck.pass() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(parse(argc, argv));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bert_encoder: %s\n", e.what());
        return 2;
    }
}
