// Host-side helpers of the CUDA plugin: CUDA errors as tops Status values,
// a scoped device switch, and the per-device facts kernels are tuned with.
#pragma once

#include <cuda_runtime.h>

#include "common/status.hpp"

namespace tops::cuda {

// What plans need to know about their device (read once, when the backend is created).
struct DeviceInfo {
    int ordinal = 0;
    int cc_major = 0;
    int cc_minor = 0;
    int sm_count = 0;
    int max_threads_per_sm = 0;
    int max_smem_per_block_optin = 0;  // bytes of dynamic shared memory a block may opt into
    int max_smem_per_sm = 0;
    int l2_bytes = 0;
};

// Fills `d` from the attributes of device `ordinal`.
inline cudaError_t query_device_info(int ordinal, DeviceInfo* d) {
    d->ordinal = ordinal;
    const struct {
        cudaDeviceAttr attr;
        int* value;
    } attrs[] = {
        {cudaDevAttrComputeCapabilityMajor, &d->cc_major},
        {cudaDevAttrComputeCapabilityMinor, &d->cc_minor},
        {cudaDevAttrMultiProcessorCount, &d->sm_count},
        {cudaDevAttrMaxThreadsPerMultiProcessor, &d->max_threads_per_sm},
        {cudaDevAttrMaxSharedMemoryPerBlockOptin, &d->max_smem_per_block_optin},
        {cudaDevAttrMaxSharedMemoryPerMultiprocessor, &d->max_smem_per_sm},
        {cudaDevAttrL2CacheSize, &d->l2_bytes},
    };
    for (const auto& a : attrs) {
        const cudaError_t e = cudaDeviceGetAttribute(a.value, a.attr, ordinal);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

inline Status cuda_status(cudaError_t err, const char* what, tops_status_t code = TOPS_ERROR_DEVICE) {
    if (err == cudaSuccess) return Status::ok();
    // Consume the runtime's record of a non-sticky error, so the next launch
    // check of this thread does not report it again.
    (void)cudaGetLastError();
    return Status(code, fmt(what, ": ", cudaGetErrorName(err), ": ", cudaGetErrorString(err)));
}

// Status of the launch just made (configuration errors, invalid device function, ...).
inline Status launch_status(const char* kernel) {
    return cuda_status(cudaGetLastError(), kernel, TOPS_ERROR_DEVICE_LAUNCH);
}

// Whether `fn` runs as sm_90 code on this device: its machine code is for
// sm_90 and was compiled from PTX of compute_90 or later, so the Hopper-only
// paths (clusters, distributed shared memory, griddepcontrol) are compiled in
// (code JIT-compiled from compute_80 PTX has them compiled out).
inline bool runs_sm90_code(const DeviceInfo& dev, const void* fn) {
    if (dev.cc_major < 9) return false;
    cudaFuncAttributes a{};
    if (cudaFuncGetAttributes(&a, fn) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return a.binaryVersion >= 90 && a.ptxVersion >= 90;
}

// Launches `fn` with `smem` bytes of dynamic shared memory on `stream`. With
// `pdl` it is a programmatic dependent launch: it may start while the
// stream's previous kernel drains, so `fn` must wait with
// griddepcontrol.wait (device.cuh) before it reads that kernel's output.
inline cudaError_t launch_maybe_pdl(const void* fn, dim3 grid, dim3 block, void** args, cudaStream_t stream,
                                    bool pdl, size_t smem = 0) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelExC(&cfg, fn, args);
}

// Dynamic shared memory a block of `fn` may use on this device: the opt-in
// limit less fn's static shared memory, rounded up to the 16-byte boundary
// where the dynamic part starts (0 when the attributes cannot be read).
inline size_t dynamic_smem_budget(const DeviceInfo& dev, const void* fn) {
    constexpr size_t kSmemAlign = 16;
    cudaFuncAttributes a{};
    if (cudaFuncGetAttributes(&a, fn) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const size_t static_bytes = (a.sharedSizeBytes + kSmemAlign - 1) / kSmemAlign * kSmemAlign;
    const size_t optin = size_t(dev.max_smem_per_block_optin);
    return optin > static_bytes ? optin - static_bytes : 0;
}

// Lets `fn` launch with up to dynamic_smem_budget bytes. The limit is a
// per-function, process-wide attribute: every plan sets it to the whole
// budget, so a plan needing less can never lower it under another plan of
// the same kernel that needs more.
inline Status allow_dynamic_smem(const DeviceInfo& dev, const void* fn, const char* what) {
    return cuda_status(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            int(dynamic_smem_budget(dev, fn))),
                       what);
}

// Makes `device` current for the scope and restores the caller's device on exit.
// cudaGetDevice reads thread-local state: the common case (already current) costs
// no driver call beyond it.
class DeviceScope {
public:
    explicit DeviceScope(int device) {
        int cur = -1;
        err_ = cudaGetDevice(&cur);
        if (err_ == cudaSuccess && cur != device) {
            err_ = cudaSetDevice(device);
            if (err_ == cudaSuccess) prev_ = cur;
        }
    }
    ~DeviceScope() {
        if (prev_ >= 0) cudaSetDevice(prev_);
    }
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;
    Status status() const { return cuda_status(err_, "cudaSetDevice"); }

private:
    cudaError_t err_ = cudaSuccess;
    int prev_ = -1;
};

}  // namespace tops::cuda
