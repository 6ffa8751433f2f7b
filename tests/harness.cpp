// Implementation of the cross-validation harness (see harness.hpp).
#include "harness.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>

#include "common/half.hpp"

#ifdef TOPS_TEST_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace tops_test {

namespace {

constexpr uint64_t kDefaultSeed = 0x70b5'5eedULL;
constexpr size_t kGuardBytes = 256;  // also the payload alignment
constexpr uint8_t kGuardByte = 0xCD;
constexpr uint8_t kWorkspaceByte = 0xFF;  // NaN bits: a kernel must not assume a zeroed workspace
constexpr int64_t kPadElems = 3;          // gap after each row of a Padded layout

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

struct BackendState {
    bool ready = false;
    std::string why;
};

BackendState probe(tops_backend_t backend) {
    BackendState s;
    const char* reason = nullptr;
    const int available = tops_backend_available(backend, &reason);
    if (!available) {
        s.why = reason ? reason : "no reason given";
        return s;
    }
#ifndef TOPS_TEST_WITH_CUDA
    if (backend == TOPS_BACKEND_CUDA) {
        s.why = "the test harness was built without the CUDA runtime (TOPS_HAVE_CUDA off), so it cannot "
                "allocate device memory";
        return s;
    }
#endif
    s.ready = true;
    return s;
}

const BackendState& backend_state(tops_backend_t backend) {
    static const BackendState cpu = probe(TOPS_BACKEND_CPU);
    static const BackendState cuda = probe(TOPS_BACKEND_CUDA);
    return backend == TOPS_BACKEND_CUDA ? cuda : cpu;
}

// Prints once per run which backends the suite exercises and why one is skipped.
class BackendReport : public ::testing::Environment {
public:
    void SetUp() override {
        std::string line = "[ tops     ] " + std::string(tops_version()) + "; cpu isa " + tops_cpu_isa();
        for (tops_backend_t b : all_backends()) {
            std::string why;
            const bool ok = backend_ready(b, &why);
            line += std::string("; ") + tops_backend_name(b) + ": " + (ok ? "tested" : "SKIPPED (" + why + ")");
        }
        char seed[64];
        std::snprintf(seed, sizeof seed, "; base seed %" PRIu64, base_seed());
        std::printf("%s%s\n", line.c_str(), seed);
        std::fflush(stdout);
    }
};

[[maybe_unused]] ::testing::Environment* const g_backend_report =
    ::testing::AddGlobalTestEnvironment(new BackendReport);

}  // namespace

// ------------------------------------------------------------------ backends

std::vector<tops_backend_t> all_backends() { return {TOPS_BACKEND_CPU, TOPS_BACKEND_CUDA}; }

bool backend_ready(tops_backend_t backend, std::string* why) {
    const BackendState& s = backend_state(backend);
    if (why) *why = s.why;
    return s.ready;
}

std::string status_text(tops_status_t status) {
    return std::string(tops_status_string(status)) + ": " + tops_last_error();
}

