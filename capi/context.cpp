// Contexts and backend discovery. The CPU backend is built in; the CUDA
// backend is the libtops_cuda.so plugin, loaded with dlopen on first use from
// $TOPS_CUDA_PLUGIN or from the directory holding libtops.so.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <new>

#include "capi/internal.hpp"

namespace {

struct CudaPlugin {
    std::once_flag once;
    tops::Backend* backend = nullptr;
    std::string reason = "not probed";
};

CudaPlugin& cuda_plugin() {
    static CudaPlugin p;
    return p;
}

std::string library_dir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&tops_version), &info) == 0 || !info.dli_fname) return {};
    std::string path = info.dli_fname;
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

void load_cuda_plugin(CudaPlugin& p) {
    std::string path;
    if (const char* env = std::getenv("TOPS_CUDA_PLUGIN"); env && *env) {
        path = env;
    } else {
        path = library_dir() + "libtops_cuda.so";
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char* err = dlerror();
        p.reason = tops::fmt("CUDA plugin not loadable (", path, "): ", err ? err : "unknown error");
        return;
    }
    // The plugin stays loaded for the life of the process: plans created by
    // it may outlive every context.
    auto abi = reinterpret_cast<tops::PluginAbiFn>(dlsym(handle, tops::kPluginAbiSymbol));
    auto create = reinterpret_cast<tops::PluginCreateFn>(dlsym(handle, tops::kPluginEntrySymbol));
    if (!abi || !create) {
        p.reason = tops::fmt("CUDA plugin ", path, " lacks the tops plugin entry points");
        return;
    }
    if (abi() != tops::kBackendAbiVersion) {
        p.reason = tops::fmt("CUDA plugin ", path, " has backend ABI ", abi(), ", this libtops needs ",
                             tops::kBackendAbiVersion);
        return;
    }
    std::string why;
    p.backend = create(&why);
    p.reason = p.backend ? "ok" : why;
}

}  // namespace

namespace tops::capi {

Status get_backend(tops_backend_t kind, Backend** out) {
    if (kind == TOPS_BACKEND_CPU) {
        *out = &cpu_backend();
        return Status::ok();
    }
    if (kind == TOPS_BACKEND_CUDA) {
        CudaPlugin& p = cuda_plugin();
        std::call_once(p.once, [&] { load_cuda_plugin(p); });
        if (!p.backend) return Status(TOPS_ERROR_BACKEND_UNAVAILABLE, "cuda backend unavailable: " + p.reason);
        *out = p.backend;
        return Status::ok();
    }
    return Status(TOPS_ERROR_INVALID_ARGUMENT, fmt("unknown backend ", int(kind)));
}

}  // namespace tops::capi

using tops::Status;
using tops::capi::report;
using tops::capi::success;

extern "C" {

TOPS_API const char* tops_backend_name(tops_backend_t backend) {
    switch (backend) {
        case TOPS_BACKEND_DEFAULT: return "default";
        case TOPS_BACKEND_CPU: return "cpu";
        case TOPS_BACKEND_CUDA: return "cuda";
    }
    return "unknown";
}

TOPS_API int tops_backend_available(tops_backend_t backend, const char** reason) {
    const char* why = "ok";
    int ok = 1;
    try {
        if (backend == TOPS_BACKEND_CUDA) {
            tops::Backend* b = nullptr;
            ok = tops::capi::get_backend(backend, &b).is_ok() ? 1 : 0;
            why = cuda_plugin().reason.c_str();  // stable after the one-time probe
        } else if (backend != TOPS_BACKEND_CPU && backend != TOPS_BACKEND_DEFAULT) {
            ok = 0;
            why = "unknown backend";
        }
    } catch (...) {
        ok = 0;
        why = "internal error while probing the backend";
    }
    if (reason) *reason = why;
    return ok;
}

TOPS_API tops_status_t tops_context_create(tops_backend_t backend, int device, tops_context_t* ctx) {
    TOPS_CAPI_GUARD({
        if (!ctx) return report(Status(TOPS_ERROR_NULL_POINTER, "tops_context_create: ctx is NULL"));
        *ctx = nullptr;
        if (backend == TOPS_BACKEND_DEFAULT) {
            backend = tops_backend_available(TOPS_BACKEND_CUDA, nullptr) ? TOPS_BACKEND_CUDA
                                                                        : TOPS_BACKEND_CPU;
        }
        if (device < 0) {
            return report(Status(TOPS_ERROR_INVALID_ARGUMENT,
                                 tops::fmt("tops_context_create: device ", device, " is negative")));
        }
        tops::Backend* b = nullptr;
        Status st = tops::capi::get_backend(backend, &b);
        if (!st.is_ok()) return report(Status(st.code(), "tops_context_create: " + st.message()));
        st = b->open_device(device);
        if (!st.is_ok()) return report(Status(st.code(), "tops_context_create: " + st.message()));
        auto* c = new (std::nothrow) tops_context_s;
        if (!c) return report(Status(TOPS_ERROR_OUT_OF_MEMORY, "tops_context_create: out of host memory"));
        c->backend = b;
        c->kind = backend;
        c->device = backend == TOPS_BACKEND_CPU ? 0 : device;
        *ctx = c;
        return success();
    })
}

TOPS_API tops_status_t tops_context_destroy(tops_context_t ctx) {
    delete ctx;
    return success();
}

TOPS_API tops_status_t tops_context_get_backend(tops_context_t ctx, tops_backend_t* backend) {
    if (!ctx) return report(Status(TOPS_ERROR_NULL_POINTER, "tops_context_get_backend: ctx is NULL"));
    if (!backend) return report(Status(TOPS_ERROR_NULL_POINTER, "tops_context_get_backend: backend is NULL"));
    *backend = ctx->kind;
    return success();
}

TOPS_API tops_status_t tops_context_set_stream(tops_context_t ctx, void* stream) {
    if (!ctx) return report(Status(TOPS_ERROR_NULL_POINTER, "tops_context_set_stream: ctx is NULL"));
    ctx->stream = stream;
    return success();
}

TOPS_API tops_status_t tops_context_set_num_threads(tops_context_t ctx, int num_threads) {
    if (!ctx) return report(Status(TOPS_ERROR_NULL_POINTER, "tops_context_set_num_threads: ctx is NULL"));
    if (num_threads < 0) {
        return report(Status(TOPS_ERROR_INVALID_ARGUMENT,
                             tops::fmt("tops_context_set_num_threads: num_threads ", num_threads,
                                       " is negative")));
    }
    ctx->num_threads = num_threads;
    return success();
}

}  // extern "C"
