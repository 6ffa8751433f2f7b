// Runtime ISA dispatch for CPU kernels. Each kernel is a functor with a
// templated operator()(Arch, ...) that is only *declared* where it is
// dispatched; src/cpu/kernels/*.cpp define it and are compiled once per ISA
// (see cmake/TopsCpuKernels.cmake), instantiating it for that ISA's Arch.
// The ISA is chosen once from cpuid; TOPS_CPU_ISA=sse4|avx2|avx512 forces a
// lower one for testing (a level the CPU lacks falls back to the best it has).
#pragma once

#include <utility>

#include <xsimd/xsimd.hpp>

namespace tops::cpu {

enum class Isa { sse4 = 0, avx2 = 1, avx512 = 2 };

using ArchSse4 = xsimd::sse4_2;
using ArchAvx2 = xsimd::fma3<xsimd::avx2>;
using ArchAvx512 = xsimd::avx512f;

Isa active_isa();
const char* isa_name(Isa isa);
// Best ISA this CPU supports and this build has kernels for (ignores TOPS_CPU_ISA).
Isa best_isa();
// Whether the CPU is an AMD one (for the few loop shapes measured to differ by vendor).
bool cpu_is_amd();

// The highest level whose kernels are compiled in (TOPS_CPU_MAX_ISA in CMake:
// a sanitizer build leaves out the levels its machine cannot execute).
#ifndef TOPS_CPU_MAX_ISA_LEVEL
#define TOPS_CPU_MAX_ISA_LEVEL 2
#endif
inline constexpr Isa kMaxBuiltIsa = Isa(TOPS_CPU_MAX_ISA_LEVEL);

// Calls f(Arch{}, args...) for `isa`, a level no higher than kMaxBuiltIsa
// (best_isa() clamps to it); levels not compiled in are never named here.
template <class F, class... Args>
decltype(auto) isa_dispatch_to(Isa isa, F&& f, Args&&... args) {
#if TOPS_CPU_MAX_ISA_LEVEL >= 2
    if (isa == Isa::avx512) return std::forward<F>(f)(ArchAvx512{}, std::forward<Args>(args)...);
#endif
#if TOPS_CPU_MAX_ISA_LEVEL >= 1
    if (isa == Isa::avx2) return std::forward<F>(f)(ArchAvx2{}, std::forward<Args>(args)...);
#endif
    return std::forward<F>(f)(ArchSse4{}, std::forward<Args>(args)...);
}

template <class F, class... Args>
decltype(auto) isa_dispatch(F&& f, Args&&... args) {
    return isa_dispatch_to(active_isa(), std::forward<F>(f), std::forward<Args>(args)...);
}

}  // namespace tops::cpu
