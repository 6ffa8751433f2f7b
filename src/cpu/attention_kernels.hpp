// CPU flash attention: the argument struct, the per-ISA tile traits, the
// per-thread workspace layout and the kernel functor declaration. The
// operator() body lives in src/cpu/kernels/attention_flash.cpp (compiled once
// per ISA); src/cpu/attention.cpp plans the work and only sees these
// declarations.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/isa.hpp"
#include "tops/tops.h"

namespace tops::cpu {

// Tiles of the flash kernel. Scores are computed transposed, S^T (keys,
// queries), so query lanes run along the SIMD vectors:
//   rows:  register tile height (keys in S^T = K Q^T, head-dim rows in
//          O^T += V^T P^T), each row one broadcast per step;
//   nv:    vectors per register tile row (rows * nv accumulators);
//   bq:    queries per work item (a multiple of nv * lanes);
//   bk:    keys per K/V tile (the online-softmax step).
struct AttentionTile {
    int rows;
    int nv;
    int lanes;
    int bq;
    int bk;
};

// avx512: 4x4 zmm (16 accumulators, 4 Q^T / P^T vectors, one broadcast; rows
//   = 4 divides every common head dim and the key tile, so no edge tiles);
// avx2: 6x2 ymm (12 of 16 registers; two FMA ports x 4-cycle latency need >= 8
//   independent chains); sse4: 6x2 xmm, same budget.
// bq = 64 queries per item amortizes the per-item Q^T packing and O write; bk
// = 128 keys keeps S^T (bk, bq) at 32 KB next to the K/V rows in L1/L2.
constexpr AttentionTile attention_tile(Isa isa) {
    return isa == Isa::avx512 ? AttentionTile{4, 4, 16, 64, 128}
           : isa == Isa::avx2 ? AttentionTile{6, 2, 8, 64, 128}
                              : AttentionTile{6, 2, 4, 64, 128};
}

constexpr size_t kAttentionAlign = 64;

inline size_t attention_align_up(size_t v) { return (v + kAttentionAlign - 1) / kAttentionAlign * kAttentionAlign; }

// One thread's scratch, all f32, each part 64-byte aligned:
//   qt    (head_dim, bq)   Q^T of the item, pre-scaled by scale * log2(e)
//   ot    (head_dim, bq)   O^T accumulator
//   st    (bk, bq)         S^T scores, then P^T probabilities
//   stats (2, bq)          running max m (log2 units) and sum l per query
//   kpack (bk, head_dim)   K tile rows as f32 (f16/bf16 or non-unit d stride)
//   vpack (bk, head_dim)   V tile rows as f32 (same condition)
struct AttentionWorkspaceLayout {
    size_t qt = 0, ot = 0, st = 0, stats = 0, kpack = 0, vpack = 0;
    size_t per_thread = 0;  // bytes between two threads' scratch
    size_t bytes = 0;       // total for `threads`, plus alignment slack
};

inline AttentionWorkspaceLayout attention_workspace_layout(const AttentionTile& t, int64_t head_dim, int threads) {
    AttentionWorkspaceLayout w;
    const size_t f = sizeof(float);
    const size_t d = size_t(head_dim);
    size_t off = 0;
    w.qt = off;
    off += attention_align_up(d * size_t(t.bq) * f);
    w.ot = off;
    off += attention_align_up(d * size_t(t.bq) * f);
    w.st = off;
    off += attention_align_up(size_t(t.bk) * size_t(t.bq) * f);
    w.stats = off;
    off += attention_align_up(2 * size_t(t.bq) * f);
    w.kpack = off;
    off += attention_align_up(size_t(t.bk) * d * f);
    w.vpack = off;
    off += attention_align_up(size_t(t.bk) * d * f);
    w.per_thread = off;
    w.bytes = off * size_t(threads) + kAttentionAlign;  // the caller's pointer is aligned up first
    return w;
}

// One attention problem, strides in elements. Tensors are addressed as
// (batch, seq, head, dim): padded layouts use their four strides; varlen
// layouts have batch stride 0 and sequence b starts at row cu_seqlens[b].
struct AttentionArgs {
    const void* q = nullptr;
    const void* k = nullptr;
    const void* v = nullptr;
    void* o = nullptr;
    float* lse = nullptr;                 // nullptr when absent
    const int32_t* seqlens_k = nullptr;   // padded only, nullptr when absent
    const int32_t* cu_seqlens_q = nullptr;  // varlen only
    const int32_t* cu_seqlens_k = nullptr;
    int64_t batch = 0, heads = 0, kv_heads = 0, head_dim = 0;
    int64_t seqlen_q = 0, seqlen_k = 0;   // padded: Sq, Sk; varlen: max lengths
    int64_t q_bs = 0, q_ss = 0, q_hs = 0, q_ds = 0;
    int64_t k_bs = 0, k_ss = 0, k_hs = 0, k_ds = 0;
    int64_t v_bs = 0, v_ss = 0, v_hs = 0, v_ds = 0;
    int64_t o_bs = 0, o_ss = 0, o_hs = 0, o_ds = 0;
    int64_t lse_bs = 0, lse_hs = 0, lse_ss = 0;  // varlen: lse_bs = 0, lse_ss per token
    float scale = 1.0f;                   // softmax scale (natural units)
    int64_t window_left = -1, window_right = -1;  // < 0: unbounded
    AttentionWorkspaceLayout ws_layout;
    unsigned char* ws = nullptr;          // 64-byte aligned
    int threads = 1;
};

// DT: dtype of Q, K, V and O. Math in f32.
template <tops_dtype_t DT>
struct AttentionFlashKernel {
    template <class Arch>
    void operator()(Arch, AttentionArgs a) const;
};

}  // namespace tops::cpu