::testing::AssertionResult fails_with(tops_status_t got, tops_status_t want,
                                      std::initializer_list<const char*> parts) {
    const std::string msg = tops_last_error();
    if (got != want) {
        return ::testing::AssertionFailure() << "status " << tops_status_string(got) << " (\"" << msg
                                             << "\"), expected " << tops_status_string(want);
    }
    if (msg.empty()) return ::testing::AssertionFailure() << tops_status_string(got) << " with an empty message";
    for (const char* p : parts) {
        if (msg.find(p) == std::string::npos) {
            return ::testing::AssertionFailure() << "message \"" << msg << "\" lacks \"" << p << "\"";
        }
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult succeeds(tops_status_t got) {
    if (got == TOPS_SUCCESS) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << status_text(got);
}

// ------------------------------------------------------------------ seeds

uint64_t base_seed() {
    static const uint64_t seed = [] {
        const char* env = std::getenv("TOPS_TEST_SEED");
        if (env && *env) return uint64_t(std::strtoull(env, nullptr, 0));
        return kDefaultSeed;
    }();
    return seed;
}

uint64_t test_seed() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "";
    return splitmix64(base_seed() ^ fnv1a(name));
}

std::string seed_note() {
    char buf[160];
    std::snprintf(buf, sizeof buf, "random inputs: test seed %" PRIu64 " from TOPS_TEST_SEED=%" PRIu64
                  " (set it to reproduce)", test_seed(), base_seed());
    return buf;
}

// ------------------------------------------------------------------ dtypes

const char* dtype_label(tops_dtype_t dtype) { return tops_dtype_name(dtype); }

size_t elem_size(tops_dtype_t dtype) { return tops_dtype_size(dtype); }

bool is_float(tops_dtype_t dtype) {
    return dtype == TOPS_DTYPE_F32 || dtype == TOPS_DTYPE_F16 || dtype == TOPS_DTYPE_BF16;
}

namespace {

template <class T>
uint64_t int_bits(double v) {
    const double lo = double(std::numeric_limits<T>::min());
    const double hi = double(std::numeric_limits<T>::max());
    if (std::isnan(v)) v = 0;
    v = std::min(std::max(std::trunc(v), lo), hi);
    using U = std::make_unsigned_t<T>;
    return uint64_t(U(T(v)));
}

}  // namespace

uint64_t to_bits(tops_dtype_t dtype, double value) {
    switch (dtype) {
        case TOPS_DTYPE_F32: return tops::float_to_bits(float(value));
        case TOPS_DTYPE_F16: return tops::float_to_f16(float(value));
        case TOPS_DTYPE_BF16: return tops::float_to_bf16(float(value));
        case TOPS_DTYPE_I32: return int_bits<int32_t>(value);
        case TOPS_DTYPE_I8: return int_bits<int8_t>(value);
        case TOPS_DTYPE_U8: return int_bits<uint8_t>(value);
        default: return 0;
    }
}

double from_bits(tops_dtype_t dtype, uint64_t bits) {
    switch (dtype) {
        case TOPS_DTYPE_F32: return tops::bits_to_float(uint32_t(bits));
        case TOPS_DTYPE_F16: return tops::f16_to_float(uint16_t(bits));
        case TOPS_DTYPE_BF16: return tops::bf16_to_float(uint16_t(bits));
        case TOPS_DTYPE_I32: return double(int32_t(uint32_t(bits)));
        case TOPS_DTYPE_I8: return double(int8_t(uint8_t(bits)));
        case TOPS_DTYPE_U8: return double(uint8_t(bits));
        default: return 0;
    }
}

double round_to(tops_dtype_t dtype, double value) { return from_bits(dtype, to_bits(dtype, value)); }

uint64_t poison_bits(tops_dtype_t dtype) {
    switch (dtype) {
        case TOPS_DTYPE_F32: return 0x7fc0deadULL;  // quiet NaN with a payload
        case TOPS_DTYPE_F16: return 0x7e5aULL;
        case TOPS_DTYPE_BF16: return 0x7fdaULL;
        case TOPS_DTYPE_I32: return 0x7fc0deadULL;
        case TOPS_DTYPE_I8:
        case TOPS_DTYPE_U8: return 0xa5ULL;
        default: return 0;
    }
}

// ------------------------------------------------------------------ layouts

const char* layout_label(Layout layout) {
    switch (layout) {
        case Layout::Dense: return "dense";
        case Layout::Padded: return "padded";
        case Layout::Reversed: return "reversed";
        case Layout::Rotated: return "rotated";
        case Layout::InnerStride2: return "stride2";
        case Layout::BroadcastOuter: return "bcast0";
    }
    return "unknown";
}

int64_t numel(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
}

std::vector<int64_t> make_strides(const std::vector<int64_t>& dims, Layout layout) {
    const int r = int(dims.size());
    std::vector<int64_t> s(dims.size(), 1);
    auto row_major = [&](int first, int last, int64_t inner) {  // dims [first, last) row-major
        int64_t acc = inner;
        for (int i = last - 1; i >= first; --i) {
            s[i] = acc;
            acc *= std::max<int64_t>(dims[i], 1);
        }
        return acc;
    };
    switch (layout) {
        case Layout::Dense: row_major(0, r, 1); break;
        case Layout::Padded:
            for (int i = r - 1; i >= 0; --i) {
                s[i] = i == r - 1 ? 1 : s[i + 1] * std::max<int64_t>(dims[i + 1], 1) + kPadElems;
            }
            break;
        case Layout::Reversed: {
            int64_t acc = 1;
            for (int i = 0; i < r; ++i) {
                s[i] = acc;
                acc *= std::max<int64_t>(dims[i], 1);
            }
            break;
        }
        case Layout::Rotated:
            if (r > 0) s[r - 1] = row_major(0, r - 1, 1);
            break;
        case Layout::InnerStride2: row_major(0, r, 2); break;
        case Layout::BroadcastOuter:
            row_major(0, r, 1);
            if (r > 0) s[0] = 0;
            break;
    }
    return s;
}

tops_tensor_desc_t tensor_desc(tops_dtype_t dtype, std::vector<int64_t> dims, std::vector<int64_t> strides) {
    tops_tensor_desc_t d{};
    d.dtype = dtype;
    d.rank = int32_t(dims.size());
    if (strides.empty()) strides = make_strides(dims, Layout::Dense);
    for (size_t i = 0; i < dims.size() && i < TOPS_MAX_RANK; ++i) {
        d.dims[i] = dims[i];
        d.strides[i] = strides[i];
    }
    return d;
}

std::string dims_text(const std::vector<int64_t>& dims, const char* sep) {
    std::string s;
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? sep : "") + std::to_string(dims[i]);
    return s;
}

