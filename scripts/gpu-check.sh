#!/usr/bin/env bash
# One-command GPU check (7.3 minutes on one H100 with a prebuilt tree, plus
# about a minute to build for sm_90 on its 16 cores):
#   1. configure + build with the CUDA plugin (skipped with TOPS_PREBUILT=1
#      when BUILD_DIR already holds a build),
#   2. the whole ctest suite (the CPU half of each CPU ISA level side by side,
#      the CUDA tests once),
#   3. the CUDA tests under compute-sanitizer: memcheck over all of them,
#      racecheck and synccheck side by side over TOPS_SANITIZER_FILTER (each
#      tool's summary lines go to sanitizer-summary.txt and the JSON; the
#      test over 2^31 elements is left out of them: it runs in step 2),
#   4. bench/compare_torch.py --check (every family's feature matrix against fp64 PyTorch),
#   5. tops-bench --suite cuda and bench/compare_torch.py (PyTorch on the same GPU).
# Logs and gpu-check.json (every step's status and the benchmark results) go
# to OUT_DIR. Exit status: 0 when every step passed.
#
# usage: scripts/gpu-check.sh OUT_DIR [BUILD_DIR]
# env:   TOPS_CUDA_ARCHS   (default 90-real: a quick Hopper build; CI builds 80/90/PTX)
#        TOPS_PREFIX_PATH  extra CMAKE_PREFIX_PATH (e.g. a folder holding xsimd and GTest)
#        TOPS_PREBUILT=1   use BUILD_DIR as it is
#        TOPS_CUDA_TEST_FILTER  gtest filter of the CUDA tests (default *cuda*:*Cuda*:*CUDA*)
#        TOPS_SANITIZER_TIMEOUT seconds per compute-sanitizer tool (default 240)
#        TOPS_SANITIZER_FILTER  gtest filter of racecheck and synccheck (default
#                               *cuda_f16*:*Cuda*:*CUDA*: every kernel, one dtype)
#        TOPS_GPU_CHECK_TORCH=0 stop after the sanitizers (no PyTorch steps 4 and 5)
set -uo pipefail

