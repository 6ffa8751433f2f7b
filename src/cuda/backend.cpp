// The CUDA backend plugin (libtops_cuda.so): the two exported entry points,
// device discovery, and routing of each op to its plan factory. Everything
// else in this library has hidden visibility.
#include <cuda_runtime.h>

#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cuda/gemm.hpp"
#include "cuda/norm_reduce_eltwise.hpp"
#include "cuda/ops.hpp"

namespace tops::cuda {
namespace {

constexpr int kMinCcMajor = 8;

class CudaBackend final : public Backend {
public:
    explicit CudaBackend(std::vector<DeviceInfo> devices) : devices_(std::move(devices)) {}

    tops_backend_t kind() const override { return TOPS_BACKEND_CUDA; }

    // Looks the device up once and hands it to an op's plan factory.
    template <class PlanFn>
    Status on_device(int device, PlanFn plan) {
        const DeviceInfo* d = nullptr;
        TOPS_RETURN_IF_ERROR(lookup(device, &d));
        return plan(*d);
    }

    Status open_device(int device) override {
        const DeviceInfo* d = nullptr;
        return lookup(device, &d);
    }

    Status plan_softmax(const SoftmaxParams& p, int device, PlanPtr* out) override {
        return on_device(device, [&](const DeviceInfo& d) { return cuda::plan_softmax(p, d, out); });
    }

    Status plan_transpose(const TransposeParams& p, int device, PlanPtr* out) override {
        return on_device(device, [&](const DeviceInfo& d) { return cuda::plan_transpose(p, d, out); });
    }

    Status plan_norm(const NormParams& p, int device, PlanPtr* out) override {
        return on_device(device, [&](const DeviceInfo& d) { return cuda::plan_norm(p, d, out); });
    }

    Status plan_reduce(const ReduceParams& p, int device, PlanPtr* out) override {
        return on_device(device, [&](const DeviceInfo& d) { return cuda::plan_reduce(p, d, out); });
    }

    Status plan_eltwise(const EltwiseParams& p, int device, PlanPtr* out) override {
        return on_device(device, [&](const DeviceInfo& d) { return cuda::plan_eltwise(p, d, out); });
    }

    Status plan_gemm(const GemmParams& p, int device, PlanPtr* out) override {
        return on_device(device, [&](const DeviceInfo& d) { return cuda::plan_gemm(p, d, out); });
    }

    Status plan_conv2d(const ConvParams& p, int device, PlanPtr* out) override {
        return on_device(device, [&](const DeviceInfo& d) { return cuda::plan_conv2d(p, d, out); });
    }

    Status plan_attention(const AttentionParams& p, int device, PlanPtr* out) override {
        return on_device(device, [&](const DeviceInfo& d) { return cuda::plan_attention(p, d, out); });
    }

    Status plan_pad(const PadParams& p, int device, PlanPtr* out) override {
        return on_device(device, [&](const DeviceInfo& d) { return cuda::plan_pad(p, d, out); });
    }

private:
    Status lookup(int device, const DeviceInfo** out) const {
        if (device < 0 || device >= int(devices_.size())) {
            return Status(TOPS_ERROR_INVALID_ARGUMENT,
                          fmt("cuda device ", device, " does not exist (", devices_.size(), " device(s))"));
        }
        const DeviceInfo& d = devices_[size_t(device)];
        if (d.cc_major < kMinCcMajor) {
            return Status(TOPS_ERROR_NOT_SUPPORTED, fmt("cuda device ", device, " has compute capability ",
                                                        d.cc_major, ".", d.cc_minor, " < 8.0"));
        }
        *out = &d;
        return Status::ok();
    }

    std::vector<DeviceInfo> devices_;
};

std::string error_text(cudaError_t err) {
    return fmt(cudaGetErrorName(err), ": ", cudaGetErrorString(err));
}

Backend* create_backend(std::string* reason) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
        *reason = "no CUDA device";
        return nullptr;
    }
    if (err == cudaErrorInsufficientDriver) {
        *reason = "no usable CUDA driver (" + error_text(err) + ")";
        return nullptr;
    }
    if (err != cudaSuccess) {
        *reason = "CUDA initialization failed (" + error_text(err) + ")";
        return nullptr;
    }
    std::vector<DeviceInfo> devices(static_cast<size_t>(count));
    bool any_usable = false;
    std::string best_cc;
    for (int i = 0; i < count; ++i) {
        DeviceInfo& d = devices[size_t(i)];
        const cudaError_t e = query_device_info(i, &d);
        if (e != cudaSuccess) {
            *reason = fmt("cudaDeviceGetAttribute on device ", i, " failed (", error_text(e), ")");
            return nullptr;
        }
        if (d.cc_major >= kMinCcMajor) any_usable = true;
        if (best_cc.empty()) best_cc = fmt(d.cc_major, ".", d.cc_minor);
    }
    if (!any_usable) {
        *reason = fmt("compute capability ", best_cc, " < 8.0");
        return nullptr;
    }
    auto* b = new (std::nothrow) CudaBackend(std::move(devices));
    if (!b) *reason = "out of host memory";
    return b;
}

}  // namespace
}  // namespace tops::cuda

extern "C" {

__attribute__((visibility("default"))) int tops_plugin_abi_version(void) { return tops::kBackendAbiVersion; }

__attribute__((visibility("default"))) tops::Backend* tops_plugin_create_backend(std::string* reason) {
    std::string local;
    std::string* why = reason ? reason : &local;
    try {
        return tops::cuda::create_backend(why);
    } catch (...) {
        *why = "internal error while creating the CUDA backend";
        return nullptr;
    }
}

}  // extern "C"
