// tops-bench: shared types. A benchmark case names an op, a dtype, a shape and
// the op's options; an op entry (ops.cpp) turns a case into a tops op plus the
// list of dense tensors it reads and writes; a device (cpu_device.cpp,
// cuda_device.cpp) owns buffers, timing and the copy-bandwidth ceiling.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <tops/tops.h>

namespace bench {

// ------------------------------------------------------------------ cases

// One benchmark case. Fields an op does not use are ignored by it.
struct Case {
    std::string op;                  // "softmax", "transpose"
    tops_dtype_t dtype = TOPS_DTYPE_F32;
    std::vector<int64_t> shape;      // dims of the main input x
    int axis = -1;                   // softmax
    float scale = 1.0f;              // softmax
    bool log = false;                // softmax: log-softmax
    bool mask = false;               // softmax: key-padding style u8 mask
    bool lengths = false;            // softmax: per-row valid lengths (i32)
    std::vector<int> perm;           // transpose
    bool tf32 = false;               // gemm: f32 inputs may use TF32 (CUDA)
};

// How a tensor's contents are generated (never all zeros).
enum class Fill {
    uniform,  // floats uniform in [-kFillRange, kFillRange)
    mask,     // u8: 1 (keep) with probability kMaskKeep, else 0
    lengths,  // i32 uniform in [1, fill_max]
    ramp_lengths,     // i32 [B]: ramp_length(b, B, fill_max), from S down to S/2
    ramp_cu_seqlens,  // i32 [B+1]: prefix sums of those lengths (unpad's cu_seqlens)
    none      // outputs: poisoned before the run, not read
};

// Valid tokens of sequence b of B with room for s (the unpad / pad cases):
// a fixed ramp from s down to s / 2, so the bytes moved are known exactly.
inline int64_t ramp_length(int64_t b, int64_t batch, int64_t s) {
    return s - (s / 2) * b / (batch > 1 ? batch - 1 : 1);
}
inline constexpr float kFillRange = 4.0f;
inline constexpr double kMaskKeep = 0.9;

// A dense row-major tensor an op reads (output == false) or writes.
struct TensorSpec {
    const char* name;          // "x", "y", "mask", "lengths"
    tops_arg_kind_t arg;
    tops_dtype_t dtype;
    std::vector<int64_t> dims;
    bool output;
    Fill fill;
    int64_t fill_max = 0;      // Fill::lengths: upper bound
};

int64_t element_count(const std::vector<int64_t>& dims);
size_t tensor_bytes(const TensorSpec& t);

// ------------------------------------------------------------------ op table

// What an op entry returns for a case: the created op and its tensors.
struct OpInstance {
    tops_op_t op = nullptr;
    std::vector<TensorSpec> tensors;
    std::string kernel;
    std::string args;  // human-readable options ("axis=-1", "perm=0,2,1")
    double flops = 0;  // compute-bound ops (GEMM 2MNK, attention 4BHS^2D): reported as TFLOP/s
    double bytes = 0;  // > 0: bytes the op moves, where it touches only part of its tensors (unpad, pad)
};

// Host views of one buffer set (set 0) after a run, for a sampled sanity check.
using HostTensors = std::vector<std::vector<unsigned char>>;

struct OpEntry {
    const char* name;
    const char* help;
    // Builds the op's tensors and args, then creates the tops op on ctx. Returns a
    // status; on failure *err says why, and the tensors are still filled when the
    // case itself is well formed (so a baseline can run where tops cannot).
    tops_status_t (*create)(const Case& c, tops_context_t ctx, OpInstance* out, std::string* err);
    // Checks sampled outputs against the inputs; returns "" when fine, else a message.
    std::string (*check)(const Case& c, const OpInstance& inst, const HostTensors& host);
};

// All ops tops-bench knows; adding an op is one entry here (ops.cpp).
const std::vector<OpEntry>& op_table();
// Entries defined outside ops.cpp (ops_compute.cpp: gemm), appended to op_table().
std::vector<OpEntry> compute_op_entries();
// unpad / pad entries (ops_pad.cpp), appended to op_table().
std::vector<OpEntry> pad_op_entries();
// Element i of a dense buffer of dtype, as a double (ops.cpp).
double load_element(const unsigned char* base, tops_dtype_t dtype, int64_t i);
const OpEntry* find_op(const std::string& name);

// ------------------------------------------------------------------ statistics

struct Stats {
    double median_s = 0, q1_s = 0, q3_s = 0, min_s = 0;
    int reps = 0;
    double iqr_pct() const { return median_s > 0 ? 100.0 * (q3_s - q1_s) / median_s : 0; }
};
Stats summarize(std::vector<double> seconds);

// Per-call times of one measurement, and on the CPU the share of the requested
// cores the process actually got while timing (process CPU time / (wall time x
// threads)): well below 1 means other work shared the cores.
struct Timing {
    std::vector<double> seconds;
    double cpu_share = -1;  // -1: not measured (CUDA)
};

struct TimingOptions {
    int warmup = 3;          // untimed calls first (at least)
    double warmup_s = 0.05;  // and at least this long
    int min_reps = 10;
    double min_time_s = 0.5; // timed calls continue until both limits are met
    int max_reps = 100000;
};

// ------------------------------------------------------------------ devices

struct CopyCeiling {
    const char* name;   // "copy", "copy-nt", "d2d-copy"
    double bytes;       // read + written per timed call
    Stats stats;
    double array_bytes; // size of each of the two arrays the calls walk through
    double cpu_share;   // as in Timing
    double gbs() const { return stats.median_s > 0 ? bytes / stats.median_s / 1e9 : 0; }
};

// Where buffers live and how calls are timed. threads applies to CPU only.
class Device {
public:
    virtual ~Device() = default;
    virtual tops_backend_t backend() const = 0;
    virtual void* alloc(size_t bytes) = 0;
    virtual void release(void* p) = 0;
    virtual void upload(void* dst, const void* src, size_t bytes) = 0;
    virtual void download(void* dst, const void* src, size_t bytes) = 0;
    virtual void* stream() { return nullptr; }
    // Times call(rep) per repetition after a warm-up; threads is the CPU thread count used.
    virtual Timing time_calls(const std::function<void(int)>& call, const TimingOptions& opt, int threads) = 0;
    // Copy bandwidth ceilings measured at the given thread count; the first is primary.
    virtual std::vector<CopyCeiling> copy_ceilings(int threads, size_t array_bytes) = 0;
    // Size of the last-level cache the op's buffers must exceed to be cold.
    virtual size_t llc_bytes() const = 0;
    virtual std::string description() const = 0;
};

std::unique_ptr<Device> make_cpu_device();
// nullptr (and *why) when the bench was built without CUDA or no device is usable.
std::unique_ptr<Device> make_cuda_device(int device, std::string* why);

// ------------------------------------------------------------------ machine

struct MachineInfo {
    std::string cpu_model;
    int logical_cpus = 0;
    size_t llc_bytes = 0;
    std::string isa;
    std::string tops_version;
    std::string load_average;  // /proc/loadavg's 1, 5 and 15 minute figures: other work on the machine
};
MachineInfo machine_info();

// ------------------------------------------------------------------ oneDNN

// A prepared oneDNN primitive for a case; run() executes it on one buffer set
// (pointers in the order of OpInstance::tensors).
class Baseline {
public:
    virtual ~Baseline() = default;
    virtual void run(const std::vector<void*>& buffers) = 0;
    virtual std::string impl() const = 0;
};

bool onednn_compiled();
std::string onednn_version();
// nullptr with *why when oneDNN has no equivalent for the case.
std::unique_ptr<Baseline> onednn_prepare(const Case& c, const OpInstance& inst, std::string* why);

// ------------------------------------------------------------------ helpers

std::string dims_string(const std::vector<int64_t>& dims, char sep = 'x');
int normalize_axis(int axis, int rank);

}  // namespace bench
