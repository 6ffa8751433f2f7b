// Conv2d on every backend x dtype x layout x case, against the fp64
// reference (and CUDA against CPU). Cases: H, W = 1, odd and prime sizes,
// 1x1 convolutions (plain GEMM), symmetric and asymmetric padding, padding
// larger than kernel / 2 (and larger than the kernel), stride > kernel,
// dilation 2 and 3, groups 2 and C (depthwise, with channel multiplier),
// fused bias / residual / every activation, y written in place over the
// residual, channel counts around every register tile (8, 16, 32) and large
// enough to need several K slabs, a 7x7 stride-2 stem, padded and mixed
// layouts, misaligned pointers and thread counts. Outputs are poisoned, so
// an unwritten element is a NaN and fails. CapiConv* checks every validation
// rule of tops_conv2d_create and tops_conv2d_output_dims.
//
// A non-CPU instance whose create answers NOT_SUPPORTED skips only when the
// message says the backend has no conv2d kernel or names a documented limit
// (dtype, layout, groups); anything else fails.
#include <cstdlib>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "harness.hpp"
#include "reference/conv_ref.hpp"

namespace {

using tops_test::Layout;
using tops_test::ScopedEnv;
using tops_test::Tensor;

// How x / y / residual and w are stored.
enum class Store {
    nchw,        // NCHW + KCRS, dense
    nhwc,        // NHWC + KRSC, dense
    nhwc_kcrs,   // NHWC activations, KCRS filter
    nchw_padded  // NCHW + KCRS with a gap after every row of every dim
};

const char* store_label(Store s) {
    switch (s) {
        case Store::nhwc: return "nhwc";
        case Store::nhwc_kcrs: return "nhwc_kcrs";
        case Store::nchw_padded: return "nchw_padded";
        default: return "nchw";
    }
}

bool channels_last(Store s) { return s == Store::nhwc || s == Store::nhwc_kcrs; }
bool filter_krsc(Store s) { return s == Store::nhwc; }

struct ConvCase {
    std::string name;
    int64_t n = 1, c = 1, h = 1, w = 1, k = 1, r = 1, s = 1;
    int64_t stride_h = 1, stride_w = 1;
    int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
    int64_t dilation_h = 1, dilation_w = 1;
    int64_t groups = 1;
    bool bias = false, residual = false, inplace = false;
    tops_activation_t act = TOPS_ACT_NONE;
    std::vector<Store> stores = {Store::nchw, Store::nhwc};  // layouts this case runs in
    size_t misalign = 0;
    int threads = 0;
    bool tf32 = false;           // TOPS_CONV_ALLOW_TF32 (f32 may round operands to TF32)
    const char* env = nullptr;   // a plan-time switch set while the op is created
    const char* env_value = nullptr;

    ConvCase& kernel(int64_t kr, int64_t ks) { r = kr; s = ks; return *this; }
    ConvCase& stride(int64_t sh, int64_t sw) { stride_h = sh; stride_w = sw; return *this; }
    ConvCase& pad(int64_t t, int64_t b, int64_t l, int64_t rt) {
        pad_top = t; pad_bottom = b; pad_left = l; pad_right = rt;
        return *this;
    }
    ConvCase& pad_all(int64_t v) { return pad(v, v, v, v); }
    ConvCase& dilation(int64_t dh, int64_t dw) { dilation_h = dh; dilation_w = dw; return *this; }
    ConvCase& group(int64_t g) { groups = g; return *this; }
    ConvCase& with_bias() { bias = true; return *this; }
    ConvCase& with_residual() { residual = true; return *this; }
    ConvCase& in_place() { residual = true; inplace = true; return *this; }
    ConvCase& activation(tops_activation_t a) { act = a; return *this; }
    ConvCase& layouts(std::vector<Store> v) { stores = std::move(v); return *this; }
    ConvCase& misaligned(size_t e) { misalign = e; return *this; }
    ConvCase& num_threads(int t) { threads = t; return *this; }
    ConvCase& forced(const char* algo) { return with_env("TOPS_CONV_ALGO", algo); }  // the CPU path
    ConvCase& allow_tf32() { tf32 = true; return *this; }
    ConvCase& with_env(const char* name, const char* value) { env = name; env_value = value; return *this; }

