"""The pipelined elementwise kernel (a hoisted bias or slope) against the general vector kernel (CUDA).

TOPS_ELTWISE_PIPELINE=0, read when a plan is created, keeps the general vector kernel; both plans are
made in one process and timed with compare_torch.py's timer (L2 flushed by a write before each call),
calls interleaved one by one, two rounds, against a torch copy of the same bytes. Every form's output
must equal the pipelined kernel's (bias + activation) or torch's (PReLU) bit for bit.
  --part bias:  bias + {none, relu, gelu_erf, gelu_tanh, silu} over f16 / bf16 / f32 rows
                (columns "<act>/1" pipelined, "<act>/0" with TOPS_ELTWISE_PIPELINE=0)
  --part prelu: PReLU per channel over NCHW (default plan against TOPS_ELTWISE_PIPELINE=0)
  --part wsum:  weighted sums of 2-4 inputs (default plan against TOPS_ELTWISE_PIPELINE=0), the
                same bits
  --part act:   an activation alone (bias_act without a bias) over the bias cases ("<act>/1" default,
                "<act>/0" TOPS_ELTWISE_PIPELINE=0, the same bits), then GEMM + bias + GELU erf through
                cuBLASLt and the activation pass (TOPS_GEMM_SM90=0; f16 / f32, BERT's FFN shapes), its
                output within 1e-2 (relative Frobenius) of torch's composition in f32
  --part warm:  x written by a producer (a torch copy) right before the op, so it is in L2 as after
                a GEMM: copy + op timed together, against the copy alone, for bias + GELU erf and
                GELU erf alone, out of place and in place (default plan against
                TOPS_ELTWISE_PIPELINE=0, the same bits)
Usage: python3 bench/eltwise_pipeline_probe.py [--lib build/libtops.so] [--part bias|prelu|wsum|act|warm]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import probe_setup  # noqa: E402
from tops_ctypes import ACT_GELU_ERF  # noqa: E402

BIAS_CASES = [(torch.float16, (16384, 4096)), (torch.float16, (4096, 3072)), (torch.bfloat16, (4096, 3072)),
              (torch.float32, (4096, 3072)), (torch.float32, (8192, 8192))]
WSUM_CASES = [(torch.float16, (16384, 4096), 3), (torch.float16, (16384, 4096), 2), (torch.float16, (4096, 3072), 4),
              (torch.float32, (8192, 8192), 3), (torch.float32, (4096, 3072), 2)]
GEMM_CASES = [(torch.float16, (11732, 3072, 768)), (torch.float16, (4096, 3072, 768)),
              (torch.float32, (4096, 3072, 768))]
PRELU_CASES = [(torch.float32, (32, 64, 56, 56)), (torch.float16, (32, 64, 56, 56)),
               (torch.float32, (32, 256, 14, 14)), (torch.float32, (64, 128, 28, 28))]


def planned(env, make):
    """make() with the environment variables env set (plans read them at creation)."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return make()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v


def run(label, fns, check, timer):
    for name, fn in fns.items():
        check.y.fill_(float("nan"))
        fn()
        check(name)
    for r in range(2):
        ms = timer.interleaved(fns, timer.reps)
        print("%s round %d: " % (label, r) + ", ".join("%s %.1f" % (k, v * 1000) for k, v in ms.items()))


class BiasCheck:
    """Each activation's two forms give the same bits; every output is finite."""

    def __init__(self, y):
        self.y, self.ref = y, {}

    def __call__(self, name):
        assert torch.isfinite(self.y).all(), name
        key = name.split("/")[0]
        self.ref.setdefault(key, self.y.clone())
        assert torch.equal(self.ref[key], self.y), name + " differs from the pipelined kernel"


class WarmCheck(BiasCheck):
    """BiasCheck for the ops; the producer alone writes no y; an in-place form's x must equal the
    out-of-place form's y."""

    def __init__(self, x, y):
        super().__init__(y)
        self.x = x

    def __call__(self, name):
        if name.startswith("gelu_inplace"):
            assert torch.equal(self.x, self.ref["gelu"]), name + " differs from the out-of-place form"
        elif name != "producer":
            super().__call__(name)


class SameBits:
    """Every form gives the first form's bits (copy: x)."""

    def __init__(self, x, y):
        self.x, self.y, self.ref = x, y, None

    def __call__(self, name):
        if name == "copy":
            assert torch.equal(self.y, self.x), name
            return
        assert torch.isfinite(self.y).all(), name
        if self.ref is None:
            self.ref = self.y.clone()
        assert torch.equal(self.ref, self.y), name + " differs from the default plan"


