// The ISA level ctest asks for (TOPS_CPU_ISA) is the one the CPU kernels use,
// or, where this machine (or the build, TOPS_CPU_MAX_ISA) lacks it, the library
// clamps it to the best level it has: then this test skips and says so, and
// ctest runs nothing else at that level (tests/CMakeLists.txt).
#include <cstdlib>
#include <string>

#include "harness.hpp"

namespace {

int isa_rank(const std::string& isa) {
    if (isa == "sse4") return 0;
    if (isa == "avx2") return 1;
    if (isa == "avx512") return 2;
    return -1;
}

// The best level this CPU supports, by the same features the kernels are built for.
std::string machine_best_isa() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
        return "avx512";
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
        __builtin_cpu_supports("bmi2")) {
        return "avx2";
    }
    return "sse4";
}

// ... and no higher than the levels the library was built with (TOPS_CPU_MAX_ISA).
std::string usable_best_isa() {
    static const char* const kLevels[] = {"sse4", "avx2", "avx512"};
    const std::string cpu = machine_best_isa();
    return isa_rank(cpu) <= TOPS_CPU_MAX_ISA_LEVEL ? cpu : kLevels[TOPS_CPU_MAX_ISA_LEVEL];
}

TEST(CpuIsa, RequestedLevelIsActive) {
    const std::string active = tops_cpu_isa();
    const std::string best = usable_best_isa();
    ASSERT_GE(isa_rank(active), 0) << "unknown ISA name " << active;
    EXPECT_LE(isa_rank(active), isa_rank(best)) << "kernels for " << active << " on a CPU whose best is " << best;
    const char* env = std::getenv("TOPS_CPU_ISA");
    if (!env || !*env) {
        EXPECT_EQ(active, best) << "without TOPS_CPU_ISA the best level is used";
        return;
    }
    const std::string want = env;
    ASSERT_GE(isa_rank(want), 0) << "TOPS_CPU_ISA=" << want << " is not sse4, avx2 or avx512";
    if (isa_rank(want) > isa_rank(best)) {
        EXPECT_EQ(active, best) << "an unsupported level is clamped to the best available";
        GTEST_SKIP() << "this CPU (or this build, TOPS_CPU_MAX_ISA) lacks " << want << "; the suite runs with "
                     << active << " instead";
    }
    EXPECT_EQ(active, want);
}

}  // namespace
