// Depthwise Conv2d (groups == input channels, any channel multiplier) as a
// direct kernel: one thread per output element, the R x S taps in a loop with
// f32 accumulation. A depthwise layer has R*S FMAs per output, far too few
// for a GEMM formulation to pay; it is bound by reading x, so what matters is
// coalescing: threads run along the unit-stride dimension of y (channels in
// NHWC, output columns in NCHW), which is also the unit-stride dimension of x
// in either layout, and neighbouring outputs re-read the same x rows from L1.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "cuda/conv_common.cuh"

namespace tops::cuda {
namespace {

constexpr int kDwThreads = 256;
constexpr int64_t kDwMaxBlocks = int64_t(1) << 20;  // grid-stride beyond this

template <class T, bool CHANNELS_FAST>
__global__ void __launch_bounds__(kDwThreads) conv_depthwise_kernel(const __grid_constant__ ConvKernelParams p) {
    using Tr = ElemTraits<T>;
    const T* x = static_cast<const T*>(p.x);
    const T* w = static_cast<const T*>(p.w);
    const int64_t kt = int64_t(p.k) * p.groups;  // output channels
    const int64_t total = int64_t(p.n) * kt * p.p * p.q;
    const int64_t step = int64_t(gridDim.x) * blockDim.x;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
        ConvPixel px;
        int64_t ko;
        if constexpr (CHANNELS_FAST) {  // e = ((n * P + oh) * Q + ow) * Kt + ko
            ko = e % kt;
            px = conv_pixel(int(e / kt), p.p, p.q);
        } else {  // e = ((n * Kt + ko) * P + oh) * Q + ow
            int64_t rest = e;
            px.ow = int(rest % p.q);
            rest /= p.q;
            px.oh = int(rest % p.p);
            rest /= p.p;
            ko = rest % kt;
            px.n = int(rest / kt);
        }
        const int64_t ci = ko / p.k;  // the input channel (= group) feeding ko
        const int h0 = px.oh * p.stride_h - p.pad_h, w0 = px.ow * p.stride_w - p.pad_w;
        const T* xp = x + (px.n * p.xs[0] + ci * p.xs[1]);
        const T* wp = w + ko * p.ws[0];
        float acc = 0.0f;
        for (int r = 0; r < p.r; ++r) {
            const int hh = h0 + r * p.dil_h;
            if (hh < 0 || hh >= p.h) continue;
            for (int s = 0; s < p.s; ++s) {
                const int ww = w0 + s * p.dil_w;
                if (ww < 0 || ww >= p.w_in) continue;
                acc = fmaf(Tr::to_float(xp[hh * p.xs[2] + ww * p.xs[3]]), Tr::to_float(wp[r * p.ws[2] + s * p.ws[3]]),
                           acc);
            }
        }
        conv_store_one<T>(p, px, ko, acc);
    }
}

template <class T>
Status launch_dw_typed(const ConvKernelParams& p, cudaStream_t stream) {
    const int64_t total = int64_t(p.n) * p.k * p.groups * p.p * p.q;
    if (total == 0) return Status::ok();
    const int grid = int(std::min(kDwMaxBlocks, (total + kDwThreads - 1) / kDwThreads));
    // Channels are the fast direction when y has unit channel stride (NHWC).
    if (p.ys[1] == 1) {
        conv_depthwise_kernel<T, true><<<grid, kDwThreads, 0, stream>>>(p);
    } else {
        conv_depthwise_kernel<T, false><<<grid, kDwThreads, 0, stream>>>(p);
    }
    return launch_status("conv_depthwise");
}

}  // namespace

Status launch_conv_depthwise(const ConvKernelParams& p, tops_dtype_t dtype, cudaStream_t stream) {
    switch (dtype) {
        case TOPS_DTYPE_F32: return launch_dw_typed<float>(p, stream);
        case TOPS_DTYPE_F16: return launch_dw_typed<__half>(p, stream);
        case TOPS_DTYPE_BF16: return launch_dw_typed<__nv_bfloat16>(p, stream);
        default: return Status(TOPS_ERROR_INTERNAL, "conv depthwise: unexpected dtype");
    }
}

}  // namespace tops::cuda
