// Attention on every backend x {f32, f16, bf16} x feature case, compared with
// the fp64 reference (O and LSE) and CUDA against CPU. Features: Sq != Sk both
// ways over {1, 7, 64, 65, 127, 128, 129, 1000, 2048} (a sampled grid), causal
// with Sq > Sk (rows with no visible key: O = 0, LSE = -inf), sliding windows,
// GQA ratios 1, 4, 8, key lengths (seqlens_k, lengths 0 and 1 included),
// varlen sequences of lengths 0, 1 and max, [B, H, S, D] storage, padded rows,
// head-dim stride 2, head dims 32..256 and odd ones, custom scale, thread
// counts above the plan's; on CUDA also decode shapes (one-warp tiles) and the
// split-KV count forced to 1 and to its maximum (TOPS_ATTENTION_SPLITS), so
// both the partial + combine path and the long single-block key loop run
// whatever the GPU's size. Also: the workspace stays O(threads * tile) on
// the CPU and O(B * H * Sq) on CUDA (decode: independent of Sk), and
// every validation rule of tops_attention_create returns its status and a
// message naming the argument.
//
// A CUDA instance whose create answers NOT_SUPPORTED skips only when the
// message names a documented limit (head_dim or dtype) or says the backend
// has no attention kernel at all; anything else fails.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <ostream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "harness.hpp"
#include "reference/attention_ref.hpp"

namespace {

using tops_test::Buffer;
using tops_test::ContextHandle;
using tops_test::Layout;
using tops_test::OpHandle;
using tops_test::ScopedEnv;
using tops_test::Tensor;
using tops_test::status_text;
using tops_test::tensor_desc;

// How a [B, S, H, D] (or varlen [T, H, D]) tensor is stored.
enum class Storage {
    bshd,     // dense, token-major
    bhsd,     // dense, head-major ([B, H, S, D] memory order)
    padded,   // token-major with a gap after every row of every dim
    dstride2  // every stride doubled: head-dim stride 2
};

const char* storage_label(Storage s) {
    switch (s) {
        case Storage::bshd: return "bshd";
        case Storage::bhsd: return "bhsd";
        case Storage::padded: return "padded";
        default: return "dstride2";
    }
}

struct AttnCase {
    std::string name;
    int64_t batch = 1, heads = 1, kv_heads = 1, sq = 1, sk = 1, dim = 64;
    bool causal = false;
    int32_t left = -1, right = -1;
    float scale = 0.0f;
    Storage q_store = Storage::bshd, kv_store = Storage::bshd, o_store = Storage::bshd;
    bool seqlens_k = false;
    std::vector<int64_t> var_q, var_k;  // varlen lengths per sequence (empty: padded)
    int64_t extra_max = 0;              // varlen: max_seqlen beyond the longest
    bool lse = true;
    int threads = 0;
    int splits = 0;  // CUDA: forced split-KV count (TOPS_ATTENTION_SPLITS), 0 = the plan's choice
    bool hopper = false;  // CUDA: the sm_90 TMA + wgmma kernel wherever it applies (TOPS_ATTENTION_SM90=1)

