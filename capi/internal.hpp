// capi internals: the context and op objects behind the opaque handles, error
// reporting into tops_last_error(), logging, and descriptor validation helpers.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/backend.hpp"
#include "common/status.hpp"
#include "common/tensor.hpp"
#include "tops/tops.h"

struct tops_context_s {
    tops::Backend* backend = nullptr;
    tops_backend_t kind = TOPS_BACKEND_CPU;
    int device = 0;
    void* stream = nullptr;
    int num_threads = 0;
};

namespace tops::capi {

// One execute argument an op takes, as validated at create time.
struct ArgSpec {
    tops_arg_kind_t kind;
    const char* name;       // "x", "mask", ... for messages
    TensorLayout layout;
    bool output = false;
    bool required = true;
    // For an output: bits of the input tags it may be exactly (same pointer
    // and layout), for ops that read each element before writing it.
    uint64_t inplace_with = 0;
};

constexpr uint64_t arg_bit(tops_arg_kind_t k) { return uint64_t(1) << unsigned(k); }

}  // namespace tops::capi

struct tops_op_s {
    const char* op_name = "";       // "softmax"
    tops_backend_t kind = TOPS_BACKEND_CPU;
    int device = 0;
    uint64_t required_args = 0;     // bit k set: tops_arg_kind_t k must be given
    uint64_t allowed_args = 0;      // bit k set: tops_arg_kind_t k may be given
    std::vector<tops::capi::ArgSpec> args;  // for the aliasing check
    tops::PlanPtr plan;
    std::string summary;            // shapes and dtypes, for logs
};

namespace tops::capi {

// Records status in the thread's last error and returns its code.
tops_status_t report(const Status& s);
// Clears the last error and returns TOPS_SUCCESS.
tops_status_t success();

// Log a line at `level` (1 or 2) if enabled.
bool log_enabled(int level);
void log_line(int level, const std::string& line);

// Backend lookup (CUDA loads the plugin on first use).
Status get_backend(tops_backend_t kind, Backend** out);

// Validation helpers; `what` names the op and argument ("softmax: x").
Status check_struct_size(const char* op, uint32_t got, size_t oldest);
Status check_tensor(const std::string& what, const tops_tensor_desc_t& d);
// An output must not have two indices at one address.
Status check_no_self_overlap(const std::string& what, const TensorLayout& t);
std::string describe(const TensorLayout& t);  // "f32[4,8]{8,1}"
const char* dtype_name(tops_dtype_t dt);

// What an op's create step knows once its desc is validated.
struct OpSignature {
    const char* op_name = "";  // "softmax"
    std::string summary;       // shapes/dtypes for logs
    std::vector<ArgSpec> args;

    void input(tops_arg_kind_t k, const char* name, const TensorLayout& t, bool required = true) {
        args.push_back({k, name, t, false, required, 0});
    }
    // inplace_with: arg_bit()s of the inputs this output may be exactly.
    void output(tops_arg_kind_t k, const char* name, const TensorLayout& t, uint64_t inplace_with) {
        args.push_back({k, name, t, true, true, inplace_with});
    }
    // Adds an optional tensor as an argument when it is present.
    void optional_input(tops_arg_kind_t k, const char* name, const TensorLayout& t) {
        if (t.present()) input(k, name, t);
    }
};

// Bytes from the first to one past the last element (0 when empty).
int64_t byte_extent(const TensorLayout& t);
// Checks a broadcastable optional tensor against x and expands it to x's dims
// with stride 0 on broadcast dims. `fixed_one_axis` >= 0 names a dim that must be 1.
Status expand_broadcast(const std::string& what, const TensorLayout& x, int fixed_one_axis,
                        TensorLayout* t);

// Merges dims [begin, end) of t into one dim (size = product, stride = the
// innermost non-trivial stride) when their strides allow it. too_large: their
// product passes 2^63 - 1 (a tensor can hold such dims only beside a zero dim,
// which its own checks cannot see); checked first, as it makes strides moot.
enum class Collapse { ok, strides_differ, too_large };
Collapse collapse_dims(const TensorLayout& t, int begin, int end, int64_t* size, int64_t* stride);

// Checks an optional tensor that must match `ref` in dims (dtype checked by
// the caller); empty optional tensors are skipped.
Status check_same_dims(const std::string& what, const TensorLayout& t, const std::string& ref_name,
                       const TensorLayout& ref);

// At execute: an output may overlap another argument only when it is exactly
// an input with the same layout and the op allows in place.
Status check_aliasing(const tops_op_s& op, const ArgTable& table);

// Checks the arguments every tops_<op>_create shares (ctx, desc, out).
Status check_create_args(tops_context_t ctx, const char* op_name, const void* desc, tops_op_t* out);

// Shared tail of every tops_<op>_create: asks the backend for a plan through
// plan_fn(Backend&, int device, PlanPtr*) and wraps it in an op handle.
tops_status_t finish_create(tops_context_t ctx, OpSignature sig, PlanPtr plan, const Status& st,
                            tops_op_t* out, std::chrono::steady_clock::time_point t0);

template <class PlanFn>
tops_status_t create_op(tops_context_t ctx, OpSignature sig, tops_op_t* out, PlanFn plan_fn) {
    const auto t0 = std::chrono::steady_clock::now();
    PlanPtr plan;
    Status st = plan_fn(*ctx->backend, ctx->device, &plan);
    return finish_create(ctx, std::move(sig), std::move(plan), st, out, t0);
}

}  // namespace tops::capi

// Wraps a C entry point body so no exception crosses the ABI.
#define TOPS_CAPI_GUARD(...)                                                           \
    try {                                                                              \
        __VA_ARGS__                                                                    \
    } catch (const std::bad_alloc&) {                                                  \
        return ::tops::capi::report(::tops::Status(TOPS_ERROR_OUT_OF_MEMORY, "out of host memory")); \
    } catch (const std::exception& e) {                                                \
        return ::tops::capi::report(::tops::Status(TOPS_ERROR_INTERNAL, e.what()));    \
    } catch (...) {                                                                    \
        return ::tops::capi::report(::tops::Status(TOPS_ERROR_INTERNAL, "unknown exception")); \
    }