class PreluCheck:
    def __init__(self, x, a, y):
        self.x, self.y, self.ref = x, y, torch.where(x > 0, x, a * x)

    def __call__(self, name):
        assert torch.equal(self.y, self.x if name == "copy" else self.ref), name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("bias", "prelu", "wsum", "act", "warm"), default="bias")
    a, tops, timer = probe_setup(ap, 50)
    off = {"TOPS_ELTWISE_PIPELINE": "0"}
    if a.part == "bias":
        for dt, (m, n) in BIAS_CASES:
            x = torch.randn(m, n, device="cuda", dtype=dt)
            b = torch.randn(1, n, device="cuda", dtype=dt)
            y = torch.empty_like(x)
            fns = {"copy": lambda: y.copy_(x)}
            for act in ("none", "relu", "gelu_erf", "gelu_tanh", "silu"):
                fns[act + "/1"] = tops.bias_act(x, y, act, b)
                fns[act + "/0"] = planned(off, lambda: tops.bias_act(x, y, act, b))
            check = BiasCheck(y)
            check.ref["copy"] = x
            run("%s %dx%d" % (str(dt)[6:], m, n), fns, check, timer)
    elif a.part == "act":
        for dt, (m, n) in BIAS_CASES:
            x = torch.randn(m, n, device="cuda", dtype=dt)
            y = torch.empty_like(x)
            fns = {"copy": lambda: y.copy_(x)}
            for act in ("relu", "gelu_erf", "silu"):
                fns[act + "/1"] = tops.bias_act(x, y, act)
                fns[act + "/0"] = planned(off, lambda: tops.bias_act(x, y, act))
            check = BiasCheck(y)
            check.ref["copy"] = x
            run("act %s %dx%d" % (str(dt)[6:], m, n), fns, check, timer)
        for dt, (m, n, k) in GEMM_CASES:
            x = torch.randn(m, k, device="cuda", dtype=dt)
            w = torch.randn(n, k, device="cuda", dtype=dt) / k ** 0.5
            b = torch.randn(n, device="cuda", dtype=dt)
            y = torch.empty(m, n, device="cuda", dtype=dt)
            gemm = planned({"TOPS_GEMM_SM90": "0", "TOPS_GEMM_AUTOTUNE": "0"},
                           lambda: tops.gemm(x, w, y, bias=b, act=ACT_GELU_ERF, trans_b=True))
            y.fill_(float("nan"))
            gemm()
            ref = torch.nn.functional.gelu(x.float() @ w.float().t() + b.float())
            err = ((y.float() - ref).norm() / ref.norm()).item()
            assert err < 1e-2, err
            for r in range(2):
                ms = timer.interleaved({"gemm+gelu": gemm}, timer.reps)
                print("gemm+bias+gelu_erf %s %dx%dx%d round %d: %.1f us (rel. error %.1e)"
                      % (str(dt)[6:], m, n, k, r, ms["gemm+gelu"] * 1000, err))
    elif a.part == "warm":
        for dt, (m, n) in BIAS_CASES:
            src = torch.randn(m, n, device="cuda", dtype=dt)
            x = torch.empty_like(src)
            b = torch.randn(1, n, device="cuda", dtype=dt)
            y = torch.empty_like(x)
            fns = {"producer": lambda: x.copy_(src)}
            for name, bias, out in (("bias_gelu", b, y), ("gelu", None, y), ("gelu_inplace", None, x)):
                for form, env in (("1", {}), ("0", off)):
                    op = planned(env, lambda: tops.bias_act(x, out, "gelu_erf", bias))
                    fns["%s/%s" % (name, form)] = lambda op=op: (x.copy_(src), op())
            run("warm %s %dx%d" % (str(dt)[6:], m, n), fns, WarmCheck(x, y), timer)
    elif a.part == "wsum":
        for dt, (m, n), k in WSUM_CASES:
            xs = [torch.randn(m, n, device="cuda", dtype=dt) for _ in range(k)]
            coefs = [0.5, -1.25, 2.0, 0.75][:k]
            y = torch.empty_like(xs[0])
            fns = {"copy": lambda: y.copy_(xs[0]), "default": tops.weighted_sum(xs, coefs, y),
                   "pipeline_off": planned(off, lambda: tops.weighted_sum(xs, coefs, y))}
            run("%s %dx%d x%d" % (str(dt)[6:], m, n, k), fns, SameBits(xs[0], y), timer)
    else:
        for dt, shape in PRELU_CASES:
            x = torch.randn(*shape, device="cuda", dtype=dt)
            s = torch.rand(1, shape[1], 1, 1, device="cuda", dtype=dt)
            y = torch.empty_like(x)
            fns = {"copy": lambda: y.copy_(x), "default": tops.prelu(x, s, y),
                   "pipeline_off": planned(off, lambda: tops.prelu(x, s, y))}
            run("%s %s" % (str(dt)[6:], "x".join(map(str, shape))), fns, PreluCheck(x, s, y), timer)


if __name__ == "__main__":
    main()
