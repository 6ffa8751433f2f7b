#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang + ASan + UBSan, in build-fuzz/)
# and runs each for TOPS_FUZZ_SECONDS (default 45) seconds, TOPS_FUZZ_JOBS
# (default 2) targets at a time (each target is single-threaded), starting
# from the seed corpus fuzz/corpus/<op>/ plus every kept crash input in
# fuzz/regressions/<op>/ (each replayed first; they must all pass now).
# New corpus entries go to a temporary directory; a crash input is copied to
# fuzz/regressions/<op>/ so it can be committed as a regression test.
# Prints one summary line per target: executions, new corpus entries, result.
# Usage: scripts/fuzz.sh [op ...]     (default: every target)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${TOPS_FUZZ_SECONDS:-45}
jobs=${TOPS_FUZZ_JOBS:-2}
build=${TOPS_FUZZ_BUILD:-build-fuzz}
ops=("$@")

if ! command -v clang++ >/dev/null || ! compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  scripts/deps.sh clang libclang-rt-dev libomp-dev
fi
CC=clang CXX=clang++ cmake -S fuzz -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" >/dev/null
[[ ${#ops[@]} -gt 0 ]] || read -ra ops <"$build/fuzz_targets.txt"
cmake --build "$build" -j 2 --target "${ops[@]/#/fuzz_}"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMP_NUM_THREADS=1
work=$(mktemp -d "${TMPDIR:-/tmp}/tops-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT

# One target: replay its regressions, then fuzz; writes $work/$op.result.
fuzz_one() {
  local op=$1 exe=$build/fuzz_$1 rc replay=ok
  if compgen -G "fuzz/regressions/$op/*" >/dev/null; then
    if ! "$exe" fuzz/regressions/$op/* >"$work/$op.replay.log" 2>&1; then
      replay=FAILED
    fi
  fi
  mkdir -p "$work/$op" "$work/$op.artifacts"
  set +e
  "$exe" -max_total_time="$seconds" -max_len=512 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/$op.artifacts/" "$work/$op" "fuzz/corpus/$op" >"$work/$op.log" 2>&1
  rc=$?
  set -e
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$op.log" | tail -1)
  echo "$op ${execs:-0} $(find "$work/$op" -type f | wc -l) $replay $rc" >"$work/$op.result"
}

pids=()
for op in "${ops[@]}"; do
  [[ -x $build/fuzz_$op ]] || { echo "fuzz: no target fuzz_$op" >&2; exit 1; }
  echo "== fuzz_$op: ${seconds}s"
  fuzz_one "$op" &
  pids+=($!)
  if (( ${#pids[@]} >= jobs )); then
    wait "${pids[0]}"
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid"; done

status=0
printf '%-12s %12s %10s  %s\n' target executions new-inputs result
for op in "${ops[@]}"; do
  read -r _ execs fresh replay rc <"$work/$op.result"
  result=ok
  if [[ $replay != ok ]]; then
    result="regression replay FAILED"
    status=1
    cat "$work/$op.replay.log"
  fi
  if [[ $rc != 0 ]]; then
    result="FAILED (exit $rc)"
    status=1
    tail -40 "$work/$op.log"
    mkdir -p "fuzz/regressions/$op"
    cp "$work/$op.artifacts"/* "fuzz/regressions/$op/" 2>/dev/null || true
    echo "fuzz_$op FAILED: crash input kept in fuzz/regressions/$op/ (commit it with the fix)" >&2
  fi
  printf '%-12s %12s %10s  %s\n' "fuzz_$op" "$execs" "$fresh" "$result"
done
exit $status
