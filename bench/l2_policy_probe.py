#!/usr/bin/env python3
"""L2 cache-policy probe: copy and sum kernels with different load / store
hints, timed by compare_torch.py's Timer (256 MiB written before each call,
one call per CUDA-event pair, median of 30 after 5 warm-ups), 3 rounds.

    python3 bench/l2_policy_probe.py [--sizes 16,24,32,64,128]

Builds bench/l2_policy_probe.cu with nvcc (sm_90) into a temporary directory.
The figures and what they mean for the kernels: docs/performance.md (norm and
reduce, 2026-11-26).
"""
import argparse, ctypes, os, statistics, subprocess, sys, tempfile
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import Timer, copy_ceiling  # noqa: E402  (the same timer as the comparisons)

LOADS = ["plain", "nc", "cs", "evict_first", "nc_na_evict_first", "lu", "nc_256B", "na_evict_first"]
STORES = ["plain", "cs", "evict_first", "evict_last"]
COPIES = [0, 10, 20, 30, 40, 50, 60, 70, 1, 2, 3, 11, 21, 31, 41, 42, 43, 51, 61, 71]
SUMS = range(8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16,24,32,64,128", help="MiB, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    tmp = tempfile.mkdtemp()
    so = os.path.join(tmp, "l2_policy_probe.so")
    subprocess.check_call(["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o", so,
                           os.path.join(here, "l2_policy_probe.cu")])
    lib = ctypes.CDLL(so)
    for f in (lib.run_copy, lib.run_sum):
        f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_void_p]
    timeit = Timer(reps=30, warmup=5)
    stream = lambda: torch.cuda.current_stream().cuda_stream
    sum_grid_cap = 8 * torch.cuda.get_device_properties(0).multi_processor_count  # 8 blocks of 256 per SM
    ceiling = copy_ceiling(timeit)
    print(f"copy ceiling {ceiling:.1f} GB/s (512 MiB f32 device-to-device)")
    for mib in (int(m) for m in args.sizes.split(",")):
        nbytes = mib << 20
        x = torch.randn(nbytes // 4, device="cuda")
        y = torch.full_like(x, float("nan"))
        part = torch.empty(1 << 20, device="cuda")
        n16 = nbytes // 16
        grid = (n16 + 1023) // 1024
        res = {}
        for _ in range(args.rounds):
            res.setdefault("torch copy_", []).append(timeit(lambda: y.copy_(x)))
            for v in COPIES:
                t = timeit(lambda: lib.run_copy(v, x.data_ptr(), y.data_ptr(), nbytes, grid, stream()))
                res.setdefault(f"copy load={LOADS[v // 10]} store={STORES[v % 10]}", []).append(t)
            res.setdefault("torch sum", []).append(timeit(lambda: x.sum()))
            for v in SUMS:
                t = timeit(lambda: lib.run_sum(v, x.data_ptr(), part.data_ptr(), nbytes, min(grid, sum_grid_cap), stream()))
                res.setdefault(f"sum load={LOADS[v]}", []).append(t)
        torch.cuda.synchronize()
        assert torch.equal(x, y), "copy kernels must reproduce x"
        for k, ts in res.items():
            b = nbytes * (2 if "copy" in k else 1)
            med = statistics.median(ts)
            print(f"{mib:4d} MiB {k:44s} {med * 1e3:8.2f} us {b / med / 1e6 / ceiling * 100:6.1f}% of ceiling")


if __name__ == "__main__":
    main()