    int64_t out_h() const { return (h + pad_top + pad_bottom - dilation_h * (r - 1) - 1) / stride_h + 1; }
    int64_t out_w() const { return (w + pad_left + pad_right - dilation_w * (s - 1) - 1) / stride_w + 1; }
};

void PrintTo(const ConvCase& c, std::ostream* os) {
    *os << c.name << " n" << c.n << " c" << c.c << " " << c.h << "x" << c.w << " k" << c.k << " " << c.r << "x"
        << c.s << " stride " << c.stride_h << "x" << c.stride_w << " pad " << c.pad_top << "," << c.pad_bottom << ","
        << c.pad_left << "," << c.pad_right << " dilation " << c.dilation_h << "x" << c.dilation_w << " groups "
        << c.groups << (c.bias ? " bias" : "") << (c.residual ? " residual" : "") << (c.inplace ? " in place" : "")
        << " act " << int(c.act) << " misalign " << c.misalign << " threads " << c.threads
        << (c.tf32 ? " tf32" : "") << (c.env ? " " : "") << (c.env ? c.env : "") << (c.env ? "=" : "")
        << (c.env ? c.env_value : "");
}

// n, c, h, w, k.
ConvCase cc(std::string name, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k) {
    ConvCase v;
    v.name = std::move(name);
    v.n = n;
    v.c = c;
    v.h = h;
    v.w = w;
    v.k = k;
    return v;
}

std::vector<ConvCase> cases() {
    const std::vector<Store> all = {Store::nchw, Store::nhwc, Store::nhwc_kcrs, Store::nchw_padded};
    return {
        cc("one", 1, 1, 1, 1, 1),
        cc("basic_3x3", 2, 5, 7, 9, 6).kernel(3, 3).pad_all(1),
        cc("hw1_3x3_pad1", 3, 4, 1, 1, 5).kernel(3, 3).pad_all(1).with_bias(),
        cc("h1_w_prime", 1, 3, 1, 13, 4).kernel(1, 3).pad(0, 0, 1, 1),
        cc("primes_5x3", 1, 13, 11, 13, 17).kernel(5, 3).pad(2, 2, 1, 1),
        cc("pointwise", 2, 19, 5, 7, 23),
        cc("pointwise_bias_relu", 1, 40, 6, 6, 48).with_bias().activation(TOPS_ACT_RELU),
        cc("pointwise_stride2", 1, 8, 9, 9, 8).stride(2, 2),
        cc("pointwise_residual", 2, 16, 3, 5, 32).with_bias().with_residual(),
        cc("pointwise_in_place_gelu_erf", 2, 24, 5, 6, 16).with_bias().in_place().activation(TOPS_ACT_GELU_ERF)
            .layouts(all),
        cc("pointwise_misaligned_silu", 2, 9, 4, 5, 12).with_bias().with_residual().misaligned(1).activation(
            TOPS_ACT_SILU).layouts(all),
        cc("asym_pad", 1, 3, 8, 7, 5).kernel(3, 3).pad(0, 2, 1, 0),
        cc("pad_gt_half", 1, 4, 5, 6, 3).kernel(3, 3).pad(3, 2, 4, 3),
        cc("pad_gt_kernel_bias", 2, 2, 3, 4, 3).kernel(2, 2).pad(3, 4, 5, 3).with_bias().activation(TOPS_ACT_SILU),
        cc("stride_gt_kernel", 1, 5, 11, 13, 7).kernel(2, 2).stride(3, 3),
        cc("stride_2x3", 2, 6, 10, 11, 4).kernel(3, 3).stride(2, 3).pad_all(1),
        cc("dilation2", 1, 4, 9, 10, 6).kernel(3, 3).dilation(2, 2).pad_all(2),
        cc("dilation3x2", 1, 3, 12, 11, 5).kernel(3, 2).dilation(3, 2).pad(1, 3, 0, 2),
        cc("dilation3_stride2", 2, 5, 13, 9, 3).kernel(2, 3).dilation(3, 3).stride(2, 2).pad_all(1),
        cc("groups2", 2, 8, 6, 7, 6).kernel(3, 3).pad_all(1).group(2).with_bias(),
        cc("groups2_pointwise", 1, 10, 4, 5, 14).group(2),
        cc("groups2_wide", 1, 34, 5, 5, 36).kernel(3, 3).pad_all(1).group(2).with_residual(),
        cc("depthwise", 2, 16, 9, 8, 16).kernel(3, 3).pad_all(1).group(16).with_bias().activation(TOPS_ACT_RELU),
        cc("depthwise_odd_c", 1, 11, 7, 7, 11).kernel(5, 5).pad(2, 1, 2, 3).group(11),
        cc("depthwise_mult2", 1, 6, 7, 9, 12).kernel(3, 3).pad_all(1).group(6).with_bias(),
        cc("depthwise_s2_d2", 1, 24, 12, 13, 24).kernel(3, 3).stride(2, 2).dilation(2, 2).pad_all(2).group(24),
        cc("depthwise_c37_residual", 2, 37, 5, 6, 37).kernel(3, 3).pad_all(1).group(37).with_residual().activation(
            TOPS_ACT_GELU_TANH),
        cc("epilogue_gelu_erf", 1, 7, 6, 5, 9).kernel(3, 3).pad_all(1).with_bias().with_residual().activation(
            TOPS_ACT_GELU_ERF),
        cc("epilogue_gelu_tanh", 1, 7, 6, 5, 9).kernel(3, 3).with_bias().activation(TOPS_ACT_GELU_TANH),
        cc("epilogue_silu_residual", 1, 9, 5, 5, 17).kernel(3, 3).pad_all(1).with_residual().activation(
            TOPS_ACT_SILU),
        cc("in_place_residual", 2, 6, 5, 7, 8).kernel(3, 3).pad_all(1).with_bias().in_place().activation(
            TOPS_ACT_RELU),
        // output channels around the register tiles (8, 16, 32) and pixels around 6 and 14
        cc("k7", 1, 5, 3, 2, 7).kernel(3, 3).pad_all(1),
        cc("k15_k", 1, 6, 4, 4, 15).kernel(3, 3).pad_all(1),
        cc("k17", 1, 6, 2, 7, 17).kernel(3, 3).pad_all(1),
        cc("k33_pix13", 1, 9, 1, 13, 33).kernel(1, 3).pad(0, 0, 1, 1),
        cc("k64_c64_14", 1, 64, 14, 14, 64).kernel(3, 3).pad_all(1).with_bias().activation(TOPS_ACT_RELU),
        // the Hopper implicit GEMM's cases (NHWC stores): channels below, at
        // and past one 64-channel block, output channels clipped mid-tile,
        // every pixel box (32x4, 16x8, 8x16, two 8x8 images with an odd
        // batch), asymmetric padding, a padded 1x1, more tiles than SMs, and
        // tiles of 128 output channels (on GPUs of up to 248 SMs)
        cc("sm90_c64_k64", 2, 64, 9, 11, 64).kernel(3, 3).pad_all(1),
        cc("sm90_c24_k40_two_images", 3, 24, 7, 7, 40).kernel(3, 3).pad_all(1).with_bias(),
        cc("sm90_c128_k136_5x3_asym", 1, 128, 6, 30, 136).kernel(5, 3).pad(2, 1, 0, 2).with_bias().activation(
            TOPS_ACT_RELU),
        cc("sm90_c72_pointwise_pad", 2, 72, 5, 6, 64).pad_all(1),
        cc("sm90_c64_k128_28", 2, 64, 28, 28, 128).kernel(3, 3).pad_all(1).with_bias(),
        cc("sm90_box_8x16", 1, 32, 16, 8, 64).kernel(3, 3).pad_all(1),
        cc("sm90_many_tiles", 8, 16, 56, 56, 64).kernel(3, 3).pad_all(1).activation(TOPS_ACT_RELU),
        cc("sm90_k256_128_wide", 4, 16, 56, 56, 256).kernel(3, 3).pad_all(1).with_bias(),  // 224 tiles of 128 channels
        // split-K on clusters of two CTAs: 4 tiles of 128 channels (odd batch,
        // bias, ReLU; the halo form), forced on 3 tiles (an odd count), and forced on 84
        // tiles, more than the clusters that fit (each cluster then walks
        // several tiles)
        cc("sm90_split_c128_k256_7x7", 3, 128, 7, 7, 256).kernel(3, 3).pad_all(1).with_bias().activation(
            TOPS_ACT_RELU),
        cc("sm90_split_three_tiles", 1, 128, 7, 7, 384).kernel(3, 3).pad_all(1).with_bias().with_env(
            "TOPS_CONV_SM90_SPLIT", "1"),
        cc("sm90_split_forced_many_tiles", 1, 8, 56, 56, 384).kernel(2, 2).pad(1, 0, 1, 0).with_env(
            "TOPS_CONV_SM90_SPLIT", "1"),
        // the split pair's halo form (two 8x8 images per tile, whole channel
        // blocks per CTA): channels ending mid-block, a 2x3 filter with
        // asymmetric padding, and 69 tiles (more than the clusters that fit,
        // so the halo ring runs on across tiles)
        cc("sm90_halo_c100_k128_2x3_asym", 2, 100, 7, 7, 128).kernel(2, 3).pad(1, 0, 1, 1).with_bias().with_env(
            "TOPS_CONV_SM90_SPLIT", "1"),
        cc("sm90_halo_many_tiles", 46, 128, 4, 4, 384).kernel(2, 2).activation(TOPS_ACT_RELU).with_env(
            "TOPS_CONV_SM90_SPLIT", "1"),
        // the Hopper 3xTF32 kernel (f32; the f16 / bf16 runs of these take
        // the other paths; these small problems take its 64-channel tiles
        // unless TOPS_CONV_SM90_TF32_WIDE=1): the ResNet C128 28x28 layer's
        // shape on one image in 128-channel tiles, forced below 64 output
        // channels with channels padded mid-block, in every layout (NHWC y:
        // scalar stores) and misaligned (scalar stores), and an 8x8-box pair
        // of images with a partial 128-channel tile
        cc("sm90_3xtf32_c128_k128_28", 1, 128, 28, 28, 128).kernel(3, 3).pad_all(1).with_bias().activation(
            TOPS_ACT_RELU).with_env("TOPS_CONV_SM90_TF32_WIDE", "1"),
        cc("sm90_3xtf32_forced_c37_k40", 3, 37, 7, 9, 40).kernel(3, 3).pad_all(1).with_bias().layouts(all).with_env(
            "TOPS_CONV_SM90_TF32", "1"),
        cc("sm90_3xtf32_forced_misaligned", 1, 12, 10, 6, 24).kernel(2, 3).pad(1, 0, 0, 2).with_bias().misaligned(1)
            .activation(TOPS_ACT_RELU).with_env("TOPS_CONV_SM90_TF32", "1"),
        cc("sm90_3xtf32_c200_k130_7x7", 3, 200, 7, 7, 130).kernel(3, 3).pad_all(1).with_bias().with_env(
            "TOPS_CONV_SM90_TF32_WIDE", "1"),
        cc("sm90_3xtf32_narrow_c64_k64", 2, 64, 12, 20, 64).kernel(3, 3).pad_all(1).with_bias().activation(
            TOPS_ACT_RELU),
        // its TF32 form (TOPS_CONV_ALLOW_TF32): x rounded by the repack, big planes only
        cc("sm90_tf32_c64_k128", 2, 64, 9, 11, 128).kernel(3, 3).pad_all(1).with_bias().activation(TOPS_ACT_RELU)
            .allow_tf32(),
        cc("sm90_tf32_wide_c64_k192", 2, 64, 9, 11, 192).kernel(3, 3).pad_all(1).with_bias().allow_tf32().with_env(
            "TOPS_CONV_SM90_TF32_WIDE", "1"),
        cc("sm90_tf32_forced_c37_k40", 3, 37, 7, 9, 40).kernel(3, 3).pad_all(1).layouts(all).allow_tf32().with_env(
            "TOPS_CONV_SM90_TF32", "1"),
        cc("k70_c37_odd", 1, 37, 9, 11, 70).kernel(3, 3).pad_all(1).with_bias(),
        cc("c300_k_slabs", 1, 300, 5, 4, 20).kernel(3, 3).pad_all(1).with_residual(),
        cc("c600_pointwise", 1, 600, 3, 3, 24).with_bias(),
        // TOPS_CONV_ALLOW_TF32: CUDA f32 takes one TF32 product per term
        // (the implicit GEMM, NCHW through the repack, and the 1x1 GEMM path)
        cc("tf32_c64_3x3", 2, 64, 9, 11, 40).kernel(3, 3).pad_all(1).with_bias().allow_tf32(),
        cc("tf32_stem_7x7_s2", 1, 3, 19, 17, 16).kernel(7, 7).stride(2, 2).pad_all(3).with_residual().allow_tf32(),
        cc("tf32_pointwise", 2, 48, 5, 6, 24).with_bias().activation(TOPS_ACT_RELU).allow_tf32(),
        cc("stem_7x7_s2", 2, 3, 23, 29, 16).kernel(7, 7).stride(2, 2).pad_all(3).with_bias().activation(
            TOPS_ACT_RELU),
        // CUDA tap folding (channels per tap not a whole chunk: a filter row's
        // taps become channels): dilated and strided columns, padding past the
        // filter on either side, every layout, a misaligned x
        cc("fold_c1_5x5_d2_s12", 2, 1, 11, 13, 9).kernel(5, 5).dilation(2, 2).stride(1, 2).pad(1, 3, 4, 0)
            .with_bias().activation(TOPS_ACT_RELU),
        cc("fold_c3_pad_gt_s23", 1, 3, 7, 10, 12).kernel(3, 3).stride(2, 3).pad(2, 1, 4, 3).with_residual()
            .layouts(all),
        cc("fold_c5_1x3_d3", 2, 5, 4, 17, 24).kernel(1, 3).dilation(1, 3).pad(0, 0, 2, 5).with_bias().misaligned(1),
        cc("fold_c3_s23_no_window", 1, 3, 7, 10, 12).kernel(3, 3).stride(2, 3).pad(2, 1, 4, 3).with_bias().with_env(
            "TOPS_CONV_SMALLC", "0"),
        // CUDA window kernel (f16 / bf16 with fewer channels than a 16-byte
        // chunk): 8 channels per window pixel at stride 1 and 4 at stride 2,
        // m-tiles past Q, two channel blocks, K not a multiple of 8 (scalar
        // epilogue), the widest filter row (S * 8 = 64) with dilated rows and
        // three column tiles, NCHW / padded x and y (pixel-major epilogue),
        // in place, misaligned
        cc("smallc_c4_s1_q37_k72", 2, 4, 9, 37, 72).kernel(3, 3).pad_all(1).with_bias().activation(TOPS_ACT_RELU),
        cc("smallc_c1_k13_5x5_s2", 2, 1, 17, 19, 13).kernel(5, 5).stride(2, 2).pad(2, 1, 2, 0).with_residual(),
        cc("smallc_c7_3x8_dh2_wide", 1, 7, 9, 300, 16).kernel(3, 8).dilation(2, 1).pad(1, 1, 3, 4),
        cc("smallc_stem_layouts", 3, 3, 45, 61, 64).kernel(7, 7).stride(2, 2).pad_all(3).with_bias().activation(
            TOPS_ACT_GELU_ERF).layouts(all),
        // several bands per CTA (a ring of window rows): a partial last
        // group, dilated rows wrapping the ring, bands that share no rows
        cc("smallc_stem_bands2", 3, 3, 45, 61, 64).kernel(7, 7).stride(2, 2).pad_all(3).with_bias().with_env(
            "TOPS_CONV_SMALLC_BANDS", "2"),
        cc("smallc_c7_dh2_bands3", 1, 7, 9, 300, 16).kernel(3, 8).dilation(2, 1).pad(1, 1, 3, 4).with_residual()
            .with_env("TOPS_CONV_SMALLC_BANDS", "3"),
        cc("smallc_1x1_s3_bands4", 2, 2, 100, 20, 24).stride(3, 2).with_env("TOPS_CONV_SMALLC_BANDS", "4"),
        cc("smallc_in_place_s2", 2, 3, 11, 13, 16).kernel(3, 3).stride(2, 2).pad_all(1).in_place().activation(
            TOPS_ACT_SILU),
        cc("smallc_misaligned", 1, 3, 9, 10, 24).kernel(3, 3).stride(2, 2).pad_all(1).with_bias().with_residual()
            .misaligned(1),
        // CUDA: dense NCHW x of at least 32 channels is transposed tile by tile
        // (conv_repack.cu): partial pixel and channel tiles, channels padded
        cc("nchw_x_tiles_c70", 2, 70, 9, 15, 24).kernel(3, 3).pad_all(1).with_bias().layouts(all),
        // CPU: an NCHW 1x1 convolution's GEMM reads x in place (few filters,
        // shallow reduction: gemm_blocked.cpp), full and partial slivers
        cc("pointwise_nchw_x_in_place", 2, 40, 7, 9, 24).with_bias().with_residual().activation(TOPS_ACT_RELU),
        // layouts, alignment, threads
        cc("layouts_3x3", 2, 6, 5, 6, 10).kernel(3, 3).pad(1, 0, 2, 1).with_bias().with_residual().layouts(all),
        cc("layouts_groups", 1, 12, 5, 5, 9).kernel(3, 3).pad_all(1).group(3).layouts(all),
        cc("layouts_depthwise", 1, 10, 6, 5, 10).kernel(3, 3).pad_all(1).group(10).with_bias().layouts(all),
        cc("layouts_pointwise", 2, 12, 4, 3, 20).with_residual().layouts(all),
        cc("misaligned", 1, 7, 6, 6, 18).kernel(3, 3).pad_all(1).with_bias().with_residual().misaligned(1),
        cc("threads1", 2, 16, 10, 10, 24).kernel(3, 3).pad_all(1).num_threads(1),
        cc("threads2", 2, 16, 10, 10, 24).kernel(3, 3).pad_all(1).num_threads(2),
        cc("threads3_depthwise", 2, 16, 10, 10, 16).kernel(3, 3).pad_all(1).group(16).num_threads(3),
        // both implicit-GEMM orientations on shapes that would pick the other one (and the GEMM /
        // depthwise paths' shapes through the implicit GEMM)
        cc("few_pixels_many_k", 1, 20, 3, 3, 48).kernel(3, 3).pad_all(1).with_bias(),
        // channels-last, K > 6 * pixels: the filter is read in place on one thread, packed on two
        cc("few_pixels_by_team_t1", 1, 128, 4, 4, 128).kernel(3, 3).pad_all(1).with_bias().layouts(all).num_threads(1),
        // one sliver on two threads: the filter's packing splits its reduction steps (nr 16)
        cc("pack_split_steps_t2", 1, 16, 24, 24, 16).kernel(3, 3).pad_all(1).with_bias().layouts(all).num_threads(2),
        cc("few_pixels_by_team_t2", 1, 128, 4, 4, 128).kernel(3, 3).pad_all(1).with_residual().layouts(all)
            .num_threads(2),
        cc("force_cbp", 2, 6, 7, 9, 10).kernel(3, 3).stride(2, 1).pad(1, 2, 0, 1).with_bias().with_residual().activation(
            TOPS_ACT_SILU).layouts(all).forced("channels_by_pixels"),
        cc("force_cbp_groups_dilation", 1, 8, 9, 8, 12).kernel(3, 2).dilation(2, 3).pad_all(2).group(2).forced(
            "channels_by_pixels"),
        cc("force_cbp_threads2", 2, 33, 6, 7, 40).kernel(3, 3).pad_all(1).num_threads(2).forced("channels_by_pixels"),
        // enough units that the team hands them out as threads come (conv.cpp execute_on), both orientations
        cc("shared_units_pbc_t2", 4, 3, 47, 45, 16).kernel(5, 5).stride(2, 2).pad_all(2).with_bias().layouts(all)
            .num_threads(2).forced("pixels_by_channels"),
        cc("shared_units_cbp_t2", 4, 8, 20, 20, 16).kernel(3, 3).pad_all(1).with_residual().layouts(all)
            .num_threads(2).forced("channels_by_pixels"),
        cc("force_pbc", 1, 20, 3, 3, 48).kernel(3, 3).pad_all(1).with_bias().with_residual().layouts(all).forced(
            "pixels_by_channels"),
        cc("force_pbc_pointwise", 2, 12, 4, 3, 20).with_residual().forced("pixels_by_channels"),
        cc("force_pbc_depthwise", 1, 10, 6, 5, 20).kernel(3, 3).pad_all(1).group(10).with_bias().forced(
            "pixels_by_channels"),
        cc("force_direct", 1, 6, 5, 7, 8).kernel(3, 3).stride(2, 2).pad(1, 0, 0, 1).group(2).with_bias().with_residual()
            .activation(TOPS_ACT_GELU_ERF).layouts(all).forced("direct"),
    };
}

const tops_dtype_t kDtypes[] = {TOPS_DTYPE_F32, TOPS_DTYPE_F16, TOPS_DTYPE_BF16};

// Canonical (a, b, c, d) -> the caller's dims order for a channels-last store.
std::vector<int64_t> stored_dims(const std::vector<int64_t>& canon, bool last) {
    return last ? std::vector<int64_t>{canon[0], canon[2], canon[3], canon[1]} : canon;
}

Tensor make_tensor(tops_dtype_t dt, const std::vector<int64_t>& canon, bool last, Store st) {
    return Tensor::make(dt, stored_dims(canon, last), st == Store::nchw_padded ? Layout::Padded : Layout::Dense);
}

// Values in canonical row-major order.
std::vector<double> canonical_values(const Tensor& t, bool last) {
    std::vector<int64_t> canon = t.dims;
    if (last) canon = {t.dims[0], t.dims[3], t.dims[1], t.dims[2]};
    std::vector<double> v;
    v.reserve(size_t(tops_test::numel(canon)));
    tops_test::for_each_index(canon, [&](const int64_t* i) {
        const int64_t stored[4] = {i[0], i[2], i[3], i[1]};
        v.push_back(t.value(t.offset(last ? stored : i)));
    });
    return v;
}

// One case in one of its layouts.
struct Variant {
    Store store = Store::nchw;
    ConvCase c;
};

void PrintTo(const Variant& v, std::ostream* os) {
    *os << store_label(v.store) << " ";
    PrintTo(v.c, os);
}

std::vector<Variant> variants() {
    std::vector<Variant> v;
    for (const ConvCase& c : cases()) {
        for (Store st : c.stores) v.push_back({st, c});
    }
    return v;
}

using Param = std::tuple<tops_backend_t, tops_dtype_t, Variant>;

struct Tensors {
    Tensor x, w, bias, residual, y;
};

tops_conv2d_desc_t make_desc(const ConvCase& c, Store st, const Tensors& t) {
    tops_conv2d_desc_t d = tops_conv2d_desc_default();
    d.layout = channels_last(st) ? TOPS_CONV_NHWC : TOPS_CONV_NCHW;
    d.filter_layout = filter_krsc(st) ? TOPS_CONV_FILTER_KRSC : TOPS_CONV_FILTER_KCRS;
    d.x = t.x.desc();
    d.w = t.w.desc();
    d.y = t.y.desc();
    if (c.bias) d.bias = t.bias.desc();
    if (c.residual) d.residual = t.residual.desc();
    d.stride_h = int32_t(c.stride_h);
    d.stride_w = int32_t(c.stride_w);
    d.pad_top = int32_t(c.pad_top);
    d.pad_bottom = int32_t(c.pad_bottom);
    d.pad_left = int32_t(c.pad_left);
    d.pad_right = int32_t(c.pad_right);
    d.dilation_h = int32_t(c.dilation_h);
    d.dilation_w = int32_t(c.dilation_w);
    d.groups = int32_t(c.groups);
    d.act = c.act;
    if (c.tf32) d.flags = TOPS_CONV_ALLOW_TF32;
    return d;
}

// Why a NOT_SUPPORTED create may be skipped on a non-CPU backend.
bool documented_limit(const std::string& msg) {
    return msg.find("not implemented on this backend") != std::string::npos ||
           msg.find("not supported on") != std::string::npos;
}

// Runs the case on `backend` and returns y's canonical values; *skip_why is
// set (and nothing run) when the backend documents that it cannot.
::testing::AssertionResult run_case(tops_backend_t backend, const ConvCase& c, Store st, Tensors& t,
                                    std::vector<double>* out, std::string* skip_why) {
    const tops_conv2d_desc_t d = make_desc(c, st, t);
    {
        tops_test::ContextHandle ctx;
        if (tops_context_create(backend, 0, &ctx.ctx) != TOPS_SUCCESS) {
            return ::testing::AssertionFailure() << "context: " << tops_last_error();
        }
        tops_test::OpHandle op;
        ScopedEnv env(c.env ? c.env : "", c.env ? c.env_value : nullptr);
        const tops_status_t s = tops_conv2d_create(ctx.ctx, &d, &op.op);
        if (s == TOPS_ERROR_NOT_SUPPORTED && backend != TOPS_BACKEND_CPU && documented_limit(tops_last_error())) {
            *skip_why = tops_last_error();
            return ::testing::AssertionSuccess();
        }
        if (s != TOPS_SUCCESS) return ::testing::AssertionFailure() << "create: " << tops_test::status_text(s);
        // A forced CPU path is the one that runs (its name is in the kernel's).
        const std::string kernel = tops_op_kernel_name(op.op);
        if (backend == TOPS_BACKEND_CPU && c.env && std::string(c.env) == "TOPS_CONV_ALGO" &&
            kernel.find(c.env_value) == std::string::npos) {
            return ::testing::AssertionFailure() << "TOPS_CONV_ALGO=" << c.env_value << " ran " << kernel;
        }
    }
    const tops_test::CreateFn create = [&](tops_context_t ctx, tops_op_t* op) {
        ScopedEnv env(c.env ? c.env : "", c.env ? c.env_value : nullptr);
        return tops_conv2d_create(ctx, &d, op);
    };
    tops_test::RunSpec spec;
    Tensor y = t.y;
    if (c.inplace) spec.inputs.push_back({TOPS_ARG_RESIDUAL, &t.residual});  // y is written through it
    spec.inputs.push_back({TOPS_ARG_X, &t.x});
    spec.inputs.push_back({TOPS_ARG_W, &t.w});
    if (c.bias) spec.inputs.push_back({TOPS_ARG_BIAS, &t.bias});
    if (c.residual && !c.inplace) spec.inputs.push_back({TOPS_ARG_RESIDUAL, &t.residual});
    if (c.inplace) {
        y = t.residual;
        spec.inplace = true;
    } else {
        y.poison();
    }
    spec.y = &y;
    spec.misalign_elems = c.misalign;
    spec.num_threads = c.threads;
    ::testing::AssertionResult r = tops_test::run_op(backend, create, spec);
    if (!r) return r;
    *out = canonical_values(y, channels_last(st));
    return ::testing::AssertionSuccess();
}

class ConvTest : public ::testing::TestWithParam<Param> {};

TEST_P(ConvTest, MatchesFp64Reference) {
    const auto& [backend, dt, v] = GetParam();
    const Store st = v.store;
    const ConvCase& c = v.c;
    TOPS_SKIP_UNLESS_READY(backend);
    TOPS_TRACE_SEED();
    tops_test::Rng rng(tops_test::test_seed());
    const bool last = channels_last(st);
    const int64_t p = c.out_h(), q = c.out_w();
    Tensors t;
    t.x = make_tensor(dt, {c.n, c.c, c.h, c.w}, last, st);
    t.w = make_tensor(dt, {c.k, c.c / c.groups, c.r, c.s}, filter_krsc(st), st);
    t.y = make_tensor(dt, {c.n, c.k, p, q}, last, st);
    t.residual = t.y;
    t.bias = Tensor::make(dt, {c.k}, Layout::Dense);
    tops_test::fill_uniform(t.x, rng, -1.0, 1.0);
    tops_test::fill_uniform(t.w, rng, -1.0, 1.0);
    tops_test::fill_uniform(t.residual, rng, -1.0, 1.0);
    tops_test::fill_uniform(t.bias, rng, -1.0, 1.0);

    tops_ref::ConvProblem pr;
    pr.n = c.n, pr.c = c.c, pr.h = c.h, pr.w = c.w, pr.k = c.k, pr.r = c.r, pr.s = c.s;
    pr.stride_h = c.stride_h, pr.stride_w = c.stride_w;
    pr.pad_top = c.pad_top, pr.pad_bottom = c.pad_bottom, pr.pad_left = c.pad_left, pr.pad_right = c.pad_right;
    pr.dilation_h = c.dilation_h, pr.dilation_w = c.dilation_w;
    pr.groups = c.groups;
    pr.x = canonical_values(t.x, last);
    pr.wt = canonical_values(t.w, filter_krsc(st));
    if (c.bias) pr.bias = t.bias.logical();
    if (c.residual) pr.residual = canonical_values(t.residual, last);
    pr.act = tops_ref::GemmAct(int(c.act));
    const std::vector<double> ref = tops_ref::conv2d(pr);
    const std::vector<int64_t> ydims = {c.n, c.k, p, q};

    std::vector<double> out;
    std::string why;
    ASSERT_TRUE(run_case(backend, c, st, t, &out, &why));
    if (!why.empty()) GTEST_SKIP() << tops_backend_name(backend) << ": " << why;
    EXPECT_TRUE(tops_test::compare_values(out, ref, tops_test::tolerance(dt, c.tf32), ydims, "conv2d y"));
    if (backend != TOPS_BACKEND_CPU && tops_test::backend_ready(TOPS_BACKEND_CPU, nullptr)) {
        std::vector<double> cpu;
        std::string cpu_why;
        ASSERT_TRUE(run_case(TOPS_BACKEND_CPU, c, st, t, &cpu, &cpu_why));
        EXPECT_TRUE(tops_test::compare_values(out, cpu, tops_test::cross_backend_tolerance(dt, c.tf32), ydims,
                                              "conv2d y vs cpu"));
    }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
    const auto& [backend, dt, v] = info.param;
    std::string s = std::string(tops_backend_name(backend)) + "_" + tops_test::dtype_label(dt) + "_" +
                    store_label(v.store) + "_" + v.c.name + "_" + std::to_string(info.index);
    for (char& ch : s) {
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    return s;
}

INSTANTIATE_TEST_SUITE_P(All, ConvTest,
                         ::testing::Combine(::testing::ValuesIn(tops_test::all_backends()),
                                            ::testing::ValuesIn(kDtypes), ::testing::ValuesIn(variants())),
                         param_name);

// ------------------------------------------------------------------ validation

using tops_test::fails_with;

class CapiConv : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(tops_context_create(TOPS_BACKEND_CPU, 0, &ctx_.ctx), TOPS_SUCCESS); }

