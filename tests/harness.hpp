// Cross-validation harness shared by every op suite: backends discovered at
// run time, host tensors with arbitrary strides, device buffers with guard
// zones, seeded random inputs, poisoned outputs, dtype conversions and the one
// tolerance table every comparison uses.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "tops/tops.h"

namespace tops_test {

// ------------------------------------------------------------------ backends

// Every backend a parameterized suite is instantiated for. Instances of a
// backend that cannot run here skip with the reason (never a silent pass).
std::vector<tops_backend_t> all_backends();

// True when tests can run on `backend`; otherwise *why says what is missing
// (the plugin's reason from tops_backend_available, or a build without the
// CUDA runtime for the harness).
bool backend_ready(tops_backend_t backend, std::string* why);

#define TOPS_SKIP_UNLESS_READY(backend)                                             \
    do {                                                                            \
        std::string tops_skip_why_;                                                 \
        if (!::tops_test::backend_ready((backend), &tops_skip_why_)) {              \
            GTEST_SKIP() << tops_backend_name(backend) << " backend unavailable: "  \
                         << tops_skip_why_;                                         \
        }                                                                           \
    } while (0)

// Unknown enum values for the "unknown X" rules. C callers may pass any int,
// but in C++ a value outside an enum's range (the smallest bit-field holding
// its enumerators) is undefined behaviour that UBSan reports, so the tests
// use values inside that range that name no enumerator.
constexpr tops_dtype_t kUnknownDtype = static_cast<tops_dtype_t>(7);        // enumerators 0..6
constexpr tops_backend_t kUnknownBackend = static_cast<tops_backend_t>(3);  // enumerators 0..2
constexpr int kUnknownStatus = 0x7ff;                                       // enumerators up to 0x500

// "TOPS_ERROR_BAD_SHAPE: softmax: x.dims[0] = -1 is negative"
std::string status_text(tops_status_t status);

// got == want, and tops_last_error() is not empty and contains every part
// (the op, the argument, the offending value).
::testing::AssertionResult fails_with(tops_status_t got, tops_status_t want,
                                      std::initializer_list<const char*> parts);

// got == TOPS_SUCCESS; a failure shows status_text(got).
::testing::AssertionResult succeeds(tops_status_t got);

// An environment variable set for one scope (value nullptr: left alone),
// restored afterwards: the plan-time switches a test forces.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name), active_(value != nullptr) {
        if (!active_) return;
        if (const char* old = std::getenv(name_)) {
            had_ = true;
            old_ = old;
        }
        setenv(name_, value, 1);
    }
    ~ScopedEnv() {
        if (!active_) return;
        if (had_) {
            setenv(name_, old_.c_str(), 1);
        } else {
            unsetenv(name_);
        }
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    bool active_;
    bool had_ = false;
    std::string old_;
};

// RAII owners of the opaque handles.
struct ContextHandle {
    tops_context_t ctx = nullptr;
    ContextHandle() = default;
    ContextHandle(const ContextHandle&) = delete;
    ContextHandle& operator=(const ContextHandle&) = delete;
    ~ContextHandle() { tops_context_destroy(ctx); }
};

struct OpHandle {
    tops_op_t op = nullptr;
    OpHandle() = default;
    OpHandle(const OpHandle&) = delete;
    OpHandle& operator=(const OpHandle&) = delete;
    ~OpHandle() { tops_op_destroy(op); }
    void reset(tops_op_t replacement = nullptr) {
        tops_op_destroy(op);
        op = replacement;
    }
};

// ------------------------------------------------------------------ seeds

using Rng = std::mt19937_64;

// TOPS_TEST_SEED when set, else a fixed default (runs are reproducible).
uint64_t base_seed();
// The base seed mixed with the running test's full name: each test draws its
// own stream, so one test reruns alone with the same data.
uint64_t test_seed();
// "seed 0x... (TOPS_TEST_SEED=... reproduces)" for SCOPED_TRACE.
std::string seed_note();

#define TOPS_TRACE_SEED() SCOPED_TRACE(::tops_test::seed_note())

