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

}  // namespace tops::cpu::TOPS_ISA_NS