    // x [2, 4, 9, 8] * w [6, 4, 3, 3], pad 1 -> y [2, 6, 9, 8], f32 NCHW.
    static tops_conv2d_desc_t desc() {
        tops_conv2d_desc_t d = tops_conv2d_desc_default();
        d.x = tops_test::tensor_desc(TOPS_DTYPE_F32, {2, 4, 9, 8});
        d.w = tops_test::tensor_desc(TOPS_DTYPE_F32, {6, 4, 3, 3});
        d.y = tops_test::tensor_desc(TOPS_DTYPE_F32, {2, 6, 9, 8});
        d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
        return d;
    }

    tops_status_t create(const tops_conv2d_desc_t& d) {
        op_.reset();
        return tops_conv2d_create(ctx_.ctx, &d, &op_.op);
    }

    tops_test::ContextHandle ctx_;
    tops_test::OpHandle op_;
};

TEST_F(CapiConv, ValidDescriptorsAreAccepted) {
    tops_conv2d_desc_t d = desc();
    EXPECT_EQ(create(d), TOPS_SUCCESS) << tops_last_error();
    d.bias = tops_test::tensor_desc(TOPS_DTYPE_F32, {6});
    d.residual = d.y;
    d.act = TOPS_ACT_SILU;
    d.flags = TOPS_CONV_ALLOW_TF32;
    EXPECT_EQ(create(d), TOPS_SUCCESS) << tops_last_error();
    d = desc();
    d.layout = TOPS_CONV_NHWC;
    d.filter_layout = TOPS_CONV_FILTER_KRSC;
    d.x = tops_test::tensor_desc(TOPS_DTYPE_BF16, {2, 9, 8, 4});
    d.w = tops_test::tensor_desc(TOPS_DTYPE_BF16, {8, 3, 3, 2});
    d.y = tops_test::tensor_desc(TOPS_DTYPE_BF16, {2, 5, 4, 8});
    d.groups = 2;
    d.stride_h = d.stride_w = 2;
    EXPECT_EQ(create(d), TOPS_SUCCESS) << tops_last_error();
    d = desc();  // depthwise, no padding, dilation 2: 9 - 4 = 5, 8 - 4 = 4
    d.w = tops_test::tensor_desc(TOPS_DTYPE_F32, {4, 1, 3, 3});
    d.y = tops_test::tensor_desc(TOPS_DTYPE_F32, {2, 4, 5, 4});
    d.groups = 4;
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 0;
    d.dilation_h = d.dilation_w = 2;
    EXPECT_EQ(create(d), TOPS_SUCCESS) << tops_last_error();
}

