// The CUDA Conv2d kernels' shared parameter struct and launchers.
//   conv_sm90.cu       Hopper implicit GEMM (TMA + wgmma; NHWC f16/bf16, stride 1)
//   conv_sm90_3xtf32.cu  its f32 form, 3xTF32 or TF32, on repacked operands (any y layout)
//   conv_igemm.cu      tensor-core implicit GEMM (NHWC, channels a multiple of a
//                      16-byte chunk; f16/bf16, f32 as 3xTF32)
//   conv_smallc.cu     tensor-core direct kernel for fewer channels than a
//                      16-byte chunk (the image stem; f16/bf16)
//   conv_simt.cu       f32-FMA implicit GEMM for what the others do not take
//   conv_depthwise.cu  direct depthwise kernel (groups == input channels)
//   conv.cpp           the plan: ConvParams -> ConvKernelParams, kernel choice
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "common/backend.hpp"
#include "cuda/common/cuda_status.hpp"

namespace tops::cuda {

// One grouped 2-D convolution, y = act(alpha * conv(x, w) + bias + beta * residual),
// passed by value to every conv kernel. Channel counts are per group; strides
// are element strides in the order named (a channel stride counts channels
// across all groups). Output rows are P x Q; padding on the bottom/right is
// implied by P and Q, so only the top/left padding is stored.
struct ConvKernelParams {
    const void* x = nullptr;         // (N, C * groups, H, W) in any strides
    const void* w = nullptr;         // (K * groups, C, R, S)
    const void* bias = nullptr;      // (K * groups) or nullptr
    const void* residual = nullptr;  // y's shape or nullptr
    void* y = nullptr;               // (N, K * groups, P, Q)
    int n = 0, h = 0, w_in = 0;      // input batch and spatial size
    int c = 0, k = 0, groups = 1;    // channels per group
    int r = 0, s = 0, p = 0, q = 0;
    int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
    int64_t xs[4] = {};    // n, c, h, w
    int64_t ws[4] = {};    // k, c, r, s
    int64_t ys[4] = {};    // n, k, h, w
    int64_t res[4] = {};   // n, k, h, w
    int64_t bias_stride = 0;
    bool bias_f32 = false;  // bias stored as f32 (else as y's dtype)
    float alpha = 1.0f, beta = 1.0f;
    Activation act = Activation::none;
    // Epilogue may use 16-byte vectors along K (unit K stride of y and residual,
    // K per group % 8 == 0, aligned pointers and strides).
    bool vec_out = false;
    // Split-K (tensor-core kernel): splits CTAs per output tile each reduce a
    // contiguous range of the reduction into partial (splits, N*P*Q, K * groups)
    // f32; a second kernel sums them and runs the epilogue. 1: no split.
    int splits = 1;
    float* partial = nullptr;
    // f32 on the tensor-core kernel: w is the filter's TF32 big part and its
    // small part starts w_plane elements after it (the repack writes both).
    int64_t w_plane = 0;
    // f32 with TOPS_CONV_ALLOW_TF32: one TF32 product per step (x rounded to
    // TF32, w's big part) instead of the three of 3xTF32.
    bool tf32 = false;
};

// Output channels one thread stores in the 16-byte epilogue (one vector of
// f16 / bf16, two of f32): the plan's K and stride test and the kernels share it.
constexpr int kConvEpiChannels = 8;

// Tensor-core implicit GEMM configs (see IgemmTile in conv_igemm.cu).
enum class IgemmConfig { k128x128, k128x64, k64x64, k64x64k32, count };
// "BMxBNxBK_sSTAGES_wWMxWN", BK in elements of dtype.
std::string igemm_config_name(IgemmConfig c, tops_dtype_t dtype);
// Raises the kernels' dynamic shared-memory limit on the current device.
Status igemm_prepare(IgemmConfig c, tops_dtype_t dtype, bool tf32);
Status launch_conv_igemm(const ConvKernelParams& p, IgemmConfig c, tops_dtype_t dtype, cudaStream_t stream);

// dst (d0, d2, d3, cpad) dense = src (d0, d1, d2, d3) in any strides, channel
// dim d1 zero-padded to cpad (a multiple of a 16-byte chunk): x or w rewritten
// as dense NHWC / KRSC for the tensor-core kernel (NCHW, channel counts not a
// multiple of a chunk, odd strides).
struct ConvRepackParams {
    const void* src = nullptr;
    void* dst = nullptr;
    int64_t dims[4] = {};
    int64_t strides[4] = {};
    int64_t cpad = 0;
    // f32: nonzero writes dst as the TF32 big part of src and the small part
    // plane elements after it; else round_tf32 writes the big part alone.
    int64_t plane = 0;
    bool round_tf32 = false;
    // Tap folding (fold > 1): the taps along d3 become channels. dst channel
    // j is src channel j % d1 at tap t = j / d1 (t < fold), read at d3 index
    // i3 * step3 + t * dil3 - pad3, zero outside [0, d3); dst's d3 has out3
    // entries. A filter row of S taps over C channels is then one tap of
    // S * C channels (padded to a chunk once, not per tap).
    int64_t fold = 1, out3 = 0, step3 = 0, dil3 = 0, pad3 = 0;
    __host__ __device__ int64_t dst_dim3() const { return fold > 1 ? out3 : dims[3]; }
};
// pdl: launched as a programmatic dependent of the stream's previous kernel,
// which must be a repack too (conv_repack.cu); conv_repack_pdl_ok says
// whether the device runs that form.
Status launch_conv_repack(const ConvRepackParams& p, tops_dtype_t dtype, cudaStream_t stream, bool pdl);
bool conv_repack_pdl_ok(const DeviceInfo& dev);

// What the two Hopper implicit GEMMs (conv_sm90.cu, conv_sm90_3xtf32.cu)
// share: sizes, padding, y's strides, the epilogue and the pixel tiling.
// Strides as in ConvKernelParams.
struct ConvSm90Shape {
    Activation act = Activation::none;
    int n = 0, h = 0, w = 0, k = 0, r = 0, s = 0, p = 0, q = 0, pad_h = 0, pad_w = 0;
    int64_t ys[4] = {};
    int64_t bias_stride = 0;
    float alpha = 1.0f;
    int bq = 0, bp = 0, bn = 0;  // a tile's 128 output pixels: bn images x bp rows x bq columns
    int tiles = 0;
};
// Fills `out` from kp, the pixel box included (the box of (bq columns, bp
// rows, bn images) of y that pads the output least; every bq even), and
// returns the number of pixel tiles; out->tiles is left to the plan.
int64_t conv_sm90_shape(const ConvKernelParams& kp, ConvSm90Shape* out);
// "" when both Hopper kernels may take the problem as far as the device and
// kp go (an sm_90 device, groups 1, stride and dilation 1, no residual,
// act none or relu), else why not.
std::string conv_sm90_shared_why(const ConvKernelParams& kp, bool residual, const DeviceInfo& dev);
// Whether `tiles` tiles fill nine tenths of the SMs: where 128-channel tiles
// do, both kernels take them over 64-channel ones (twice the tiles).
bool conv_sm90_fills_sms(int64_t tiles, const DeviceInfo& dev);

// The Hopper implicit GEMM (conv_sm90.cu): f16 / bf16, channels-last x, KRSC
// w and y with unit channel strides and 16-byte strides otherwise, channel
// counts multiples of 8, and what conv_sm90_shared_why asks.
struct ConvSm90Problem : ConvSm90Shape {
    tops_dtype_t dtype = TOPS_DTYPE_INVALID;
    int c = 0;
    int64_t xs[4] = {}, ws[4] = {};
    int block_n = 0;  // a tile's output channels (64 or 128)
    int splits = 1;   // 2: each tile on a cluster of two CTAs splitting K (block_n 128)
    bool halo = false;  // splits 2: A read from a halo of x shared by the taps (ConvHaloSplitOp)
};
// Fills `out` and returns "" when the kernel takes the problem on `dev`
// (its shared-memory opt-in is then set), else why not. TOPS_CONV_SM90=0
// turns it off.
std::string conv_sm90_plan(const ConvKernelParams& kp, tops_dtype_t dtype, bool residual, const DeviceInfo& dev,
                           ConvSm90Problem* out);
const char* conv_sm90_kernel_name(const ConvSm90Problem& q);
// Whether the execute-time pointers meet TMA's 16-byte alignment.
bool conv_sm90_pointers_ok(const void* x, const void* w, const void* y);
Status launch_conv_sm90(const ConvSm90Problem& q, const void* x, const void* w, void* y, const void* bias,
                        int sm_count, cudaStream_t stream);

// The Hopper TF32 implicit GEMM (conv_sm90_3xtf32.cu): f32, what
// conv_sm90_shared_why asks; x and w as the repack writes them: dense NHWC
// x and KRSC w, cpad channels, each a TF32 big plane followed x_plane /
// w_plane elements on by its small plane (3xTF32, `split`), or for TF32
// (TOPS_CONV_ALLOW_TF32) x rounded to TF32 alone and w's big plane; y in
// any strides (8-byte pixel pairs where unit-stride).
struct ConvTf32Problem : ConvSm90Shape {
    bool split = true;
    int cpad = 0;
    int64_t x_plane = 0, w_plane = 0;
    int block_m = 0;  // output channels per tile (128 or 64)
};
// Fills `out` and returns "" when the kernel takes the problem on `dev`,
// else why not. TOPS_CONV_SM90_TF32=0 turns it off, =1 takes it below 64
// output channels too.
std::string conv_sm90_tf32_plan(const ConvKernelParams& kp, bool residual, bool split, const DeviceInfo& dev,
                                ConvTf32Problem* out);
const char* conv_sm90_tf32_kernel_name(const ConvTf32Problem& q);
// x_planes and w_planes 16-byte aligned (the workspace).
Status launch_conv_sm90_tf32(const ConvTf32Problem& q, const void* x_planes, const void* w_planes, void* y,
                             const void* bias, int sm_count, cudaStream_t stream);

// The small-channel window kernel (conv_smallc.cu): f16 / bf16, groups 1,
// fewer channels than a 16-byte chunk, undilated columns, S * cp <= 64. A
// CTA computes 64 output channels of bp output rows x mq 16-pixel m-tiles
// from an input window staged with cp channels per pixel.
struct ConvSmallcTile {
    int cp = 0;                // channels per window pixel (4 or 8): stride_w * cp * 2 bytes is a multiple of 16
    int ksteps = 0;            // k16 steps per filter row: ceil(S * cp / 16)
    int bp = 0, mq = 0;        // output rows and 16-pixel m-tiles per CTA
    int warps = 0;
    int bands = 0, q_tiles = 0;  // tiles per image along P (bands of bp rows) and Q
    int group_bands = 0;       // consecutive bands per CTA (sharing window rows)
    int groups = 0;            // CTAs per image and column tile: ceil(bands / group_bands)
    int xrows = 0, xcols = 0;  // the staged window of one band (a ring of rows), in pixels
    int smem = 0;              // dynamic shared memory per CTA, bytes
    bool pdl = false;          // the kernel is a programmatic dependent of the filter pack (sm_90 code)
};
// Fills `out` and returns "" when the kernel takes the problem (its
// shared-memory opt-in is then set on the current device), else why not.
// TOPS_CONV_SMALLC=0 turns it off.
std::string conv_smallc_plan(const ConvKernelParams& kp, tops_dtype_t dtype, const DeviceInfo& dev,
                             ConvSmallcTile* out);
// Bytes of the packed filter the kernel reads (the plan's workspace).
size_t conv_smallc_workspace(const ConvKernelParams& kp, const ConvSmallcTile& t);
std::string conv_smallc_kernel_name(const ConvSmallcTile& t, tops_dtype_t dtype);
// Packs w into `workspace` (16-byte aligned), then runs the kernel.
Status launch_conv_smallc(const ConvKernelParams& p, const ConvSmallcTile& t, void* workspace, tops_dtype_t dtype,
                          cudaStream_t stream);

enum class SimtConfig { k128x128, k64x64, count };
const char* simt_config_name(SimtConfig c);
Status launch_conv_simt(const ConvKernelParams& p, SimtConfig c, tops_dtype_t dtype, cudaStream_t stream);

Status launch_conv_depthwise(const ConvKernelParams& p, tops_dtype_t dtype, cudaStream_t stream);

}  // namespace tops::cuda
