// CPU feature detection and the TOPS_CPU_ISA override.
#include "cpu/isa.hpp"
#include "tops/tops.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

namespace tops::cpu {

// F16C through cpuid: clang before 15 has no "f16c" in __builtin_cpu_supports.
static bool has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

static Isa best_cpu_isa() {
    __builtin_cpu_init();
    // avx512 kernels are built for x86-64-v4 (AVX-512 F, BW, DQ, VL).
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
        return Isa::avx512;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c() &&
        __builtin_cpu_supports("bmi2")) {
        return Isa::avx2;
    }
    return Isa::sse4;
}

Isa best_isa() {
    const Isa cpu = best_cpu_isa();
    return int(cpu) <= int(kMaxBuiltIsa) ? cpu : kMaxBuiltIsa;
}

bool cpu_is_amd() {
    __builtin_cpu_init();
    return __builtin_cpu_is("amd");
}

Isa active_isa() {
    static const Isa isa = [] {
        const Isa best = best_isa();
        const char* env = std::getenv("TOPS_CPU_ISA");
        if (!env || !*env) return best;
        Isa want = best;
        if (std::strcmp(env, "sse4") == 0) want = Isa::sse4;
        else if (std::strcmp(env, "avx2") == 0) want = Isa::avx2;
        else if (std::strcmp(env, "avx512") == 0) want = Isa::avx512;
        return int(want) <= int(best) ? want : best;
    }();
    return isa;
}

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::avx512: return "avx512";
        case Isa::avx2: return "avx2";
        default: return "sse4";
    }
}

}  // namespace tops::cpu

extern "C" TOPS_API const char* tops_cpu_isa(void) { return tops::cpu::isa_name(tops::cpu::active_isa()); }