TEST_F(CapiConv, OutputDims) {
    tops_conv2d_desc_t d = desc();
    int64_t dims[4] = {};
    ASSERT_EQ(tops_conv2d_output_dims(&d, dims), TOPS_SUCCESS) << tops_last_error();
    EXPECT_EQ(std::vector<int64_t>(dims, dims + 4), (std::vector<int64_t>{2, 6, 9, 8}));
    // NHWC x [1, 224, 224, 3], KRSC w [64, 7, 7, 3], stride 2, pad 3 -> [1, 112, 112, 64]
    d.layout = TOPS_CONV_NHWC;
    d.filter_layout = TOPS_CONV_FILTER_KRSC;
    d.x = tops_test::tensor_desc(TOPS_DTYPE_F16, {1, 224, 224, 3});
    d.w = tops_test::tensor_desc(TOPS_DTYPE_F16, {64, 7, 7, 3});
    d.y = tops_tensor_desc_t{};  // not read
    d.stride_h = d.stride_w = 2;
    d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 3;
    ASSERT_EQ(tops_conv2d_output_dims(&d, dims), TOPS_SUCCESS) << tops_last_error();
    EXPECT_EQ(std::vector<int64_t>(dims, dims + 4), (std::vector<int64_t>{1, 112, 112, 64}));
    // asymmetric padding, dilation 3, stride 2x3: H (10 + 0 + 2 - 7) / 2 + 1 = 3, W (11 + 1 + 0 - 4) / 3 + 1 = 3
    d = desc();
    d.x = tops_test::tensor_desc(TOPS_DTYPE_F32, {1, 2, 10, 11});
    d.w = tops_test::tensor_desc(TOPS_DTYPE_F32, {5, 2, 3, 2});
    d.pad_top = 0, d.pad_bottom = 2, d.pad_left = 1, d.pad_right = 0;
    d.dilation_h = d.dilation_w = 3;
    d.stride_h = 2, d.stride_w = 3;
    ASSERT_EQ(tops_conv2d_output_dims(&d, dims), TOPS_SUCCESS) << tops_last_error();
    EXPECT_EQ(std::vector<int64_t>(dims, dims + 4), (std::vector<int64_t>{1, 5, 3, 3}));
    EXPECT_TRUE(fails_with(tops_conv2d_output_dims(nullptr, dims), TOPS_ERROR_NULL_POINTER, {"conv2d: desc"}));
    EXPECT_TRUE(fails_with(tops_conv2d_output_dims(&d, nullptr), TOPS_ERROR_NULL_POINTER, {"conv2d: dims"}));
    d.stride_w = 0;
    EXPECT_TRUE(fails_with(tops_conv2d_output_dims(&d, dims), TOPS_ERROR_INVALID_ARGUMENT, {"conv2d: stride_w = 0"}));
}

