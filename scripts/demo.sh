#!/usr/bin/env bash
# Builds tops and runs the demo on the default backend (CPU when there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
TOPS_BENCH_DEPS=0 scripts/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target tops_demo
./build/examples/tops_demo