// ------------------------------------------------------------------ host tensors

Tensor Tensor::make(tops_dtype_t dtype, const std::vector<int64_t>& dims, Layout layout) {
    return make(dtype, dims, make_strides(dims, layout));
}

Tensor Tensor::make(tops_dtype_t dtype, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides) {
    Tensor t;
    t.dtype = dtype;
    t.dims = dims;
    t.strides = strides;
    t.storage.assign(size_t(t.slots()) * t.esize(), 0);
    return t;
}

int64_t Tensor::slots() const {
    if (count() == 0) return 0;
    int64_t last = 0;
    for (size_t i = 0; i < dims.size(); ++i) last += (dims[i] - 1) * strides[i];
    return last + 1;
}

tops_tensor_desc_t Tensor::desc() const {
    tops_tensor_desc_t d{};
    d.dtype = dtype;
    d.rank = int32_t(dims.size());
    for (size_t i = 0; i < dims.size() && i < TOPS_MAX_RANK; ++i) {
        d.dims[i] = dims[i];
        d.strides[i] = strides[i];
    }
    return d;
}

int64_t Tensor::offset(const int64_t* idx) const {
    int64_t off = 0;
    for (size_t i = 0; i < dims.size(); ++i) off += idx[i] * strides[i];
    return off;
}

uint64_t Tensor::bits(int64_t slot) const {
    uint64_t b = 0;
    std::memcpy(&b, storage.data() + size_t(slot) * esize(), esize());  // little endian
    return b;
}

void Tensor::set_bits(int64_t slot, uint64_t b) {
    std::memcpy(storage.data() + size_t(slot) * esize(), &b, esize());
}

void Tensor::poison() {
    const uint64_t p = poison_bits(dtype);
    for (int64_t s = 0; s < slots(); ++s) set_bits(s, p);
}

std::vector<double> Tensor::logical() const {
    std::vector<double> v;
    v.reserve(size_t(count()));
    for_each_index(dims, [&](const int64_t* idx) { v.push_back(value(offset(idx))); });
    return v;
}

std::vector<char> Tensor::covered() const {
    std::vector<char> c(size_t(slots()), 0);
    for_each_index(dims, [&](const int64_t* idx) { c[size_t(offset(idx))] = 1; });
    return c;
}

