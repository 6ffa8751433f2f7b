// Host/device interface of the CUDA attention kernels: the parameter struct
// each kernel takes by value, and the table of compiled configurations that
// attention_f16.cu / attention_bf16.cu export to the plan (attention.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tops::cuda::attn {

// Forward kernel parameters. Element strides; varlen tensors have batch
// stride 0 and rows are tokens (q_row0 = cu_seqlens_q[b]). Partials (split-KV)
// are f32: part_o (splits, part_rows, heads, head_dim), part_lse (splits,
// part_rows, heads) in the log2 domain; part_rows = batch * seqlen_q padded,
// total_q varlen.
struct FwdParams {
    const void* q;
    const void* k;
    const void* v;
    void* o;
    float* lse;  // optional
    float* part_o;
    float* part_lse;
    const int32_t* cu_q;       // varlen offsets (device) or null
    const int32_t* cu_k;
    const int32_t* seqlens_k;  // padded key lengths (device) or null
    int64_t q_bs, q_ss, q_hs, q_ds;
    int64_t k_bs, k_ss, k_hs, k_ds;
    int64_t v_bs, v_ss, v_hs, v_ds;
    int64_t o_bs, o_ss, o_hs, o_ds;
    int64_t lse_bs, lse_hs, lse_ss;
    int64_t part_rows;
    int batch, heads, group;   // group = heads / kv_heads
    int seqlen_q, seqlen_k;    // padded sizes or varlen maxima
    int m_blocks, splits;
    float scale_log2;          // scale * log2(e)
    int64_t window_left, window_right;  // < 0: unbounded
    bool vec_qkv;              // q, k, v rows are 16-byte aligned with unit head-dim stride
    bool vec_o;                // o pairs are 4-byte aligned with unit head-dim stride
    bool vec16_o;              // o rows are 16-byte aligned too: staged 16-byte row stores
};

// Split-KV combine: one warp per (query row, head).
struct CombineParams {
    const float* part_o;
    const float* part_lse;
    void* o;
    float* lse;
    const int32_t* cu_q;
    int64_t o_bs, o_ss, o_hs, o_ds;
    int64_t lse_bs, lse_hs, lse_ss;
    int64_t part_rows;
    int batch, heads, seqlen_q, head_dim, splits;
};

// Which rows a configuration is preferred for.
enum RowKind { kAnyRows = 0, kFull = 1, kBanded = 2 };

// One compiled forward configuration.
struct KernelConfig {
    int head_dim;
    bool decode;      // small-Sq tiles (one warp, 16 query rows)
    int rows;         // RowKind
    int block_m, block_n, threads;
    int smem_bytes;
    const void* fwd;  // __global__ function, for attributes and occupancy
    const char* name;
    cudaError_t (*launch_fwd)(const FwdParams&, unsigned grid, cudaStream_t);
    cudaError_t (*launch_combine)(const CombineParams&, unsigned grid, cudaStream_t);
};

constexpr int kMaxSplits = 64;
constexpr int kCombineWarps = 4;

// The configurations compiled for each dtype (attention_f16.cu, attention_bf16.cu).
const KernelConfig* kernels_f16(int* count);
const KernelConfig* kernels_bf16(int* count);

}  // namespace tops::cuda::attn
