#!/usr/bin/env python3
"""Times tops' CUDA ops against PyTorch on the same GPU, over the standard
shape list that `tops-bench --suite cuda` also runs (keep the two in step).

Both sides run on the same torch tensors and the same stream; tops is called
through bench/tops_ctypes.py (the C API only). Timing (class Timer): each
call alone between two CUDA events with L2 flushed before it (cold cache, as
triton's do_bench does), median over --reps calls after --warmup calls; the
tops side and each PyTorch baseline alternate in --rounds rounds and the
figure is the median of the round medians (clock drift hits all alike).
GEMM cases alternate call by call instead (Timer.interleaved).

Figures: memory-bound families (softmax, transpose, norm, reduce, eltwise,
pad) report GB/s and % of the copy ceiling, a 512 MiB f32 device-to-device
copy timed the same way in the same run; bytes = each input read once + each
output written once (reduce: bytes read); --same-size-copy also times a
copy moving each case's bytes (same_copy_ms, tops_pct_same_copy). Compute
families (gemm, attention, conv2d) report TFLOP/s: GEMM/conv 2*M*N*K,
attention 4*B*H*Sq*Sk*D, halved when causal. "speedup" = baseline ms / tops ms (> 1: tops is faster).

Structure: one function per op family, registered in FAMILIES; each builds
its cases and hands every case to Bench.compare(), which checks tops against
a reference, times tops and the baselines, prints one table row per baseline
and collects the JSON record. --check runs the fp64 feature matrices of
bench/check_torch.py instead (CHECKS there, one per family).

JSON record (what bench/plot.py reads), one per case: family, case, op,
dtype, shape, kernel, kind ("memory" | "compute"), tops_ms, baselines
{name: ms or null}, baseline (the primary name), torch_ms, speedup, rel_err,
tol; memory: bytes, bytes_note, floor_ms, tops_gbs, torch_gbs,
tops_pct_copy, torch_pct_copy; compute: flops, tops_tflops, torch_tflops,
baseline_tflops {name: TFLOP/s}; plus family extras (attention: batch,
heads, seq, head_dim, causal).

usage: compare_torch.py [--lib build/libtops.so] [--only FAMILY[,FAMILY]] [--filter SUBSTR]
                        [--reps 30] [--warmup 5] [--rounds N] [--json out.json] [--check]
                        [--flush write|read] [--same-size-copy] [--seed N]
"""
import argparse
import contextlib
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tops_ctypes import ACT_GELU_ERF, ACT_GELU_TANH, Tops, rel_err  # noqa: E402
from check_torch import CHECKS, run_checks  # noqa: E402

COPY_BYTES = 512 << 20
FLUSH_BYTES = 256 << 20
TOL = {"float32": 1e-5}  # every other dtype (f16, bf16, tf32): DEFAULT_TOL
DEFAULT_TOL = 1e-2


