#!/usr/bin/env bash
# Builds everything and runs the whole test suite:
#  1. the default build (CPU backend, plus the CUDA plugin when a CUDA toolkit
#     is installed; CUDA tests skip with a message where no GPU is usable),
#  2. the same suite under AddressSanitizer + UndefinedBehaviorSanitizer
#     (CPU backend; skip with TOPS_SKIP_ASAN=1),
#  3. the Rust, Go and Python binding suites over the default build's library
#     (skip with TOPS_SKIP_BINDINGS=1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

echo "== build (preset default)"
cmake --preset default
cmake --build --preset default
echo "== tests (preset default)"
ctest --preset default

if [[ "${TOPS_SKIP_ASAN:-0}" != 1 ]]; then
  echo "== build (preset asan: address,undefined)"
  cmake --preset asan
  cmake --build --preset asan
  echo "== tests (preset asan)"
  ctest --preset asan
fi

if [[ "${TOPS_SKIP_BINDINGS:-0}" != 1 ]]; then
  echo "== bindings (rust, go, python)"
  scripts/test_bindings.sh build
fi
