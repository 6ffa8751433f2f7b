#!/usr/bin/env bash
# Builds tops and runs the BERT encoder demo (examples/bert_encoder.cpp) on
# the best backend this machine has: on a GPU, 12 BERT-base layers in f16 on a
# padded batch of 32 x 128; without one, the CPU backend with smaller defaults
# (2 layers, 4 x 128, f32). It prints a per-op timing table and the total, and
# verifies the output (against the CPU backend in f32 on a GPU, else against
# an fp64 reference). Extra arguments go to the demo (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
TOPS_BENCH_DEPS=0 scripts/deps.sh
cmake --preset default >/dev/null
targets=(bert_encoder)
# The CUDA plugin only where a GPU can use it (a CPU-only host skips its long build).
if nvidia-smi -L >/dev/null 2>&1 && ninja -C build -t targets all 2>/dev/null | grep -q '^tops_cuda:'; then
  targets+=(tops_cuda)
fi
cmake --build --preset default --target "${targets[@]}"
exec ./build/examples/bert_encoder "$@"
