// Included only by the per-ISA kernel files (src/cpu/kernels/*.cpp). The
// build compiles each of them once per ISA with TOPS_CPU_ISA_<name> defined
// and the matching -march; `Arch` names that ISA's xsimd architecture and
// TOPS_CPU_INSTANTIATE explicitly instantiates a kernel functor for it.
// Helpers with external linkage in these files must live in namespace
// TOPS_ISA_NS so each ISA gets its own copy (the linker would otherwise merge
// them and run, say, AVX-512 code on an AVX2 machine).
#pragma once

#include <xsimd/xsimd.hpp>

#include "cpu/isa.hpp"

// kIsa is this file's ISA and kVectorRegisters the size of its vector
// register file (register tiles are sized against it).
#if defined(TOPS_CPU_ISA_avx512)
#define TOPS_ISA_NS isa_avx512
namespace tops::cpu {
using Arch = ArchAvx512;
constexpr Isa kIsa = Isa::avx512;
constexpr int kVectorRegisters = 32;
}  // namespace tops::cpu
#elif defined(TOPS_CPU_ISA_avx2)
#define TOPS_ISA_NS isa_avx2
namespace tops::cpu {
using Arch = ArchAvx2;
constexpr Isa kIsa = Isa::avx2;
constexpr int kVectorRegisters = 16;
}  // namespace tops::cpu
#elif defined(TOPS_CPU_ISA_sse4)
#define TOPS_ISA_NS isa_sse4
namespace tops::cpu {
using Arch = ArchSse4;
constexpr Isa kIsa = Isa::sse4;
constexpr int kVectorRegisters = 16;
}  // namespace tops::cpu
#else
#error "per-ISA kernel file compiled without TOPS_CPU_ISA_<name>"
#endif

// Instantiate Functor::operator()<Arch>(Arch, Args...) for this file's ISA.
#define TOPS_CPU_INSTANTIATE(Functor, ...) \
    template void Functor::operator()<::tops::cpu::Arch>(::tops::cpu::Arch, __VA_ARGS__) const;