    AttnCase& shape(int64_t b, int64_t h, int64_t hk, int64_t q, int64_t k, int64_t d) {
        batch = b, heads = h, kv_heads = hk, sq = q, sk = k, dim = d;
        return *this;
    }
    AttnCase& with_causal() { causal = true; return *this; }
    AttnCase& window(int32_t l, int32_t r) { left = l, right = r; return *this; }
    AttnCase& scaled(float s) { scale = s; return *this; }
    AttnCase& store(Storage q, Storage kv, Storage o) { q_store = q, kv_store = kv, o_store = o; return *this; }
    AttnCase& key_lengths() { seqlens_k = true; return *this; }
    AttnCase& varlen(std::vector<int64_t> q, std::vector<int64_t> k) {
        var_q = std::move(q), var_k = std::move(k);
        batch = int64_t(var_q.size());
        return *this;
    }
    AttnCase& max_slack(int64_t e) { extra_max = e; return *this; }
    AttnCase& no_lse() { lse = false; return *this; }
    AttnCase& num_threads(int t) { threads = t; return *this; }
    AttnCase& kv_splits(int n) { splits = n; return *this; }
    AttnCase& sm90() { hopper = true; return *this; }
    bool is_varlen() const { return !var_q.empty(); }
};

void PrintTo(const AttnCase& c, std::ostream* os) {
    *os << c.name << " B" << c.batch << " H" << c.heads << "/" << c.kv_heads << " Sq" << c.sq << " Sk" << c.sk << " D"
        << c.dim << (c.causal ? " causal" : "") << " window(" << c.left << "," << c.right << ") q "
        << storage_label(c.q_store) << " kv " << storage_label(c.kv_store) << " o " << storage_label(c.o_store)
        << (c.seqlens_k ? " seqlens_k" : "") << (c.is_varlen() ? " varlen" : "") << (c.lse ? " lse" : "")
        << " threads " << c.threads << " splits " << c.splits << (c.hopper ? " sm90" : "");
}

AttnCase ac(std::string name) {
    AttnCase c;
    c.name = std::move(name);
    return c;
}

std::vector<AttnCase> cases() {
    std::vector<AttnCase> v;
    // Sq != Sk both ways across tile edges (64 queries, 128 keys on the CPU).
    const int64_t pairs[][2] = {{1, 1},     {1, 7},     {7, 1},     {7, 64},   {64, 7},   {64, 65},
                                {65, 64},   {127, 128}, {128, 127}, {129, 128}, {128, 129}, {1, 2048},
                                {2048, 7},  {1000, 129}, {129, 1000}, {65, 2048}, {1000, 1000}};
    for (const auto& p : pairs) {
        const std::string n = "q" + std::to_string(p[0]) + "_k" + std::to_string(p[1]);
        v.push_back(ac(n).shape(1, 2, 2, p[0], p[1], 64));
        if (p[0] * p[1] <= 1000 * 1000) v.push_back(ac(n + "_causal").shape(1, 2, 2, p[0], p[1], 64).with_causal());
    }
    const std::vector<AttnCase> more = {
        ac("large_2048").shape(1, 1, 1, 2048, 2048, 32).with_causal(),
        ac("large_q1000_k2048").shape(1, 1, 1, 1000, 2048, 32),
        // causal with Sq > Sk: the first Sq - Sk rows see no key
        ac("causal_q129_k64").shape(2, 2, 1, 129, 64, 64).with_causal(),
        ac("causal_q1000_k127").shape(1, 2, 2, 1000, 127, 32).with_causal(),
        ac("causal_q65_k7").shape(1, 1, 1, 65, 7, 40).with_causal(),
        ac("causal_q7_k1").shape(1, 3, 1, 7, 1, 64).with_causal(),
        // GQA ratios 1, 4, 8
        ac("gqa1").shape(2, 4, 4, 65, 129, 64), ac("gqa4").shape(2, 8, 2, 65, 129, 64),
        ac("gqa8").shape(1, 8, 1, 129, 65, 64), ac("gqa8_causal").shape(1, 8, 1, 200, 300, 32).with_causal(),
        ac("mqa_decode").shape(3, 8, 1, 1, 1000, 64),
        // windows (left, right), with and without causal
        ac("window_16_0").shape(1, 2, 2, 200, 300, 64).window(16, 0),
        ac("window_0_0").shape(1, 2, 2, 129, 129, 64).window(0, 0),
        ac("window_32_8").shape(1, 2, 1, 300, 200, 64).window(32, 8),
        ac("window_left_only").shape(1, 2, 2, 129, 1000, 64).window(100, -1),
        ac("window_right_only").shape(1, 2, 2, 1000, 129, 64).window(-1, 5),
        ac("window_causal_40").shape(1, 2, 2, 500, 500, 64).window(40, 7).with_causal(),
        ac("window_wide").shape(1, 1, 1, 65, 64, 64).window(5000, 5000),
        // the last key of a tile one past the band of the item's first query
        ac("window_edge_tile").shape(1, 1, 1, 300, 300, 64).window(-1, 62),
        ac("window_beyond_keys").shape(1, 1, 1, 64, 300, 64).window(3, -1),
        // key lengths (padded layout): 0, 1, Sk, random
        ac("seqlens_k").shape(5, 2, 2, 65, 200, 64).key_lengths(),
        ac("seqlens_k_causal").shape(5, 2, 1, 129, 200, 64).key_lengths().with_causal(),
        ac("seqlens_k_window").shape(5, 2, 2, 100, 300, 32).key_lengths().window(20, 10),
        // varlen: lengths 0, 1 and max in one batch
        ac("varlen").varlen({0, 1, 129, 64, 7}, {5, 1, 200, 0, 64}).shape(5, 2, 2, 0, 0, 64),
        ac("varlen_causal").varlen({129, 1, 0, 70, 128}, {128, 7, 3, 300, 128}).shape(5, 4, 1, 0, 0, 64).with_causal(),
        ac("varlen_window").varlen({64, 200, 1}, {200, 64, 1}).shape(3, 2, 2, 0, 0, 32).window(16, 4),
        ac("varlen_gqa8_bhsd").varlen({65, 33}, {130, 1}).shape(2, 8, 1, 0, 0, 64)
            .store(Storage::bhsd, Storage::bhsd, Storage::bhsd),
        ac("varlen_max_slack").varlen({10, 20}, {30, 5}).shape(2, 2, 2, 0, 0, 64).max_slack(9),
        ac("varlen_single").varlen({1000}, {1000}).shape(1, 1, 1, 0, 0, 64).with_causal(),
        // storage: [B, H, S, D], padded rows, head-dim stride 2 (mixed too)
        ac("bhsd").shape(2, 3, 3, 129, 65, 64).store(Storage::bhsd, Storage::bhsd, Storage::bhsd),
        ac("padded").shape(2, 3, 1, 65, 129, 64).store(Storage::padded, Storage::padded, Storage::padded),
        ac("dstride2").shape(2, 2, 2, 65, 129, 64).store(Storage::dstride2, Storage::dstride2, Storage::dstride2),
        ac("mixed_storage").shape(2, 4, 2, 100, 70, 32).store(Storage::bhsd, Storage::padded, Storage::dstride2),
        ac("kv_bhsd_causal").shape(1, 2, 2, 300, 300, 64).with_causal().store(Storage::bshd, Storage::bhsd,
                                                                              Storage::bshd),
        // head dims
        ac("d32").shape(1, 2, 2, 129, 200, 32), ac("d96").shape(1, 2, 2, 129, 200, 96),
        ac("d128").shape(1, 2, 2, 129, 200, 128), ac("d256").shape(1, 2, 2, 129, 200, 256),
        ac("d256_causal").shape(1, 1, 1, 300, 300, 256).with_causal(),
        ac("d40").shape(1, 2, 2, 129, 200, 40), ac("d72").shape(1, 2, 2, 129, 200, 72),
        ac("d1").shape(1, 2, 2, 65, 129, 1), ac("d3").shape(1, 2, 2, 65, 129, 3),
        ac("d17").shape(1, 2, 1, 65, 129, 17), ac("d200").shape(1, 1, 1, 65, 129, 200),
        // scale, no LSE, thread counts (3 exceeds this machine's plan-time count)
        ac("scale_03").shape(1, 2, 2, 65, 129, 64).scaled(0.3f),
        ac("scale_tiny").shape(1, 2, 2, 65, 129, 64).scaled(1e-6f),
        ac("no_lse").shape(2, 2, 2, 65, 129, 64).no_lse(),
        ac("threads1").shape(2, 4, 2, 129, 200, 64).num_threads(1),
        ac("threads3").shape(2, 4, 2, 129, 200, 64).num_threads(3).with_causal(),
        ac("threads7").shape(3, 5, 5, 300, 100, 32).num_threads(7),
        // empty
        ac("empty_batch").shape(0, 2, 2, 64, 64, 64), ac("empty_q").shape(2, 2, 2, 0, 64, 64),
        ac("empty_k").shape(2, 2, 2, 64, 0, 64),
        // decode (CUDA: one-warp tiles, split-KV partials + combine), splits
        // forced to 1 (long key loops through both K/V stages) and to the most
        ac("decode_q1_k2048_d128").shape(2, 4, 4, 1, 2048, 128),
        ac("decode_q16_k1000_causal").shape(2, 4, 2, 16, 1000, 64).with_causal(),
        ac("decode_q3_window").shape(1, 8, 1, 3, 2048, 128).window(100, 0),
        ac("decode_seqlens_k").shape(5, 2, 2, 1, 1000, 64).key_lengths(),
        ac("decode_varlen").varlen({1, 0, 5, 16}, {1000, 7, 0, 2048}).shape(4, 4, 2, 0, 0, 128).with_causal(),
        ac("nosplit_q129_k2048").shape(1, 2, 2, 129, 2048, 64).kv_splits(1),
        ac("nosplit_causal_d128").shape(1, 2, 1, 1000, 1000, 128).with_causal().kv_splits(1),
        ac("nosplit_window_d96").shape(1, 2, 2, 300, 1000, 96).window(200, 50).kv_splits(1),
        ac("nosplit_varlen_d256").varlen({129, 0, 300}, {1000, 5, 300}).shape(3, 2, 2, 0, 0, 256).with_causal()
            .kv_splits(1),
        ac("nosplit_decode_bhsd").shape(2, 2, 2, 1, 1000, 64).store(Storage::bhsd, Storage::bhsd, Storage::bhsd)
            .kv_splits(1),
        ac("split64_q65_k2048").shape(1, 2, 2, 65, 2048, 32).kv_splits(64),
        ac("split5_dstride2").shape(1, 2, 1, 7, 1000, 128).store(Storage::dstride2, Storage::dstride2,
                                                                   Storage::dstride2).kv_splits(5),
        // the sm_90 kernel (f16 / bf16, head dims 64 and 128) on small shapes
        // too: several 128-key tiles with a partial last one, Sq just past
        // the decode bound, both causal alignments, windows, GQA, [B, H, S, D]
        // and mixed storage, no LSE, a custom scale; padded strides and
        // other head dims take the mma.sync kernels whatever the setting.
        ac("sm90_q1000_k1000").shape(1, 2, 2, 1000, 1000, 64).sm90(),
        ac("sm90_q129_k2048_d128").shape(1, 2, 2, 129, 2048, 128).sm90(),
        ac("sm90_q17_k7_d128").shape(1, 2, 2, 17, 7, 128).sm90(),
        ac("sm90_q64_k1").shape(2, 2, 2, 64, 1, 64).sm90(),
        ac("sm90_causal_q300_k129").shape(2, 2, 1, 300, 129, 64).with_causal().sm90(),
        ac("sm90_causal_q129_k1000_d128").shape(1, 2, 2, 129, 1000, 128).with_causal().sm90(),
        ac("sm90_causal_2048_d128").shape(1, 1, 1, 2048, 2048, 128).with_causal().sm90(),
        ac("sm90_window_40_7").shape(1, 2, 2, 500, 500, 64).window(40, 7).sm90(),
        ac("sm90_window_left_d128").shape(1, 2, 2, 300, 1000, 128).window(100, -1).sm90(),
        ac("sm90_gqa4_d128").shape(2, 8, 2, 200, 300, 128).sm90(),
        ac("sm90_gqa8").shape(1, 8, 1, 129, 65, 64).with_causal().sm90(),
        ac("sm90_bhsd").shape(2, 3, 3, 129, 65, 64).store(Storage::bhsd, Storage::bhsd, Storage::bhsd).sm90(),
        ac("sm90_mixed_d128").shape(2, 2, 2, 130, 257, 128).with_causal()
            .store(Storage::bshd, Storage::bhsd, Storage::bhsd).sm90(),
        ac("sm90_padded").shape(2, 3, 1, 65, 129, 64).store(Storage::padded, Storage::padded, Storage::padded).sm90(),
        ac("sm90_no_lse_scale").shape(2, 2, 2, 65, 129, 128).no_lse().scaled(0.3f).sm90(),
        ac("sm90_empty_k").shape(2, 2, 2, 64, 0, 64).sm90(),
    };
    v.insert(v.end(), more.begin(), more.end());
    return v;
}

const tops_dtype_t kDtypes[] = {TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16};

std::vector<int64_t> strides_for(const std::vector<int64_t>& dims, Storage s) {
    switch (s) {
        case Storage::bhsd: {
            // memory order: batch, head, seq, dim (varlen: head, token, dim)
            std::vector<int64_t> st(dims.size());
            if (dims.size() == 4) {
                const int64_t S = dims[1], H = dims[2], D = dims[3];
                st = {H * S * D, D, S * D, 1};
            } else {
                const int64_t T = dims[0], D = dims[2];
                st = {D, T * D, 1};
            }
            return st;
        }
        case Storage::padded: return tops_test::make_strides(dims, Layout::Padded);
        case Storage::dstride2: return tops_test::make_strides(dims, Layout::InnerStride2);
        default: return tops_test::make_strides(dims, Layout::Dense);
    }
}

struct Inputs {
    Tensor q, k, v, seqlens_k, cu_q, cu_k;
    std::vector<int64_t> o_dims, lse_dims;
    int32_t max_q = 0, max_k = 0;
};

Inputs make_inputs(const AttnCase& c, tops_dtype_t dt, tops_test::Rng& rng, tops_ref::AttentionProblem* p) {
    Inputs in;
    std::vector<int64_t> qd, kd;
    p->heads = c.heads;
    p->kv_heads = c.kv_heads;
    p->head_dim = c.dim;
    if (c.is_varlen()) {
        const int64_t tq = std::accumulate(c.var_q.begin(), c.var_q.end(), int64_t(0));
        const int64_t tk = std::accumulate(c.var_k.begin(), c.var_k.end(), int64_t(0));
        qd = {tq, c.heads, c.dim};
        kd = {tk, c.kv_heads, c.dim};
        in.lse_dims = {c.heads, tq};
        in.cu_q = Tensor::make(TOPS_DTYPE_I32, {c.batch + 1}, Layout::Dense);
        in.cu_k = Tensor::make(TOPS_DTYPE_I32, {c.batch + 1}, Layout::Dense);
        int64_t oq = 0, ok = 0;
        for (int64_t b = 0; b <= c.batch; ++b) {
            in.cu_q.set_value(b, double(oq));
            in.cu_k.set_value(b, double(ok));
            if (b == c.batch) break;
            p->q_start.push_back(oq);
            p->q_len.push_back(c.var_q[size_t(b)]);
            p->k_start.push_back(ok);
            p->k_len.push_back(c.var_k[size_t(b)]);
            oq += c.var_q[size_t(b)];
            ok += c.var_k[size_t(b)];
        }
        in.max_q = int32_t(*std::max_element(c.var_q.begin(), c.var_q.end()) + c.extra_max);
        in.max_k = int32_t(*std::max_element(c.var_k.begin(), c.var_k.end()) + c.extra_max);
        in.max_q = int32_t(std::min<int64_t>(in.max_q, tq));
        in.max_k = int32_t(std::min<int64_t>(in.max_k, tk));
        p->q_tokens = tq;
        p->k_tokens = tk;
    } else {
        qd = {c.batch, c.sq, c.heads, c.dim};
        kd = {c.batch, c.sk, c.kv_heads, c.dim};
        in.lse_dims = {c.batch, c.heads, c.sq};
        if (c.seqlens_k) in.seqlens_k = Tensor::make(TOPS_DTYPE_I32, {c.batch}, Layout::Dense);
        std::uniform_int_distribution<int64_t> any(0, c.sk);
        for (int64_t b = 0; b < c.batch; ++b) {
            p->q_start.push_back(b * c.sq);
            p->q_len.push_back(c.sq);
            p->k_start.push_back(b * c.sk);
            int64_t len = c.sk;
            if (c.seqlens_k) {
                const int64_t pattern[] = {0, 1, c.sk, any(rng), c.sk - 1};
                len = std::max<int64_t>(0, pattern[b % 5]);
                in.seqlens_k.set_value(b, double(len));
            }
            p->k_len.push_back(len);
        }
        p->q_tokens = c.batch * c.sq;
        p->k_tokens = c.batch * c.sk;
    }
    in.o_dims = qd;
    in.q = Tensor::make(dt, qd, strides_for(qd, c.q_store));
    in.k = Tensor::make(dt, kd, strides_for(kd, c.kv_store));
    in.v = Tensor::make(dt, kd, strides_for(kd, c.kv_store));
    tops_test::fill_uniform(in.q, rng, -2.0, 2.0);
    tops_test::fill_uniform(in.k, rng, -2.0, 2.0);
    tops_test::fill_uniform(in.v, rng, -2.0, 2.0);
    p->q = in.q.logical();
    p->k = in.k.logical();
    p->v = in.v.logical();
    p->scale = c.scale > 0.0f ? double(c.scale) : 1.0 / std::sqrt(double(c.dim));
    p->causal = c.causal;
    p->window_left = c.left;
    p->window_right = c.right;
    return in;
}

tops_attention_desc_t make_desc(const AttnCase& c, const Inputs& in, const Tensor& o, const Tensor* lse) {
    tops_attention_desc_t d = tops_attention_desc_default();
    d.q = in.q.desc();
    d.k = in.k.desc();
    d.v = in.v.desc();
    d.o = o.desc();
    if (lse) d.lse = lse->desc();
    if (c.seqlens_k) d.seqlens_k = in.seqlens_k.desc();
    if (c.is_varlen()) {
        d.cu_seqlens_q = in.cu_q.desc();
        d.cu_seqlens_k = in.cu_k.desc();
        d.max_seqlen_q = in.max_q;
        d.max_seqlen_k = in.max_k;
    }
    d.scale = c.scale;
    d.flags = c.causal ? TOPS_ATTN_CAUSAL : 0u;
    d.window_left = c.left;
    d.window_right = c.right;
    return d;
}

// Why a NOT_SUPPORTED create may be skipped: a documented backend limit.
bool documented_limit(const std::string& msg) {
    return msg.find("head_dim") != std::string::npos || msg.find("dtype") != std::string::npos ||
           msg.find("not implemented on this backend") != std::string::npos;
}

enum class RunOutcome { ok, skipped };

// Runs the case on `backend`: O (and LSE) values, row-major. Checks guard
// zones of every buffer (the workspace too) and that gaps of O and LSE stay
// untouched.
::testing::AssertionResult run_case(tops_backend_t backend, const AttnCase& c, const Inputs& in,
                                    std::vector<double>* o_out, std::vector<double>* lse_out, RunOutcome* outcome,
                                    std::string* skip_why) {
    *outcome = RunOutcome::ok;
    Tensor o = Tensor::make(in.q.dtype, in.o_dims, strides_for(in.o_dims, c.o_store));
    o.poison();
    Tensor lse;
    if (c.lse) {
        lse = Tensor::make(TOPS_DTYPE_F32, in.lse_dims, Layout::Padded);
        lse.poison();
    }
    ContextHandle ctx;
    tops_status_t st = tops_context_create(backend, 0, &ctx.ctx);
    if (st != TOPS_SUCCESS) return ::testing::AssertionFailure() << "context: " << status_text(st);
    if (c.threads > 0) {
        st = tops_context_set_num_threads(ctx.ctx, c.threads);
        if (st != TOPS_SUCCESS) return ::testing::AssertionFailure() << "set_num_threads: " << status_text(st);
    }
    const tops_attention_desc_t d = make_desc(c, in, o, c.lse ? &lse : nullptr);
    OpHandle op;
    {
        const bool cuda = backend == TOPS_BACKEND_CUDA;
        const std::string splits_value = std::to_string(c.splits);
        const ScopedEnv splits("TOPS_ATTENTION_SPLITS", cuda && c.splits > 0 ? splits_value.c_str() : nullptr);
        const ScopedEnv hopper("TOPS_ATTENTION_SM90", cuda && c.hopper ? "1" : nullptr);
        st = tops_attention_create(ctx.ctx, &d, &op.op);
    }
    if (st == TOPS_ERROR_NOT_SUPPORTED && backend != TOPS_BACKEND_CPU && documented_limit(tops_last_error())) {
        *outcome = RunOutcome::skipped;
        *skip_why = tops_last_error();
        return ::testing::AssertionSuccess();
    }
    if (st != TOPS_SUCCESS) return ::testing::AssertionFailure() << "create: " << status_text(st);
    size_t ws_bytes = 0;
    st = tops_op_workspace_size(op.op, &ws_bytes);
    if (st != TOPS_SUCCESS) return ::testing::AssertionFailure() << "workspace_size: " << status_text(st);

    struct Slot {
        tops_arg_kind_t kind;
        Tensor* tensor;
        bool output;
    };
    std::vector<Slot> slots = {{TOPS_ARG_Q, const_cast<Tensor*>(&in.q), false},
                               {TOPS_ARG_K, const_cast<Tensor*>(&in.k), false},
                               {TOPS_ARG_V, const_cast<Tensor*>(&in.v), false},
                               {TOPS_ARG_O, &o, true}};
    if (c.lse) slots.push_back({TOPS_ARG_LSE, &lse, true});
    if (c.seqlens_k) slots.push_back({TOPS_ARG_SEQLENS_K, const_cast<Tensor*>(&in.seqlens_k), false});
    if (c.is_varlen()) {
        slots.push_back({TOPS_ARG_CU_SEQLENS_Q, const_cast<Tensor*>(&in.cu_q), false});
        slots.push_back({TOPS_ARG_CU_SEQLENS_K, const_cast<Tensor*>(&in.cu_k), false});
    }
    std::vector<std::unique_ptr<Buffer>> bufs;
    std::vector<std::vector<uint8_t>> before;
    std::vector<tops_arg_t> args;
    for (const Slot& s : slots) {
        bufs.push_back(std::make_unique<Buffer>(backend, s.tensor->storage.size()));
        bufs.back()->upload(s.tensor->storage);
        before.push_back(s.tensor->storage);
        if (!bufs.back()->error().empty()) return ::testing::AssertionFailure() << "buffer: " << bufs.back()->error();
        args.push_back({s.kind, bufs.back()->ptr()});
    }
    Buffer ws(backend, ws_bytes);
    ws.upload({});  // guard bytes around the workspace (device memory starts undefined)
    st = tops_op_execute(ctx.ctx, op.op, args.data(), args.size(), ws_bytes ? ws.ptr() : nullptr, ws_bytes);
    if (st != TOPS_SUCCESS) {
        return ::testing::AssertionFailure() << "execute (" << tops_op_kernel_name(op.op) << "): " << status_text(st);
    }
    ::testing::AssertionResult synced = tops_test::sync_backend(backend);
    if (!synced) return synced;
    ws.download();
    if (!ws.error().empty()) {
        return ::testing::AssertionFailure() << tops_op_kernel_name(op.op) << " workspace: " << ws.error();
    }
    for (size_t i = 0; i < slots.size(); ++i) {
        const std::vector<uint8_t> got = bufs[i]->download();
        if (!bufs[i]->error().empty()) {
            return ::testing::AssertionFailure() << tops_op_kernel_name(op.op) << ": " << bufs[i]->error();
        }
        if (!slots[i].output) continue;
        slots[i].tensor->storage = got;
        const std::vector<char> covered = slots[i].tensor->covered();
        const size_t esz = slots[i].tensor->esize();
        for (size_t s = 0; s < covered.size(); ++s) {
            if (!covered[s] && std::memcmp(before[i].data() + s * esz, got.data() + s * esz, esz) != 0) {
                return ::testing::AssertionFailure() << tops_op_kernel_name(op.op) << " wrote gap slot " << s;
            }
        }
    }
    *o_out = o.logical();
    if (c.lse) *lse_out = lse.logical();
    return ::testing::AssertionSuccess();
}

// The reference LSE (heads, q_tokens) in the output's order: padded
// [B, H, Sq], varlen [H, total_q] (the same).
std::vector<double> lse_in_output_order(const AttnCase& c, const std::vector<double>& ref_lse) {
    if (c.is_varlen()) return ref_lse;
    std::vector<double> out(ref_lse.size());
    const int64_t tokens = c.batch * c.sq;
    for (int64_t b = 0; b < c.batch; ++b) {
        for (int64_t h = 0; h < c.heads; ++h) {
            for (int64_t i = 0; i < c.sq; ++i) {
                out[size_t((b * c.heads + h) * c.sq + i)] = ref_lse[size_t(h * tokens + b * c.sq + i)];
            }
        }
    }
    return out;
}

using Param = std::tuple<tops_backend_t, tops_dtype_t, AttnCase>;

class AttentionTest : public ::testing::TestWithParam<Param> {};

TEST_P(AttentionTest, MatchesReference) {
    const auto& [backend, dtype, c] = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    TOPS_TRACE_SEED();
    tops_test::Rng rng(tops_test::test_seed());
    tops_ref::AttentionProblem p;
    const Inputs in = make_inputs(c, dtype, rng, &p);
    const tops_ref::AttentionResult ref = tops_ref::attention(p);
    const std::vector<double> ref_lse = lse_in_output_order(c, ref.lse);

    std::vector<double> o, lse;
    RunOutcome outcome;
    std::string why;
    ASSERT_TRUE(run_case(backend, c, in, &o, &lse, &outcome, &why));
    if (outcome == RunOutcome::skipped) GTEST_SKIP() << tops_backend_name(backend) << " documents: " << why;
    EXPECT_TRUE(tops_test::compare_values(o, ref.o, tops_test::tolerance(dtype), in.o_dims, "o vs fp64 reference",
                                          /*zeros_exact=*/true));
    // LSE is f32 from f32 scores whatever the input dtype (the reference
    // sees the same rounded inputs).
    if (c.lse) {
        EXPECT_TRUE(tops_test::compare_values(lse, ref_lse, tops_test::tolerance(TOPS_DTYPE_F32), in.lse_dims,
                                              "lse vs fp64 reference"));
    }
    if (backend != TOPS_BACKEND_CPU && tops_test::backend_ready(TOPS_BACKEND_CPU, nullptr)) {
        std::vector<double> o_cpu, lse_cpu;
        ASSERT_TRUE(run_case(TOPS_BACKEND_CPU, c, in, &o_cpu, &lse_cpu, &outcome, &why));
        EXPECT_TRUE(tops_test::compare_values(o, o_cpu, tops_test::cross_backend_tolerance(dtype), in.o_dims,
                                              "o vs the CPU backend"));
        if (c.lse) {
            EXPECT_TRUE(tops_test::compare_values(lse, lse_cpu, tops_test::cross_backend_tolerance(TOPS_DTYPE_F32),
                                                  in.lse_dims, "lse vs the CPU backend"));
        }
    }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
    const auto& [backend, dtype, c] = info.param;
    return std::string(tops_backend_name(backend)) + "_" + tops_dtype_name(dtype) + "_" + c.name;
}

INSTANTIATE_TEST_SUITE_P(All, AttentionTest,
                         ::testing::Combine(::testing::ValuesIn(tops_test::all_backends()),
                                            ::testing::ValuesIn(kDtypes), ::testing::ValuesIn(cases())),
                         param_name);

// ------------------------------------------------------------------ memory

// Workspace of a dense [B, S, H, D] problem on `backend` (0 when create fails).
size_t workspace_for(tops_backend_t backend, int64_t b, int64_t h, int64_t s, int64_t d, tops_dtype_t dt,
                     std::string* err) {
    ContextHandle ctx;
    if (tops_context_create(backend, 0, &ctx.ctx) != TOPS_SUCCESS) {
        *err = tops_last_error();
        return 0;
    }
    const Tensor q = Tensor::make(dt, {b, s, h, d}, Layout::Dense);
    tops_attention_desc_t desc = tops_attention_desc_default();
    desc.q = desc.k = desc.v = desc.o = q.desc();
    OpHandle op;
    if (tops_attention_create(ctx.ctx, &desc, &op.op) != TOPS_SUCCESS) {
        *err = tops_last_error();
        return 0;
    }
    size_t ws = 0;
    tops_op_workspace_size(op.op, &ws);
    return ws;
}

// The most threads the CPU plan may size its workspace for: OpenMP's
// default team is the core count unless OMP_NUM_THREADS says otherwise.
double max_cpu_threads() {
    double n = std::max(1u, std::thread::hardware_concurrency());
    if (const char* env = std::getenv("OMP_NUM_THREADS")) n = std::max(n, std::atof(env));
    return n;
}

class AttentionMemoryTest : public ::testing::TestWithParam<tops_backend_t> {};

// No Sq x Sk buffer: the workspace at Sq = Sk = 4096 is far below one score
// matrix and grows at most linearly with the sequence (CPU: not at all; it
// is a few tiles per thread).
TEST_P(AttentionMemoryTest, WorkspaceIsLinearInSequence) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = backend == TOPS_BACKEND_CPU ? TOPS_DTYPE_F32 : TOPS_DTYPE_F16;
    const int64_t B = 2, H = 8, D = 64, kLong = 4096, kShort = 1024;
    std::string err;
    const size_t ws_long = workspace_for(backend, B, H, kLong, D, dt, &err);
    ASSERT_TRUE(err.empty()) << err;
    const size_t ws_short = workspace_for(backend, B, H, kShort, D, dt, &err);
    ASSERT_TRUE(err.empty()) << err;
    const double score_matrix = double(kLong) * double(kLong) * sizeof(float);
    EXPECT_LT(double(ws_long), score_matrix / 16) << "workspace " << ws_long << " bytes";
    // O(B * H * Sq): at most a few f32 values per query row and head.
    EXPECT_LE(double(ws_long), double(B * H * kLong) * double(D + 2) * sizeof(float) + (1 << 20));
    EXPECT_LE(double(ws_long), 4.0 * double(ws_short) + 4096.0) << "grows faster than the sequence";
    if (backend == TOPS_BACKEND_CPU) {
        // A few (query tile x key tile) f32 tiles per thread: independent of the sequence.
        const double tile_bytes = 64.0 * 128.0 * sizeof(float);
        EXPECT_EQ(ws_long, ws_short);
        EXPECT_LE(double(ws_long), max_cpu_threads() * 8.0 * tile_bytes + 4096.0);
    }
}

