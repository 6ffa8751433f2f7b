#!/usr/bin/env bash
# Builds everything and runs the whole test suite (what .ci/run calls):
#  1. the default build (CPU backend, plus the CUDA plugin when a CUDA toolkit
#     is installed; CUDA tests skip with a message where no GPU is usable),
#  2. the Rust, Go and Python binding suites over the default build's library
#     (skip with TOPS_SKIP_BINDINGS=1),
#  and the hardening steps (skip them all with TOPS_HARDENING=0):
#  3. install and CPU-only deployment tests over the default build
#     (scripts/test_install.sh),
#  4. the suite under AddressSanitizer + UndefinedBehaviorSanitizer (preset
#     asan: CPU backend, library and tests only; one test binary run once per
#     TOPS_CPU_ISA level, as in the default suite),
#  5. the ABI check of the asan build's library against abi/ (scripts/check_abi.sh),
#  6. the concurrency test under ThreadSanitizer (preset tsan, which builds only
#     the library and that test),
#  7. the libFuzzer targets, TOPS_FUZZ_SECONDS (default 45) each, two at a
#     time (scripts/fuzz.sh).
# Each step prints its wall time and the CPU time (user + sys) of its
# processes; a summary table closes the run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

hardening=${TOPS_HARDENING:-1}
summary=()
times_file=$(mktemp "${TMPDIR:-/tmp}/tops-times.XXXXXX")
trap 'rm -f "$times_file"' EXIT

# cpu_now = CPU seconds (user + sys) of every finished child of this shell so
# far (`times` must run in this shell, not in a $(...) subshell).
children_cpu() {
  times >"$times_file"
  cpu_now=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; ++i) { split($i, a, "m"); sub("s", "", a[2]); n += a[1] * 60 + a[2] }
                           printf "%d", n }' "$times_file")
}
step_begin() {
  echo "== $1"
  step_name=$1
  step_wall=$SECONDS
  children_cpu
  step_cpu=$cpu_now
}
step_end() {
  children_cpu
  local wall=$((SECONDS - step_wall)) cpu=$((cpu_now - step_cpu))
  echo "== $step_name: wall ${wall} s, CPU ${cpu} s"
  summary+=("$(printf '%-44s %6d s %7d s' "$step_name" "$wall" "$cpu")")
}

step_begin "build and tests (preset default)"
cmake --preset default
cmake --build --preset default
ctest --preset default
step_end

if [[ "${TOPS_SKIP_BINDINGS:-0}" != 1 ]]; then
  step_begin "bindings (rust, go, python)"
  scripts/test_bindings.sh build
  step_end
fi

if [[ "$hardening" == 1 ]]; then
  step_begin "install and CPU-only deployment tests"
  scripts/test_install.sh build
  step_end

  step_begin "ASan+UBSan build and tests (preset asan)"
  cmake --preset asan
  cmake --build --preset asan
  ctest --preset asan
  step_end

  step_begin "ABI check (abidiff against abi/)"
  scripts/check_abi.sh build-asan
  step_end

  # Contexts in the test use one CPU thread (OMP_NUM_THREADS=1 too): libgomp is
  # not TSan-instrumented, so its barriers would show up as false races.
  step_begin "TSan build and concurrency test (preset tsan)"
  cmake --preset tsan
  cmake --build --preset tsan
  ctest --preset tsan
  step_end

  step_begin "fuzz build and runs (${TOPS_FUZZ_SECONDS:-45} s per target)"
  scripts/fuzz.sh
  step_end
fi

echo "== summary                                          wall       CPU"
printf '%s\n' "${summary[@]}"
echo "   total                                        ${SECONDS} s"
