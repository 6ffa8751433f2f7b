#!/usr/bin/env bash
# The BERT acceptance measurement on a GPU host (docs/performance.md, "BERT
# encoder"): f16, batch 32, S = 128 and 512, lengths uniform in [S/2, S],
# 12 layers of BERT-base; tops (stream and CUDA graph) against PyTorch eager
# and torch.compile on the same padded batch, with the outputs compared.
#   1. configure + build libtops, the CUDA plugin and examples/bert_encoder
#      (skipped with TOPS_PREBUILT=1 when BUILD_DIR already holds a build),
#   2. per S: bert_encoder --graph (verified against the CPU backend in f32 on
#      4 sequences), the same with --pack-once (tokens stay packed across
#      layers; informational) and with TOPS_GEMM_AUTOTUNE=1, then
#      bench/bert_torch.py on the same weights and lengths.
# Every step runs under a timeout and logs to OUT_DIR/bert-gpu.log; the results
# of every step go to OUT_DIR/bert-gpu.json (also when a step fails), with
# tops-S<n>.json, tops-S<n>-pack-once.json, tops-S<n>-autotune.json and
# torch-S<n>.json beside it.
# About 6-9 minutes on one H100 (build 2-4, torch.compile most of the rest).
# Exit status 0 when every step passed.
#
# usage: scripts/bert-gpu.sh OUT_DIR [BUILD_DIR]
# env:   TOPS_PREFIX_PATH   extra CMAKE_PREFIX_PATH (a folder holding xsimd)
#        TOPS_CUDA_ARCHS    default 90-real
#        TOPS_PREBUILT=1    use BUILD_DIR as it is
#        TOPS_BERT_SEQS     sequence lengths to run (default "128 512")
#        TOPS_BERT_ITERS    timed iterations per measurement (default 20)
#        TOPS_BERT_NO_COMPILE=1  skip torch.compile
set -uo pipefail

