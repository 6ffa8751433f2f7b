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
