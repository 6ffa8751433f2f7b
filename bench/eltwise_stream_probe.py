#!/usr/bin/env python3
"""Elementwise streaming probe: the register and cp.async forms of
bench/eltwise_stream_probe.cu for y = relu(x + bias) (bias a row vector)
against the library's bias + ReLU and a torch copy of the same bytes, timed by
compare_torch.py's timer (L2 flushed by a write before each call), calls
interleaved one by one, --reps per form and round, two rounds. Every form must
give torch's bits (relu(x + b) is one rounding of an exact f32 sum).

    python3 bench/eltwise_stream_probe.py --lib build/libtops.so [--cases f32:4096x3072,f16:16384x4096]

Builds the .cu with nvcc (sm_90) into a temporary directory.
"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import probe_setup  # noqa: E402

DTYPES = {"f32": torch.float32, "f16": torch.float16}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="f32:4096x3072,f32:8192x8192,f16:4096x3072,f16:16384x4096")
    args, tops, timer = probe_setup(ap, 50)
    here = os.path.dirname(os.path.abspath(__file__))
    so = os.path.join(tempfile.mkdtemp(), "eltwise_stream_probe.so")
    subprocess.check_call(["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC",
                           "-Xptxas", "-v", "-o", so, os.path.join(here, "eltwise_stream_probe.cu")])
    lib = ctypes.CDLL(so)
    lib.run_bias_relu.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                  ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.variant_name.restype = ctypes.c_char_p
    names = [lib.variant_name(v).decode() for v in range(lib.num_variants())]
    stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
    for case in args.cases.split(","):
        dt, shape = case.split(":")
        m, n = (int(t) for t in shape.split("x"))
        x = torch.randn(m, n, device="cuda", dtype=DTYPES[dt])
        b = torch.randn(1, n, device="cuda", dtype=DTYPES[dt])
        y = torch.empty_like(x)
        ref = torch.relu(x + b)
        fns = {"copy": lambda: y.copy_(x), "library": tops.bias_act(x, y, "relu", b)}
        grids = {}
        for v, name in enumerate(names):
            def fn(v=v):
                grids[v] = lib.run_bias_relu(v, x.element_size(), x.data_ptr(), b.data_ptr(), y.data_ptr(), m, n,
                                             stream())
            fns[name] = fn
        for name, fn in fns.items():
            y.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            assert torch.equal(y, x if name == "copy" else ref), name
        print("%s %s: grids %s" % (dt, shape, ", ".join("%s %d" % (names[v], g) for v, g in sorted(grids.items()))))
        for r in range(2):
            ms = timer.interleaved(fns, timer.reps)
            print("%s %s round %d: " % (dt, shape, r) + ", ".join("%s %.1f" % (k, v * 1000) for k, v in ms.items()))


if __name__ == "__main__":
    main()
