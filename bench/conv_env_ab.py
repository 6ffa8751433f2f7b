#!/usr/bin/env python3
"""A / B of one environment switch on tops' f16 NHWC 3x3 convolutions (the
four 3x3 ResNet-50 layers of shared/anchors/gpu-h100.md, N 32), beside cuDNN.

Each value of the switch gets its own plan (the switch is read when the plan
is made and again while it runs); the plans and cuDNN (channels_last,
benchmark mode) are timed interleaved in one process with compare_torch's
Timer (write flush, median of 40 calls), two rounds. Prints us per call,
cuDNN / tops per value, and each value's relative error against an fp64
reference (y poisoned with NaN before the checked call).

    python3 bench/conv_env_ab.py --lib build-gpu/libtops.so --env TOPS_CONV_SM90_SPLIT [--values 0,1] [--layers 7,14]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import Timer  # noqa: E402
from conv_layers import LAYERS, make_layer, rel_err, tops_conv  # noqa: E402
from tops_ctypes import Tops  # noqa: E402

SEED = 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--env", required=True, help="the switch to compare")
    ap.add_argument("--values", default="0,1")
    ap.add_argument("--layers", default="", help="H of the layers to run (default: all four)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    tops = Tops(args.lib)
    layers = [int(v) for v in args.layers.split(",") if v] or list(LAYERS)
    print(f"seed {SEED}")
    torch.manual_seed(SEED)
    for hw in layers:
        layer = make_layer(hw)
        n, c, k = layer.n, layer.c, layer.k
        runs = {}
        for v in args.values.split(","):
            os.environ[args.env] = v
            call = tops_conv(tops, layer)

            def run(v=v, call=call):
                os.environ[args.env] = v
                call()

            runs[f"{args.env}={v}"] = run
        errs = {}
        for name, run in runs.items():
            layer.y.fill_(float("nan"))
            run()
            torch.cuda.synchronize()
            errs[name] = rel_err(layer)
        fns = dict(runs)
        fns["cudnn"] = layer.cudnn
        timer = Timer(40, 5, "write")
        for rnd in range(args.rounds):
            ms = timer.interleaved(fns, 40)
            print(f"N{n} C{c} H{hw} round {rnd}: " + "  ".join(f"{nm} {t * 1e3:.1f}us" for nm, t in ms.items()) +
                  "  cuDNN/tops " + " ".join(f"{nm}:{ms['cudnn'] / ms[nm]:.3f}" for nm in runs), flush=True)
        print("   rel err", {nm: f"{e:.2e}" for nm, e in errs.items()})


if __name__ == "__main__":
    main()
