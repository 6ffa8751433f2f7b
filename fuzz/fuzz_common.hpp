// Shared helpers of the libFuzzer targets: a reader that turns the fuzz input
// into small descriptors, buffers sized exactly from a descriptor (so ASan
// flags any access past the last element the descriptor reaches), and a
// runner that creates, executes and destroys an op on the CPU backend.
#pragma once

#include <tops/tops.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace fuzz {

constexpr int kMaxFuzzRank = 4;
constexpr int64_t kMaxFuzzDim = 6;
constexpr int64_t kMaxElements = 1 << 14;  // larger accepted tensors are not executed

// Reads bytes from the fuzz input; zeros once it is exhausted.
class Reader {
public:
    Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
    bool flag() { return byte() & 1u; }
    int pick(int n) { return n > 0 ? byte() % n : 0; }
    // Rarely an out-of-range value, so validation paths are exercised too.
    int64_t dim() {
        const uint8_t b = byte();
        if (b == 0xff) return -1 - static_cast<int64_t>(byte());
        if (b == 0xfe) return int64_t{1} << (20 + byte() % 43);
        return b % (kMaxFuzzDim + 1);
    }
    float value() { return static_cast<float>(static_cast<int>(byte()) - 128) / 16.0f; }

private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

inline tops_dtype_t float_dtype(Reader& r) {
    static const tops_dtype_t kTypes[] = {TOPS_DTYPE_F32, TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16,
                                          TOPS_DTYPE_I32, TOPS_DTYPE_U8,  TOPS_DTYPE_INVALID};
    const uint8_t b = r.byte();
    return b < 0xf0 ? kTypes[b % 4] : kTypes[b % 7];
}

// Dense row-major strides, or (flag) padded strides, or (rare) a zero stride.
inline void fill_strides(Reader& r, tops_tensor_desc_t& d) {
    const uint8_t mode = r.byte() % 8;
    int64_t s = 1;
    for (int i = d.rank - 1; i >= 0; --i) {
        d.strides[i] = s;
        const int64_t extent = d.dims[i] > 0 ? d.dims[i] : 1;
        s *= extent + (mode == 1 ? r.byte() % 3 : 0);
    }
    if (mode == 2 && d.rank > 0) d.strides[r.pick(d.rank)] = 0;
    if (mode == 3 && d.rank > 1) {  // swap two strides: a transposed layout
        const int a = r.pick(d.rank), b = r.pick(d.rank);
        const int64_t t = d.strides[a];
        d.strides[a] = d.strides[b];
        d.strides[b] = t;
    }
}

inline tops_tensor_desc_t tensor(Reader& r, tops_dtype_t dtype, int rank) {
    tops_tensor_desc_t d{};
    d.dtype = dtype;
    d.rank = rank;
    for (int i = 0; i < rank; ++i) d.dims[i] = r.dim();
    fill_strides(r, d);
    return d;
}

inline tops_tensor_desc_t dense_like(Reader& r, const tops_tensor_desc_t& x, tops_dtype_t dtype) {
    tops_tensor_desc_t d = x;
    d.dtype = dtype;
    fill_strides(r, d);
    return d;
}

// Elements a strided tensor reaches (0 when a dim is 0); -1 past kMaxElements
// or on a descriptor no op should accept.
inline int64_t span(const tops_tensor_desc_t& d) {
    if (d.rank < 0 || d.rank > TOPS_MAX_RANK) return -1;
    int64_t last = 0;
    for (int i = 0; i < d.rank; ++i) {
        if (d.dims[i] < 0 || d.strides[i] < 0) return -1;
        if (d.dims[i] == 0) return 0;
    }
    for (int i = 0; i < d.rank; ++i) {
        int64_t step = 0;
        if (__builtin_mul_overflow(d.dims[i] - 1, d.strides[i], &step) || __builtin_add_overflow(last, step, &last))
            return -1;
    }
    return last + 1 > kMaxElements ? -1 : last + 1;
}

inline int64_t count(const tops_tensor_desc_t& d) {
    int64_t n = 1;
    for (int i = 0; i < d.rank; ++i) n *= d.dims[i];
    return n;
}

// A buffer of exactly span(d) elements (a distinct non-null pointer when empty).
struct Buffer {
    std::shared_ptr<unsigned char[]> bytes;
    size_t size = 0;
};

inline bool make_buffer(Reader& r, const tops_tensor_desc_t& d, Buffer& b) {
    const int64_t n = span(d);
    const size_t esize = tops_dtype_size(d.dtype);
    int64_t logical = 1;  // zero strides keep spans small; the work follows the element count
    for (int i = 0; i < d.rank; ++i)
        if (__builtin_mul_overflow(logical, d.dims[i], &logical)) return false;
    if (n < 0 || esize == 0 || logical > kMaxElements) return false;
    b.size = static_cast<size_t>(n) * esize;
    b.bytes.reset(new unsigned char[b.size]);
    if (d.dtype == TOPS_DTYPE_F32) {
        for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
            const float v = r.value();
            std::memcpy(b.bytes.get() + i * 4, &v, 4);
        }
    } else {
        for (size_t i = 0; i < b.size; ++i) b.bytes[i] = r.byte();
    }
    return true;
}

