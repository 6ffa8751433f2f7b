// tops-bench op table: one entry per op. An entry turns a Case into the dense
// tensors the op reads and writes plus a created tops op, and checks sampled
// outputs against an fp64 recomputation so a timing never hides a wrong or
// skipped result. Adding an op = a create function, a check function and one
// line in op_table().
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

}  // namespace

// ------------------------------------------------------------------ table and helpers

const std::vector<OpEntry>& op_table() {
    static const std::vector<OpEntry> table = {
        {"softmax", "softmax over --axis; --scale, --log, --mask, --lengths", softmax_create, softmax_check},
        {"transpose", "permute dims by --perm (default: reverse)", transpose_create, transpose_check},
    };
    return table;
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
