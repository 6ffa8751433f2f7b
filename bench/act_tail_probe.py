"""Stored outputs of bias + activation (CUDA, f16) against fp64 on the negative tail.

Runs GELU erf, GELU tanh and SiLU over every f16 value in [-9, -3] (no bias) and, for the outputs
at or above f16's smallest normal and for those below it, prints how many there are, the largest
relative error (over nonzero references) and the share stored exactly as the fp64 reference rounded
to f16. Usage: python3 bench/act_tail_probe.py [--lib build/libtops.so]
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tops_ctypes import Tops  # noqa: E402

REFS = {"gelu_erf": F.gelu, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"), "silu": F.silu}


def f16_bits(v):
    return torch.tensor(v, dtype=torch.float16).view(torch.int16).item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.path.join(os.path.dirname(__file__), "..", "build", "libtops.so"))
    a = ap.parse_args()
    tops = Tops(a.lib)
    # Negative f16 values order by their bits backwards: -3 has the smaller pattern.
    bits = torch.arange(f16_bits(-3.0), f16_bits(-9.0) + 1, dtype=torch.int32).to(torch.int16)
    x = bits.view(torch.float16).cuda()
    tiny = torch.finfo(torch.float16).tiny
    for act, ref_fn in REFS.items():
        y = torch.full_like(x, float("nan"))
        tops.bias_act(x, y, act)()
        torch.cuda.synchronize()
        ref = ref_fn(x.double())
        yd = y.double()
        nonzero = ref != 0
        rel = torch.where(nonzero, (yd - ref).abs() / ref.abs().clamp_min(1e-300), torch.zeros_like(ref))
        exact = yd == ref.to(torch.float16).double()
        normal = ref.abs() >= tiny
        for name, m in (("normal", normal), ("below the smallest normal", ~normal)):
            n = int(m.sum())
            if n == 0:
                print("%s, %s outputs: none" % (act, name))
                continue
            r = torch.where(m & nonzero, rel, torch.zeros_like(rel))
            i = int(r.argmax())
            print("%s, %s outputs: %d, max rel err %.3e at x = %.5f (y %.6e, ref %.6e), stored as ref rounded: "
                  "%.4f" % (act, name, n, r[i].item(), x[i].item(), yd[i].item(), ref[i].item(),
                            exact[m].double().mean().item()))


if __name__ == "__main__":
    main()