TEST_F(CapiConv, StructSizeEnumsAndTensors) {
    tops_conv2d_desc_t d = desc();
    d.struct_size = 8;
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_STRUCT_SIZE, {"conv2d", "struct_size"}));
    EXPECT_TRUE(fails_with(tops_conv2d_create(ctx_.ctx, nullptr, &op_.op), TOPS_ERROR_NULL_POINTER, {"conv2d"}));
    d = desc();
    d.layout = tops_conv_layout_t(2);
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_INVALID_ARGUMENT, {"conv2d: layout 2"}));
    d = desc();
    d.filter_layout = tops_conv_filter_layout_t(-1);
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_INVALID_ARGUMENT, {"conv2d: filter_layout -1"}));
    d = desc();
    d.x.dims[2] = -1;
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_SHAPE, {"conv2d: x", "negative"}));
    d = desc();
    d.w.strides[0] = -1;
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_STRIDE, {"conv2d: w", "negative"}));
    d = desc();
    d.x = tops_test::tensor_desc(TOPS_DTYPE_F32, {4, 9, 8});
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_RANK, {"conv2d: x.rank 3", "must be 4"}));
    d = desc();
    d.w = tops_test::tensor_desc(TOPS_DTYPE_F32, {6, 4, 3, 3, 1});
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_RANK, {"conv2d: w.rank 5"}));
    d = desc();
    d.y = tops_test::tensor_desc(TOPS_DTYPE_F32, {2, 6, 72});
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_RANK, {"conv2d: y.rank 3"}));
    d = desc();
    d.residual = tops_test::tensor_desc(TOPS_DTYPE_F32, {2, 6, 72});
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_RANK, {"conv2d: residual.rank 3"}));
    d = desc();
    d.y.strides[3] = 0;  // every column of a row at one address
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_STRIDE, {"conv2d: y"}));
}