// Decode (Sq = 1): the CUDA split-KV partials are O(B * H * Sq * splits * D)
// with a bounded split count, so the workspace stops growing with Sk.
TEST_P(AttentionMemoryTest, DecodeWorkspaceIndependentOfKeys) {
    const tops_backend_t backend = GetParam();
    TOPS_SKIP_UNLESS_READY(backend);
    const tops_dtype_t dt = backend == TOPS_BACKEND_CPU ? TOPS_DTYPE_F32 : TOPS_DTYPE_F16;
    const int64_t B = 2, H = 4, D = 128, kMaxSplits = 64;
    std::string err;
    size_t ws[2] = {};
    const int64_t keys[2] = {int64_t(1) << 16, int64_t(1) << 20};
    for (int i = 0; i < 2; ++i) {
        ContextHandle ctx;
        ASSERT_EQ(tops_context_create(backend, 0, &ctx.ctx), TOPS_SUCCESS) << tops_last_error();
        // Descriptors only: nothing is allocated or executed.
        tops_attention_desc_t desc = tops_attention_desc_default();
        desc.q = desc.o = tensor_desc(dt, {B, 1, H, D});
        desc.k = desc.v = tensor_desc(dt, {B, keys[i], H, D});
        OpHandle op;
        ASSERT_EQ(tops_attention_create(ctx.ctx, &desc, &op.op), TOPS_SUCCESS) << tops_last_error();
        ASSERT_EQ(tops_op_workspace_size(op.op, &ws[i]), TOPS_SUCCESS);
    }
    EXPECT_EQ(ws[0], ws[1]) << "workspace grows with Sk";
    if (backend == TOPS_BACKEND_CPU) return;  // CPU: per-thread tiles, bounded by WorkspaceIsLinearInSequence
    EXPECT_LE(double(ws[1]), double(B * H * 1 * kMaxSplits * (D + 1)) * sizeof(float) + 4096.0);
}