if [[ $# -lt 1 ]]; then
    sed -n '2,24p' "$0"
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
build=${2:-$root/build-bert-gpu}
archs=${TOPS_CUDA_ARCHS:-90-real}
seqs=${TOPS_BERT_SEQS:-128 512}
iters=${TOPS_BERT_ITERS:-20}
jobs=$(nproc 2>/dev/null || echo 4)
log="$out/bert-gpu.log"
steps=()
: >"$log"

# step NAME TIMEOUT_S CMD...: runs CMD, logs its output, records rc and seconds.
step() {
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    echo "== $name: $*" | tee -a "$log"
    timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
    local rc=$?
    local dt=$((SECONDS - t0))
    [[ $rc == 124 || $rc == 137 ]] && echo "== $name: timed out after ${limit}s" | tee -a "$log"
    steps+=("{\"step\":\"$name\",\"rc\":$rc,\"seconds\":$dt}")
    echo "== $name: rc=$rc (${dt}s)" | tee -a "$log"
    return $rc
}

{
    date -u +"%Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    nvcc --version 2>&1 | tail -1
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
    git -C "$root" log -1 --format="commit %H" 2>/dev/null || echo "commit: (not a git checkout)"
} >"$out/machine.txt"
cat "$out/machine.txt" | tee -a "$log"

built=1
if [[ "${TOPS_PREBUILT:-0}" != 1 ]]; then
    cfg=(-S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTOPS_CUDA=ON "-DTOPS_CUDA_ARCHS=$archs"
         -DTOPS_BUILD_TESTS=OFF -DTOPS_BUILD_BENCH=OFF)
    [[ -n "${TOPS_PREFIX_PATH:-}" ]] && cfg+=("-DCMAKE_PREFIX_PATH=$TOPS_PREFIX_PATH")
    step configure 180 cmake "${cfg[@]}" || built=0
    if [[ $built == 1 ]]; then
        step build 420 cmake --build "$build" -j "$jobs" --target bert_encoder tops_cuda || built=0
    fi
fi
exe="$build/examples/bert_encoder"

if [[ $built == 1 && -x "$exe" ]]; then
    for s in $seqs; do
        min=$((s / 2))
        common=(--backend cuda --dtype f16 --layers 12 --batch 32 --seq "$s" --min-len "$min")
        step "tops-S$s" 240 "$exe" "${common[@]}" --iters "$iters" --warmup 3 --graph \
            --json "$out/tops-S$s.json" --save-output "$build/tops-S$s.f32"
        # Informational: the tokens stay packed across layers (unpad once, pad once).
        step "tops-S$s-pack-once" 240 "$exe" "${common[@]}" --iters "$iters" --warmup 3 --graph --pack-once \
            --json "$out/tops-S$s-pack-once.json"
        # The specified layer again with every GEMM's cuBLASLt algorithm timed at op creation
        # (TOPS_GEMM_AUTOTUNE=1; by default only the large ones are, like cudnn.benchmark for
        # them); its output is verified too.
        step "tops-S$s-autotune" 240 env TOPS_GEMM_AUTOTUNE=1 "$exe" "${common[@]}" --iters "$iters" --warmup 3 \
            --graph --json "$out/tops-S$s-autotune.json"
        torch_args=(--tops-json "$out/tops-S$s.json" --tops-output "$build/tops-S$s.f32" --iters "$iters"
                    --json "$out/torch-S$s.json")
        [[ "${TOPS_BERT_NO_COMPILE:-0}" == 1 ]] && torch_args+=(--no-compile)
        if [[ -f "$out/tops-S$s.json" && -f "$build/tops-S$s.f32" ]]; then
            step "torch-S$s" 420 env PYTHONUNBUFFERED=1 python3 "$root/bench/bert_torch.py" "${torch_args[@]}"
        else
            # PyTorch alone still gives its times (no agreement check).
            step "torch-S$s" 420 env PYTHONUNBUFFERED=1 python3 "$root/bench/bert_torch.py" --layers 12 --batch 32 \
                --seq "$s" --min-len "$min" --dtype f16 --iters "$iters" --json "$out/torch-S$s.json" \
                $([[ "${TOPS_BERT_NO_COMPILE:-0}" == 1 ]] && echo --no-compile)
        fi
    done
fi

failed=0
for s in "${steps[@]}"; do [[ $s == *'"rc":0,'* ]] || failed=1; done
[[ $built == 1 ]] || failed=1
python3 - "$out" "$failed" "$seqs" "$(IFS=,; echo "${steps[*]}")" <<'EOF' | tee -a "$log"
import json, os, sys
out, failed, seqs, steps = sys.argv[1], sys.argv[2] == "1", sys.argv[3].split(), sys.argv[4]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
summary = {"machine": open(os.path.join(out, "machine.txt")).read(), "steps": json.loads("[" + steps + "]"),
           "failed": failed, "runs": {}}
print(f"{'S':>5} {'tokens':>7} {'tops ms':>9} {'graph ms':>9} {'packed1 ms':>10} {'tuned ms':>9} {'eager ms':>9} "
      f"{'compile ms':>10} {'x eager':>8} {'x compile':>9} {'tuned x eager':>13} {'tops err':>9} {'agree':>6}")
for s in seqs:
    t, p, q = load(f"tops-S{s}.json"), load(f"torch-S{s}.json"), load(f"tops-S{s}-pack-once.json")
    a = load(f"tops-S{s}-autotune.json")
    summary["runs"][s] = {"tops": t, "torch": p, "tops_pack_once": q, "tops_autotune": a}
    if not t and not p:
        print(f"{s:>5} (no results)")
        continue
    def g(d, *keys):
        for k in keys:
            d = d.get(k) if isinstance(d, dict) else None
        return d
    tops_ms, graph_ms = g(t, "total_ms"), g(t, "graph_ms")
    eager, comp = g(p, "eager_ms"), g(p, "compile_ms")
    best = min(v for v in (tops_ms, graph_ms) if v is not None) if (tops_ms or graph_ms) else None
    tuned = [v for v in (g(a, "total_ms"), g(a, "graph_ms")) if isinstance(v, (int, float)) and v > 0]
    tuned = min(tuned) if tuned else None
    fmt = lambda v, f="9.3f": format(v, f) if isinstance(v, (int, float)) else "-"
    print(f"{s:>5} {fmt(g(t, 'tokens'), '7d')} {fmt(tops_ms)} {fmt(graph_ms)} {fmt(g(q, 'graph_ms'), '10.3f')} "
          f"{fmt(tuned)} {fmt(eager)} {fmt(comp, '10.3f')} "
          f"{fmt(eager / best if eager and best else None, '8.2f')} {fmt(comp / best if comp and best else None, '9.2f')} "
          f"{fmt(eager / tuned if eager and tuned else None, '13.2f')} "
          f"{fmt(g(p, 'tops_vs_eager', 'rel_fro_err'), '9.2e')} {str(g(p, 'agree')):>6}")
with open(os.path.join(out, "bert-gpu.json"), "w") as f:
    json.dump(summary, f, indent=2)
EOF
echo "== bert-gpu: $([[ $failed == 0 ]] && echo PASS || echo FAIL); results in $out/bert-gpu.json" | tee -a "$log"
exit $failed
