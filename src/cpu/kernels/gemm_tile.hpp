// The register tile shared by the GEMM micro-kernel (gemm_blocked.cpp) and
// the conv2d implicit-GEMM micro-kernel (conv_gemm.cpp), per ISA build: MR
// rows of A by NR = two vectors of B, sized by gemm_tile_shape
// (cpu/gemm_kernels.hpp) so that the accumulators, the two B vectors and
// one broadcast A value fit the vector register file.
#pragma once

#include "cpu/gemm_kernels.hpp"
#include "cpu/isa_arch.hpp"
#include "cpu/vec_convert.hpp"

#define TOPS_MICRO_INLINE inline __attribute__((always_inline))

namespace tops::cpu::TOPS_ISA_NS {

constexpr int kMr = gemm_tile_shape(kIsa).mr;
constexpr int kNr = gemm_tile_shape(kIsa).nr;
constexpr int kNv = kNr / kLanes;  // vectors per tile row
static_assert(kNv * kLanes == kNr && kNv == 2, "the micro-kernels hold two B vectors per k step");
static_assert(kMr * kNv + kNv + 1 <= kVectorRegisters, "register tile exceeds the register file");

using Tile = VecF[kMr][kNv];  // (MR, NR) accumulators

// What a tile's epilogue reads or writes is pulled into L1 while its
// micro-kernel runs, kTilePrefetches prefetches of one end of one row each
// (the GEMM's first k steps, the conv's taps), so the misses trickle out:
// all 2 * MR at once would take every L1 fill buffer and stall the loads of
// the arithmetic behind them. Prefetch p covers one end of row p / 2.
constexpr int64_t kTilePrefetches = 2 * kMr;

template <int RW, class T>
TOPS_MICRO_INLINE void prefetch_row_end(const T* row, int64_t p) {
    __builtin_prefetch(row + (p & 1) * (kNr - 1), RW, 3);
}

}  // namespace tops::cpu::TOPS_ISA_NS