// ------------------------------------------------------------------ dtypes

const char* dtype_label(tops_dtype_t dtype);  // "f32", never NULL
size_t elem_size(tops_dtype_t dtype);
bool is_float(tops_dtype_t dtype);
// Value -> bits of dtype (floats round to nearest even; integers truncate
// toward zero after clamping), and back.
uint64_t to_bits(tops_dtype_t dtype, double value);
double from_bits(tops_dtype_t dtype, uint64_t bits);
// The value `value` becomes when stored as dtype.
double round_to(tops_dtype_t dtype, double value);
// The bit pattern outputs are filled with before a run: a quiet NaN with a
// payload for floats, an unlikely constant for integers. Inputs never take it.
uint64_t poison_bits(tops_dtype_t dtype);

// ------------------------------------------------------------------ layouts

// How a tensor's strides are laid out over its dims.
enum class Layout {
    Dense,          // row-major, contiguous
    Padded,         // row-major with a gap after every row of every dim
    Reversed,       // column-major: dims[0] is innermost in memory
    Rotated,        // the last dim is outermost in memory, the others row-major
    InnerStride2,   // row-major with every stride doubled (innermost stride 2)
    BroadcastOuter  // dense over dims[1..], stride 0 on dims[0] (inputs only)
};

const char* layout_label(Layout layout);
std::vector<int64_t> make_strides(const std::vector<int64_t>& dims, Layout layout);

// A descriptor of dims (at most TOPS_MAX_RANK are stored), dense row-major
// when strides is empty. Filled field by field, so validation tests can also
// describe tensors that tops_tensor_desc_init refuses.
tops_tensor_desc_t tensor_desc(tops_dtype_t dtype, std::vector<int64_t> dims, std::vector<int64_t> strides = {});

// Calls f(idx) for every multi-index of dims in row-major order (once for
// rank 0, never when a dim is 0). idx has dims.size() entries.
template <class F>
void for_each_index(const std::vector<int64_t>& dims, F&& f) {
    const size_t rank = dims.size();
    for (int64_t d : dims) {
        if (d == 0) return;
    }
    std::vector<int64_t> idx(rank, 0);
    for (;;) {
        f(idx.data());
        size_t k = rank;
        while (k > 0) {
            --k;
            if (++idx[k] < dims[k]) break;
            idx[k] = 0;
            if (k == 0) return;
        }
        if (rank == 0) return;
    }
}

// Dense row-major size of dims.
int64_t numel(const std::vector<int64_t>& dims);

// ------------------------------------------------------------------ host tensors

// A strided tensor in host memory: storage holds every slot from offset 0 to
// the largest element offset (gaps of padded layouts included).
struct Tensor {
    tops_dtype_t dtype = TOPS_DTYPE_INVALID;
    std::vector<int64_t> dims;
    std::vector<int64_t> strides;
    std::vector<uint8_t> storage;

    static Tensor make(tops_dtype_t dtype, const std::vector<int64_t>& dims, Layout layout);
    static Tensor make(tops_dtype_t dtype, const std::vector<int64_t>& dims,
                       const std::vector<int64_t>& strides);

    int rank() const { return int(dims.size()); }
    int64_t count() const { return tops_test::numel(dims); }
    int64_t slots() const;  // storage size in elements
    size_t esize() const { return elem_size(dtype); }
    tops_tensor_desc_t desc() const;
    int64_t offset(const int64_t* idx) const;

    uint64_t bits(int64_t slot) const;
    void set_bits(int64_t slot, uint64_t bits);
    double value(int64_t slot) const { return from_bits(dtype, bits(slot)); }
    void set_value(int64_t slot, double v) { set_bits(slot, to_bits(dtype, v)); }

    void poison();                        // every slot = poison_bits(dtype)
    std::vector<double> logical() const;  // element values in row-major index order
    std::vector<char> covered() const;    // per slot: 1 if some element maps to it
};