INSTANTIATE_TEST_SUITE_P(All, AttentionMemoryTest, ::testing::ValuesIn(tops_test::all_backends()),
                         [](const ::testing::TestParamInfo<tops_backend_t>& info) {
                             return std::string(tops_backend_name(info.param));
                         });

// ------------------------------------------------------------------ validation

// A valid padded desc: q, o [2, 5, 4, D]; k, v [2, 7, 2, D].
struct ValidDesc {
    Tensor q = Tensor::make(TOPS_DTYPE_F32, {2, 5, 4, 8}, Layout::Dense);
    Tensor kv = Tensor::make(TOPS_DTYPE_F32, {2, 7, 2, 8}, Layout::Dense);
    tops_attention_desc_t d = tops_attention_desc_default();
    ValidDesc() {
        d.q = d.o = q.desc();
        d.k = d.v = kv.desc();
    }
};

struct Rule {
    const char* name;
    void (*mutate)(tops_attention_desc_t&);
    tops_status_t status;
    const char* names;  // what the message must mention
};

void varlen_base(tops_attention_desc_t& d) {
    d.q = d.o = tensor_desc(TOPS_DTYPE_F16, {10, 4, 8});
    d.k = d.v = tensor_desc(TOPS_DTYPE_F16, {12, 2, 8});
    d.cu_seqlens_q = d.cu_seqlens_k = tensor_desc(TOPS_DTYPE_I32, {3});
    d.max_seqlen_q = 10;
    d.max_seqlen_k = 12;
}

