// tops-bench op table: one entry per op. An entry turns a Case into the dense
// tensors the op reads and writes plus a created tops op, and checks sampled
// outputs against an fp64 recomputation so a timing never hides a wrong or
// skipped result. Adding an op = a create function, a check function and one
// line in op_table().
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "bench.hpp"

namespace bench {

namespace {

// ------------------------------------------------------------------ element access

float half_bits_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    float mag;
    if (exp == 0) {
        mag = std::ldexp(float(mant), -24);  // zero or subnormal
    } else if (exp == 0x1f) {
        mag = mant ? NAN : INFINITY;
    } else {
        mag = std::ldexp(float(mant | 0x400u), int(exp) - 25);
    }
    uint32_t bits;
    std::memcpy(&bits, &mag, sizeof bits);
    bits |= sign;
    float out;
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

}  // namespace

double load_element(const unsigned char* base, tops_dtype_t dtype, int64_t i) {
    switch (dtype) {
    case TOPS_DTYPE_F32: {
        float v;
        std::memcpy(&v, base + i * 4, 4);
        return v;
    }
    case TOPS_DTYPE_F16: {
        uint16_t h;
        std::memcpy(&h, base + i * 2, 2);
        return half_bits_to_float(h);
    }
    case TOPS_DTYPE_BF16: {
        uint16_t h;
        std::memcpy(&h, base + i * 2, 2);
        const uint32_t bits = uint32_t(h) << 16;
        float v;
        std::memcpy(&v, &bits, 4);
        return v;
    }
    case TOPS_DTYPE_I32: {
        int32_t v;
        std::memcpy(&v, base + i * 4, 4);
        return v;
    }
    case TOPS_DTYPE_U8: return base[i];
    default: return NAN;
    }
}

namespace {

// Relative tolerance of a probability computed in fp32 and stored in dtype.
double softmax_tolerance(tops_dtype_t dtype) {
    switch (dtype) {
    case TOPS_DTYPE_F32: return 1e-5;
    case TOPS_DTYPE_F16: return 2e-3;
    default: return 1.6e-2;  // bf16: 8 mantissa bits
    }
}

// Dense row-major offset of the element at multi-index idx in a tensor of dims
// that broadcasts (dims[d] == 1) against the index space.
int64_t broadcast_offset(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
    int64_t off = 0;
    for (size_t d = 0; d < dims.size(); ++d) off = off * dims[d] + (dims[d] == 1 ? 0 : idx[d]);
    return off;
}

std::vector<int64_t> unravel(int64_t linear, const std::vector<int64_t>& dims) {
    std::vector<int64_t> idx(dims.size());
    for (size_t d = dims.size(); d-- > 0;) {
        idx[d] = linear % dims[d];
        linear /= dims[d];
    }
    return idx;
}

constexpr int kCheckRows = 48;       // softmax rows recomputed in fp64
constexpr int kCheckElements = 4096; // transpose elements compared

// ------------------------------------------------------------------ softmax

tops_status_t softmax_create(const Case& c, tops_context_t ctx, OpInstance* out, std::string* err) {
    const int rank = int(c.shape.size());
    const int axis = normalize_axis(c.axis, rank);
    if (axis < 0) {
        *err = "softmax: axis " + std::to_string(c.axis) + " out of range for rank " + std::to_string(rank);
        return TOPS_ERROR_BAD_AXIS;
    }
    out->tensors.push_back({"x", TOPS_ARG_X, c.dtype, c.shape, false, Fill::uniform});
    out->tensors.push_back({"y", TOPS_ARG_Y, c.dtype, c.shape, true, Fill::none});
    // Key-padding form: mask and lengths vary along the outermost dim (the batch)
    // and, for the mask, along the axis; every other dim broadcasts.
    std::vector<int64_t> side(rank, 1);
    if (rank > 0 && axis != 0) side[0] = c.shape[0];
    if (c.mask) {
        std::vector<int64_t> mdims = side;
        mdims[axis] = c.shape[axis];
        out->tensors.push_back({"mask", TOPS_ARG_MASK, TOPS_DTYPE_U8, mdims, false, Fill::mask});
    }
    if (c.lengths) {
        out->tensors.push_back({"lengths", TOPS_ARG_LENGTHS, TOPS_DTYPE_I32, side, false, Fill::lengths,
                                c.shape[axis]});
    }

    std::ostringstream a;
    a << "axis=" << c.axis;
    if (c.scale != 1.0f) a << " scale=" << c.scale;
    if (c.log) a << " log";
    if (c.mask) a << " mask=" << dims_string(out->tensors[2].dims);
    if (c.lengths) a << " lengths";
    out->args = a.str();

    tops_softmax_desc_t desc = tops_softmax_desc_default();
    desc.axis = c.axis;
    desc.scale = c.scale;
    desc.flags = c.log ? TOPS_SOFTMAX_LOG : 0u;
    for (const TensorSpec& t : out->tensors) {
        tops_tensor_desc_t* d = t.arg == TOPS_ARG_X ? &desc.x
                              : t.arg == TOPS_ARG_Y ? &desc.y
                              : t.arg == TOPS_ARG_MASK ? &desc.mask : &desc.lengths;
        tops_status_t s = tops_tensor_desc_init(d, t.dtype, rank, t.dims.data(), nullptr);
        if (s != TOPS_SUCCESS) {
            *err = tops_last_error();
            return s;
        }
    }
    tops_status_t s = tops_softmax_create(ctx, &desc, &out->op);
    if (s != TOPS_SUCCESS) {
        *err = tops_last_error();
        return s;
    }
    return TOPS_SUCCESS;
}

std::string softmax_check(const Case& c, const OpInstance& inst, const HostTensors& host) {
    const std::vector<int64_t>& dims = c.shape;
    const int axis = normalize_axis(c.axis, int(dims.size()));
    const int64_t n = dims[axis];
    int64_t inner = 1;
    for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
    const int64_t rows = n > 0 ? element_count(dims) / n : 0;
    if (rows == 0) return "";
    const TensorSpec* mask = nullptr;
    const TensorSpec* lengths = nullptr;
    const unsigned char* mask_data = nullptr;
    const unsigned char* len_data = nullptr;
    for (size_t i = 0; i < inst.tensors.size(); ++i) {
        if (inst.tensors[i].arg == TOPS_ARG_MASK) { mask = &inst.tensors[i]; mask_data = host[i].data(); }
        if (inst.tensors[i].arg == TOPS_ARG_LENGTHS) { lengths = &inst.tensors[i]; len_data = host[i].data(); }
    }
    const unsigned char* x = host[0].data();
    const unsigned char* y = host[1].data();
    const double tol = softmax_tolerance(c.dtype);
    std::mt19937_64 rng(7);
    std::vector<double> ref(n);
    std::vector<char> keep(n);
    for (int r = 0; r < kCheckRows; ++r) {
        const int64_t row = int64_t(rng() % uint64_t(rows));
        const int64_t outer = row / inner, in = row % inner;
        const int64_t base = outer * n * inner + in;
        std::vector<int64_t> idx = unravel(base, dims);
        int64_t valid = n;
        if (lengths) {
            valid = int64_t(load_element(len_data, TOPS_DTYPE_I32, broadcast_offset(idx, lengths->dims)));
            valid = valid < 0 ? 0 : (valid > n ? n : valid);
        }
        double mx = -INFINITY;
        for (int64_t k = 0; k < n; ++k) {
            idx[axis] = k;
            keep[k] = k < valid && (!mask || load_element(mask_data, TOPS_DTYPE_U8,
                                                          broadcast_offset(idx, mask->dims)) != 0);
            ref[k] = double(c.scale) * load_element(x, c.dtype, base + k * inner);
            if (keep[k] && ref[k] > mx) mx = ref[k];
        }
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) sum += keep[k] ? std::exp(ref[k] - mx) : 0.0;
        for (int64_t k = 0; k < n; ++k) {
            double want;
            if (c.log) want = keep[k] ? ref[k] - mx - std::log(sum) : -INFINITY;
            else want = keep[k] ? std::exp(ref[k] - mx) / sum : 0.0;
            const double got = load_element(y, c.dtype, base + k * inner);
            const bool ok = std::isinf(want) ? got == want
                                             : std::fabs(got - want) <= tol * (c.log ? 1.0 + std::fabs(want) : 1.0);
            if (!ok) {
                std::ostringstream m;
                m << "softmax row " << row << " element " << k << ": got " << got << ", fp64 reference " << want;
                return m.str();
            }
        }
    }
    return "";
}

// ------------------------------------------------------------------ transpose

tops_status_t transpose_create(const Case& c, tops_context_t ctx, OpInstance* out, std::string* err) {
    const size_t rank = c.shape.size();
    std::vector<int> perm = c.perm;
    if (perm.empty()) {  // default: reverse the dims
        for (size_t d = 0; d < rank; ++d) perm.push_back(int(rank - 1 - d));
    }
    if (perm.size() != rank) {
        *err = "transpose: --perm has " + std::to_string(perm.size()) + " entries for a rank-" +
               std::to_string(rank) + " shape";
        return TOPS_ERROR_BAD_AXIS;
    }
    std::vector<int64_t> ydims(rank);
    for (size_t d = 0; d < rank; ++d) {
        if (perm[d] < 0 || size_t(perm[d]) >= rank) {
            *err = "transpose: perm entry " + std::to_string(perm[d]) + " out of range";
            return TOPS_ERROR_BAD_AXIS;
        }
        ydims[d] = c.shape[perm[d]];
    }
    out->tensors.push_back({"x", TOPS_ARG_X, c.dtype, c.shape, false, Fill::uniform});
    out->tensors.push_back({"y", TOPS_ARG_Y, c.dtype, ydims, true, Fill::none});

    std::ostringstream a;
    a << "perm=";
    for (size_t d = 0; d < rank; ++d) a << (d ? "," : "") << perm[d];
    out->args = a.str();

    tops_transpose_desc_t desc = tops_transpose_desc_default();
    tops_status_t s = tops_tensor_desc_init(&desc.x, c.dtype, int32_t(rank), c.shape.data(), nullptr);
    if (s == TOPS_SUCCESS) s = tops_tensor_desc_init(&desc.y, c.dtype, int32_t(rank), ydims.data(), nullptr);
    for (size_t d = 0; d < rank; ++d) desc.perm[d] = perm[d];
    if (s == TOPS_SUCCESS) s = tops_transpose_create(ctx, &desc, &out->op);
    if (s != TOPS_SUCCESS) {
        *err = tops_last_error();
        return s;
    }
    return TOPS_SUCCESS;
}

std::string transpose_check(const Case& c, const OpInstance& inst, const HostTensors& host) {
    const std::vector<int64_t>& xdims = inst.tensors[0].dims;
    const std::vector<int64_t>& ydims = inst.tensors[1].dims;
    const int64_t total = element_count(ydims);
    if (total == 0) return "";
    const size_t esize = tops_dtype_size(c.dtype);
    const size_t rank = xdims.size();
    std::vector<int> perm = c.perm;
    if (perm.empty()) {
        for (size_t d = 0; d < rank; ++d) perm.push_back(int(rank - 1 - d));
    }
    std::mt19937_64 rng(11);
    std::vector<int64_t> xidx(rank);
    for (int s = 0; s < kCheckElements; ++s) {
        const int64_t yi = int64_t(rng() % uint64_t(total));
        const std::vector<int64_t> yidx = unravel(yi, ydims);
        for (size_t k = 0; k < rank; ++k) xidx[perm[k]] = yidx[k];
        const int64_t xi = broadcast_offset(xidx, xdims);
        if (std::memcmp(host[1].data() + yi * esize, host[0].data() + xi * esize, esize) != 0) {
            return "transpose: y element " + std::to_string(yi) + " differs from x element " + std::to_string(xi);
        }
    }
    return "";
}

// ------------------------------------------------------------------ norm, reduce, elementwise

// Relative tolerance of a value computed in fp32 and stored in dtype (scaled by
// the magnitude of the terms that produced it).
double stored_tolerance(tops_dtype_t dtype) {
    switch (dtype) {
    case TOPS_DTYPE_F32: return 1e-5;
    case TOPS_DTYPE_F16: return 2e-3;
    default: return 1.6e-2;
    }
}

tops_status_t init_desc(tops_tensor_desc_t* d, const TensorSpec& t) {
    return tops_tensor_desc_init(d, t.dtype, int32_t(t.dims.size()), t.dims.data(), nullptr);
}

tops_status_t created(tops_status_t s, std::string* err) {
    if (s != TOPS_SUCCESS) *err = tops_last_error();
    return s;
}

// layernorm / rmsnorm over the last dim, gamma (and beta) in f32 as oneDNN's
// scale / shift; layernorm_residual adds residual and bias and writes prenorm.
tops_status_t norm_create(const Case& c, tops_context_t ctx, OpInstance* out, std::string* err) {
    if (c.shape.empty()) {
        *err = c.op + ": needs a shape of rank >= 1";
        return TOPS_ERROR_BAD_RANK;
    }
    const bool rms = c.op == "rmsnorm", fused = c.op == "layernorm_residual";
    const std::vector<int64_t> vec = {c.shape.back()};
    out->tensors.push_back({"x", TOPS_ARG_X, c.dtype, c.shape, false, Fill::uniform});
    out->tensors.push_back({"y", TOPS_ARG_Y, c.dtype, c.shape, true, Fill::none});
    out->tensors.push_back({"gamma", TOPS_ARG_GAMMA, TOPS_DTYPE_F32, vec, false, Fill::uniform});
    if (!rms) out->tensors.push_back({"beta", TOPS_ARG_BETA, TOPS_DTYPE_F32, vec, false, Fill::uniform});
    if (fused) {
        out->tensors.push_back({"residual", TOPS_ARG_RESIDUAL, c.dtype, c.shape, false, Fill::uniform});
        out->tensors.push_back({"bias", TOPS_ARG_BIAS, TOPS_DTYPE_F32, vec, false, Fill::uniform});
        out->tensors.push_back({"prenorm", TOPS_ARG_PRENORM, c.dtype, c.shape, true, Fill::none});
    }
    out->args = rms ? "gamma f32" : fused ? "gamma beta bias f32, residual, prenorm" : "gamma beta f32";
    tops_norm_desc_t d = tops_norm_desc_default();
    d.kind = rms ? TOPS_NORM_RMS : TOPS_NORM_LAYER;
    for (const TensorSpec& t : out->tensors) {
        tops_tensor_desc_t* dst = t.arg == TOPS_ARG_X ? &d.x : t.arg == TOPS_ARG_Y ? &d.y
                                : t.arg == TOPS_ARG_GAMMA ? &d.gamma : t.arg == TOPS_ARG_BETA ? &d.beta
                                : t.arg == TOPS_ARG_RESIDUAL ? &d.residual : t.arg == TOPS_ARG_BIAS ? &d.bias
                                : &d.prenorm;
        const tops_status_t s = init_desc(dst, t);
        if (s != TOPS_SUCCESS) return created(s, err);
    }
    return created(tops_norm_create(ctx, &d, &out->op), err);
}

std::string norm_check(const Case& c, const OpInstance& inst, const HostTensors& host) {
    const int64_t n = c.shape.back();
    const int64_t rows = n > 0 ? element_count(c.shape) / n : 0;
    if (rows == 0) return "";
    const unsigned char *x = nullptr, *y = nullptr, *g = nullptr, *b = nullptr, *res = nullptr, *bias = nullptr;
    for (size_t i = 0; i < inst.tensors.size(); ++i) {
        const tops_arg_kind_t a = inst.tensors[i].arg;
        const unsigned char* p = host[i].data();
        if (a == TOPS_ARG_X) x = p;
        if (a == TOPS_ARG_Y) y = p;
        if (a == TOPS_ARG_GAMMA) g = p;
        if (a == TOPS_ARG_BETA) b = p;
        if (a == TOPS_ARG_RESIDUAL) res = p;
        if (a == TOPS_ARG_BIAS) bias = p;
    }
    const bool rms = c.op == "rmsnorm";
    std::mt19937_64 rng(5);
    std::vector<double> s(n);
    for (int r = 0; r < kCheckRows; ++r) {
        const int64_t row = int64_t(rng() % uint64_t(rows));
        double mean = 0, m2 = 0;
        for (int64_t j = 0; j < n; ++j) {
            s[j] = load_element(x, c.dtype, row * n + j);
            if (res) s[j] += load_element(res, c.dtype, row * n + j) + load_element(bias, TOPS_DTYPE_F32, j);
            mean += s[j];
        }
        mean = rms ? 0.0 : mean / double(n);
        for (int64_t j = 0; j < n; ++j) m2 += (s[j] - mean) * (s[j] - mean);
        const double rstd = 1.0 / std::sqrt(m2 / double(n) + 1e-5);
        for (int64_t j = 0; j < n; ++j) {
            const double gj = load_element(g, TOPS_DTYPE_F32, j);
            const double want = (s[j] - mean) * rstd * gj + (b ? load_element(b, TOPS_DTYPE_F32, j) : 0.0);
            const double got = load_element(y, c.dtype, row * n + j);
            if (!(std::fabs(got - want) <= stored_tolerance(c.dtype) * (1.0 + std::fabs(gj) + std::fabs(want)))) {
                std::ostringstream m;
                m << c.op << " row " << row << " element " << j << ": got " << got << ", fp64 reference " << want;
                return m.str();
            }
        }
    }
    return "";
}

// reduce_sum / reduce_max over --axis, global_avg_pool: mean over the last two
// dims; y keeps the reduced dims as 1.
std::vector<int> reduced_axes(const Case& c) {
    const int rank = int(c.shape.size());
    if (c.op == "global_avg_pool") return rank >= 2 ? std::vector<int>{rank - 2, rank - 1} : std::vector<int>{};
    const int a = normalize_axis(c.axis, rank);
    return a >= 0 ? std::vector<int>{a} : std::vector<int>{};
}

tops_status_t reduce_create(const Case& c, tops_context_t ctx, OpInstance* out, std::string* err) {
    const std::vector<int> axes = reduced_axes(c);
    if (axes.empty()) {
        *err = c.op + ": no valid axis for shape " + dims_string(c.shape);
        return TOPS_ERROR_BAD_AXIS;
    }
    std::vector<int64_t> ydims = c.shape;
    uint32_t mask = 0;
    for (int a : axes) {
        ydims[a] = 1;
        mask |= 1u << a;
    }
    out->tensors.push_back({"x", TOPS_ARG_X, c.dtype, c.shape, false, Fill::uniform});
    out->tensors.push_back({"y", TOPS_ARG_Y, c.dtype, ydims, true, Fill::none});
    out->args = "axes=" + std::to_string(axes.front()) + (axes.size() > 1 ? "," + std::to_string(axes.back()) : "") +
                " keepdims";
    tops_reduce_desc_t d = tops_reduce_desc_default();
    d.op = c.op == "reduce_max" ? TOPS_REDUCE_MAX : c.op == "global_avg_pool" ? TOPS_REDUCE_MEAN : TOPS_REDUCE_SUM;
    d.axes = mask;
    d.keepdims = 1;
    tops_status_t s = init_desc(&d.x, out->tensors[0]);
    if (s == TOPS_SUCCESS) s = init_desc(&d.y, out->tensors[1]);
    if (s != TOPS_SUCCESS) return created(s, err);
    return created(tops_reduce_create(ctx, &d, &out->op), err);
}

std::string reduce_check(const Case& c, const OpInstance& inst, const HostTensors& host) {
    const std::vector<int64_t>& ydims = inst.tensors[1].dims;
    const int64_t outputs = element_count(ydims);
    int64_t count = 1;
    for (size_t d = 0; d < c.shape.size(); ++d) count *= ydims[d] == c.shape[d] ? 1 : c.shape[d];
    if (outputs == 0 || count == 0) return "";
    std::mt19937_64 rng(13);
    for (int k = 0; k < kCheckRows; ++k) {
        const int64_t o = int64_t(rng() % uint64_t(outputs));
        const std::vector<int64_t> oidx = unravel(o, ydims);
        double acc = c.op == "reduce_max" ? -INFINITY : 0.0, scale = 0.0;
        for (int64_t e = 0; e < count; ++e) {
            std::vector<int64_t> idx = oidx;
            int64_t rest = e;
            for (size_t d = c.shape.size(); d-- > 0;) {
                if (ydims[d] != c.shape[d]) {
                    idx[d] = rest % c.shape[d];
                    rest /= c.shape[d];
                }
            }
            const double v = load_element(host[0].data(), c.dtype, broadcast_offset(idx, c.shape));
            acc = c.op == "reduce_max" ? std::max(acc, v) : acc + v;
            scale += std::fabs(v);
        }
        if (c.op == "global_avg_pool") {
            acc /= double(count);
            scale /= double(count);
        }
        if (c.op == "reduce_max") scale = std::fabs(acc);
        const double got = load_element(host[1].data(), c.dtype, o);
        if (!(std::fabs(got - acc) <= stored_tolerance(c.dtype) * (1.0 + scale))) {
            std::ostringstream m;
            m << c.op << " output " << o << ": got " << got << ", fp64 reference " << acc;
            return m.str();
        }
    }
    return "";
}

// bias_gelu / bias_gelu_tanh / bias_silu / bias_relu: y = act(x + bias[1, N]);
// prelu: slope per dim-1 channel; weighted_sum3: y = 0.5 a - b + 2 c.
constexpr float kSum3Coefs[3] = {0.5f, -1.0f, 2.0f};

bool is_bias_act(const std::string& op) { return op.rfind("bias_", 0) == 0; }

tops_activation_t bias_act_of(const std::string& op) {
    if (op == "bias_gelu_tanh") return TOPS_ACT_GELU_TANH;
    if (op == "bias_silu") return TOPS_ACT_SILU;
    if (op == "bias_relu") return TOPS_ACT_RELU;
    return TOPS_ACT_GELU_ERF;
}

double activate_fp64(tops_activation_t act, double v) {
    switch (act) {
        case TOPS_ACT_GELU_TANH: {
            const double k = std::sqrt(2.0 / 3.141592653589793);
            return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
        }
        case TOPS_ACT_SILU: return v / (1.0 + std::exp(-v));
        case TOPS_ACT_RELU: return v > 0.0 ? v : 0.0;
        default: return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    }
}

const char* act_label(tops_activation_t act) {
    switch (act) {
        case TOPS_ACT_GELU_TANH: return "gelu tanh";
        case TOPS_ACT_SILU: return "silu";
        case TOPS_ACT_RELU: return "relu";
        default: return "gelu erf";
    }
}

tops_status_t eltwise_create(const Case& c, tops_context_t ctx, OpInstance* out, std::string* err) {
    const int rank = int(c.shape.size());
    if (rank < 2) {
        *err = c.op + ": needs a shape of rank >= 2";
        return TOPS_ERROR_BAD_RANK;
    }
    out->tensors.push_back({"x", c.op == "weighted_sum3" ? tops_arg_kind_t(TOPS_ARG_INPUT0) : TOPS_ARG_X, c.dtype,
                            c.shape, false, Fill::uniform});
    out->tensors.push_back({"y", TOPS_ARG_Y, c.dtype, c.shape, true, Fill::none});
    tops_status_t s = TOPS_SUCCESS;
    if (is_bias_act(c.op)) {
        std::vector<int64_t> bd(size_t(rank), 1);
        bd.back() = c.shape.back();
        out->tensors.push_back({"bias", TOPS_ARG_BIAS, c.dtype, bd, false, Fill::uniform});
        tops_bias_act_desc_t d = tops_bias_act_desc_default();
        d.act = bias_act_of(c.op);
        out->args = "bias " + dims_string(bd) + ", " + act_label(d.act);
        s = init_desc(&d.x, out->tensors[0]);
        if (s == TOPS_SUCCESS) s = init_desc(&d.y, out->tensors[1]);
        if (s == TOPS_SUCCESS) s = init_desc(&d.bias, out->tensors[2]);
        if (s == TOPS_SUCCESS) s = tops_bias_act_create(ctx, &d, &out->op);
    } else if (c.op == "prelu") {
        std::vector<int64_t> sd(size_t(rank), 1);
        sd[1] = c.shape[1];
        out->tensors.push_back({"slope", TOPS_ARG_SLOPE, c.dtype, sd, false, Fill::uniform});
        out->args = "slope " + dims_string(sd);
        tops_prelu_desc_t d = tops_prelu_desc_default();
        s = init_desc(&d.x, out->tensors[0]);
        if (s == TOPS_SUCCESS) s = init_desc(&d.y, out->tensors[1]);
        if (s == TOPS_SUCCESS) s = init_desc(&d.slope, out->tensors[2]);
        if (s == TOPS_SUCCESS) s = tops_prelu_create(ctx, &d, &out->op);
    } else {
        out->tensors.push_back({"b", tops_arg_kind_t(TOPS_ARG_INPUT0 + 1), c.dtype, c.shape, false, Fill::uniform});
        out->tensors.push_back({"c", tops_arg_kind_t(TOPS_ARG_INPUT0 + 2), c.dtype, c.shape, false, Fill::uniform});
        out->args = "coefs 0.5,-1,2";
        tops_weighted_sum_desc_t d = tops_weighted_sum_desc_default();
        d.num_inputs = 3;
        s = init_desc(&d.y, out->tensors[1]);
        for (int i = 0; i < 3 && s == TOPS_SUCCESS; ++i) {
            d.coefs[i] = kSum3Coefs[i];
            s = init_desc(&d.inputs[i], out->tensors[i == 0 ? 0 : size_t(i + 1)]);
        }
        if (s == TOPS_SUCCESS) s = tops_weighted_sum_create(ctx, &d, &out->op);
    }
    return created(s, err);
}

std::string eltwise_check(const Case& c, const OpInstance& inst, const HostTensors& host) {
    const int64_t total = element_count(c.shape);
    if (total == 0) return "";
    std::mt19937_64 rng(17);
    for (int k = 0; k < kCheckElements; ++k) {
        const int64_t e = int64_t(rng() % uint64_t(total));
        const std::vector<int64_t> idx = unravel(e, c.shape);
        const double x = load_element(host[0].data(), c.dtype, e);
        double want, scale;
        if (is_bias_act(c.op)) {
            const double v = x + load_element(host[2].data(), c.dtype, broadcast_offset(idx, inst.tensors[2].dims));
            want = activate_fp64(bias_act_of(c.op), v);
            scale = std::fabs(v);
        } else if (c.op == "prelu") {
            const double sl = load_element(host[2].data(), c.dtype, broadcast_offset(idx, inst.tensors[2].dims));
            want = x > 0 ? x : sl * x;
            scale = std::fabs(want);
        } else {
            const double b = load_element(host[2].data(), c.dtype, e), cc = load_element(host[3].data(), c.dtype, e);
            want = kSum3Coefs[0] * x + kSum3Coefs[1] * b + kSum3Coefs[2] * cc;
            scale = std::fabs(kSum3Coefs[0] * x) + std::fabs(b) + std::fabs(kSum3Coefs[2] * cc);
        }
        const double got = load_element(host[1].data(), c.dtype, e);
        if (!(std::fabs(got - want) <= stored_tolerance(c.dtype) * (1.0 + scale))) {
            std::ostringstream m;
            m << c.op << " element " << e << ": got " << got << ", fp64 reference " << want;
            return m.str();
        }
    }
    return "";
}

// ------------------------------------------------------------------ attention

// attention / attention_causal: q, k, v, o dense [B, S, H, D] (Sq = Sk, no
// GQA). Compute-bound: reported as TFLOP/s with FLOPs 4 B H S^2 D per call,
// halved when causal; tops-attention-bench compares the CPU kernel with the
// GEMM and oneDNN.
tops_status_t attention_create(const Case& c, tops_context_t ctx, OpInstance* out, std::string* err) {
    if (c.shape.size() != 4) {
        *err = "attention: --shape must be B,S,H,D";
        return TOPS_ERROR_BAD_RANK;
    }
    const bool causal = c.op == "attention_causal";
    out->tensors.push_back({"q", TOPS_ARG_Q, c.dtype, c.shape, false, Fill::uniform});
    out->tensors.push_back({"k", TOPS_ARG_K, c.dtype, c.shape, false, Fill::uniform});
    out->tensors.push_back({"v", TOPS_ARG_V, c.dtype, c.shape, false, Fill::uniform});
    out->tensors.push_back({"o", TOPS_ARG_O, c.dtype, c.shape, true, Fill::none});
    const double s = double(c.shape[1]);
    const double flops =
        4.0 * double(c.shape[0]) * double(c.shape[2]) * s * s * double(c.shape[3]) * (causal ? 0.5 : 1.0);
    std::ostringstream a;
    a << (causal ? "causal " : "") << "GFLOP/call=" << flops / 1e9;
    out->args = a.str();
    out->flops = flops;
    tops_attention_desc_t desc = tops_attention_desc_default();
    desc.flags = causal ? TOPS_ATTN_CAUSAL : 0u;
    tops_tensor_desc_t* descs[] = {&desc.q, &desc.k, &desc.v, &desc.o};
    for (tops_tensor_desc_t* d : descs) {
        const tops_status_t st = tops_tensor_desc_init(d, c.dtype, 4, c.shape.data(), nullptr);
        if (st != TOPS_SUCCESS) {
            *err = tops_last_error();
            return st;
        }
    }
    const tops_status_t st = tops_attention_create(ctx, &desc, &out->op);
    if (st != TOPS_SUCCESS) *err = tops_last_error();
    return st;
}

// Sampled (batch, query, head) rows recomputed in fp64 from the stored inputs.
std::string attention_check(const Case& c, const OpInstance&, const HostTensors& host) {
    const int64_t B = c.shape[0], S = c.shape[1], H = c.shape[2], D = c.shape[3];
    if (B * S * H * D == 0) return "";
    const bool causal = c.op == "attention_causal";
    const double scale = 1.0 / std::sqrt(double(D));
    const double tol = c.dtype == TOPS_DTYPE_F32 ? 1e-4 : c.dtype == TOPS_DTYPE_F16 ? 4e-3 : 3e-2;
    std::mt19937_64 rng(11);
    std::vector<double> w(static_cast<size_t>(S)), ref(static_cast<size_t>(D));
    for (int r = 0; r < kCheckRows; ++r) {
        const int64_t b = int64_t(rng() % uint64_t(B));
        const int64_t i = int64_t(rng() % uint64_t(S));
        const int64_t h = int64_t(rng() % uint64_t(H));
        const int64_t keys = causal ? i + 1 : S;
        const int64_t qrow = ((b * S + i) * H + h) * D;
        double mx = -INFINITY;
        for (int64_t j = 0; j < keys; ++j) {
            const int64_t krow = ((b * S + j) * H + h) * D;
            double dot = 0;
            for (int64_t d = 0; d < D; ++d) {
                dot += load_element(host[0].data(), c.dtype, qrow + d) * load_element(host[1].data(), c.dtype, krow + d);
            }
            w[size_t(j)] = scale * dot;
            mx = std::max(mx, w[size_t(j)]);
        }
        double sum = 0;
        std::fill(ref.begin(), ref.end(), 0.0);
        for (int64_t j = 0; j < keys; ++j) {
            const double e = std::exp(w[size_t(j)] - mx);
            sum += e;
            const int64_t vrow = ((b * S + j) * H + h) * D;
            for (int64_t d = 0; d < D; ++d) ref[size_t(d)] += e * load_element(host[2].data(), c.dtype, vrow + d);
        }
        for (int64_t d = 0; d < D; ++d) {
            const double want = ref[size_t(d)] / sum;
            const double got = load_element(host[3].data(), c.dtype, qrow + d);
            if (!(std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want)))) {
                std::ostringstream m;
                m << "o[" << b << "," << i << "," << h << "," << d << "] = " << got << ", fp64 " << want;
                return m.str();
            }
        }
    }
    return "";
}

}  // namespace