void fill_uniform(Tensor& t, Rng& rng, double lo, double hi) {
    if (is_float(t.dtype)) {
        std::uniform_real_distribution<double> dist(lo, hi);
        for (int64_t s = 0; s < t.slots(); ++s) t.set_value(s, dist(rng));
    } else {
        std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
        for (int64_t s = 0; s < t.slots(); ++s) t.set_value(s, double(dist(rng)));
    }
}

void fill_random_bits(Tensor& t, Rng& rng) {
    const uint64_t poison = poison_bits(t.dtype);
    const uint64_t mask = t.esize() >= 8 ? ~0ULL : (1ULL << (8 * t.esize())) - 1;
    for (int64_t s = 0; s < t.slots(); ++s) {
        uint64_t b;
        do {
            b = rng() & mask;
        } while (b == poison || (is_float(t.dtype) && !std::isfinite(from_bits(t.dtype, b))));
        t.set_bits(s, b);
    }
}

// ------------------------------------------------------------------ device buffers

Buffer::Buffer(tops_backend_t backend, size_t payload_bytes, size_t misalign)
    : backend_(backend), payload_(payload_bytes), front_(kGuardBytes + misalign) {
    total_ = front_ + payload_ + kGuardBytes;
    if (backend_ == TOPS_BACKEND_CUDA) {
#ifdef TOPS_TEST_WITH_CUDA
        const cudaError_t e = cudaMalloc(&device_, total_);
        if (e != cudaSuccess) {
            device_ = nullptr;
            error_ = std::string("cudaMalloc(") + std::to_string(total_) + "): " + cudaGetErrorString(e);
        }
#else
        error_ = "CUDA buffer requested in a harness built without the CUDA runtime";
#endif
    } else {
        // Over-allocate so the guard start is kGuardBytes-aligned like cudaMalloc memory.
        host_.assign(total_ + kGuardBytes, kGuardByte);
    }
}

Buffer::~Buffer() {
#ifdef TOPS_TEST_WITH_CUDA
    if (device_) cudaFree(device_);
#endif
}

void* Buffer::ptr() const {
    if (backend_ == TOPS_BACKEND_CUDA) {
        return device_ ? static_cast<uint8_t*>(device_) + front_ : nullptr;
    }
    auto base = reinterpret_cast<uintptr_t>(host_.data());
    base = (base + kGuardBytes - 1) / kGuardBytes * kGuardBytes;
    return reinterpret_cast<uint8_t*>(base) + front_;
}

void Buffer::copy_to_device(const std::vector<uint8_t>& all) {
    uint8_t* start = static_cast<uint8_t*>(ptr()) - front_;
    if (backend_ != TOPS_BACKEND_CUDA) {
        std::memcpy(start, all.data(), total_);
        return;
    }
#ifdef TOPS_TEST_WITH_CUDA
    if (!device_) return;
    const cudaError_t e = cudaMemcpy(start, all.data(), total_, cudaMemcpyHostToDevice);
    if (e != cudaSuccess && error_.empty()) error_ = std::string("cudaMemcpy to device: ") + cudaGetErrorString(e);
#endif
}

std::vector<uint8_t> Buffer::copy_from_device() {
    std::vector<uint8_t> all(total_, kGuardByte);
    const uint8_t* start = static_cast<const uint8_t*>(ptr()) - front_;
    if (backend_ != TOPS_BACKEND_CUDA) {
        std::memcpy(all.data(), start, total_);
        return all;
    }
#ifdef TOPS_TEST_WITH_CUDA
    if (!device_) return all;
    const cudaError_t e = cudaMemcpy(all.data(), start, total_, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess && error_.empty()) error_ = std::string("cudaMemcpy to host: ") + cudaGetErrorString(e);
#endif
    return all;
}