TEST_F(CapiConv, Dtypes) {
    tops_conv2d_desc_t d = desc();
    d.x.dtype = d.w.dtype = d.y.dtype = TOPS_DTYPE_I32;
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_DTYPE, {"conv2d: x.dtype i32", "f32, f16, bf16"}));
    d = desc();
    d.w.dtype = TOPS_DTYPE_F16;
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_DTYPE, {"conv2d: w.dtype f16", "differs from x.dtype f32"}));
    d = desc();
    d.y.dtype = TOPS_DTYPE_BF16;
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_DTYPE, {"conv2d: y.dtype bf16", "differs"}));
    d = desc();
    d.bias = tops_test::tensor_desc(TOPS_DTYPE_F16, {6});
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_DTYPE, {"conv2d: bias.dtype f16", "differs"}));
    d = desc();
    d.residual = d.y;
    d.residual.dtype = TOPS_DTYPE_F16;
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_DTYPE, {"conv2d: residual.dtype f16", "differs"}));
}

TEST_F(CapiConv, Hyperparameters) {
    const struct {
        int32_t tops_conv2d_desc_t::*field;
        int32_t value;
        const char* text;
    } bad[] = {{&tops_conv2d_desc_t::stride_h, 0, "conv2d: stride_h = 0 must be >= 1"},
               {&tops_conv2d_desc_t::stride_w, -2, "conv2d: stride_w = -2 must be >= 1"},
               {&tops_conv2d_desc_t::pad_top, -1, "conv2d: pad_top = -1 must be >= 0"},
               {&tops_conv2d_desc_t::pad_bottom, -1, "conv2d: pad_bottom = -1"},
               {&tops_conv2d_desc_t::pad_left, -3, "conv2d: pad_left = -3"},
               {&tops_conv2d_desc_t::pad_right, -1, "conv2d: pad_right = -1"},
               {&tops_conv2d_desc_t::dilation_h, 0, "conv2d: dilation_h = 0 must be >= 1"},
               {&tops_conv2d_desc_t::dilation_w, -1, "conv2d: dilation_w = -1"},
               {&tops_conv2d_desc_t::groups, 0, "conv2d: groups = 0 must be >= 1"}};
    for (const auto& b : bad) {
        tops_conv2d_desc_t d = desc();
        d.*b.field = b.value;
        EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_INVALID_ARGUMENT, {b.text}));
    }
    tops_conv2d_desc_t d = desc();
    d.act = tops_activation_t(5);
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_INVALID_ARGUMENT, {"conv2d: act 5"}));
    d = desc();
    d.flags = 6;
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_INVALID_ARGUMENT, {"conv2d: unknown flags 0x6"}));
}

