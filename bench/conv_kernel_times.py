#!/usr/bin/env python3
"""Kernel-only times of tops' and cuDNN's f16 NHWC 3x3 convolutions (the four
3x3 ResNet-50 layers of shared/anchors/gpu-h100.md, N 32), beside the CUDA-event
times compare_torch.py reports.

For each layer: the event time of one call after an L2 flush (compare_torch's
Timer, "write" and "read" flushes, tops and cuDNN interleaved), then the GPU
duration of each kernel as the CUDA profiler (CUPTI, through torch.profiler)
records it over 30 calls, each after a write flush, with cuDNN's kernel name,
grid, block, registers and shared memory. The event time holds the launch and
the gap after the flush; the kernel time holds only the kernel.

    python3 bench/conv_kernel_times.py --lib build-gpu/libtops.so [--layers 7,14]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import Timer  # noqa: E402
from conv_layers import make_layer, rel_err, tops_conv  # noqa: E402
from tops_ctypes import Tops  # noqa: E402


def kernel_records(fn, flush, calls):
    """(name, args) of every CUDA kernel of `calls` calls of fn, each after flush()."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flush()
            fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        with open(f.name) as trace:
            events = json.load(trace)["traceEvents"]
    return [e for e in events if e.get("cat") == "kernel"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True, help="libtops.so with the CUDA plugin beside it")
    ap.add_argument("--layers", default="7,14,28,56", help="output sizes of the layers to run")
    ap.add_argument("--reps", type=int, default=40)
    a = ap.parse_args()
    tops = Tops(a.lib)
    torch.manual_seed(0)
    print("seed 0; event times: median of %d calls, each after an L2 flush; kernel times: median of 30" % a.reps)
    for hw in (int(v) for v in a.layers.split(",")):
        layer = make_layer(hw)
        n, c, k, cudnn = layer.n, layer.c, layer.k, layer.cudnn
        run = tops_conv(tops, layer)
        events = {}
        for mode in ("write", "read"):
            events[mode] = Timer(a.reps, 5, mode).interleaved({"tops": run, "cudnn": cudnn}, a.reps)
        err = rel_err(layer)
        flush = Timer(1, 0, "write").flush
        with cudnn.context():
            recs = kernel_records(run, flush, 30) + kernel_records(cudnn, flush, 30)
        by_name = {}
        for e in recs:
            by_name.setdefault(e["name"], []).append(e)
        print("N%d C%d H%d K%d 3x3 (tops rel err %.2e vs fp64)" % (n, c, hw, k, err))
        for mode, t in events.items():
            print("  event, %s flush: tops %.1f us, cuDNN %.1f us, cuDNN / tops %.3f" %
                  (mode, t["tops"] * 1e3, t["cudnn"] * 1e3, t["cudnn"] / t["tops"]))
        for name, es in by_name.items():
            if len(es) < 30 or "elementwise" in name or "fill" in name:
                continue  # the flush's own kernel and cuDNN's one-off setup
            ar = es[0].get("args", {})
            print("  kernel %.1f us  grid %s block %s regs %s smem %s  %s" %
                  (statistics.median(e["dur"] for e in es), ar.get("grid"), ar.get("block"),
                   ar.get("registers per thread"), ar.get("shared memory"), name[:110]))


if __name__ == "__main__":
    main()