const Rule kRules[] = {
    {"struct_size", [](tops_attention_desc_t& d) { d.struct_size = 8; }, TOPS_ERROR_BAD_STRUCT_SIZE, "struct_size"},
    {"q_dtype_invalid", [](tops_attention_desc_t& d) { d.q.dtype = tops_dtype_t(99); }, TOPS_ERROR_BAD_DTYPE, "q.dtype"},
    {"q_dtype_int", [](tops_attention_desc_t& d) { d.q.dtype = TOPS_DTYPE_I32; d.k.dtype = d.v.dtype = d.o.dtype = TOPS_DTYPE_I32; },
     TOPS_ERROR_BAD_DTYPE, "q.dtype"},
    {"k_dtype_mismatch", [](tops_attention_desc_t& d) { d.k.dtype = TOPS_DTYPE_F16; }, TOPS_ERROR_BAD_DTYPE, "k.dtype"},
    {"v_dtype_mismatch", [](tops_attention_desc_t& d) { d.v.dtype = TOPS_DTYPE_BF16; }, TOPS_ERROR_BAD_DTYPE, "v.dtype"},
    {"o_dtype_mismatch", [](tops_attention_desc_t& d) { d.o.dtype = TOPS_DTYPE_F16; }, TOPS_ERROR_BAD_DTYPE, "o.dtype"},
    {"q_negative_dim", [](tops_attention_desc_t& d) { d.q.dims[1] = -5; }, TOPS_ERROR_BAD_SHAPE, "q.dims[1]"},
    {"q_rank", [](tops_attention_desc_t& d) { d.q = d.o = tensor_desc(TOPS_DTYPE_F32, {2, 5, 32}); }, TOPS_ERROR_BAD_RANK, "q.rank"},
    {"k_head_dim", [](tops_attention_desc_t& d) { d.k = d.v = tensor_desc(TOPS_DTYPE_F32, {2, 7, 2, 16}); }, TOPS_ERROR_BAD_SHAPE,
     "k head_dim"},
    {"o_dims", [](tops_attention_desc_t& d) { d.o = tensor_desc(TOPS_DTYPE_F32, {2, 6, 4, 8}); }, TOPS_ERROR_BAD_SHAPE, "o's dims"},
    {"v_dims", [](tops_attention_desc_t& d) { d.v = tensor_desc(TOPS_DTYPE_F32, {2, 6, 2, 8}); }, TOPS_ERROR_BAD_SHAPE, "v.dims[1]"},
    {"heads_not_multiple", [](tops_attention_desc_t& d) { d.k = d.v = tensor_desc(TOPS_DTYPE_F32, {2, 7, 3, 8}); },
     TOPS_ERROR_BAD_SHAPE, "heads"},
    {"head_dim_zero", [](tops_attention_desc_t& d) {
         d.q = d.o = tensor_desc(TOPS_DTYPE_F32, {2, 5, 4, 0});
         d.k = d.v = tensor_desc(TOPS_DTYPE_F32, {2, 7, 2, 0});
     }, TOPS_ERROR_BAD_SHAPE, "head_dim"},
    {"k_batch", [](tops_attention_desc_t& d) { d.k = d.v = tensor_desc(TOPS_DTYPE_F32, {3, 7, 2, 8}); }, TOPS_ERROR_BAD_SHAPE,
     "k batch"},
    {"o_overlap", [](tops_attention_desc_t& d) { d.o.strides[1] = 0; }, TOPS_ERROR_BAD_STRIDE, "attention: o"},
    {"lse_dtype", [](tops_attention_desc_t& d) { d.lse = tensor_desc(TOPS_DTYPE_F16, {2, 4, 5}); }, TOPS_ERROR_BAD_DTYPE, "lse.dtype"},
    {"lse_dims", [](tops_attention_desc_t& d) { d.lse = tensor_desc(TOPS_DTYPE_F32, {2, 5, 4}); }, TOPS_ERROR_BAD_SHAPE, "lse"},
    {"lse_rank", [](tops_attention_desc_t& d) { d.lse = tensor_desc(TOPS_DTYPE_F32, {2, 20}); }, TOPS_ERROR_BAD_RANK, "lse"},
    {"lse_overlap", [](tops_attention_desc_t& d) { d.lse = tensor_desc(TOPS_DTYPE_F32, {2, 4, 5}, {20, 0, 1}); },
     TOPS_ERROR_BAD_STRIDE, "attention: lse"},
    {"seqlens_k_dtype", [](tops_attention_desc_t& d) { d.seqlens_k = tensor_desc(TOPS_DTYPE_F32, {2}); }, TOPS_ERROR_BAD_DTYPE,
     "seqlens_k.dtype"},
    {"seqlens_k_shape", [](tops_attention_desc_t& d) { d.seqlens_k = tensor_desc(TOPS_DTYPE_I32, {3}); }, TOPS_ERROR_BAD_SHAPE,
     "seqlens_k"},
    {"flags", [](tops_attention_desc_t& d) { d.flags = 0x10; }, TOPS_ERROR_INVALID_ARGUMENT, "flags"},
    {"window_left", [](tops_attention_desc_t& d) { d.window_left = -2; }, TOPS_ERROR_INVALID_ARGUMENT, "window"},
    {"window_right", [](tops_attention_desc_t& d) { d.window_right = -7; }, TOPS_ERROR_INVALID_ARGUMENT, "window"},
    {"scale_negative", [](tops_attention_desc_t& d) { d.scale = -1.0f; }, TOPS_ERROR_INVALID_ARGUMENT, "scale"},
    {"scale_nan", [](tops_attention_desc_t& d) { d.scale = std::numeric_limits<float>::quiet_NaN(); },
     TOPS_ERROR_INVALID_ARGUMENT, "scale"},
    {"scale_inf", [](tops_attention_desc_t& d) { d.scale = std::numeric_limits<float>::infinity(); },
     TOPS_ERROR_INVALID_ARGUMENT, "scale"},
    {"varlen_missing_cu_k", [](tops_attention_desc_t& d) {
         varlen_base(d);
         d.cu_seqlens_k = tops_tensor_desc_t{};
     }, TOPS_ERROR_INVALID_ARGUMENT, "cu_seqlens_k"},
    {"varlen_missing_cu_q", [](tops_attention_desc_t& d) {
         varlen_base(d);
         d.cu_seqlens_q = tops_tensor_desc_t{};
     }, TOPS_ERROR_INVALID_ARGUMENT, "cu_seqlens_q"},
    {"varlen_rank", [](tops_attention_desc_t& d) {
         d.cu_seqlens_q = d.cu_seqlens_k = tensor_desc(TOPS_DTYPE_I32, {3});
     }, TOPS_ERROR_BAD_RANK, "q.rank"},
    {"cu_seqlens_q_dtype", [](tops_attention_desc_t& d) {
         varlen_base(d);
         d.cu_seqlens_q = tensor_desc(TOPS_DTYPE_U8, {3});
     }, TOPS_ERROR_BAD_DTYPE, "cu_seqlens_q.dtype"},
    {"cu_seqlens_k_length", [](tops_attention_desc_t& d) {
         varlen_base(d);
         d.cu_seqlens_k = tensor_desc(TOPS_DTYPE_I32, {4});
     }, TOPS_ERROR_BAD_SHAPE, "cu_seqlens_k"},
    {"cu_seqlens_q_rank", [](tops_attention_desc_t& d) {
         varlen_base(d);
         d.cu_seqlens_q = tensor_desc(TOPS_DTYPE_I32, {1, 3});
     }, TOPS_ERROR_BAD_SHAPE, "cu_seqlens_q"},
    {"varlen_seqlens_k", [](tops_attention_desc_t& d) {
         varlen_base(d);
         d.seqlens_k = tensor_desc(TOPS_DTYPE_I32, {2});
     }, TOPS_ERROR_INVALID_ARGUMENT, "seqlens_k"},
    {"max_seqlen_q_range", [](tops_attention_desc_t& d) {
         varlen_base(d);
         d.max_seqlen_q = 11;
     }, TOPS_ERROR_BAD_SHAPE, "max_seqlen_q"},
    {"max_seqlen_k_negative", [](tops_attention_desc_t& d) {
         varlen_base(d);
         d.max_seqlen_k = -1;
     }, TOPS_ERROR_BAD_SHAPE, "max_seqlen_k"},
    {"varlen_lse_dims", [](tops_attention_desc_t& d) {
         varlen_base(d);
         d.lse = tensor_desc(TOPS_DTYPE_F32, {10, 4});
     }, TOPS_ERROR_BAD_SHAPE, "lse"},
};

