// CPU GEMM (Goto/BLIS blocking): the argument struct, the per-ISA register
// tile shapes and the kernel functor declaration. The operator() body lives in
// src/cpu/kernels/gemm_blocked.cpp (compiled once per ISA); src/cpu/gemm.cpp
// plans the blocking and the workspace and only sees these declarations.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/params.hpp"
#include "cpu/isa.hpp"

namespace tops::cpu {

// Register tile of the micro-kernel: mr rows of A times nr columns of B
// (nr = two SIMD vectors) accumulate in mr * 2 vector registers.
struct GemmTileShape {
    int mr;
    int nr;
};

// sse4: 6x8 (12 of 16 xmm), avx2: 6x16 (12 of 16 ymm), avx512: 14x32
// (28 of 32 zmm; the other four hold two B vectors and the A broadcast).
constexpr GemmTileShape gemm_tile_shape(Isa isa) {
    return isa == Isa::avx512 ? GemmTileShape{14, 32} : isa == Isa::avx2 ? GemmTileShape{6, 16} : GemmTileShape{6, 8};
}

// Cache blocking, all in elements: kc rows of packed B (KC), mc rows of packed
// A (MC, a multiple of mr), nc columns of packed B (NC, a multiple of nr).
struct GemmBlocking {
    int64_t mc = 0, kc = 0, nc = 0;
};

// Workspace carved into (each 64-byte aligned):
//   packed B   (kc, nc) in nr-wide slivers, shared by the thread team
//   packed A   threads x (mc, kc) in mr-tall slivers, one per thread
//   f32 accumulator (m, nc) row-major, only for f16/bf16 output with K > kc
//     (partial sums across K blocks stay in f32)
struct GemmWorkspaceLayout {
    size_t b_offset = 0, a_offset = 0, a_stride = 0, acc_offset = 0, bytes = 0;
    bool has_acc = false;
};

constexpr size_t kGemmAlign = 64;

inline size_t gemm_align_up(size_t v) { return (v + kGemmAlign - 1) / kGemmAlign * kGemmAlign; }

inline GemmWorkspaceLayout gemm_workspace_layout(const GemmBlocking& blk, int64_t m, int64_t k, int threads,
                                                 bool f32_out) {
    GemmWorkspaceLayout w;
    size_t off = 0;
    w.b_offset = off;
    off += gemm_align_up(size_t(blk.kc * blk.nc) * sizeof(float));
    w.a_offset = off;
    w.a_stride = gemm_align_up(size_t(blk.mc * blk.kc) * sizeof(float));
    off += w.a_stride * size_t(threads);
    w.has_acc = !f32_out && k > blk.kc;
    w.acc_offset = off;
    if (w.has_acc) off += gemm_align_up(size_t(m * blk.nc) * sizeof(float));
    w.bytes = off + kGemmAlign;  // the caller's pointer is aligned up first
    return w;
}

// One batched GEMM problem, strides in elements. A is (batch, m, k), B
// (batch, k, n), C / D (batch, m, n), bias (n); any strides (0 = shared).
struct GemmArgs {
    const void* a = nullptr;
    const void* b = nullptr;
    const void* c = nullptr;     // nullptr when beta == 0
    const void* bias = nullptr;  // nullptr when absent
    void* d = nullptr;
    int64_t batch = 1, m = 0, n = 0, k = 0;
    int64_t a_bs = 0, a_rs = 0, a_cs = 0;
    int64_t b_bs = 0, b_rs = 0, b_cs = 0;
    int64_t c_bs = 0, c_rs = 0, c_cs = 0;
    int64_t d_bs = 0, d_rs = 0, d_cs = 0;
    int64_t bias_s = 0;
    float alpha = 1.0f, beta = 0.0f;
    Activation act = Activation::none;
    GemmBlocking blk;
    GemmWorkspaceLayout ws_layout;
    unsigned char* ws = nullptr;  // 64-byte aligned
    int threads = 1;
};

// IN: dtype of A and B; OUT: dtype of C, D and bias. Accumulates in f32.
template <tops_dtype_t IN, tops_dtype_t OUT>
struct GemmBlockedKernel {
    template <class Arch>
    void operator()(Arch, GemmArgs g) const;
};

}  // namespace tops::cpu
