#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang + ASan + UBSan, in build-fuzz/)
# and runs each for TOPS_FUZZ_SECONDS (default 30) seconds, starting from the
# seed corpus fuzz/corpus/<op>/ plus every kept crash input in
# fuzz/regressions/<op>/ (each replayed first; they must all pass now).
# New corpus entries go to a temporary directory; a crash input is copied to
# fuzz/regressions/<op>/ so it can be committed as a regression test.
# Usage: scripts/fuzz.sh [op ...]     (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${TOPS_FUZZ_SECONDS:-30}
build=${TOPS_FUZZ_BUILD:-build-fuzz}
ops=("$@")
[[ ${#ops[@]} -gt 0 ]] || ops=(softmax transpose reduce norm eltwise gemm attention)

if ! command -v clang++ >/dev/null || ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  scripts/deps.sh clang libclang-rt-dev libomp-dev
fi
CC=clang CXX=clang++ cmake -S fuzz -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" >/dev/null
cmake --build "$build" -j 2 --target "${ops[@]/#/fuzz_}"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMP_NUM_THREADS=1
work=$(mktemp -d "${TMPDIR:-/tmp}/tops-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
status=0
for op in "${ops[@]}"; do
  exe=$build/fuzz_$op
  if compgen -G "fuzz/regressions/$op/*" >/dev/null; then
    echo "== fuzz_$op: replaying fuzz/regressions/$op"
    "$exe" fuzz/regressions/$op/* >"$work/$op.replay.log" 2>&1 || { cat "$work/$op.replay.log"; status=1; }
  fi
  mkdir -p "$work/$op" "$work/$op.artifacts"
  echo "== fuzz_$op: ${seconds}s"
  set +e
  "$exe" -max_total_time="$seconds" -max_len=512 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/$op.artifacts/" "$work/$op" "fuzz/corpus/$op" >"$work/$op.log" 2>&1
  rc=$?
  set -e
  grep -E '^stat::number_of_executed_units|^Done [0-9]+ runs' "$work/$op.log" | tail -2 || true
  if [[ $rc != 0 ]]; then
    status=1
    tail -40 "$work/$op.log"
    mkdir -p "fuzz/regressions/$op"
    cp "$work/$op.artifacts"/* "fuzz/regressions/$op/" 2>/dev/null || true
    echo "fuzz_$op FAILED: crash input kept in fuzz/regressions/$op/ (commit it with the fix)" >&2
  fi
done
exit $status
