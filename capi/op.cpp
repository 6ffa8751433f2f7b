// The op life cycle shared by every op: handle creation, workspace query,
// argument checking and dispatch to the backend's plan, destruction.
#include <new>

#include "capi/internal.hpp"

namespace tops::capi {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool same_layout(const TensorLayout& a, const TensorLayout& b) {
    if (a.dtype != b.dtype || a.rank != b.rank) return false;
    for (int i = 0; i < a.rank; ++i) {
        if (a.dims[i] != b.dims[i]) return false;
        if (a.dims[i] > 1 && a.strides[i] != b.strides[i]) return false;
    }
    return true;
}

}  // namespace

Status check_aliasing(const tops_op_s& op, const ArgTable& table) {
    for (const ArgSpec& out : op.args) {
        const char* o = static_cast<const char*>(table.ptr[out.kind]);
        const int64_t ob = byte_extent(out.layout);
        if (!out.output || !o || ob == 0) continue;
        for (const ArgSpec& other : op.args) {
            const char* p = static_cast<const char*>(table.ptr[other.kind]);
            const int64_t pb = byte_extent(other.layout);
            if (&other == &out || !p || pb == 0) continue;
            if (!(o < p + pb && p < o + ob)) continue;
            const bool may_alias = !other.output && (out.inplace_with & arg_bit(other.kind));
            if (may_alias && o == p && same_layout(out.layout, other.layout)) continue;
            return Status(TOPS_ERROR_INVALID_ARGUMENT,
                          fmt(op.op_name, ": output ", out.name, " overlaps ", other.output ? "output " : "input ",
                              other.name, may_alias ? " (in place is allowed only with the same pointer and layout)"
                                                    : " (not allowed for this pair)"));
        }
    }
    return Status::ok();
}

Status check_create_args(tops_context_t ctx, const char* op_name, const void* desc, tops_op_t* out) {
    if (!out) return Status(TOPS_ERROR_NULL_POINTER, fmt("tops_", op_name, "_create: op is NULL"));
    *out = nullptr;
    if (!ctx) return Status(TOPS_ERROR_NULL_POINTER, fmt("tops_", op_name, "_create: ctx is NULL"));
    if (!desc) return Status(TOPS_ERROR_NULL_POINTER, fmt("tops_", op_name, "_create: desc is NULL"));
    return Status::ok();
}

tops_status_t finish_create(tops_context_t ctx, OpSignature sig, PlanPtr plan, const Status& st,
                            tops_op_t* out, std::chrono::steady_clock::time_point t0) {
    if (!st.is_ok()) return report(st);
    if (!plan) return report(Status(TOPS_ERROR_INTERNAL, fmt(sig.op_name, ": backend returned no plan")));
    auto* op = new (std::nothrow) tops_op_s;
    if (!op) return report(Status(TOPS_ERROR_OUT_OF_MEMORY, fmt(sig.op_name, ": out of host memory")));
    op->op_name = sig.op_name;
    op->kind = ctx->kind;
    op->device = ctx->device;
    for (const ArgSpec& a : sig.args) {
        const uint64_t bit = uint64_t(1) << unsigned(a.kind);
        op->allowed_args |= bit;
        if (a.required) op->required_args |= bit;
    }
    op->args = std::move(sig.args);
    op->plan = std::move(plan);
    op->summary = std::move(sig.summary);
    if (log_enabled(1)) {
        log_line(1, fmt("create,", tops_backend_name(op->kind), ",", op->op_name, ",",
                        op->plan->kernel_name(), ",", op->summary, ",", ms_since(t0), "ms"));
        const std::string why = op->plan->reason();
        if (!why.empty()) log_line(2, fmt("choice,", op->op_name, ",", op->plan->kernel_name(), ",", why));
    }
    *out = op;
    return success();
}

}  // namespace tops::capi

using tops::Status;
using tops::capi::report;
using tops::capi::success;