// ------------------------------------------------------------------ table and helpers

const std::vector<OpEntry>& op_table() {
    static const std::vector<OpEntry> table = {
        {"softmax", "softmax over --axis; --scale, --log, --mask, --lengths", softmax_create, softmax_check},
        {"transpose", "permute dims by --perm (default: reverse)", transpose_create, transpose_check},
        {"layernorm", "LayerNorm over the last dim, gamma/beta f32", norm_create, norm_check},
        {"rmsnorm", "RMSNorm over the last dim, gamma f32", norm_create, norm_check},
        {"layernorm_residual", "LN(x + bias + residual), also writes prenorm", norm_create, norm_check},
        {"reduce_sum", "sum over --axis (keepdims)", reduce_create, reduce_check},
        {"reduce_max", "max over --axis (keepdims)", reduce_create, reduce_check},
        {"global_avg_pool", "mean over the last two dims (keepdims)", reduce_create, reduce_check},
        {"bias_gelu", "gelu_erf(x + bias), bias a row vector", eltwise_create, eltwise_check},
        {"bias_gelu_tanh", "gelu_tanh(x + bias), bias a row vector", eltwise_create, eltwise_check},
        {"bias_silu", "silu(x + bias), bias a row vector", eltwise_create, eltwise_check},
        {"bias_relu", "relu(x + bias), bias a row vector", eltwise_create, eltwise_check},
        {"prelu", "PReLU, slope per channel (dim 1)", eltwise_create, eltwise_check},
        {"weighted_sum3", "0.5 a - b + 2 c", eltwise_create, eltwise_check},
        {"attention", "attention forward, --shape B,S,H,D (Sq = Sk)", attention_create, attention_check},
        {"attention_causal", "causal attention forward, --shape B,S,H,D", attention_create, attention_check},
    };
    static const std::vector<OpEntry> all = [] {
        std::vector<OpEntry> v = table;
        for (const OpEntry& e : compute_op_entries()) v.push_back(e);
        for (const OpEntry& e : pad_op_entries()) v.push_back(e);
        return v;
    }();
    return all;
}

const OpEntry* find_op(const std::string& name) {
    for (const OpEntry& e : op_table()) {
        if (name == e.name) return &e;
    }
    return nullptr;
}

int64_t element_count(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
}

size_t tensor_bytes(const TensorSpec& t) { return size_t(element_count(t.dims)) * tops_dtype_size(t.dtype); }

std::string dims_string(const std::vector<int64_t>& dims, char sep) {
    std::string s;
    for (size_t d = 0; d < dims.size(); ++d) {
        if (d) s += sep;
        s += std::to_string(dims[d]);
    }
    return s;
}

int normalize_axis(int axis, int rank) {
    const int a = axis < 0 ? axis + rank : axis;
    return a >= 0 && a < rank ? a : -1;
}

}  // namespace bench
