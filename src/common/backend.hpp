// The backend interface: capi validates a request, builds a parameter struct
// and asks the context's backend for an OpPlan (a chosen kernel); execute then
// calls the plan with the caller's pointers. The CPU backend lives in the core
// library; the CUDA backend implements the same interface inside the
// libtops_cuda.so plugin (found through kPluginEntry).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/params.hpp"
#include "common/status.hpp"

namespace tops {

// Bumped whenever Backend, OpPlan or a parameter struct changes layout: a
// plugin built against another version is refused with a clear reason.
constexpr int kBackendAbiVersion = 2;

// Execute-time state taken from the context.
struct ExecContext {
    int num_threads = 0;      // CPU: 0 = OpenMP default
    void* stream = nullptr;   // CUDA: cudaStream_t
    int device = 0;           // CUDA device ordinal
};

constexpr int kArgSlots = 64;  // tags are bits of a uint64_t in capi

// Execute arguments indexed by tops_arg_kind_t (absent = nullptr).
struct ArgTable {
    const void* ptr[kArgSlots] = {};
    void* workspace = nullptr;
    size_t workspace_bytes = 0;

    const void* in(tops_arg_kind_t k) const { return ptr[k]; }
    void* out(tops_arg_kind_t k) const { return const_cast<void*>(ptr[k]); }
};

// A validated op bound to one kernel choice. Immutable: execute may run
// concurrently from several threads with different ExecContexts.
class OpPlan {
public:
    virtual ~OpPlan() = default;
    virtual size_t workspace_size() const { return 0; }
    virtual Status execute(const ExecContext& ctx, const ArgTable& args) const = 0;
    // Static kernel name, e.g. "softmax_f32_rowwise_avx2".
    virtual const char* kernel_name() const = 0;
    // Why this kernel was chosen (TOPS_VERBOSE=2).
    virtual std::string reason() const { return {}; }
};

using PlanPtr = std::unique_ptr<OpPlan>;

class Backend {
public:
    virtual ~Backend() = default;
    virtual tops_backend_t kind() const = 0;
    // Check that `device` can be used (CPU: always ok).
    virtual Status open_device(int device) = 0;
    virtual Status plan_softmax(const SoftmaxParams& p, int device, PlanPtr* out) = 0;
    virtual Status plan_transpose(const TransposeParams& p, int device, PlanPtr* out) = 0;
    // Ops a backend may not implement yet answer TOPS_ERROR_NOT_SUPPORTED.
    virtual Status plan_norm(const NormParams& p, int device, PlanPtr* out);
    virtual Status plan_reduce(const ReduceParams& p, int device, PlanPtr* out);
    virtual Status plan_eltwise(const EltwiseParams& p, int device, PlanPtr* out);
    virtual Status plan_gemm(const GemmParams& p, int device, PlanPtr* out);
    virtual Status plan_attention(const AttentionParams& p, int device, PlanPtr* out);
    virtual Status plan_conv2d(const ConvParams& p, int device, PlanPtr* out);
    virtual Status plan_pad(const PadParams& p, int device, PlanPtr* out);
};

inline Status Backend::plan_norm(const NormParams&, int, PlanPtr*) {
    return Status(TOPS_ERROR_NOT_SUPPORTED, "norm: not implemented on this backend");
}
inline Status Backend::plan_reduce(const ReduceParams&, int, PlanPtr*) {
    return Status(TOPS_ERROR_NOT_SUPPORTED, "reduce: not implemented on this backend");
}
inline Status Backend::plan_eltwise(const EltwiseParams&, int, PlanPtr*) {
    return Status(TOPS_ERROR_NOT_SUPPORTED, "elementwise: not implemented on this backend");
}
inline Status Backend::plan_gemm(const GemmParams&, int, PlanPtr*) {
    return Status(TOPS_ERROR_NOT_SUPPORTED, "gemm: not implemented on this backend");
}
inline Status Backend::plan_attention(const AttentionParams&, int, PlanPtr*) {
    return Status(TOPS_ERROR_NOT_SUPPORTED, "attention: not implemented on this backend");
}
inline Status Backend::plan_conv2d(const ConvParams&, int, PlanPtr*) {
    return Status(TOPS_ERROR_NOT_SUPPORTED, "conv2d: not implemented on this backend");
}
inline Status Backend::plan_pad(const PadParams& p, int, PlanPtr*) {
    return Status(TOPS_ERROR_NOT_SUPPORTED, p.unpad ? "unpad: not implemented on this backend"
                                                    : "pad: not implemented on this backend");
}

// Plugin entry points (extern "C", exported by libtops_cuda.so).
//   int  tops_plugin_abi_version(void);
//   tops::Backend* tops_plugin_create_backend(std::string* reason);
//     returns nullptr and sets *reason when the backend cannot be used
//     (no driver, no device, compute capability < 8.0).
constexpr const char* kPluginAbiSymbol = "tops_plugin_abi_version";
constexpr const char* kPluginEntrySymbol = "tops_plugin_create_backend";
using PluginAbiFn = int (*)();
using PluginCreateFn = Backend* (*)(std::string* reason);

// The CPU backend (src/cpu).
Backend& cpu_backend();

}  // namespace tops
