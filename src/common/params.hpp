// Op parameter structs: what capi hands a backend after validation. Kernels
// trust these (all shapes, strides and dtypes already checked).
#pragma once

#include <cstdint>

#include "common/tensor.hpp"

namespace tops {

// Softmax along `axis`. Optional tensors are expanded to x's rank: dims equal
// to x.dims and stride 0 in every broadcast dim, so one multi-index addresses
// x, y, mask and lengths alike (lengths has dims[axis] = 1, strides[axis] = 0).
struct SoftmaxParams {
    TensorLayout x;        // f32 | f16 | bf16
    TensorLayout y;        // same dtype and dims as x
    TensorLayout mask;     // u8, optional (present() == false when absent)
    TensorLayout lengths;  // i32, optional
    int axis = 0;          // 0 <= axis < x.rank (x.rank >= 1)
    float scale = 1.0f;
    bool log = false;
};

// y[i] = x[j] with j[perm[k]] = i[k].
struct TransposeParams {
    TensorLayout x;
    TensorLayout y;
    int perm[kMaxRank] = {};
};

}  // namespace tops

namespace tops {

// LayerNorm / RMSNorm, canonicalized by capi to rows x cols: every row tensor
// (x, y, residual, prenorm) is rank 2 [rows, cols]; gamma, beta and bias are
// rank 1 [cols]; mean and rstd are rank 1 [rows]. Absent tensors have
// dtype TOPS_DTYPE_INVALID. In-place aliasing (y or prenorm == x or
// residual) is allowed: each element is read before it is written, and a
// row's statistics are computed before any of the row is written.
struct NormParams {
    TensorLayout x, y, residual, prenorm;  // (rows, cols), one float dtype
    TensorLayout gamma, beta, bias;        // (cols), x's dtype or f32
    TensorLayout mean, rstd;               // (rows), f32
    bool rms = false;
    float eps = 1e-5f;
};

enum class ReduceOp { sum, mean, max, min, prod, sumsq, norm2 };

// y = reduce(x) over `axes`; y is expanded to x's rank: dims equal to x's
// with stride 0 on reduced dims (so one multi-index addresses both).
struct ReduceParams {
    TensorLayout x;
    TensorLayout y;
    uint32_t axes = 0;  // bit i: x dim i is reduced
    ReduceOp op = ReduceOp::sum;
};

enum class EltwiseKind { bias_act, prelu, weighted_sum };
enum class Activation { none, relu, gelu_erf, gelu_tanh, silu };

constexpr int kMaxEltwiseInputs = 8;

// Fused elementwise ops over y's dims; every input is expanded to y's dims
// with stride 0 on broadcast dims.
//   bias_act:     y = act(in[0] + in[1])   (num_inputs 1 without bias, 2 with)
//   prelu:        y = in[0] > 0 ? in[0] : in[1] * in[0]
//   weighted_sum: y = sum_i coefs[i] * in[i]
struct EltwiseParams {
    EltwiseKind kind = EltwiseKind::bias_act;
    Activation act = Activation::none;
    int num_inputs = 0;
    TensorLayout in[kMaxEltwiseInputs];
    float coefs[kMaxEltwiseInputs] = {};
    TensorLayout y;
};

}  // namespace tops

namespace tops {

// D = act(alpha * A @ B + beta * C + bias). capi folds transposes into
// strides and gives every matrix rank 3: A (batch, M, K), B (batch, K, N),
// C and D (batch, M, N), with batch stride 0 where an operand is shared.
// bias is rank 1 (N). C is absent (dtype invalid) when beta == 0.
struct GemmParams {
    TensorLayout a, b, c, d, bias;
    float alpha = 1.0f;
    float beta = 0.0f;
    Activation act = Activation::none;
    bool allow_tf32 = false;
    int64_t batch = 1, m = 0, n = 0, k = 0;
};

}  // namespace tops