# ------------------------------------------------------------------ timing
class Timer:
    """Median of per-call CUDA-event times with L2 flushed before each call."""

    def __init__(self, reps, warmup, flush_mode="write"):
        self.reps, self.warmup = reps, warmup
        self.flush_buf = torch.zeros(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        self.flush_sum = torch.zeros(1, dtype=torch.int64, device="cuda")
        self.flush_mode = flush_mode

    def flush(self):
        """Evicts L2: "write" zeroes FLUSH_BYTES (L2 is left holding dirty lines,
        which the timed call then writes back as it evicts them); "read" sums
        them (L2 is left clean)."""
        if self.flush_mode == "read":
            torch.sum(self.flush_buf.view(torch.int64), dim=0, keepdim=True, out=self.flush_sum)
        else:
            self.flush_buf.zero_()

    def __call__(self, fn):
        # fn.context (optional): a factory of a context manager held around all calls
        # (e.g. sdpa_kernel), so its host cost is not inside the timed interval.
        with getattr(fn, "context", contextlib.nullcontext)():
            for _ in range(self.warmup):
                fn()
            times = []
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            for _ in range(self.reps):
                self.flush()
                start.record()
                fn()
                stop.record()
                stop.synchronize()
                times.append(start.elapsed_time(stop))
        return statistics.median(times)

    def interleaved(self, fns, reps):
        """{name: median ms} of fns {name: fn} timed call by call in turn (the
        first in turn rotates), so a drift of the card's speed hits every side
        alike; each call alone between two events after an L2 flush."""
        names = list(fns)
        times = {name: [] for name in names}
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        for name in names:
            with getattr(fns[name], "context", contextlib.nullcontext)():
                for _ in range(self.warmup):
                    fns[name]()
        for rep in range(reps):
            for k in range(len(names)):
                name = names[(rep + k) % len(names)]
                fn = fns[name]
                with getattr(fn, "context", contextlib.nullcontext)():
                    self.flush()
                    start.record()
                    fn()
                    stop.record()
                    stop.synchronize()
                times[name].append(start.elapsed_time(stop))
        return {name: statistics.median(t) for name, t in times.items()}


def probe_setup(ap, reps):
    """A probe's start: its arguments plus --lib and --reps parsed, torch seeded (and the seed printed);
    returns (args, Tops, a write-flush Timer of args.reps calls after 5 warm-ups)."""
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--lib", default=os.path.join(here, "..", "build", "libtops.so"))
    ap.add_argument("--reps", type=int, default=reps)
    args = ap.parse_args()
    torch.manual_seed(0)
    print("seed 0")
    return args, Tops(args.lib), Timer(args.reps, 5, "write")


def copy_ceiling(timer):
    src = torch.randn(COPY_BYTES // 4, device="cuda")
    dst = torch.empty_like(src)
    ms = timer(lambda: dst.copy_(src))
    return 2 * COPY_BYTES / ms / 1e6


def same_size_copy(nbytes):
    """A device-to-device copy moving nbytes in all (half read, half written) of random bytes: what a plain copy
    of a case's traffic costs under the same timer (at 24-134 MB its fixed costs weigh more than at 512 MiB)."""
    src = torch.randint(0, 256, (nbytes // 2,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


# ------------------------------------------------------------------ table
class Table:
    """The one table printer: a header per family, a row per (case, baseline)."""

    def __init__(self):
        self.kind = None

    def header(self, family, kind):
        metric = "%copy" if kind == "memory" else "TFLOP/s"
        print("\n[%s]" % family)
        print("%-52s %-32s %9s | %-16s %9s %8s | %8s %8s | %9s" %
              ("case", "tops kernel", "tops ms", "baseline", "ms", "speedup", "tops " + metric[:3],
               "base " + metric[:3], "rel.err"))
        self.kind = kind

    def row(self, r):
        first = True
        for name, ms in r["baselines"].items():
            if self.kind == "memory":
                ours = "%7.1f%%" % r["tops_pct_copy"]
                theirs = "%7.1f%%" % (100 * r["bytes"] / ms / 1e6 / r["copy_gbs"]) if ms else "-"
            else:
                ours = "%8.1f" % r["tops_tflops"]
                theirs = "%8.1f" % r["baseline_tflops"][name] if ms else "-"
            print("%-52s %-32s %9s | %-16s %9s %8s | %8s %8s | %9s" %
                  (r["case"][:52] if first else "", r["kernel"][:32] if first else "",
                   "%.4f" % r["tops_ms"] if first else "", name[:16], "%.4f" % ms if ms else "n/a",
                   "%.3fx" % (ms / r["tops_ms"]) if ms else "-", ours if first else "", theirs,
                   "%.2e" % r["rel_err"] if first else ""))
            first = False
        if "same_copy_ms" in r:
            print("%-52s a copy of the same bytes: %.4f ms (%.1f%% of the ceiling); tops at %.1f%% of it" %
                  ("", r["same_copy_ms"], 100 * r["bytes"] / r["same_copy_ms"] / 1e6 / r["copy_gbs"],
                   r["tops_pct_same_copy"]))
        sys.stdout.flush()


# ------------------------------------------------------------------ the bench
class Bench:
    def __init__(self, tops, timer, rounds, name_filter, same_copy=False):
        self.tops, self.timer, self.rounds, self.filter = tops, timer, rounds, name_filter
        self.same_copy = same_copy
        self.table = Table()
        self.copy_gbs = None
        self.results = []

    def wants(self, case):
        return not self.filter or self.filter in case

    def family(self, name, kind):
        if kind == "memory" and self.copy_gbs is None:
            self.copy_gbs = copy_ceiling(self.timer)
            print("copy ceiling %.1f GB/s (512 MiB f32 device-to-device, read + written)" % self.copy_gbs)
        self.table.header(name, kind)

    def compare(self, family, case, op, dtype, shape, run, out, ref, baselines, nbytes=None, flops=None,
                bytes_note="bytes read + written", rounds=None, extra=None, interleave=False):
        """Checks tops (run, writing out) against ref(), then times it and each baseline {name: fn}:
        in alternating rounds of --reps calls, or with interleave call by call (rounds * --reps each)."""
        out.fill_(float("nan"))
        run()
        want = ref()
        torch.cuda.synchronize()
        err = rel_err(out, want)
        del want
        usable = {}
        for name, fn in baselines.items():
            try:
                with getattr(fn, "context", contextlib.nullcontext)():
                    fn()
                torch.cuda.synchronize()
                usable[name] = fn
            except RuntimeError as e:  # e.g. no kernel of that backend for this shape / dtype
                print("  %s: %s unavailable: %s" % (case, name, str(e).splitlines()[0][:100]))
        if interleave:
            ms = self.timer.interleaved(dict([("tops", run)] + list(usable.items())),
                                        (rounds or self.rounds) * self.timer.reps)
            tops_ms = ms["tops"]
            base_ms = {name: ms.get(name) for name in baselines}
        else:
            tops_rounds, base_rounds = [], {name: [] for name in usable}
            for k in range(rounds or self.rounds):
                order = [("tops", run)] + list(usable.items())
                for name, fn in (order if k % 2 == 0 else order[::-1]):
                    (tops_rounds if name == "tops" else base_rounds[name]).append(self.timer(fn))
            tops_ms = statistics.median(tops_rounds)
            base_ms = {name: (statistics.median(base_rounds[name]) if name in usable else None)
                       for name in baselines}
        primary = next(iter(baselines))
        torch_ms = base_ms[primary]
        r = {"family": family, "case": case, "op": op, "dtype": dtype, "shape": list(shape), "kernel": run.kernel,
             "kind": "compute" if flops else "memory", "tops_ms": tops_ms, "baselines": base_ms,
             "baseline": primary, "torch_ms": torch_ms, "speedup": torch_ms / tops_ms if torch_ms else None,
             "rel_err": err, "tol": TOL.get(dtype, DEFAULT_TOL)}
        if flops:
            r.update(flops=flops, tops_tflops=flops / tops_ms / 1e9,
                     torch_tflops=flops / torch_ms / 1e9 if torch_ms else None,
                     baseline_tflops={n: (flops / ms / 1e9 if ms else None) for n, ms in base_ms.items()})
        else:
            gbs = self.copy_gbs
            r.update(bytes=nbytes, bytes_note=bytes_note, copy_gbs=gbs, floor_ms=nbytes / gbs / 1e6,
                     tops_gbs=nbytes / tops_ms / 1e6, torch_gbs=nbytes / torch_ms / 1e6 if torch_ms else None)
            r["tops_pct_copy"] = 100 * r["tops_gbs"] / gbs
            r["torch_pct_copy"] = 100 * r["torch_gbs"] / gbs if torch_ms else None
            if self.same_copy:
                copy = same_size_copy(nbytes)
                r["same_copy_ms"] = statistics.median(self.timer(copy) for _ in range(rounds or self.rounds))
                r["tops_pct_same_copy"] = 100 * r["same_copy_ms"] / tops_ms
                del copy
        r.update(extra or {})
        self.results.append(r)
        self.table.row(r)
        return r


def dname(dt):
    return str(dt).replace("torch.", "")


def sname(shape):
    return "x".join(map(str, shape))


# ------------------------------------------------------------------ softmax
SOFTMAX_ROWS = ((65536, 128), (16384, 1024), (8192, 4096), (4096, 32768), (1024, 131072))
MASKED_SOFTMAX = (32, 12, 512, 512)


def softmax_family(b):
    b.family("softmax", "memory")
    for dt in (torch.float32, torch.float16):
        for shape in SOFTMAX_ROWS:
            case = "softmax %s %s" % (dname(dt), sname(shape))
            if not b.wants(case):
                continue
            x = torch.randn(shape, device="cuda", dtype=dt)
            y = torch.empty_like(x)
            fn = lambda: torch.softmax(x, -1)  # noqa: E731
            b.compare("softmax", case, "softmax", dname(dt), shape, b.tops.softmax(x, y), y, fn,
                      {"torch.softmax": fn}, nbytes=2 * x.numel() * x.element_size())
    bb, h, s, _ = MASKED_SOFTMAX
    case = "masked softmax float16 %s scale+key mask" % sname(MASKED_SOFTMAX)
    if b.wants(case):
        scale = 0.125
        x = torch.randn(MASKED_SOFTMAX, device="cuda", dtype=torch.float16)
        lens = torch.randint(s // 2, s + 1, (bb,), device="cuda")
        keep = (torch.arange(s, device="cuda")[None, :] < lens[:, None]).view(bb, 1, 1, s)
        y = torch.empty_like(x)
        fn = lambda: torch.softmax((x * scale).masked_fill(~keep, float("-inf")), -1)  # noqa: E731
        b.compare("softmax", case, "masked_softmax", "float16", MASKED_SOFTMAX,
                  b.tops.softmax(x, y, scale=scale, mask=keep.to(torch.uint8)), y, fn, {"masked_fill+softmax": fn},
                  nbytes=2 * x.numel() * x.element_size())


# ------------------------------------------------------------------ transpose
TRANSPOSES = ((torch.float32, (8192, 8192), (1, 0)), (torch.float16, (32, 512, 12, 64), (0, 2, 1, 3)),
              (torch.float32, (16, 32, 64, 64, 8), (0, 4, 2, 3, 1)))


def transpose_family(b):
    b.family("transpose", "memory")
    for dt, shape, perm in TRANSPOSES:
        case = "transpose %s %s perm%s" % (dname(dt), sname(shape), tuple(perm))
        if not b.wants(case):
            continue
        x = torch.randn(shape, device="cuda", dtype=dt)
        y = torch.empty([shape[p] for p in perm], device="cuda", dtype=dt)
        fn = lambda: x.permute(perm).contiguous()  # noqa: E731
        flat_x, flat_y = x.view(-1), y.view(-1)
        same_bytes_copy = lambda: flat_y.copy_(flat_x)  # noqa: E731  # what a plain copy reaches at this size
        b.compare("transpose", case, "transpose", dname(dt), shape, b.tops.transpose(x, y, perm), y, fn,
                  {"permute.contiguous": fn, "copy same bytes": same_bytes_copy},
                  nbytes=2 * x.numel() * x.element_size(), extra={"perm": list(perm)})


# ------------------------------------------------------------------ norm
LAYERNORM_SHAPES = ((16384, 768), (16384, 1024), (8192, 4096), (2048, 16384), (256, 65536))
RMSNORM_SHAPES = ((16384, 768), (8192, 4096), (256, 65536))
FUSED_LN_SHAPES = ((16384, 768),)


def norm_family(b):
    b.family("norm", "memory")
    cases = [("layernorm", dt, s) for dt in (torch.float16, torch.float32) for s in LAYERNORM_SHAPES]
    cases += [("rmsnorm", dt, s) for dt in (torch.float16, torch.float32) for s in RMSNORM_SHAPES]
    cases += [("layernorm_residual", torch.float16, s) for s in FUSED_LN_SHAPES]
    for op, dt, shape in cases:
        case = "%s %s %s" % (op, dname(dt), sname(shape))
        if op == "layernorm_residual":
            case = "add_bias_residual+layernorm %s %s (y and prenorm)" % (dname(dt), sname(shape))
        if not b.wants(case):
            continue
        cols = shape[-1]
        x = torch.randn(shape, device="cuda", dtype=dt)
        es = x.element_size()
        gamma = torch.randn(cols, device="cuda", dtype=dt) * 0.1 + 1
        beta = torch.randn(cols, device="cuda", dtype=dt) * 0.1
        y = torch.empty_like(x)
        if op == "rmsnorm":
            run = b.tops.norm(x, y, rms=True, gamma=gamma)
            fn = lambda: F.rms_norm(x, (cols,), gamma, 1e-5)  # noqa: E731
            ref, base, nbytes = fn, {"F.rms_norm": fn}, 2 * x.numel() * es + cols * es
        elif op == "layernorm":
            run = b.tops.norm(x, y, gamma=gamma, beta=beta)
            fn = lambda: F.layer_norm(x, (cols,), gamma, beta, 1e-5)  # noqa: E731
            ref, base, nbytes = fn, {"F.layer_norm": fn}, 2 * x.numel() * es + 2 * cols * es
        else:
            bias = torch.randn(cols, device="cuda", dtype=dt)
            res = torch.randn(shape, device="cuda", dtype=dt)
            pre = torch.empty_like(x)
            run = b.tops.norm(x, y, gamma=gamma, beta=beta, bias=bias, residual=res, prenorm=pre)

            def composed():
                s = x + bias + res
                return F.layer_norm(s, (cols,), gamma, beta, 1e-5), s
            ref, base, nbytes = (lambda: composed()[0]), {"add+F.layer_norm": composed}, \
                4 * x.numel() * es + 3 * cols * es
        b.compare("norm", case, op, dname(dt), shape, run, y, ref, base, nbytes=nbytes)
        torch.cuda.empty_cache()


# ------------------------------------------------------------------ reduce
REDUCE_SHAPE = (8192, 8192)
POOL_SHAPE = (64, 256, 56, 56)


def reduce_family(b):
    b.family("reduce", "memory")
    cases = [(red, where, torch.float32, REDUCE_SHAPE) for red, where in
             (("sum", "last"), ("sum", "first"), ("sum", "all"), ("max", "last"), ("max", "first"))]
    cases += [("mean", "pool", dt, POOL_SHAPE) for dt in (torch.float32, torch.float16)]
    for red, where, dt, shape in cases:
        axes = {"last": (1,), "first": (0,), "all": (0, 1), "pool": (2, 3)}[where]
        if where == "pool":
            case = "reduce mean %s %s over (2,3) (global pool)" % (dname(dt), sname(shape))
        else:
            case = "reduce %s %s %s %s-dim" % (red, dname(dt), sname(shape), where)
        if not b.wants(case):
            continue
        x = torch.randn(shape, device="cuda", dtype=dt)
        y = torch.empty([s for i, s in enumerate(shape) if i not in axes], device="cuda", dtype=dt)
        fn = {"sum": lambda: x.sum(axes), "max": lambda: x.amax(axes), "mean": lambda: x.mean(axes)}[red]
        b.compare("reduce", case, "reduce_" + red, dname(dt), shape, b.tops.reduce(x, y, red, axes, False), y, fn,
                  {"torch." + ("amax" if red == "max" else red): fn}, nbytes=x.numel() * x.element_size(),
                  bytes_note="bytes read", extra={"axes": list(axes)})


# ------------------------------------------------------------------ eltwise
BIAS_GELU = ((torch.float16, (4096, 3072)), (torch.float32, (4096, 3072)), (torch.float16, (16384, 4096)))
PRELU = ((torch.float32, (32, 64, 56, 56)),)
WEIGHTED_SUM3 = ((torch.float16, (16384, 4096)),)


def eltwise_family(b):
    b.family("eltwise", "memory")
    cases = [("bias_gelu", dt, s) for dt, s in BIAS_GELU] + [("prelu", dt, s) for dt, s in PRELU]
    cases += [("weighted_sum3", dt, s) for dt, s in WEIGHTED_SUM3]
    for op, dt, shape in cases:
        case = {"bias_gelu": "bias+gelu(erf)", "prelu": "prelu per-channel",
                "weighted_sum3": "weighted sum of 3"}[op] + " %s %s" % (dname(dt), sname(shape))
        if not b.wants(case):
            continue
        x = torch.randn(shape, device="cuda", dtype=dt)
        es = x.element_size()
        y = torch.empty_like(x)
        if op == "bias_gelu":
            bias = torch.randn(shape[-1], device="cuda", dtype=dt)
            run = b.tops.bias_act(x, y, "gelu_erf", bias.view(1, -1))
            fn = lambda: F.gelu(x + bias)  # noqa: E731
            base, nbytes = {"F.gelu(x+bias)": fn}, 2 * x.numel() * es + bias.numel() * es
        elif op == "prelu":
            slope = torch.rand(shape[1], device="cuda", dtype=dt) * 0.2
            run = b.tops.prelu(x, slope.view(1, -1, 1, 1), y)
            fn = lambda: F.prelu(x, slope)  # noqa: E731
            base, nbytes = {"F.prelu": fn}, 2 * x.numel() * es
        else:
            p, q = torch.randn_like(x), torch.randn_like(x)
            run = b.tops.weighted_sum([x, p, q], [0.5, -1.25, 2.0], y)
            fn = lambda: 0.5 * x - 1.25 * p + 2.0 * q  # noqa: E731
            base, nbytes = {"eager a*x+b*y+c*z": fn}, 4 * x.numel() * es
        b.compare("eltwise", case, op, dname(dt), shape, run, y, fn, base, nbytes=nbytes)
        torch.cuda.empty_cache()


# ------------------------------------------------------------------ gemm
GEMM_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 3072, 768), (4096, 768, 3072),
               (16384, 4096, 4096))
# GEMM cases time tops and torch call by call in turn (Timer.interleaved),
# GEMM_ROUNDS * --reps calls each. Where both run the same cuBLAS kernel
# (checked with torch.profiler for TF32 4096^3 and 4096x3072x768, f16
# 4096x768x3072 on an H100: equal device times), alternating rounds of 30
# calls still gave ratios of 0.947-1.044 with 3 rounds and 0.966-0.998 with
# 7: the card's speed moves between rounds (torch's own TF32 4096^3 median
# went 0.351-0.387 ms across runs), and a round of 30 long GEMMs is long
# enough to catch a different speed than the next one.
GEMM_ROUNDS = 7


def gemm_family(b):
    """tops GEMM vs torch.matmul (cuBLAS), and GEMM + bias + GELU vs the eager composition (MxNxK)."""
    b.family("gemm", "compute")
    cases = [("matmul", dt, s) for dt in ("float16", "bfloat16", "float32", "tf32") for s in GEMM_SHAPES]
    cases += [("linear_bias_gelu_" + form, dt, (4096, 3072, 768))
              for dt in ("float16", "bfloat16") for form in ("tanh", "erf")]
    for op, dt_name, (m, n, k) in cases:
        case = "gemm %s %s %dx%dx%d" % (op, dt_name, m, n, k)
        if not b.wants(case):
            continue
        tf32 = dt_name == "tf32"
        dt = torch.float32 if tf32 else getattr(torch, dt_name)
        torch.backends.cuda.matmul.allow_tf32 = tf32
        x = torch.randn(m, k, device="cuda", dtype=dt)
        d = torch.empty(m, n, device="cuda", dtype=dt)
        if op == "matmul":
            w = torch.randn(k, n, device="cuda", dtype=dt)
            run = b.tops.gemm(x, w, d, tf32=tf32)
            fn = lambda: torch.matmul(x, w)  # noqa: E731
            base = {"torch.matmul": fn}
        else:
            form = op.rsplit("_", 1)[1]
            w = torch.randn(n, k, device="cuda", dtype=dt) / k ** 0.5
            bias = torch.randn(n, device="cuda", dtype=dt)
            run = b.tops.gemm(x, w, d, bias=bias, act=ACT_GELU_TANH if form == "tanh" else ACT_GELU_ERF,
                              trans_b=True)
            approximate = "tanh" if form == "tanh" else "none"
            fn = lambda: F.gelu(F.linear(x, w, bias), approximate=approximate)  # noqa: E731
            base = {"F.gelu(F.linear)": fn}
        b.compare("gemm", case, "gemm_" + op, dt_name, (m, n, k), run, d, fn, base, flops=2.0 * m * n * k,
                  rounds=max(b.rounds, GEMM_ROUNDS), interleave=True)
        torch.cuda.empty_cache()
    torch.backends.cuda.matmul.allow_tf32 = False


# ------------------------------------------------------------------ attention
# FlashAttention-2's benchmark setting: B * S = 16k tokens, hidden 2048 (H = 2048 / D), f16.
ATTN_TOKENS = 16384
ATTN_HIDDEN = 2048
ATTN_SEQS = (512, 1024, 2048, 4096, 8192, 16384)
ATTN_HEAD_DIMS = (64, 128)
ATTN_DTYPES = (torch.float16, torch.bfloat16)
# Decode: one query against a long KV cache; memory-bound (K and V read once).
ATTN_DECODE = (8, 32, 1, 8192, 128)  # B, H, Sq, Sk, D


def sdpa_baseline(qt, kt, vt, causal, backend):
    from torch.nn.attention import sdpa_kernel

    def fn():
        return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
    fn.context = lambda: sdpa_kernel([backend])
    return fn


def attention_family(b):
    """tops attention ([B, S, H, D]) vs F.scaled_dot_product_attention pinned to FlashAttention-2 and cuDNN
    (the anchor shapes of shared/anchors/gpu-h100.md), then the decode case as % of copy bandwidth."""
    from torch.nn.attention import SDPBackend
    b.family("attention", "compute")
    backends = {"sdpa-flash2": SDPBackend.FLASH_ATTENTION, "sdpa-cudnn": SDPBackend.CUDNN_ATTENTION}
    for dt in ATTN_DTYPES:
        for d in ATTN_HEAD_DIMS:
            for causal in (False, True):
                for s in ATTN_SEQS:
                    bsz, h = max(1, ATTN_TOKENS // s), ATTN_HIDDEN // d
                    shape = (bsz, s, h, d)
                    case = "attention %s %s%s" % (dname(dt), sname(shape), " causal" if causal else "")
                    if not b.wants(case):
                        continue
                    q, k, v = (torch.randn(shape, device="cuda", dtype=dt) for _ in range(3))
                    o = torch.empty_like(q)
                    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))  # [B, H, S, D] views
                    base = {name: sdpa_baseline(qt, kt, vt, causal, be) for name, be in backends.items()}
                    ref32 = sdpa_baseline(qt.float(), kt.float(), vt.float(), causal, SDPBackend.EFFICIENT_ATTENTION)

                    def ref():  # f32 reference; the math backend where no fused kernel takes f32
                        try:
                            with ref32.context():
                                return ref32().transpose(1, 2)
                        except RuntimeError:
                            return F.scaled_dot_product_attention(qt.float(), kt.float(), vt.float(),
                                                                  is_causal=causal).transpose(1, 2)
                    flops = 4.0 * bsz * h * s * s * d * (0.5 if causal else 1.0)
                    b.compare("attention", case, "attention_causal" if causal else "attention", dname(dt), shape,
                              b.tops.attention(q, k, v, o, causal=causal), o, ref, base, flops=flops,
                              extra={"batch": bsz, "heads": h, "seq": s, "head_dim": d, "causal": causal})
                    torch.cuda.empty_cache()
    attention_decode(b, backends)


def attention_decode(b, backends):
    """B=8, H=32, Sq=1, Sk=8192, D=128: bytes = K and V read once (Q and O are 1/8192 of that)."""
    from torch.nn.attention import SDPBackend
    bsz, h, sq, sk, d = ATTN_DECODE
    if b.copy_gbs is None:
        b.copy_gbs = copy_ceiling(b.timer)
        print("copy ceiling %.1f GB/s (512 MiB f32 device-to-device, read + written)" % b.copy_gbs)
    b.table.header("attention decode", "memory")
    for dt in ATTN_DTYPES:
        case = "attention decode %s q%s kv%s" % (dname(dt), sname((bsz, sq, h, d)), sname((bsz, sk, h, d)))
        if not b.wants(case):
            continue
        q = torch.randn((bsz, sq, h, d), device="cuda", dtype=dt)
        k, v = (torch.randn((bsz, sk, h, d), device="cuda", dtype=dt) for _ in range(2))
        o = torch.empty_like(q)
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        base = {name: sdpa_baseline(qt, kt, vt, False, be) for name, be in backends.items()}
        ref32 = sdpa_baseline(qt.float(), kt.float(), vt.float(), False, SDPBackend.EFFICIENT_ATTENTION)

        def ref():
            with ref32.context():
                return ref32().transpose(1, 2)
        nbytes = 2 * k.numel() * k.element_size()
        b.compare("attention", case, "attention_decode", dname(dt), (bsz, h, sq, sk, d),
                  b.tops.attention(q, k, v, o), o, ref, base, nbytes=nbytes, bytes_note="K and V read once",
                  extra={"batch": bsz, "heads": h, "seq_q": sq, "seq_k": sk, "head_dim": d})
        del q, k, v, o
        torch.cuda.empty_cache()


# ------------------------------------------------------------------ conv2d
# The six ResNet-50 layers of shared/anchors/gpu-h100.md: (N, C, H=W, K, R=S, stride, pad).
CONV_LAYERS = ((32, 64, 56, 64, 3, 1, 1), (32, 128, 28, 128, 3, 1, 1), (32, 256, 14, 256, 3, 1, 1),
               (32, 512, 7, 512, 3, 1, 1), (32, 3, 224, 64, 7, 2, 3), (32, 256, 56, 64, 1, 1, 0))


def cudnn_conv(x, w, stride, pad, tf32):
    """F.conv2d through cuDNN with benchmark=True (autotuned algorithm) and TF32 as asked."""
    def fn():
        return F.conv2d(x, w, stride=stride, padding=pad)
    fn.context = lambda: torch.backends.cudnn.flags(enabled=True, benchmark=True, deterministic=False,
                                                    allow_tf32=tf32)
    return fn


def conv2d_family(b):
    """tops conv2d vs F.conv2d (cuDNN, benchmark=True): f16 NHWC (channels_last) and f32 NCHW, where f32 runs
    against cuDNN in strict f32 and with TF32 allowed (PyTorch's default for convolutions).
    FLOPs 2*N*K*P*Q*C*R*S. TOPS_BENCH_CONV_SWEEP=1 also times every tensor-core tile config."""
    import os
    b.family("conv2d", "compute")
    sweep = os.environ.get("TOPS_BENCH_CONV_SWEEP") == "1"
    # Tensor-core tile configs as (BM, BN, reduction bytes per tile row, stages, warp tile).
    configs = ((128, 128, 64, 4, "64x32"), (128, 64, 64, 4, "64x32"), (64, 64, 128, 4, "32x32"),
               (64, 64, 64, 6, "32x32"))
    for dt_name in ("float16", "float32"):
        for n, c, hw, k, rs, stride, pad in CONV_LAYERS:
            nhwc = dt_name == "float16"
            case = "conv2d %s %s N%d C%d H%d K%d %dx%d s%d" % (dt_name, "nhwc" if nhwc else "nchw", n, c, hw, k,
                                                              rs, rs, stride)
            if not b.wants(case):
                continue
            dt = getattr(torch, dt_name)
            fmt_ = torch.channels_last if nhwc else torch.contiguous_format
            p = (hw + 2 * pad - rs) // stride + 1
            x = torch.randn(n, c, hw, hw, device="cuda", dtype=dt).to(memory_format=fmt_)
            w = (torch.randn(k, c, rs, rs, device="cuda") / (c * rs * rs) ** 0.5).to(dt).to(memory_format=fmt_)
            y = torch.empty(n, k, p, p, device="cuda", dtype=dt).to(memory_format=fmt_)

            def make(x=x, w=w, y=y, stride=stride, pad=pad, nhwc=nhwc, tf32=False):
                if nhwc:  # tops takes NHWC / KRSC dims order: the channels_last tensors permuted
                    return b.tops.conv2d(x.permute(0, 2, 3, 1), w.permute(0, 2, 3, 1), y.permute(0, 2, 3, 1),
                                         stride=(stride, stride), pad=(pad,) * 4, nhwc=True, krsc=True, tf32=tf32)
                return b.tops.conv2d(x, w, y, stride=(stride, stride), pad=(pad,) * 4, tf32=tf32)
            run = make()
            ref = lambda x=x, w=w, stride=stride, pad=pad: F.conv2d(x.double(), w.double(), stride=stride,  # noqa
                                                                   padding=pad)
            base = {"cudnn": cudnn_conv(x, w, stride, pad, False)}
            if dt_name == "float32":
                base = {"cudnn-f32": cudnn_conv(x, w, stride, pad, False),
                        "cudnn-tf32": cudnn_conv(x, w, stride, pad, True)}
            flops = 2.0 * n * k * p * p * c * rs * rs
            b.compare("conv2d", case, "conv2d", dt_name, (n, c, hw, hw, k, rs, rs, stride, pad), run, y, ref, base,
                      flops=flops, rounds=max(b.rounds, 3))
            if dt_name == "float32":  # TOPS_CONV_ALLOW_TF32 against cuDNN's TF32 mode
                b.compare("conv2d", case.replace("float32", "tf32"), "conv2d", "tf32",
                          (n, c, hw, hw, k, rs, rs, stride, pad), make(tf32=True), y, ref,
                          {"cudnn-tf32": base["cudnn-tf32"]}, flops=flops, rounds=max(b.rounds, 3))
            if sweep:
                for bm, bn, kb, stages, warp in configs:
                    cfg = "%dx%dx%d_s%d_w%s" % (bm, bn, kb // x.element_size(), stages, warp)
                    os.environ["TOPS_CONV_IGEMM_CONFIG"] = cfg
                    try:
                        r2 = make()
                    finally:
                        del os.environ["TOPS_CONV_IGEMM_CONFIG"]
                    ms = b.timer(r2)
                    print("  sweep %-34s %9.4f ms %8.1f TFLOP/s" % (r2.kernel[:34], ms, flops / ms / 1e9))
            del x, w, y, run
            torch.cuda.empty_cache()


# ------------------------------------------------------------------ pad / unpad
PAD_SHAPES = ((32, 128, 768), (32, 512, 768))  # B, S, hidden: the BERT-base batches of issue 9
PAD_DTYPES = (torch.float16,)


def pad_family(b):
    """unpad / pad vs the index_select / index_copy_ pair PyTorch models use (indices precomputed, so the
    baseline pays no nonzero() sync). Lengths uniform in [S/2, S]. Bytes: unpad reads and writes the valid rows;
    pad reads them and writes every padded row (zeros too); plus the i32 lengths / cu_seqlens."""
    b.family("pad", "memory")
    g = torch.Generator(device="cuda").manual_seed(9)
    for dt in PAD_DTYPES:
        for bsz, s, f in PAD_SHAPES:
            lengths = torch.randint(s // 2, s + 1, (bsz,), device="cuda", dtype=torch.int32, generator=g)
            cu = torch.zeros(bsz + 1, device="cuda", dtype=torch.int32)
            cu[1:] = torch.cumsum(lengths, 0)
            total = int(cu[-1].item())
            keep = torch.arange(s, device="cuda")[None, :] < lengths[:, None]
            idx = keep.flatten().nonzero().flatten()  # valid rows of the [B*S, F] view
            row = f * torch.empty((), dtype=dt).element_size()
            padded = torch.randn(bsz, s, f, device="cuda", dtype=dt)
            packed = torch.randn(total, f, device="cuda", dtype=dt)
            case = "unpad %s %s (%d of %d rows)" % (dname(dt), sname((bsz, s, f)), total, bsz * s)
            if b.wants(case):
                out = torch.empty(bsz * s, f, device="cuda", dtype=dt)
                cu_out = torch.empty_like(cu)
                fn = lambda: padded.view(bsz * s, f).index_select(0, idx)  # noqa: E731
                b.compare("pad", case, "unpad", dname(dt), (bsz, s, f), b.tops.unpad(padded, out, lengths, cu_out),
                          out[:total], fn, {"index_select": fn}, nbytes=2 * total * row + 4 * (2 * bsz + 1),
                          extra={"valid_rows": total})
            case = "pad %s %s (%d of %d rows)" % (dname(dt), sname((bsz, s, f)), total, bsz * s)
            if b.wants(case):
                y = torch.empty(bsz, s, f, device="cuda", dtype=dt)
                fn = lambda: torch.zeros(bsz * s, f, device="cuda", dtype=dt).index_copy_(0, idx, packed).view(  # noqa
                    bsz, s, f)
                b.compare("pad", case, "pad", dname(dt), (bsz, s, f), b.tops.pad(packed, y, cu), y, fn,
                          {"zeros+index_copy_": fn}, nbytes=(total + bsz * s) * row + 4 * (bsz + 1),
                          extra={"valid_rows": total})
            torch.cuda.empty_cache()


# family -> function(Bench); the order is the run order.
FAMILIES = {
    "softmax": softmax_family,
    "transpose": transpose_family,
    "norm": norm_family,
    "reduce": reduce_family,
    "eltwise": eltwise_family,
    "gemm": gemm_family,
    "attention": attention_family,
    "conv2d": conv2d_family,
    "pad": pad_family,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--lib", default=os.path.join(here, "..", "build", "libtops.so"))
    ap.add_argument("--only", help="comma-separated families (default: all): " + ",".join(FAMILIES))
    ap.add_argument("--filter", help="substring filter on case names")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1, help="alternating tops/baseline rounds (gemm: at least 3)")
    ap.add_argument("--json")
    ap.add_argument("--check", action="store_true", help="run the fp64 feature matrices instead of timing")
    ap.add_argument("--seed", type=int, default=1, help="--check: the seed of the inputs' generator")
    ap.add_argument("--flush", choices=("write", "read"), default="write",
                    help="how L2 is evicted before each timed call (Timer.flush)")
    ap.add_argument("--same-size-copy", action="store_true",
                    help="also time a copy of each memory-bound case's bytes and print tops' time against it")
    a = ap.parse_args()

    fams = a.only.split(",") if a.only else list(FAMILIES)
    unknown = [f for f in fams if f not in FAMILIES and f not in CHECKS]
    if unknown:
        ap.error("unknown family %s (known: %s)" % (",".join(unknown), ",".join(FAMILIES)))
    torch.manual_seed(0)
    tops = Tops(a.lib)
    if a.check:
        print("seed %d" % a.seed)
        return 1 if run_checks(tops, [f for f in fams if f in CHECKS], a.seed) else 0
    timer = Timer(a.reps, a.warmup, a.flush)
    dev = torch.cuda.get_device_properties(0)
    print("device: %s (%d SMs), torch %s, cuDNN %s" %
          (dev.name, dev.multi_processor_count, torch.__version__, torch.backends.cudnn.version()))
    b = Bench(tops, timer, a.rounds, a.filter, a.same_size_copy)
    for f in fams:
        FAMILIES[f](b)

    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"tool": "compare_torch", "device": dev.name, "sms": dev.multi_processor_count,
                       "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "copy_gbs": b.copy_gbs,
                       "command": " ".join(sys.argv),
                       "timing": "median of %d cold-L2 CUDA-event times after %d warm-up, %d+ alternating rounds"
                                 ", L2 flush by %s" % (a.reps, a.warmup, a.rounds, a.flush),
                       "results": b.results}, fh, indent=1)
    bad = [r["case"] for r in b.results if not r["rel_err"] < r["tol"]]
    if bad:
        print("MISMATCH vs torch:", ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
