#!/usr/bin/env python3
"""Softmax row-kernel probe: the launch and load forms of
bench/softmax_rows_probe.cu on f32 rows of 1024 and 128 values, against
torch.softmax and a torch copy of the same bytes, timed by compare_torch.py's
Timer (L2 written full before each call, median of --reps after --warmup),
every form once per round, --rounds rounds; the figure is the median of the
round medians.

    python3 bench/softmax_rows_probe.py [--shapes 16384x1024,65536x128] [--rounds 5]

Builds the .cu with nvcc (sm_90) into a temporary directory.
"""
import argparse, ctypes, os, statistics, subprocess, sys, tempfile
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import Timer, copy_ceiling  # noqa: E402  (the same timer as the comparisons)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="16384x1024,65536x128")
    ap.add_argument("--variants", default="0,1,2,3,4,5,6,7,8,9")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    so = os.path.join(tempfile.mkdtemp(), "softmax_rows_probe.so")
    subprocess.check_call(["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-Xptxas", "-v",
                           "-o", so, os.path.join(here, "softmax_rows_probe.cu")])
    lib = ctypes.CDLL(so)
    lib.run_softmax.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                ctypes.c_void_p]
    lib.variant_name.restype = ctypes.c_char_p
    timeit = Timer(reps=args.reps, warmup=5)
    stream = lambda: torch.cuda.current_stream().cuda_stream
    ceiling = copy_ceiling(timeit)
    print(f"copy ceiling {ceiling:.1f} GB/s (512 MiB f32 device-to-device)")
    variants = [int(v) for v in args.variants.split(",")]
    torch.manual_seed(0)
    for shape in args.shapes.split(","):
        rows, n = (int(t) for t in shape.split("x"))
        x = torch.randn(rows, n, device="cuda") * 4
        y = torch.full_like(x, float("nan"))
        ref = torch.softmax(x, -1)
        for v in variants:
            y.fill_(float("nan"))
            assert lib.run_softmax(v, x.data_ptr(), y.data_ptr(), rows, n, stream()) == 0, v
            torch.cuda.synchronize()
            err = (y - ref).abs().max().item()
            assert err < 1e-6, (v, err)
        res = {}
        for _ in range(args.rounds):
            res.setdefault("torch softmax", []).append(timeit(lambda: torch.softmax(x, -1, out=None)))
            res.setdefault("torch copy same bytes", []).append(timeit(lambda: y.copy_(x)))
            for v in variants:
                name = lib.variant_name(v).decode()
                res.setdefault(name, []).append(
                    timeit(lambda: lib.run_softmax(v, x.data_ptr(), y.data_ptr(), rows, n, stream())))
        torch_ms = statistics.median(res["torch softmax"])
        nbytes = 2 * x.numel() * 4
        for k, ts in res.items():
            med = statistics.median(ts)
            print(f"{shape:10s} {k:30s} {med * 1e3:7.2f} us {nbytes / med / 1e6 / ceiling * 100:6.1f}% of copy "
                  f"{torch_ms / med:6.3f}x torch  rounds {' '.join(f'{t * 1e3:.2f}' for t in ts)}")


if __name__ == "__main__":
    main()