// Every storage slot (gaps included) gets a value uniform in [lo, hi]
// rounded to the dtype (integers: uniform integers in [lo, hi]).
void fill_uniform(Tensor& t, Rng& rng, double lo, double hi);
// Every slot gets random bits: finite values for float dtypes, never the
// poison pattern (transpose inputs, compared bit for bit).
void fill_random_bits(Tensor& t, Rng& rng);

// ------------------------------------------------------------------ device buffers

// Memory of one backend (host for CPU, cudaMalloc for CUDA) holding a
// payload between two guard zones. ptr() is the payload start, `misalign`
// bytes past an aligned address.
class Buffer {
public:
    Buffer(tops_backend_t backend, size_t payload_bytes, size_t misalign = 0);
    ~Buffer();
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    // Empty when allocation and every copy so far succeeded.
    const std::string& error() const { return error_; }
    void* ptr() const;
    // Writes the payload (payload_bytes) and refills the guards.
    void upload(const std::vector<uint8_t>& payload);
    // Reads the payload back; records an error when a guard byte changed.
    std::vector<uint8_t> download();

private:
    void copy_to_device(const std::vector<uint8_t>& all);
    std::vector<uint8_t> copy_from_device();

    tops_backend_t backend_;
    size_t payload_ = 0;
    size_t front_ = 0;  // guard bytes before the payload (guard + misalign)
    size_t total_ = 0;
    std::vector<uint8_t> host_;
    void* device_ = nullptr;
    std::string error_;
};

// Waits for the backend's queued work and reports an asynchronous error.
::testing::AssertionResult sync_backend(tops_backend_t backend);

// ------------------------------------------------------------------ running an op

using CreateFn = std::function<tops_status_t(tops_context_t, tops_op_t*)>;

struct ArgBinding {
    tops_arg_kind_t kind;
    const Tensor* tensor;
};

struct RunSpec {
    std::vector<ArgBinding> inputs;  // every input, TOPS_ARG_X first
    Tensor* y = nullptr;             // output: storage is the initial content (poison)
    bool inplace = false;            // y is written through X's pointer (same layout)
    size_t misalign_elems = 0;       // every pointer is this many elements off alignment
    int num_threads = 0;             // CPU thread count for the context
    tops_arg_kind_t y_arg = TOPS_ARG_Y;  // the output's tag (TOPS_ARG_D for GEMM)
};

// Creates a context on `backend` and the op through create, allocates and
// uploads every argument and the workspace, executes, downloads y into
// spec.y->storage. Fails on any status, on a guard zone written, and on a
// storage slot of y that no element maps to being changed.
::testing::AssertionResult run_op(tops_backend_t backend, const CreateFn& create, RunSpec& spec);

// ------------------------------------------------------------------ tolerances

// Relative Frobenius error ||out - ref|| / ||ref|| and max-abs error
// max|out - ref| / max(1, max|ref|). Positions where the reference is
// infinite (log-softmax of a masked position) must match exactly, and so
// must exact zeros when zeros_exact (softmax of a masked position); NaN and
// infinities where the reference is finite never pass.
struct Tolerance {
    double rel_fro;
    double max_abs;
};

// The one table: per output dtype against the fp64 reference; tf32 for f32
// ops created with a TF32-allowed flag (operands rounded to 10-bit mantissas).
Tolerance tolerance(tops_dtype_t dtype, bool tf32 = false);
// Two backends each within tolerance(dtype) of the reference are within
// twice that of each other (triangle inequality); used for CUDA vs CPU.
Tolerance cross_backend_tolerance(tops_dtype_t dtype, bool tf32 = false);

::testing::AssertionResult compare_values(const std::vector<double>& out, const std::vector<double>& ref,
                                          const Tolerance& tol, const std::vector<int64_t>& dims,
                                          const char* what, bool zeros_exact = false);

// Every storage slot of out equals that of expected, bit for bit.
::testing::AssertionResult bits_equal(const Tensor& out, const Tensor& expected, const char* what);

// "[3,5,7]" for messages and names.
std::string dims_text(const std::vector<int64_t>& dims, const char* sep = ",");

}  // namespace tops_test