class CapiAttentionValidation : public ::testing::TestWithParam<Rule> {};

TEST_P(CapiAttentionValidation, StatusAndMessage) {
    const Rule& r = GetParam();
    ContextHandle ctx;
    ASSERT_EQ(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx.ctx), TOPS_SUCCESS);
    ValidDesc v;
    OpHandle op;
    ASSERT_EQ(tops_attention_create(ctx.ctx, &v.d, &op.op), TOPS_SUCCESS) << tops_last_error();
    op.reset();
    r.mutate(v.d);
    const tops_status_t st = tops_attention_create(ctx.ctx, &v.d, &op.op);
    EXPECT_EQ(st, r.status) << tops_status_string(st) << ": " << tops_last_error();
    const std::string msg = tops_last_error();
    EXPECT_NE(msg.find("attention"), std::string::npos) << msg;
    EXPECT_NE(msg.find(r.names), std::string::npos) << "message should name '" << r.names << "': " << msg;
    EXPECT_EQ(op.op, nullptr);
}

INSTANTIATE_TEST_SUITE_P(Rules, CapiAttentionValidation, ::testing::ValuesIn(kRules),
                         [](const ::testing::TestParamInfo<Rule>& info) { return std::string(info.param.name); });

TEST(CapiAttention, NullArguments) {
    ContextHandle ctx;
    ASSERT_EQ(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx.ctx), TOPS_SUCCESS);
    ValidDesc v;
    tops_op_t op = nullptr;
    EXPECT_EQ(tops_attention_create(ctx.ctx, nullptr, &op), TOPS_ERROR_NULL_POINTER);
    EXPECT_NE(std::string(tops_last_error()).find("desc"), std::string::npos) << tops_last_error();
    EXPECT_EQ(tops_attention_create(nullptr, &v.d, &op), TOPS_ERROR_NULL_POINTER);
    EXPECT_NE(std::string(tops_last_error()).find("ctx"), std::string::npos) << tops_last_error();
    EXPECT_EQ(tops_attention_create(ctx.ctx, &v.d, nullptr), TOPS_ERROR_NULL_POINTER);
}