TEST_F(CapiConv, Shapes) {
    tops_conv2d_desc_t d = desc();
    d.groups = 3;  // C = 4
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_SHAPE, {"conv2d: x has C = 4", "groups = 3"}));
    d = desc();
    d.x = tops_test::tensor_desc(TOPS_DTYPE_F32, {2, 8, 9, 8});
    d.w = tops_test::tensor_desc(TOPS_DTYPE_F32, {6, 2, 3, 3});
    d.groups = 4;  // K = 6
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_SHAPE, {"conv2d: w has K = 6", "groups = 4"}));
    d = desc();
    d.w = tops_test::tensor_desc(TOPS_DTYPE_F32, {6, 2, 3, 3});
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_SHAPE, {"conv2d: w has 2 input channels", "C / groups = 4 / 1 = 4"}));
    d = desc();
    d.w = tops_test::tensor_desc(TOPS_DTYPE_F32, {6, 4, 0, 3});
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_SHAPE, {"conv2d: w's kernel R x S = 0 x 3"}));
    d = desc();
    d.w = tops_test::tensor_desc(TOPS_DTYPE_F32, {6, 4, 12, 3});  // 12 > 9 + 1 + 1
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_SHAPE, {"conv2d: dilated kernel height 12", "padded input height 11"}));
    d = desc();
    d.dilation_w = 5;  // 2 * 5 + 1 = 11 > 8 + 2
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_SHAPE, {"conv2d: dilated kernel width 11", "padded input width 10"}));
    d = desc();
    d.y = tops_test::tensor_desc(TOPS_DTYPE_F32, {2, 6, 9, 9});
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_SHAPE, {"conv2d: y.dims [2,6,9,9]", "output [2,6,9,8]"}));
    d = desc();
    d.layout = TOPS_CONV_NHWC;  // x read as [N, H, W, C] = [2, 4, 9, 8]: C = 8 mismatches w
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_SHAPE, {"conv2d: w has 4 input channels", "C / groups = 8"}));
    d = desc();
    d.bias = tops_test::tensor_desc(TOPS_DTYPE_F32, {4});
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_SHAPE, {"conv2d: bias must be [K] = [6]"}));
    d = desc();
    d.bias = tops_test::tensor_desc(TOPS_DTYPE_F32, {1, 6});
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_SHAPE, {"conv2d: bias must be [K]", "rank 2"}));
    d = desc();
    d.residual = tops_test::tensor_desc(TOPS_DTYPE_F32, {2, 6, 8, 9});
    EXPECT_TRUE(fails_with(create(d), TOPS_ERROR_BAD_SHAPE, {"conv2d: residual.dims [2,6,8,9]", "y.dims [2,6,9,8]"}));
    d = desc();
    d.x.dims[2] = int64_t(1) << 62;  // extent overflow
    EXPECT_EQ(create(d), TOPS_ERROR_BAD_SHAPE) << tops_last_error();
}

