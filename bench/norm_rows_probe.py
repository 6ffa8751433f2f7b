#!/usr/bin/env python3
"""LayerNorm row-kernel probe: the gamma / beta forms of
bench/norm_rows_probe.cu on f16 rows of 1024 and 768 (16384 rows), against
F.layer_norm and a torch copy of the same bytes, timed by compare_torch.py's
Timer (L2 written full before each call, median of 30 after 5 warm-ups),
every form once per round, 5 rounds; the figure is the median of the round
medians.

    python3 bench/norm_rows_probe.py

Builds the .cu with nvcc (sm_90) into a temporary directory.
"""
import ctypes, os, statistics, subprocess, sys, tempfile
import torch
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from compare_torch import Timer, copy_ceiling  # noqa: E402  (the same timer as the comparisons)

so = os.path.join(tempfile.mkdtemp(), "norm_rows_probe.so")
subprocess.check_call(["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o", so,
                       os.path.join(here, "norm_rows_probe.cu")])
lib = ctypes.CDLL(so)
lib.run_ln.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 4 + [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
lib.variant_name.restype = ctypes.c_char_p
t = Timer(reps=30, warmup=5)
ceil = copy_ceiling(t)
print(f"ceiling {ceil:.1f}")
st = lambda: torch.cuda.current_stream().cuda_stream
for rows, n in ((16384, 1024), (16384, 768)):
    x = torch.randn(rows, n, device="cuda", dtype=torch.half)
    g = torch.randn(n, device="cuda", dtype=torch.half); b = torch.randn(n, device="cuda", dtype=torch.half)
    y = torch.empty_like(x)
    ref = F.layer_norm(x.float(), (n,), g.float(), b.float(), 1e-5)
    V = list(range(7))
    for v in V:
        y.fill_(float("nan"))
        assert lib.run_ln(v, x.data_ptr(), y.data_ptr(), g.data_ptr(), b.data_ptr(), rows, n, st()) == 0
        torch.cuda.synchronize()
        r = ref if v != 4 else F.layer_norm(x.float(), (n,), None, None, 1e-5)
        err = (y.float() - r).abs().max().item()
        assert err < 2e-2, (v, err)
    res = {}
    for _ in range(5):
        res.setdefault("torch layer_norm", []).append(t(lambda: F.layer_norm(x, (n,), g, b, 1e-5)))
        res.setdefault("torch copy", []).append(t(lambda: y.copy_(x)))
        for v in V:
            res.setdefault(lib.variant_name(v).decode(), []).append(
                t(lambda: lib.run_ln(v, x.data_ptr(), y.data_ptr(), g.data_ptr(), b.data_ptr(), rows, n, st())))
    tm = statistics.median(res["torch layer_norm"])
    nb = 2 * x.numel() * 2
    for k, ts in res.items():
        m = statistics.median(ts)
        print(f"{rows}x{n} {k:24s} {m*1e3:7.2f} us {nb/m/1e6/ceil*100:5.1f}% {tm/m:6.3f}x  {' '.join(f'{q*1e3:.2f}' for q in ts)}")