// The CPU reads cu_seqlens on the host and refuses offsets that would read
// outside the packed tensors or past max_seqlen.
TEST(CapiAttention, CpuRejectsBadOffsets) {
    struct BadOffsets {
        int32_t cu[3];
        const char* names;
    };
    const BadOffsets bad[] = {{{0, 6, 4}, "cu_seqlens_q decreases"},
                              {{0, 4, 11}, "cu_seqlens_q[2] = 11 exceeds"},
                              {{-1, 4, 9}, "cu_seqlens_q[0] = -1"},
                              {{0, 1, 10}, "exceeds max_seqlen_q"}};
    for (const BadOffsets& b : bad) {
        ContextHandle ctx;
        ASSERT_EQ(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx.ctx), TOPS_SUCCESS);
        tops_attention_desc_t d = tops_attention_desc_default();
        varlen_base(d);
        d.q.dtype = d.k.dtype = d.v.dtype = d.o.dtype = TOPS_DTYPE_F32;
        d.max_seqlen_q = 8;
        OpHandle op;
        ASSERT_EQ(tops_attention_create(ctx.ctx, &d, &op.op), TOPS_SUCCESS) << tops_last_error();
        std::vector<float> q(10 * 4 * 8, 0.5f), k(12 * 2 * 8, 0.25f), o(10 * 4 * 8);
        const int32_t cu_k[3] = {0, 6, 12};
        size_t ws_bytes = 0;
        tops_op_workspace_size(op.op, &ws_bytes);
        std::vector<unsigned char> ws(ws_bytes);
        const tops_arg_t args[] = {{TOPS_ARG_Q, q.data()},           {TOPS_ARG_K, k.data()},
                                   {TOPS_ARG_V, k.data()},           {TOPS_ARG_O, o.data()},
                                   {TOPS_ARG_CU_SEQLENS_Q, b.cu},    {TOPS_ARG_CU_SEQLENS_K, cu_k}};
        const tops_status_t st = tops_op_execute(ctx.ctx, op.op, args, 6, ws.data(), ws_bytes);
        EXPECT_EQ(st, TOPS_ERROR_INVALID_ARGUMENT) << tops_last_error();
        EXPECT_NE(std::string(tops_last_error()).find(b.names), std::string::npos) << tops_last_error();
    }
}

}  // namespace