namespace tops {

// Attention as FlashAttention-2. capi gives Q, O rank 4 (B, Sq, H, D) and K, V
// rank 4 (B, Sk, Hk, D) in the padded layout; in the varlen layout they are
// rank 3 (total, heads, D) and B = cu_seqlens_q.dims[0] - 1. lse is (B, H, Sq)
// padded or (H, total_q) varlen. Optional tensors are absent when their dtype
// is invalid. window_* < 0 means unbounded; causal sets window_right = 0
// (bottom-right aligned), so kernels need only the two window bounds.
struct AttentionParams {
    TensorLayout q, k, v, o, lse, seqlens_k, cu_seqlens_q, cu_seqlens_k;
    bool varlen = false;
    bool causal = false;
    int64_t batch = 0, heads = 0, kv_heads = 0, head_dim = 0;
    int64_t seqlen_q = 0, seqlen_k = 0;  // padded: Sq, Sk; varlen: max lengths
    float scale = 1.0f;
    int64_t window_left = -1, window_right = -1;
};

}  // namespace tops

namespace tops {

// unpad (padded -> packed) and pad (packed -> padded). capi collapses the
// feature dims: padded is rank 3 (B, S, F), packed rank 2 (total, F);
// lengths (B) and cu_seqlens (B + 1) are rank 1 i32. lengths is present for
// unpad only; cu_seqlens is unpad's second output and pad's index input.
struct PadParams {
    bool unpad = true;
    TensorLayout padded, packed, lengths, cu_seqlens;
    int64_t batch = 0, seqlen = 0, total = 0, features = 0;
};

}  // namespace tops

namespace tops {

// 2-D convolution, y = act(conv(x, w) + bias [+ residual]). capi gives every
// tensor its logical dims in one canonical order whatever the caller's
// layout, with the caller's strides (so the memory order is in the strides):
//   x (N, C, H, W); w (K, C / groups, R, S); y and residual (N, K, P, Q);
//   bias (K). One dtype for all (f32, f16, bf16); absent optionals have dtype
//   TOPS_DTYPE_INVALID. channels_last / filter_krsc record the caller's dims
//   order (NHWC / KRSC): a backend's fast path checks the strides, e.g.
//   conv_is_dense_nhwc(x). y may be exactly residual (same layout).
// Output channel k belongs to group k / (K / groups) and reads input channels
// [g * C / groups, (g + 1) * C / groups).
struct ConvParams {
    TensorLayout x, w, bias, residual, y;
    int64_t batch = 0, in_c = 0, in_h = 0, in_w = 0;     // N, C, H, W
    int64_t out_c = 0, out_h = 0, out_w = 0;             // K, P, Q
    int64_t kernel_h = 0, kernel_w = 0;                  // R, S
    int64_t stride_h = 1, stride_w = 1;
    int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
    int64_t dilation_h = 1, dilation_w = 1;
    int64_t groups = 1;
    Activation act = Activation::none;
    bool allow_tf32 = false;
    bool channels_last = false;  // the caller's x / y / residual dims were NHWC
    bool filter_krsc = false;    // the caller's w dims were KRSC

    int64_t in_c_per_group() const { return groups > 0 ? in_c / groups : 0; }
    int64_t out_c_per_group() const { return groups > 0 ? out_c / groups : 0; }
    bool depthwise() const { return groups > 1 && in_c_per_group() == 1; }
    // y holds no element: a no-op whatever the other dims (their products may pass int64).
    bool output_empty() const { return batch == 0 || out_h == 0 || out_w == 0 || out_c == 0; }
    // N * P * Q; fits int64 when y is not empty (at most y's element count, which validation bounds).
    int64_t output_pixels() const { return batch * out_h * out_w; }
};

// A canonical (N, C, H, W) / (K, C, R, S) tensor stored dense channels-last:
// memory order dims 0, 2, 3, 1 (NHWC / KRSC) with no gaps.
inline bool conv_is_dense_nhwc(const TensorLayout& t) {
    if (t.rank != 4) return false;
    const int order[4] = {1, 3, 2, 0};  // innermost first
    int64_t expect = 1;
    for (int d : order) {
        if (t.dims[d] != 1 && t.strides[d] != expect) return false;
        expect *= t.dims[d];
    }
    return true;
}

// The same for the plain order (NCHW / KCRS) with no gaps.
inline bool conv_is_dense_nchw(const TensorLayout& t) { return t.rank == 4 && t.is_contiguous(); }

}  // namespace tops
