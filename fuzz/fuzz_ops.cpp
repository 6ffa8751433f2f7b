// libFuzzer targets: random descriptors and arguments for one op family
// (chosen at compile time by TOPS_FUZZ_<OP>), built from the fuzz input and
// run on the CPU backend with exactly sized buffers. The library must return
// a documented status, never crash or touch memory outside the buffers; on
// success softmax, transpose and reduce are compared with a plain loop.
#include "fuzz_common.hpp"

#include <algorithm>
#include <limits>

using namespace fuzz;

namespace {

// Owns an op for the scope of one input.
struct OpGuard {
    tops_op_t op = nullptr;
    ~OpGuard() { tops_op_destroy(op); }
};

bool created(tops_status_t s, const OpGuard& g) {
    check_status(s);
    if ((s == TOPS_SUCCESS) != (g.op != nullptr)) {
        std::fprintf(stderr, "fuzz: create returned %s with op %p\n", tops_status_string(s), (void*)g.op);
        std::abort();
    }
    return s == TOPS_SUCCESS;
}

tops_tensor_desc_t optional(Reader& r, const tops_tensor_desc_t& like, bool present) {
    if (!present) return tops_tensor_desc_t{};
    tops_tensor_desc_t d = like;
    for (int i = 0; i < d.rank; ++i)
        if (r.byte() % 4 == 0) d.dims[i] = 1;  // broadcast dims
    fill_strides(r, d);
    return d;
}

[[maybe_unused]] void fuzz_softmax(Reader& r) {
    tops_softmax_desc_t d = tops_softmax_desc_default();
    const int rank = 1 + r.pick(kMaxFuzzRank);
    d.x = tensor(r, float_dtype(r), rank);
    d.y = dense_like(r, d.x, r.byte() < 0xf0 ? d.x.dtype : float_dtype(r));
    d.axis = r.pick(2 * rank + 1) - rank;
    d.scale = r.byte() == 0xff ? std::numeric_limits<float>::infinity() : r.value();
    d.flags = r.flag() ? TOPS_SOFTMAX_LOG : 0u;
    const bool with_mask = r.byte() % 4 == 0, with_lengths = r.byte() % 4 == 0;
    d.mask = optional(r, d.x, with_mask);
    if (with_mask) d.mask.dtype = TOPS_DTYPE_U8;
    d.lengths = optional(r, d.x, with_lengths);
    if (with_lengths) {
        d.lengths.dtype = TOPS_DTYPE_I32;
        const int axis = d.axis < 0 ? d.axis + rank : d.axis;
        if (axis >= 0 && axis < rank) d.lengths.dims[axis] = 1;
        fill_strides(r, d.lengths);
    }
    OpGuard g;
    if (!created(tops_softmax_create(context(), &d, &g.op), g)) return;
    std::vector<Arg> args = {{TOPS_ARG_X, &d.x, {}}, {TOPS_ARG_Y, &d.y, {}}};
    if (with_mask) args.push_back({TOPS_ARG_MASK, &d.mask, {}});
    if (with_lengths) args.push_back({TOPS_ARG_LENGTHS, &d.lengths, {}});
    if (!execute(r, g.op, args)) return;
    if (with_mask || with_lengths || d.x.dtype != TOPS_DTYPE_F32 || d.y.dtype != TOPS_DTYPE_F32 ||
        !std::isfinite(d.scale))
        return;
    if (count(d.x) == 0) return;  // (the other dims of an empty axis may hold a huge count)
    // Reference: rows along the axis, in fp64.
    const int axis = d.axis < 0 ? d.axis + rank : d.axis;
    tops_tensor_desc_t outer = d.x;
    outer.dims[axis] = 1;
    const std::vector<int64_t> xo = offsets(outer);
    tops_tensor_desc_t youter = d.y;
    youter.dims[axis] = 1;
    const std::vector<int64_t> yo = offsets(youter);
    const int64_t n = d.x.dims[axis];
    for (size_t row = 0; row < xo.size(); ++row) {
        double mx = -std::numeric_limits<double>::infinity(), sum = 0.0;
        for (int64_t j = 0; j < n; ++j)
            mx = std::max(mx, double(d.scale) * f32_at(args[0].buf, xo[row] + j * d.x.strides[axis]));
        for (int64_t j = 0; j < n; ++j)
            sum += std::exp(double(d.scale) * f32_at(args[0].buf, xo[row] + j * d.x.strides[axis]) - mx);
        for (int64_t j = 0; j < n; ++j) {
            const double z = double(d.scale) * f32_at(args[0].buf, xo[row] + j * d.x.strides[axis]) - mx;
            const double want = d.flags & TOPS_SOFTMAX_LOG ? z - std::log(sum) : std::exp(z) / sum;
            const double got = f32_at(args[1].buf, yo[row] + j * d.y.strides[axis]);
            if (!(std::fabs(got - want) <= 1e-5 * (1.0 + std::fabs(want)))) mismatch("softmax", got, want);
        }
    }
}

[[maybe_unused]] void fuzz_transpose(Reader& r) {
    tops_transpose_desc_t d = tops_transpose_desc_default();
    const int rank = r.pick(kMaxFuzzRank + 1);
    const uint8_t dt = r.byte();
    d.x = tensor(r, dt < 0xf0 ? static_cast<tops_dtype_t>(1 + dt % 6) : float_dtype(r), rank);
    for (int i = 0; i < rank; ++i) d.perm[i] = i;
    for (int i = rank - 1; i > 0; --i) std::swap(d.perm[i], d.perm[r.pick(i + 1)]);
    if (r.byte() == 0xff && rank > 0) d.perm[r.pick(rank)] = r.pick(2 * TOPS_MAX_RANK) - TOPS_MAX_RANK;
    d.y = d.x;
    for (int i = 0; i < rank; ++i) d.y.dims[i] = d.perm[i] >= 0 && d.perm[i] < rank ? d.x.dims[d.perm[i]] : 1;
    fill_strides(r, d.y);
    OpGuard g;
    if (!created(tops_transpose_create(context(), &d, &g.op), g)) return;
    std::vector<Arg> args = {{TOPS_ARG_X, &d.x, {}}, {TOPS_ARG_Y, &d.y, {}}};
    if (!execute(r, g.op, args)) return;
    // Reference: y[i] = x[j] with j[perm[k]] = i[k], compared bytewise.
    tops_tensor_desc_t xp = d.y;  // x viewed in y's index order
    for (int k = 0; k < rank; ++k) xp.strides[k] = d.x.strides[d.perm[k]];
    const std::vector<int64_t> xo = offsets(xp), yo = offsets(d.y);
    const size_t es = tops_dtype_size(d.x.dtype);
    for (size_t e = 0; e < yo.size(); ++e) {
        if (std::memcmp(args[1].buf.bytes.get() + yo[e] * es, args[0].buf.bytes.get() + xo[e] * es, es) != 0)
            mismatch("transpose", double(e), double(e));
    }
}

[[maybe_unused]] void fuzz_reduce(Reader& r) {
    tops_reduce_desc_t d = tops_reduce_desc_default();
    d.op = static_cast<tops_reduce_op_t>(r.pick(r.byte() == 0xff ? 16 : 7));
    const int rank = r.pick(kMaxFuzzRank + 1);
    d.x = tensor(r, float_dtype(r), rank);
    d.axes = r.byte() == 0xff ? r.byte() : r.byte() & ((1u << rank) - 1u);
    d.keepdims = r.flag();
    d.y.dtype = r.byte() < 0xf0 ? TOPS_DTYPE_F32 : float_dtype(r);
    for (int i = 0; i < rank; ++i) {
        if (!(d.axes & (1u << i))) d.y.dims[d.y.rank++] = d.x.dims[i];
        else if (d.keepdims) d.y.dims[d.y.rank++] = 1;
    }
    fill_strides(r, d.y);
    OpGuard g;
    if (!created(tops_reduce_create(context(), &d, &g.op), g)) return;
    std::vector<Arg> args = {{TOPS_ARG_X, &d.x, {}}, {TOPS_ARG_Y, &d.y, {}}};
    if (!execute(r, g.op, args)) return;
    if (d.x.dtype != TOPS_DTYPE_F32 || d.y.dtype != TOPS_DTYPE_F32 || d.op > TOPS_REDUCE_MIN) return;
    // Reference: for each output index, walk the reduced dims of x.
    tops_tensor_desc_t kept = d.x, reduced = d.x;
    for (int i = 0; i < rank; ++i) {
        if (d.axes & (1u << i)) kept.dims[i] = 1;
        else reduced.dims[i] = 1;
    }
    const std::vector<int64_t> ko = offsets(kept);
    if (ko.empty()) return;  // (the reduced dims alone may hold a huge count)
    const std::vector<int64_t> ro = offsets(reduced), yo = offsets(d.y);
    for (size_t o = 0; o < ko.size(); ++o) {
        double acc = d.op == TOPS_REDUCE_MAX ? -INFINITY : d.op == TOPS_REDUCE_MIN ? INFINITY : 0.0, mag = 0.0;
        for (int64_t ro_off : ro) {
            const double v = f32_at(args[0].buf, ko[o] + ro_off);
            mag += std::fabs(v);
            if (d.op == TOPS_REDUCE_MAX) acc = std::max(acc, v);
            else if (d.op == TOPS_REDUCE_MIN) acc = std::min(acc, v);
            else acc += v;
        }
        if (d.op == TOPS_REDUCE_MEAN) {
            acc = ro.empty() ? NAN : acc / double(ro.size());
            mag = ro.empty() ? 0.0 : mag / double(ro.size());
        }
        const double got = f32_at(args[1].buf, yo[o]);
        const bool both_nan = std::isnan(got) && std::isnan(acc);
        if (!both_nan && !(got == acc || std::fabs(got - acc) <= 1e-5 * (1.0 + mag))) mismatch("reduce", got, acc);
    }
}

[[maybe_unused]] void fuzz_norm(Reader& r) {
    tops_norm_desc_t d = tops_norm_desc_default();
    d.kind = static_cast<tops_norm_kind_t>(r.pick(r.byte() == 0xff ? 3 : 2));
    const int rank = 1 + r.pick(kMaxFuzzRank);
    d.x = tensor(r, float_dtype(r), rank);
    d.y = dense_like(r, d.x, d.x.dtype);
    d.normalized_rank = 1 + r.pick(rank);
    d.eps = r.byte() == 0xff ? -1.0f : 1e-5f;
    const int nr = d.normalized_rank, lead = rank - nr;
    auto trailing = [&](tops_dtype_t dt) {
        tops_tensor_desc_t t{};
        t.dtype = dt;
        t.rank = nr;
        for (int i = 0; i < nr; ++i) t.dims[i] = d.x.dims[lead + i];
        fill_strides(r, t);
        return t;
    };
    auto leading = [&] {
        tops_tensor_desc_t t{};
        t.dtype = TOPS_DTYPE_F32;
        t.rank = lead;
        for (int i = 0; i < lead; ++i) t.dims[i] = d.x.dims[i];
        fill_strides(r, t);
        return t;
    };
    std::vector<Arg> args = {{TOPS_ARG_X, &d.x, {}}, {TOPS_ARG_Y, &d.y, {}}};
    const uint8_t opt = r.byte();
    if (opt & 1) { d.gamma = trailing(r.flag() ? TOPS_DTYPE_F32 : d.x.dtype); args.push_back({TOPS_ARG_GAMMA, &d.gamma, {}}); }
    if (opt & 2) { d.beta = trailing(d.x.dtype); args.push_back({TOPS_ARG_BETA, &d.beta, {}}); }
    if (opt & 4) { d.bias = trailing(d.x.dtype); args.push_back({TOPS_ARG_BIAS, &d.bias, {}}); }
    if (opt & 8) { d.residual = dense_like(r, d.x, d.x.dtype); args.push_back({TOPS_ARG_RESIDUAL, &d.residual, {}}); }
    if (opt & 16) { d.prenorm = dense_like(r, d.x, d.x.dtype); args.push_back({TOPS_ARG_PRENORM, &d.prenorm, {}}); }
    if (opt & 32) { d.mean = leading(); args.push_back({TOPS_ARG_MEAN, &d.mean, {}}); }
    if (opt & 64) { d.rstd = leading(); args.push_back({TOPS_ARG_RSTD, &d.rstd, {}}); }
    OpGuard g;
    if (!created(tops_norm_create(context(), &d, &g.op), g)) return;
    execute(r, g.op, args);
}

[[maybe_unused]] void fuzz_eltwise(Reader& r) {
    OpGuard g;
    const int rank = r.pick(kMaxFuzzRank + 1);
    switch (r.pick(3)) {
    case 0: {
        tops_bias_act_desc_t d = tops_bias_act_desc_default();
        d.x = tensor(r, float_dtype(r), rank);
        d.y = dense_like(r, d.x, d.x.dtype);
        d.act = static_cast<tops_activation_t>(r.pick(r.byte() == 0xff ? 9 : 5));
        const bool with_bias = r.flag();
        d.bias = optional(r, d.x, with_bias);
        if (!created(tops_bias_act_create(context(), &d, &g.op), g)) return;
        std::vector<Arg> args = {{TOPS_ARG_X, &d.x, {}}, {TOPS_ARG_Y, &d.y, {}}};
        if (with_bias) args.push_back({TOPS_ARG_BIAS, &d.bias, {}});
        execute(r, g.op, args);
        return;
    }
    case 1: {
        tops_prelu_desc_t d = tops_prelu_desc_default();
        d.x = tensor(r, float_dtype(r), rank);
        d.y = dense_like(r, d.x, d.x.dtype);
        d.slope = optional(r, d.x, true);
        if (!created(tops_prelu_create(context(), &d, &g.op), g)) return;
        std::vector<Arg> args = {{TOPS_ARG_X, &d.x, {}}, {TOPS_ARG_Y, &d.y, {}}, {TOPS_ARG_SLOPE, &d.slope, {}}};
        execute(r, g.op, args);
        return;
    }
    default: {
        tops_weighted_sum_desc_t d = tops_weighted_sum_desc_default();
        d.y = tensor(r, float_dtype(r), rank);
        d.num_inputs = r.byte() == 0xff ? r.pick(12) - 2 : 1 + r.pick(TOPS_MAX_SUM_INPUTS);
        std::vector<Arg> args = {{TOPS_ARG_Y, &d.y, {}}};
        for (int i = 0; i < d.num_inputs && i < TOPS_MAX_SUM_INPUTS; ++i) {
            d.inputs[i] = optional(r, d.y, true);
            d.coefs[i] = r.value();
            args.push_back({static_cast<tops_arg_kind_t>(TOPS_ARG_INPUT0 + i), &d.inputs[i], {}});
        }
        if (!created(tops_weighted_sum_create(context(), &d, &g.op), g)) return;
        execute(r, g.op, args);
        return;
    }
    }
}

[[maybe_unused]] void fuzz_gemm(Reader& r) {
    tops_gemm_desc_t d = tops_gemm_desc_default();
    const int rank = r.byte() % 4 == 0 ? 3 : 2;
    const int64_t batch = r.dim(), m = r.dim(), n = r.dim(), k = r.dim();
    d.trans_a = r.flag();
    d.trans_b = r.flag();
    const tops_dtype_t in = float_dtype(r);
    const tops_dtype_t out = r.flag() ? TOPS_DTYPE_F32 : in;
    auto mat = [&](tops_dtype_t dt, int64_t rows, int64_t cols) {
        tops_tensor_desc_t t{};
        t.dtype = dt;
        t.rank = rank;
        if (rank == 3) t.dims[0] = r.byte() % 3 == 0 ? 1 : batch;
        t.dims[rank - 2] = rows;
        t.dims[rank - 1] = cols;
        fill_strides(r, t);
        return t;
    };
    d.a = d.trans_a ? mat(in, k, m) : mat(in, m, k);
    d.b = d.trans_b ? mat(in, n, k) : mat(in, k, n);
    d.d = mat(out, m, n);
    if (rank == 3) d.d.dims[0] = batch;
    fill_strides(r, d.d);
    d.alpha = r.value();
    d.beta = r.flag() ? r.value() : 0.0f;
    d.act = static_cast<tops_activation_t>(r.pick(5));
    std::vector<Arg> args = {{TOPS_ARG_A, &d.a, {}}, {TOPS_ARG_B, &d.b, {}}, {TOPS_ARG_D, &d.d, {}}};
    if (r.flag()) { d.c = mat(out, m, n); args.push_back({TOPS_ARG_C, &d.c, {}}); }
    if (r.flag()) {
        d.bias.dtype = out;
        d.bias.rank = 1;
        d.bias.dims[0] = n;
        fill_strides(r, d.bias);
        args.push_back({TOPS_ARG_BIAS, &d.bias, {}});
    }
    OpGuard g;
    if (!created(tops_gemm_create(context(), &d, &g.op), g)) return;
    execute(r, g.op, args);
}

[[maybe_unused]] void fuzz_attention(Reader& r) {
    tops_attention_desc_t d = tops_attention_desc_default();
    const int64_t b = r.dim(), sq = r.dim(), sk = r.dim(), hk = 1 + r.pick(2), h = hk * (1 + r.pick(2));
    const int64_t hd = 1 + r.pick(8);
    const tops_dtype_t dt = float_dtype(r);
    auto t4 = [&](int64_t s, int64_t heads) {
        tops_tensor_desc_t t{};
        t.dtype = dt;
        t.rank = 4;
        t.dims[0] = b; t.dims[1] = s; t.dims[2] = heads; t.dims[3] = hd;
        fill_strides(r, t);
        return t;
    };
    d.q = t4(sq, h);
    d.k = t4(sk, hk);
    d.v = t4(sk, hk);
    d.o = t4(sq, h);
    d.flags = r.flag() ? TOPS_ATTN_CAUSAL : 0u;
    d.window_left = r.pick(4) - 1;
    d.window_right = r.pick(4) - 1;
    d.scale = r.flag() ? 0.0f : r.value();
    std::vector<Arg> args = {{TOPS_ARG_Q, &d.q, {}}, {TOPS_ARG_K, &d.k, {}}, {TOPS_ARG_V, &d.v, {}},
                             {TOPS_ARG_O, &d.o, {}}};
    if (r.flag()) {
        d.lse.dtype = TOPS_DTYPE_F32;
        d.lse.rank = 3;
        d.lse.dims[0] = b; d.lse.dims[1] = h; d.lse.dims[2] = sq;
        fill_strides(r, d.lse);
        args.push_back({TOPS_ARG_LSE, &d.lse, {}});
    }
    OpGuard g;
    if (!created(tops_attention_create(context(), &d, &g.op), g)) return;
    execute(r, g.op, args);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Reader r(data, size);
#if defined(TOPS_FUZZ_SOFTMAX)
    fuzz_softmax(r);
#elif defined(TOPS_FUZZ_TRANSPOSE)
    fuzz_transpose(r);
#elif defined(TOPS_FUZZ_REDUCE)
    fuzz_reduce(r);
#elif defined(TOPS_FUZZ_NORM)
    fuzz_norm(r);
#elif defined(TOPS_FUZZ_ELTWISE)
    fuzz_eltwise(r);
#elif defined(TOPS_FUZZ_GEMM)
    fuzz_gemm(r);
#elif defined(TOPS_FUZZ_ATTENTION)
    fuzz_attention(r);
#else
#error "define TOPS_FUZZ_<OP>"
#endif
    return 0;
}
