// fp64 reference of attention (tests/reference/attention_ref.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace tops_ref {

// O = softmax(scale * Q K^T restricted to visible keys) V per sequence and
// query head; query head h reads kv head h / (heads / kv_heads).
// Tensors are dense and token-major: q, o (q_tokens, heads, head_dim); k, v
// (k_tokens, kv_heads, head_dim). Sequence b owns query tokens
// [q_start[b], q_start[b] + q_len[b]) and key tokens [k_start[b], k_start[b] +
// k_len[b]). Key j is visible to query i (both counted from their sequence's
// start) when j <= i + k_len - q_len + right (causal: right = 0) and
// j >= i + k_len - q_len - left, each bound only when >= 0.
// A query with no visible key gets O = 0 and LSE = -inf.
struct AttentionProblem {
    int64_t heads = 1, kv_heads = 1, head_dim = 1;
    int64_t q_tokens = 0, k_tokens = 0;
    std::vector<int64_t> q_start, q_len, k_start, k_len;
    double scale = 1.0;
    bool causal = false;
    int64_t window_left = -1, window_right = -1;
    std::vector<double> q, k, v;
};

struct AttentionResult {
    std::vector<double> o;    // (q_tokens, heads, head_dim)
    std::vector<double> lse;  // (heads, q_tokens) natural log; tokens no sequence owns stay 0
};

AttentionResult attention(const AttentionProblem& p);

}  // namespace tops_ref