extern "C" {

TOPS_API tops_status_t tops_op_workspace_size(tops_op_t op, size_t* bytes) {
    if (!op) return report(Status(TOPS_ERROR_NULL_POINTER, "tops_op_workspace_size: op is NULL"));
    if (!bytes) return report(Status(TOPS_ERROR_NULL_POINTER, "tops_op_workspace_size: bytes is NULL"));
    *bytes = op->plan->workspace_size();
    return success();
}

TOPS_API const char* tops_op_kernel_name(tops_op_t op) {
    return op ? op->plan->kernel_name() : "";
}

TOPS_API tops_status_t tops_op_execute(tops_context_t ctx, tops_op_t op, const tops_arg_t* args,
                                       size_t num_args, void* workspace, size_t workspace_bytes) {
    TOPS_CAPI_GUARD({
        if (!ctx) return report(Status(TOPS_ERROR_NULL_POINTER, "tops_op_execute: ctx is NULL"));
        if (!op) return report(Status(TOPS_ERROR_NULL_POINTER, "tops_op_execute: op is NULL"));
        const char* name = op->op_name;
        if (ctx->kind != op->kind || ctx->device != op->device) {
            return report(Status(TOPS_ERROR_CONTEXT_MISMATCH,
                tops::fmt(name, ": op was created for ", tops_backend_name(op->kind), " device ", op->device,
                          " but executed with a ", tops_backend_name(ctx->kind), " device ", ctx->device,
                          " context")));
        }
        if (num_args > 0 && !args) {
            return report(Status(TOPS_ERROR_NULL_POINTER,
                                 tops::fmt(name, ": args is NULL with num_args = ", num_args)));
        }
        tops::ArgTable table;
        uint64_t seen = 0;
        for (size_t i = 0; i < num_args; ++i) {
            const int k = int(args[i].kind);
            if (k <= 0 || k >= tops::kArgSlots || !(op->allowed_args & (uint64_t(1) << unsigned(k)))) {
                return report(Status(TOPS_ERROR_UNKNOWN_ARGUMENT,
                                     tops::fmt(name, ": args[", i, "] has tag ", k, ", which this op does not take")));
            }
            if (seen & (uint64_t(1) << unsigned(k))) {
                return report(Status(TOPS_ERROR_INVALID_ARGUMENT,
                                     tops::fmt(name, ": argument tag ", k, " is given twice")));
            }
            if (!args[i].ptr) {
                return report(Status(TOPS_ERROR_NULL_POINTER,
                                     tops::fmt(name, ": args[", i, "] (tag ", k, ") has a NULL pointer")));
            }
            seen |= uint64_t(1) << unsigned(k);
            table.ptr[k] = args[i].ptr;
        }
        const uint64_t missing = op->required_args & ~seen;
        if (missing) {
            int k = __builtin_ctzll(missing);
            return report(Status(TOPS_ERROR_MISSING_ARGUMENT,
                                 tops::fmt(name, ": required argument with tag ", k, " is missing")));
        }
        {
            Status alias = tops::capi::check_aliasing(*op, table);
            if (!alias.is_ok()) return report(alias);
        }
        const size_t need = op->plan->workspace_size();
        if (workspace_bytes < need) {
            return report(Status(TOPS_ERROR_WORKSPACE_TOO_SMALL,
                                 tops::fmt(name, ": workspace of ", workspace_bytes, " bytes is smaller than the ",
                                           need, " bytes tops_op_workspace_size reports")));
        }
        if (need > 0 && !workspace) {
            return report(Status(TOPS_ERROR_NULL_POINTER, tops::fmt(name, ": workspace is NULL")));
        }
        table.workspace = workspace;
        table.workspace_bytes = workspace_bytes;
        tops::ExecContext ec;
        ec.num_threads = ctx->num_threads;
        ec.stream = ctx->stream;
        ec.device = ctx->device;
        const bool logging = tops::capi::log_enabled(1);
        const auto t0 = std::chrono::steady_clock::now();
        Status st = op->plan->execute(ec, table);
        if (!st.is_ok()) return report(st);
        if (logging) {
            tops::capi::log_line(1, tops::fmt("exec,", tops_backend_name(op->kind), ",", name, ",",
                                              op->plan->kernel_name(), ",", op->summary, ",",
                                              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(), "ms"));
        }
        return success();
    })
}

TOPS_API tops_status_t tops_op_destroy(tops_op_t op) {
    delete op;
    return success();
}

}  // extern "C"