TEST_F(CapiConv, ExecuteArguments) {
    tops_conv2d_desc_t d = desc();
    ASSERT_EQ(create(d), TOPS_SUCCESS) << tops_last_error();
    size_t ws = 0;
    ASSERT_EQ(tops_op_workspace_size(op_.op, &ws), TOPS_SUCCESS);
    std::vector<float> x(2 * 4 * 9 * 8, 0.5f), w(6 * 4 * 9, 0.25f), y(2 * 6 * 9 * 8);
    std::vector<unsigned char> work(ws + 1);
    const tops_arg_t missing_w[] = {{TOPS_ARG_X, x.data()}, {TOPS_ARG_Y, y.data()}};
    EXPECT_TRUE(fails_with(tops_op_execute(ctx_.ctx, op_.op, missing_w, 2, work.data(), ws),
                           TOPS_ERROR_MISSING_ARGUMENT, {"conv2d", "w"}));
    const tops_arg_t with_bias[] = {{TOPS_ARG_X, x.data()}, {TOPS_ARG_W, w.data()}, {TOPS_ARG_Y, y.data()},
                                    {TOPS_ARG_BIAS, w.data()}};
    EXPECT_TRUE(fails_with(tops_op_execute(ctx_.ctx, op_.op, with_bias, 4, work.data(), ws),
                           TOPS_ERROR_UNKNOWN_ARGUMENT, {"conv2d"}));
    const tops_arg_t y_is_x[] = {{TOPS_ARG_X, x.data()}, {TOPS_ARG_W, w.data()}, {TOPS_ARG_Y, x.data()}};
    EXPECT_NE(tops_op_execute(ctx_.ctx, op_.op, y_is_x, 3, work.data(), ws), TOPS_SUCCESS);
    const tops_arg_t ok[] = {{TOPS_ARG_X, x.data()}, {TOPS_ARG_W, w.data()}, {TOPS_ARG_Y, y.data()}};
    if (ws > 0) {
        EXPECT_TRUE(fails_with(tops_op_execute(ctx_.ctx, op_.op, ok, 3, work.data(), ws - 1),
                               TOPS_ERROR_WORKSPACE_TOO_SMALL, {}));
    }
    ASSERT_EQ(tops_op_execute(ctx_.ctx, op_.op, ok, 3, work.data(), ws), TOPS_SUCCESS) << tops_last_error();
    // corner output (0, 0, 0, 0): 4 channels x 2 x 2 taps inside x, each 0.5 * 0.25
    EXPECT_FLOAT_EQ(y[0], 4 * 4 * 0.125f);
    // interior output (0, 0, 4, 4): 4 channels x 3 x 3 taps
    EXPECT_FLOAT_EQ(y[4 * 8 + 4], 4 * 9 * 0.125f);
}

}  // namespace
