#!/usr/bin/env bash
# Builds everything and runs the whole test suite:
#  1. the default build (CPU backend, plus the CUDA plugin when a CUDA toolkit
#     is installed; CUDA tests skip with a message where no GPU is usable),
#  2. the Rust, Go and Python binding suites over the default build's library
#     (skip with TOPS_SKIP_BINDINGS=1),
#  and, with TOPS_HARDENING=1 (not yet part of CI: their build times and a
#  full pass on the 2-core CI machine are still to be confirmed):
#  3. the same suite under AddressSanitizer + UndefinedBehaviorSanitizer
#     (preset asan, CPU backend),
#  4. install and CPU-only deployment tests over the default build
#     (scripts/test_install.sh),
#  5. the ABI check of the asan build's library against abi/ (scripts/check_abi.sh),
#  6. the concurrency test under ThreadSanitizer (preset tsan, which builds only
#     the library and that test),
#  7. the libFuzzer targets, TOPS_FUZZ_SECONDS (default 30) each (scripts/fuzz.sh).
# Each step prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

echo "== build (preset default)"
cmake --preset default
cmake --build --preset default
echo "== tests (preset default)"
ctest --preset default

step_start=$SECONDS
step_done() { echo "== $1: $((SECONDS - step_start)) s"; step_start=$SECONDS; }

hardening=${TOPS_HARDENING:-0}

if [[ "$hardening" == 1 ]]; then
  echo "== install and CPU-only deployment tests"
  scripts/test_install.sh build
  step_done "install tests"
fi

if [[ "$hardening" == 1 ]]; then
  echo "== build (preset asan: address,undefined)"
  cmake --preset asan
  cmake --build --preset asan
  echo "== tests (preset asan)"
  ctest --preset asan
  step_done "asan build and tests"
  if [[ "$hardening" == 1 ]]; then
    echo "== ABI check (abidiff against abi/)"
    scripts/check_abi.sh build-asan
    step_done "ABI check"
  fi
fi

if [[ "$hardening" == 1 ]]; then
  # Contexts in the test use one CPU thread (OMP_NUM_THREADS=1 too): libgomp is
  # not TSan-instrumented, so its barriers would show up as false races.
  echo "== build (preset tsan: library + concurrency test)"
  cmake --preset tsan
  cmake --build --preset tsan
  echo "== tests (preset tsan)"
  ctest --preset tsan
  step_done "tsan build and test"
fi

if [[ "$hardening" == 1 ]]; then
  echo "== fuzz (libFuzzer, ${TOPS_FUZZ_SECONDS:-30} s per target)"
  scripts/fuzz.sh
  step_done "fuzz build and runs"
fi

if [[ "${TOPS_SKIP_BINDINGS:-0}" != 1 ]]; then
  echo "== bindings (rust, go, python)"
  scripts/test_bindings.sh build
fi