// Offsets of every element of d in row-major index order.
inline std::vector<int64_t> offsets(const tops_tensor_desc_t& d) {
    std::vector<int64_t> out;
    const int64_t n = count(d);
    out.reserve(static_cast<size_t>(n));
    int64_t idx[TOPS_MAX_RANK] = {};
    for (int64_t e = 0; e < n; ++e) {
        int64_t off = 0;
        for (int i = 0; i < d.rank; ++i) off += idx[i] * d.strides[i];
        out.push_back(off);
        for (int i = d.rank - 1; i >= 0; --i) {
            if (++idx[i] < d.dims[i]) break;
            idx[i] = 0;
        }
    }
    return out;
}

inline float f32_at(const Buffer& b, int64_t off) {
    float v;
    std::memcpy(&v, b.bytes.get() + off * 4, 4);
    return v;
}

[[noreturn]] inline void mismatch(const char* op, double got, double want) {
    std::fprintf(stderr, "fuzz: %s disagrees with the reference: got %.9g, want %.9g\n", op, got, want);
    std::abort();
}

// The CPU context every target uses (one thread: small tensors).
inline tops_context_t context() {
    static tops_context_t ctx = [] {
        tops_context_t c = nullptr;
        if (tops_context_create(TOPS_BACKEND_CPU, 0, &c) != TOPS_SUCCESS) std::abort();
        tops_context_set_num_threads(c, 1);
        return c;
    }();
    return ctx;
}

// A status must be one of the documented ones, with a message on failure.
inline void check_status(tops_status_t s) {
    if (s == TOPS_SUCCESS) return;
    const int cat = TOPS_STATUS_CATEGORY(s);
    if (cat != 0x100 && cat != 0x200 && cat != 0x300) {
        std::fprintf(stderr, "fuzz: unexpected status %s: %s\n", tops_status_string(s), tops_last_error());
        std::abort();
    }
    if (tops_last_error()[0] == '\0') {
        std::fprintf(stderr, "fuzz: %s without a message\n", tops_status_string(s));
        std::abort();
    }
}

struct Arg {
    tops_arg_kind_t kind;
    const tops_tensor_desc_t* desc;
    Buffer buf;
};

// Executes op with exactly sized buffers; false when the op was not run (a
// buffer could not be made, or execute refused) so no comparison follows.
inline bool execute(Reader& r, tops_op_t op, std::vector<Arg>& args) {
    std::vector<tops_arg_t> list;
    for (Arg& a : args) {
        if (!make_buffer(r, *a.desc, a.buf)) return false;
        list.push_back({a.kind, a.buf.bytes.get()});
    }
    bool altered = false;
    if (r.byte() == 0xfd && !list.empty()) {  // a missing argument
        list.pop_back();
        altered = true;
    }
    if (r.byte() == 0xfd) {  // an argument the op may not take
        list.push_back({TOPS_ARG_PRENORM, list.empty() ? nullptr : list[0].ptr});
        altered = true;
    }
    size_t ws_bytes = 0;
    check_status(tops_op_workspace_size(op, &ws_bytes));
    if (ws_bytes > (size_t{1} << 24)) return false;
    std::unique_ptr<unsigned char[]> ws(new unsigned char[ws_bytes]);
    const tops_status_t s = tops_op_execute(context(), op, list.data(), list.size(), ws.get(), ws_bytes);
    check_status(s);
    return s == TOPS_SUCCESS && !altered;
}

}  // namespace fuzz