void Buffer::upload(const std::vector<uint8_t>& payload) {
    std::vector<uint8_t> all(total_, kGuardByte);
    if (!payload.empty()) std::memcpy(all.data() + front_, payload.data(), std::min(payload.size(), payload_));
    copy_to_device(all);
}

std::vector<uint8_t> Buffer::download() {
    const std::vector<uint8_t> all = copy_from_device();
    for (size_t i = 0; i < total_; ++i) {
        if (i >= front_ && i < front_ + payload_) continue;
        if (all[i] != kGuardByte && error_.empty()) {
            const long long rel = i < front_ ? -(long long)(front_ - i) : (long long)(i - front_ - payload_);
            error_ = "guard zone written " + std::string(i < front_ ? "before" : "after") + " the " +
                     std::to_string(payload_) + "-byte tensor at byte " + std::to_string(rel) +
                     (i < front_ ? "" : " past its end");
        }
    }
    return std::vector<uint8_t>(all.begin() + long(front_), all.begin() + long(front_ + payload_));
}

::testing::AssertionResult sync_backend(tops_backend_t backend) {
#ifdef TOPS_TEST_WITH_CUDA
    if (backend == TOPS_BACKEND_CUDA) {
        const cudaError_t e = cudaDeviceSynchronize();
        const cudaError_t last = cudaGetLastError();
        if (e != cudaSuccess) return ::testing::AssertionFailure() << "cudaDeviceSynchronize: " << cudaGetErrorString(e);
        if (last != cudaSuccess) return ::testing::AssertionFailure() << "CUDA error: " << cudaGetErrorString(last);
    }
#endif
    (void)backend;
    return ::testing::AssertionSuccess();
}

// ------------------------------------------------------------------ running an op

::testing::AssertionResult run_op(tops_backend_t backend, const CreateFn& create, RunSpec& spec) {
    std::string why;
    if (!backend_ready(backend, &why)) return ::testing::AssertionFailure() << "backend unavailable: " << why;
    if (!spec.y || spec.inputs.empty()) return ::testing::AssertionFailure() << "run_op: needs inputs and y";
    const Tensor& x = *spec.inputs.front().tensor;
    if (spec.inplace && (x.strides != spec.y->strides || x.dims != spec.y->dims || x.dtype != spec.y->dtype)) {
        return ::testing::AssertionFailure() << "run_op: in place needs x and y of one layout";
    }
    ContextHandle ctx;
    tops_status_t st = tops_context_create(backend, 0, &ctx.ctx);
    if (st != TOPS_SUCCESS) return ::testing::AssertionFailure() << "tops_context_create: " << status_text(st);
    if (spec.num_threads > 0) {
        st = tops_context_set_num_threads(ctx.ctx, spec.num_threads);
        if (st != TOPS_SUCCESS) return ::testing::AssertionFailure() << "set_num_threads: " << status_text(st);
    }
    OpHandle op;
    st = create(ctx.ctx, &op.op);
    if (st != TOPS_SUCCESS) return ::testing::AssertionFailure() << "create: " << status_text(st);
    size_t ws_bytes = 0;
    st = tops_op_workspace_size(op.op, &ws_bytes);
    if (st != TOPS_SUCCESS) return ::testing::AssertionFailure() << "workspace_size: " << status_text(st);

    std::vector<std::unique_ptr<Buffer>> buffers;
    std::vector<tops_arg_t> args;
    for (const ArgBinding& in : spec.inputs) {
        const size_t esz = in.tensor->esize();
        buffers.push_back(std::make_unique<Buffer>(backend, in.tensor->storage.size(), spec.misalign_elems * esz));
        buffers.back()->upload(in.tensor->storage);
        args.push_back({in.kind, buffers.back()->ptr()});
    }
    Buffer* y_buf = buffers.front().get();  // in place: y is x's buffer
    const std::vector<uint8_t> before = spec.inplace ? x.storage : spec.y->storage;
    if (!spec.inplace) {
        buffers.push_back(
            std::make_unique<Buffer>(backend, spec.y->storage.size(), spec.misalign_elems * spec.y->esize()));
        y_buf = buffers.back().get();
        y_buf->upload(spec.y->storage);
    }
    args.push_back({spec.y_arg, y_buf->ptr()});
    Buffer ws(backend, ws_bytes);
    ws.upload(std::vector<uint8_t>(ws_bytes, kWorkspaceByte));
    for (const auto& b : buffers) {
        if (!b->error().empty()) return ::testing::AssertionFailure() << "buffer setup: " << b->error();
    }
    st = tops_op_execute(ctx.ctx, op.op, args.data(), args.size(), ws_bytes ? ws.ptr() : nullptr, ws_bytes);
    if (st != TOPS_SUCCESS) {
        return ::testing::AssertionFailure() << "execute (kernel " << tops_op_kernel_name(op.op)
                                             << "): " << status_text(st);
    }
    ::testing::AssertionResult synced = sync_backend(backend);
    if (!synced) return synced;
    spec.y->storage = y_buf->download();
    for (size_t i = 0; i < buffers.size(); ++i) {
        const std::vector<uint8_t> after = buffers[i]->download();
        if (!buffers[i]->error().empty()) {
            return ::testing::AssertionFailure() << "kernel " << tops_op_kernel_name(op.op) << ": "
                                                 << buffers[i]->error();
        }
        const bool is_input = i < spec.inputs.size() && !(spec.inplace && i == 0);
        if (is_input && after != spec.inputs[i].tensor->storage) {
            return ::testing::AssertionFailure() << "kernel " << tops_op_kernel_name(op.op) << " modified input #"
                                                 << i << " (tag " << int(spec.inputs[i].kind) << ")";
        }
    }
    const std::vector<char> covered = spec.y->covered();
    const size_t esz = spec.y->esize();
    for (size_t s = 0; s < covered.size(); ++s) {
        if (covered[s]) continue;
        if (std::memcmp(before.data() + s * esz, spec.y->storage.data() + s * esz, esz) != 0) {
            return ::testing::AssertionFailure() << "kernel " << tops_op_kernel_name(op.op) << " wrote storage slot "
                                                 << s << " of y, which is a gap between elements (strides "
                                                 << dims_text(spec.y->strides) << ")";
        }
    }
    return ::testing::AssertionSuccess();
}