if [[ $# -lt 1 ]]; then
    sed -n '2,20p' "$0"
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
build=${2:-$root/build-gpu}
archs=${TOPS_CUDA_ARCHS:-90-real}
filter=${TOPS_CUDA_TEST_FILTER:-*cuda*:*Cuda*:*CUDA*}
san_filter="$filter:-SizeSafety.CudaOver2Pow31Elements"
shared_filter="${TOPS_SANITIZER_FILTER:-*cuda_f16*:*Cuda*:*CUDA*}:-SizeSafety.CudaOver2Pow31Elements"
san_limit=${TOPS_SANITIZER_TIMEOUT:-240}
jobs=$(nproc 2>/dev/null || echo 4)
steps=()

# step NAME LOGFILE TIMEOUT_S CMD...: runs CMD, records rc and seconds.
step() {
    local name=$1 log=$2 limit=$3
    shift 3
    local t0=$SECONDS
    echo "== $name: $*" | tee -a "$out/$log"
    timeout "$limit" "$@" >>"$out/$log" 2>&1
    local rc=$?
    local dt=$((SECONDS - t0))
    steps+=("{\"step\":\"$name\",\"rc\":$rc,\"seconds\":$dt,\"log\":\"$log\"}")
    echo "== $name: rc=$rc (${dt}s)" | tee -a "$out/$log"
    return $rc
}

{
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    nvcc --version 2>&1 | tail -1
    git -C "$root" log -1 --format="commit %H" 2>/dev/null || echo "commit: (not a git checkout)"
} >"$out/machine.txt"

if [[ "${TOPS_PREBUILT:-0}" != 1 ]]; then
    cfg=(-S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTOPS_CUDA=ON
         "-DTOPS_CUDA_ARCHS=$archs")
    [[ -n "${TOPS_PREFIX_PATH:-}" ]] && cfg+=("-DCMAKE_PREFIX_PATH=$TOPS_PREFIX_PATH")
    step configure build.log 300 cmake "${cfg[@]}"
    step build build.log 420 cmake --build "$build" -j "$jobs"
fi

tests="$build/tests/tops_tests"
# ctest runs the whole suite once per CPU ISA level; the CUDA half does not
# depend on it and runs once (cuda-tests), so the three ISA levels run their
# CPU half here, side by side (each with a third of the cores).
step ctest ctest.log 300 ctest --test-dir "$build" --output-on-failure -E '^tops_tests\.(sse4|avx2|avx512)$'
step cpu-tests ctest.log 300 env TESTS="$tests" FILTER="-Capi*:$filter" THREADS=$(((jobs + 2) / 3)) OUT="$out" \
    bash -c 'for isa in sse4 avx2 avx512; do
                 TOPS_CPU_ISA=$isa OMP_NUM_THREADS=$THREADS "$TESTS" "--gtest_filter=$FILTER" >"$OUT/cpu-$isa.log" 2>&1 &
             done
             rc=0; for j in $(jobs -p); do wait "$j" || rc=1; done
             grep -H -E "^\[  (PASSED|FAILED)" "$OUT"/cpu-*.log; exit $rc'
# The whole CUDA filter took 118 s on an H200 host (2026-11-29), past the old 120 s limit once.
step cuda-tests ctest.log 300 "$tests" "--gtest_filter=$filter"
# memcheck over every CUDA test; racecheck and synccheck (each several times
# slower) over TOPS_SANITIZER_FILTER, side by side.
step memcheck sanitizer-memcheck.log "$san_limit" compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$tests" "--gtest_filter=$san_filter"
for tool in racecheck synccheck; do
    timeout "$san_limit" compute-sanitizer --tool "$tool" --error-exitcode 1 "$tests" \
        "--gtest_filter=$shared_filter" >"$out/sanitizer-$tool.log" 2>&1 &
done
t0=$SECONDS
wait
for tool in racecheck synccheck; do
    rc=1
    grep -qE '(RACECHECK SUMMARY: 0 hazards|ERROR SUMMARY: 0 errors)' "$out/sanitizer-$tool.log" &&
        grep -q '^\[  PASSED  \]' "$out/sanitizer-$tool.log" && ! grep -q '^\[  FAILED  \]' "$out/sanitizer-$tool.log" && rc=0
    steps+=("{\"step\":\"$tool\",\"rc\":$rc,\"seconds\":$((SECONDS - t0)),\"log\":\"sanitizer-$tool.log\"}")
    echo "== $tool: rc=$rc ($((SECONDS - t0))s)" | tee -a "$out/sanitizer-$tool.log"
done
for tool in memcheck racecheck synccheck; do
    {
        echo "$tool: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \]' "$out/sanitizer-$tool.log" | tr '\n' ' ')"
        grep -E '(ERROR|RACECHECK|SYNCCHECK|MEMCHECK) SUMMARY' "$out/sanitizer-$tool.log" | sed "s/^/  /"
    } >>"$out/sanitizer-summary.txt"
done
if [[ "${TOPS_GPU_CHECK_TORCH:-1}" == 1 ]]; then
    step torch-check ctest.log 420 env PYTHONUNBUFFERED=1 python3 "$root/bench/compare_torch.py" \
        --lib "$build/libtops.so" --check
    step tops-bench bench.log 420 "$build/bench/tops-bench" --suite cuda --json "$out/tops-bench.json"
    step compare-torch bench.log 480 env PYTHONUNBUFFERED=1 python3 "$root/bench/compare_torch.py" \
        --lib "$build/libtops.so" --json "$out/compare_torch.json"
fi

failed=0
for s in "${steps[@]}"; do [[ $s == *'"rc":0,'* ]] || failed=1; done
{
    echo "{"
    echo "\"machine\": $(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' "$out/machine.txt"),"
    echo "\"sanitizers\": $(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' "$out/sanitizer-summary.txt"),"
    echo "\"steps\": [$(IFS=,; echo "${steps[*]}")],"
    for f in compare_torch tops-bench; do
        if [[ -s "$out/$f.json" ]]; then echo "\"$f\": $(cat "$out/$f.json"),"; else echo "\"$f\": null,"; fi
    done
    echo "\"passed\": $([[ $failed == 0 ]] && echo true || echo false)"
    echo "}"
} >"$out/gpu-check.json"
echo "gpu-check: $([[ $failed == 0 ]] && echo PASSED || echo FAILED); results in $out"
grep -h "== .*rc=" "$out"/*.log
exit $failed
