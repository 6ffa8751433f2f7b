#!/usr/bin/env bash
# One-command GPU check (about 5-8 minutes on one H100):
#   1. configure + build with the CUDA plugin (skipped with TOPS_PREBUILT=1
#      when BUILD_DIR already holds a build),
#   2. the whole ctest suite,
#   3. the CUDA tests under compute-sanitizer memcheck, racecheck and synccheck
#      (each tool's summary lines go to sanitizer-summary.txt and the JSON; the
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
step ctest ctest.log 300 ctest --test-dir "$build" --output-on-failure
step cuda-tests ctest.log 120 "$tests" "--gtest_filter=$filter"
for tool in memcheck racecheck synccheck; do
    step "$tool" "sanitizer-$tool.log" "$san_limit" compute-sanitizer --tool "$tool" --error-exitcode 1 \
        "$tests" "--gtest_filter=$san_filter"
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