// ------------------------------------------------------------------ tolerances

Tolerance tolerance(tops_dtype_t dtype, bool tf32) {
    // f32: computing in f32 (one rounding per op, sums over up to 32k terms)
    // stays well under 1e-5. f16/bf16: dominated by rounding the output
    // (half an ulp: 2^-11 and 2^-8 relative), plus f32 math. f32 with TF32
    // products: each operand rounded to 2^-11 relative, so a product is off
    // by up to 2^-10 (sums of random signs keep the Frobenius error near
    // 2^-11 * sqrt(2)).
    if (dtype == TOPS_DTYPE_F32 && tf32) return {2e-3, 5e-3};
    switch (dtype) {
        case TOPS_DTYPE_F32: return {4e-6, 1e-5};
        case TOPS_DTYPE_F16: return {1e-3, 2e-3};
        case TOPS_DTYPE_BF16: return {6e-3, 1e-2};
        default: return {0.0, 0.0};  // integers: exact
    }
}

Tolerance cross_backend_tolerance(tops_dtype_t dtype, bool tf32) {
    const Tolerance t = tolerance(dtype, tf32);
    return {2 * t.rel_fro, 2 * t.max_abs};
}

namespace {

std::string index_text(int64_t flat, const std::vector<int64_t>& dims) {
    std::vector<int64_t> idx(dims.size(), 0);
    for (size_t k = dims.size(); k-- > 0;) {
        if (dims[k] > 0) {
            idx[k] = flat % dims[k];
            flat /= dims[k];
        }
    }
    return "[" + dims_text(idx) + "]";
}

}  // namespace

