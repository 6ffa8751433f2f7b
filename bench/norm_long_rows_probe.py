"""What the parameters cost LayerNorm / RMSNorm on long rows (CUDA).

Times one shape (default: f16 256x65536) with no gamma / beta, gamma only,
gamma and beta in x's dtype and in f32, against a torch copy of the same
bytes: compare_torch.py's timer (L2 flushed by a write before each call),
calls interleaved one by one, two rounds; the kernel each plan took is
printed. Usage:
  python3 bench/norm_long_rows_probe.py [--lib build/libtops.so] [--rows 256] [--cols 65536]
      [--dtype float16|float32|bfloat16]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import probe_setup  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--cols", type=int, default=65536)
    ap.add_argument("--dtype", default="float16", choices=["float16", "float32", "bfloat16"])
    a, tops, timer = probe_setup(ap, 50)
    dt = getattr(torch, a.dtype)
    x = torch.randn(a.rows, a.cols, device="cuda", dtype=dt)
    y = torch.empty_like(x)
    g16 = (torch.randn(a.cols, device="cuda") * 0.1 + 1).to(dt)
    b16 = (torch.randn(a.cols, device="cuda") * 0.1).to(dt)
    g32, b32 = g16.float(), b16.float()
    forms = {
        "ln none": {},
        "ln gamma": {"gamma": g16},
        "ln gamma beta": {"gamma": g16, "beta": b16},
        "ln gamma beta f32": {"gamma": g32, "beta": b32},  # same as the line above for f32 rows
        "rms none": {"rms": True},
        "rms gamma": {"rms": True, "gamma": g16},
    }
    fns = {"copy": lambda: y.copy_(x)}
    for name, kw in forms.items():
        fns[name] = tops.norm(x, y, **kw)
        print("%s: %s" % (name, fns[name].kernel))
    for name, fn in fns.items():  # every form runs and writes finite values
        y.fill_(float("nan"))
        fn()
        if not torch.isfinite(y).all():
            raise SystemExit("%s left non-finite values in y" % name)
    for r in range(2):
        ms = timer.interleaved(fns, a.reps)
        print("round %d: " % r + ", ".join("%s %.1f us" % (k, v * 1000) for k, v in ms.items()))


if __name__ == "__main__":
    main()