::testing::AssertionResult compare_values(const std::vector<double>& out, const std::vector<double>& ref,
                                          const Tolerance& tol, const std::vector<int64_t>& dims,
                                          const char* what, bool zeros_exact) {
    if (out.size() != ref.size()) {
        return ::testing::AssertionFailure() << what << ": " << out.size() << " outputs for " << ref.size()
                                             << " reference values";
    }
    double sum_d2 = 0, sum_r2 = 0, max_err = 0, max_ref = 0;
    int64_t max_at = -1, bad_exact = -1, bad_finite = -1, n_exact = 0, n_finite = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        const double r = ref[i], o = out[i];
        if (std::isnan(r)) return ::testing::AssertionFailure() << what << ": reference is NaN at " << index_text(int64_t(i), dims);
        if (std::isinf(r) || (zeros_exact && r == 0.0)) {  // masked out: exactly -inf or 0
            if (!(o == r)) {
                if (bad_exact < 0) bad_exact = int64_t(i);
                ++n_exact;
            }
            continue;
        }
        if (!std::isfinite(o)) {
            if (bad_finite < 0) bad_finite = int64_t(i);
            ++n_finite;
            continue;
        }
        const double d = std::fabs(o - r);
        sum_d2 += d * d;
        sum_r2 += r * r;
        max_ref = std::max(max_ref, std::fabs(r));
        if (d > max_err) {
            max_err = d;
            max_at = int64_t(i);
        }
    }
    const double rel = sum_r2 > 0 ? std::sqrt(sum_d2 / sum_r2) : std::sqrt(sum_d2);
    const double max_norm = max_err / std::max(1.0, max_ref);
    if (n_exact == 0 && n_finite == 0 && rel <= tol.rel_fro && max_norm <= tol.max_abs) {
        return ::testing::AssertionSuccess();
    }
    ::testing::AssertionResult r = ::testing::AssertionFailure();
    r << what << " over dims [" << dims_text(dims) << "]:";
    if (n_finite) {
        r << "\n  " << n_finite << " non-finite outputs where the reference is finite, first at "
          << index_text(bad_finite, dims) << ": " << out[size_t(bad_finite)] << " vs " << ref[size_t(bad_finite)];
    }
    if (n_exact) {
        r << "\n  " << n_exact << " masked-out positions not exactly " << (zeros_exact ? "0 / -inf" : "-inf")
          << ", first at "
          << index_text(bad_exact, dims) << ": " << out[size_t(bad_exact)] << " vs " << ref[size_t(bad_exact)];
    }
    r << "\n  relative Frobenius error " << rel << " (tolerance " << tol.rel_fro << ")"
      << "\n  max abs error " << max_err << " / max(1, max|ref| = " << max_ref << ") = " << max_norm
      << " (tolerance " << tol.max_abs << ")";
    if (max_at >= 0) {
        r << " at " << index_text(max_at, dims) << ": " << out[size_t(max_at)] << " vs " << ref[size_t(max_at)];
    }
    return r;
}

::testing::AssertionResult bits_equal(const Tensor& out, const Tensor& expected, const char* what) {
    if (out.storage.size() != expected.storage.size() || out.dtype != expected.dtype) {
        return ::testing::AssertionFailure() << what << ": storage sizes differ (" << out.storage.size() << " vs "
                                             << expected.storage.size() << " bytes)";
    }
    int64_t first = -1, n_bad = 0;
    for (int64_t s = 0; s < out.slots(); ++s) {
        if (out.bits(s) != expected.bits(s)) {
            if (first < 0) first = s;
            ++n_bad;
        }
    }
    if (n_bad == 0) return ::testing::AssertionSuccess();
    char buf[160];
    std::snprintf(buf, sizeof buf, "0x%" PRIx64 " where 0x%" PRIx64 " was expected%s", out.bits(first),
                  expected.bits(first), out.bits(first) == poison_bits(out.dtype) ? " (never written)" : "");
    return ::testing::AssertionFailure() << what << ": " << n_bad << " of " << out.slots()
                                         << " storage slots differ; first is slot " << first << ": " << buf;
}

}  // namespace tops_test
