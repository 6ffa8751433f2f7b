#!/usr/bin/env python3
"""Times tops' CUDA LayerNorm / RMSNorm, reduce and fused elementwise ops
against PyTorch on the same GPU (the shapes of shared/anchors/gpu-h100.md),
with the loader, timer and error measure of compare_torch.py.

Bytes: each input read once and each output written once (gamma, beta and
bias vectors included). For reduce, "%copy" compares the bytes *read* per
second with the copy ceiling's (read + write) bytes per second, as the
acceptance criterion counts it.

With --check it instead runs a feature matrix (dtypes, row lengths around
every kernel boundary, fused residual, stats, in place, strided and
misaligned tensors, every reduce op over many axis sets, every activation,
broadcast patterns) against an fp64 torch reference.

usage: compare_torch_norm.py [--lib build/libtops.so] [--reps 30] [--json out.json] [--check] [--only S]
"""
import argparse
import ctypes
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import Arg, Timer, Tops, TensorDesc, rel_err  # noqa: E402

ARG_X, ARG_Y, ARG_GAMMA, ARG_BETA, ARG_BIAS, ARG_RESIDUAL, ARG_PRENORM, ARG_MEAN, ARG_RSTD, ARG_SLOPE = \
    1, 2, 5, 6, 7, 8, 9, 10, 11, 12
ARG_INPUT0 = 16
NORM_LAYER, NORM_RMS = 0, 1
REDUCE_OPS = {"sum": 0, "mean": 1, "max": 2, "min": 3, "prod": 4, "sumsq": 5, "norm2": 6}
ACTS = {"none": 0, "relu": 1, "gelu_erf": 2, "gelu_tanh": 3, "silu": 4}


class NormDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("kind", ctypes.c_int), ("x", TensorDesc), ("y", TensorDesc),
                ("normalized_rank", ctypes.c_int32), ("eps", ctypes.c_float), ("gamma", TensorDesc),
                ("beta", TensorDesc), ("bias", TensorDesc), ("residual", TensorDesc), ("prenorm", TensorDesc),
                ("mean", TensorDesc), ("rstd", TensorDesc)]


class ReduceDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("op", ctypes.c_int), ("x", TensorDesc), ("y", TensorDesc),
                ("axes", ctypes.c_uint32), ("keepdims", ctypes.c_int32)]


class BiasActDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("x", TensorDesc), ("bias", TensorDesc), ("y", TensorDesc),
                ("act", ctypes.c_int)]


class PreluDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("x", TensorDesc), ("slope", TensorDesc), ("y", TensorDesc)]


class WeightedSumDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("num_inputs", ctypes.c_int32), ("inputs", TensorDesc * 8),
                ("coefs", ctypes.c_float * 8), ("y", TensorDesc)]


class TopsOps:
    """Norm, reduce and elementwise calls on top of compare_torch.Tops (its context and stream)."""

    def __init__(self, tops):
        self.t = tops
        L = tops.lib
        L.tops_norm_desc_default.restype = NormDesc
        L.tops_reduce_desc_default.restype = ReduceDesc
        L.tops_bias_act_desc_default.restype = BiasActDesc
        L.tops_prelu_desc_default.restype = PreluDesc
        L.tops_weighted_sum_desc_default.restype = WeightedSumDesc
        L.tops_op_workspace_size.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]

    def _make(self, create, d, args):
        L = self.t.lib
        op = ctypes.c_void_p()
        self.t.check(create(self.t.ctx, ctypes.byref(d), ctypes.byref(op)))
        ws = ctypes.c_size_t()
        self.t.check(L.tops_op_workspace_size(op, ctypes.byref(ws)))
        wbuf = torch.empty(max(1, ws.value), dtype=torch.uint8, device="cuda")
        arr = (Arg * len(args))(*args)
        name = L.tops_op_kernel_name(op).decode()

        def run():
            self.t.check(L.tops_op_execute(self.t.ctx, op, arr, len(args), ctypes.c_void_p(wbuf.data_ptr()),
                                           ws.value))
        run.kernel = name
        run.keep = (wbuf, op)
        return run

    def norm(self, x, y, rms=False, k=1, eps=1e-5, gamma=None, beta=None, bias=None, residual=None,
             prenorm=None, mean=None, rstd=None):
        d = self.t.lib.tops_norm_desc_default()
        d.kind = NORM_RMS if rms else NORM_LAYER
        d.x, d.y, d.normalized_rank, d.eps = self.t.desc(x), self.t.desc(y), k, eps
        args = [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr())]
        for name, tag, t in (("gamma", ARG_GAMMA, gamma), ("beta", ARG_BETA, beta), ("bias", ARG_BIAS, bias),
                             ("residual", ARG_RESIDUAL, residual), ("prenorm", ARG_PRENORM, prenorm),
                             ("mean", ARG_MEAN, mean), ("rstd", ARG_RSTD, rstd)):
            if t is not None:
                setattr(d, name, self.t.desc(t))
                args.append(Arg(tag, t.data_ptr()))
        return self._make(self.t.lib.tops_norm_create, d, args)

    def reduce(self, x, y, op, axes, keepdims):
        d = self.t.lib.tops_reduce_desc_default()
        d.op, d.x, d.y, d.keepdims = REDUCE_OPS[op], self.t.desc(x), self.t.desc(y), int(keepdims)
        d.axes = sum(1 << a for a in axes)
        return self._make(self.t.lib.tops_reduce_create, d,
                          [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr())])

    def bias_act(self, x, y, act, bias=None):
        d = self.t.lib.tops_bias_act_desc_default()
        d.x, d.y, d.act = self.t.desc(x), self.t.desc(y), ACTS[act]
        args = [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr())]
        if bias is not None:
            d.bias = self.t.desc(bias)
            args.append(Arg(ARG_BIAS, bias.data_ptr()))
        return self._make(self.t.lib.tops_bias_act_create, d, args)

    def prelu(self, x, slope, y):
        d = self.t.lib.tops_prelu_desc_default()
        d.x, d.slope, d.y = self.t.desc(x), self.t.desc(slope), self.t.desc(y)
        return self._make(self.t.lib.tops_prelu_create, d, [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr()),
                                                            Arg(ARG_SLOPE, slope.data_ptr())])

    def weighted_sum(self, inputs, coefs, y):
        d = self.t.lib.tops_weighted_sum_desc_default()
        d.num_inputs, d.y = len(inputs), self.t.desc(y)
        args = [Arg(ARG_Y, y.data_ptr())]
        for i, (t, c) in enumerate(zip(inputs, coefs)):
            d.inputs[i] = self.t.desc(t)
            d.coefs[i] = c
            args.append(Arg(ARG_INPUT0 + i, t.data_ptr()))
        return self._make(self.t.lib.tops_weighted_sum_create, d, args)


# ------------------------------------------------------------------ references (fp64)
def norm_ref(x, rms, k, eps, gamma=None, beta=None, bias=None, residual=None):
    s = x.double()
    if bias is not None:
        s = s + bias.double()
    if residual is not None:
        s = s + residual.double()
    dims = tuple(range(x.dim() - k, x.dim()))
    if rms:
        mean = torch.zeros_like(s.mean(dims, keepdim=True))
        var = (s * s).mean(dims, keepdim=True)
    else:
        mean = s.mean(dims, keepdim=True)
        var = ((s - mean) ** 2).mean(dims, keepdim=True)
    rstd = 1.0 / torch.sqrt(var + eps)
    y = (s - mean) * rstd
    if gamma is not None:
        y = y * gamma.double()
    if beta is not None:
        y = y + beta.double()
    return y, s, mean.flatten(), rstd.flatten()


def reduce_ref(x, op, axes, keepdims):
    v = x.double()
    axes = tuple(axes)
    if axes and any(x.shape[a] == 0 for a in axes):  # empty reduction: the op's identity
        shape = [1 if i in axes else s for i, s in enumerate(x.shape)]
        fill = {"max": float("-inf"), "min": float("inf"), "prod": 1.0, "mean": float("nan")}.get(op, 0.0)
        r = torch.full(shape, fill, dtype=torch.float64, device=x.device)
    elif not axes:  # every element is its own (one-element) reduction
        r = v * v if op in ("sumsq", "norm2") else v.clone()
        if op == "norm2":
            r = r.sqrt()
    elif op == "sum":
        r = v.sum(axes, keepdim=True)
    elif op == "mean":
        r = v.mean(axes, keepdim=True)
    elif op == "max":
        r = v.amax(axes, keepdim=True)
    elif op == "min":
        r = v.amin(axes, keepdim=True)
    elif op == "prod":
        r = v
        for a in axes:
            r = r.prod(a, keepdim=True)
    elif op == "sumsq":
        r = (v * v).sum(axes, keepdim=True)
    else:
        r = (v * v).sum(axes, keepdim=True).sqrt()
    if not keepdims:
        for a in sorted(axes, reverse=True):
            r = r.squeeze(a)
    return r


def act_ref(v, act):
    if act == "relu":
        return torch.relu(v)
    if act == "gelu_erf":
        return F.gelu(v)
    if act == "gelu_tanh":
        return F.gelu(v, approximate="tanh")
    if act == "silu":
        return F.silu(v)
    return v


# ------------------------------------------------------------------ feature matrix
def check_features(ops):
    g = torch.Generator(device="cuda").manual_seed(7)
    tol = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 1e-2}
    state = {"count": 0, "fails": 0}

    def report(name, err, limit):
        state["count"] += 1
        if not err <= limit:
            state["fails"] += 1
            print("FAIL %-80s rel.err %.3e (limit %.0e)" % (name, err, limit))

    def rnd(shape, dt, scale=1.0, shift=0.0):
        return (torch.randn(shape, device="cuda", generator=g) * scale + shift).to(dt)

    def done(run):
        run()
        torch.cuda.synchronize()

    # Norms: lengths around every strategy boundary, both vector widths.
    cols_list = [1, 3, 4, 8, 31, 32, 33, 127, 128, 129, 255, 256, 257, 768, 769, 1024, 1025, 2048, 2049, 4096,
                 4097, 8192, 16384, 16392, 32768, 32776, 65536]
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        for cols in cols_list:
            rows = max(1, min(97, (1 << 20) // cols))
            for variant in ("ln", "rms", "fused", "fused_rms_f32params", "inplace", "offset", "strided"):
                rms = "rms" in variant
                pdt = torch.float32 if "f32params" in variant else dt
                x = rnd((rows, cols), dt, 2.0, 0.5)
                gamma = rnd((cols,), pdt, 0.5, 1.0)
                beta = None if rms else rnd((cols,), pdt, 0.5)
                bias = residual = prenorm = mean = rstd = None
                if variant.startswith("fused"):
                    bias = rnd((cols,), pdt)
                    residual = rnd((rows, cols), dt)
                    prenorm = torch.full_like(x, float("nan"))
                    rstd = torch.full((rows,), float("nan"), device="cuda")
                    if not rms:
                        mean = torch.full((rows,), float("nan"), device="cuda")
                if variant == "offset":
                    big = rnd((rows * cols + 1,), dt, 2.0, 0.5)
                    x = big[1:].view(rows, cols)
                if variant == "strided":
                    big = rnd((rows, cols + 5), dt, 2.0, 0.5)
                    x = big[:, 3:3 + cols]
                ry, rs, rmean, rrstd = norm_ref(x, rms, 1, 1e-5, gamma, beta, bias, residual)
                y = x if variant == "inplace" else torch.full_like(x, float("nan"))
                run = ops.norm(x, y, rms=rms, gamma=gamma, beta=beta, bias=bias, residual=residual,
                               prenorm=prenorm, mean=mean, rstd=rstd)
                done(run)
                name = "norm %s %dx%d %s [%s]" % (dt, rows, cols, variant, run.kernel)
                report(name, rel_err(y, ry), tol[dt])
                if prenorm is not None:
                    report(name + " prenorm", rel_err(prenorm, rs), tol[dt])
                    report(name + " rstd", rel_err(rstd, rrstd), 1e-5)
                if mean is not None:
                    report(name + " mean", rel_err(mean, rmean), 1e-5)
    # Fused residual in place: prenorm written over the residual, y over x.
    for dt in (torch.float16, torch.float32):
        x = rnd((64, 768), dt)
        res = rnd((64, 768), dt)
        ry, rs, _, _ = norm_ref(x, False, 1, 1e-5, None, None, None, res)
        done(ops.norm(x, x, residual=res, prenorm=res))
        report("norm %s fused in place (y=x, prenorm=residual)" % dt, rel_err(x, ry), tol[dt])
        report("norm %s fused in place prenorm" % dt, rel_err(res, rs), tol[dt])
    # Several normalized dims.
    x = rnd((6, 5, 7, 9), torch.float32)
    y = torch.full_like(x, float("nan"))
    done(ops.norm(x, y, k=2))
    report("norm f32 normalized_rank 2", rel_err(y, norm_ref(x, False, 2, 1e-5)[0]), 1e-5)

    # Reduce: every op over many axis sets and layouts.
    rcases = [((8192, 8192), (1,)), ((8192, 8192), (0,)), ((4096, 4096), (0, 1)), ((64, 256, 56, 56), (2, 3)),
              ((7, 5, 3), (1,)), ((7, 5, 3), (0, 2)), ((7, 5, 3), ()), ((7, 5, 3), (0, 1, 2)),
              ((2, 3, 4, 5, 6), (1, 3)), ((2, 3, 4, 5, 6), (0, 4)), ((33, 1000), (0,)), ((1000, 33), (0,)),
              ((3, 100000), (1,)), ((100000, 3), (0,)), ((1, 1), (0, 1)), ((16, 8, 7, 7), (2, 3)),
              ((16, 8, 7, 7), (0, 2, 3)), ((5, 0, 3), (1,)), ((5, 0, 3), (0,))]
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        for shape, axes in rcases:
            big = 1 << 22
            if torch.Size(shape).numel() > big and dt != torch.float32:
                continue
            for op in REDUCE_OPS:
                if torch.Size(shape).numel() > big and op not in ("sum", "max"):
                    continue
                if op == "prod" and max(shape) > 10000:  # f32 products of 1e5 factors drift past 1e-5
                    continue
                x = rnd(shape, dt, 1.0, 0.0) if op != "prod" else (1.0 + 0.01 * rnd(shape, torch.float32)).to(dt)
                if x.numel() == 0:  # an empty torch tensor has a NULL data pointer; give it storage
                    x = torch.zeros(4, device="cuda", dtype=dt).as_strided(shape, x.stride())
                for keep in (False, True):
                    if keep and torch.Size(shape).numel() > big:
                        continue
                    ref = reduce_ref(x, op, axes, keep)
                    y = torch.full(ref.shape, float("nan"), device="cuda", dtype=torch.float32)
                    if y.numel() == 0:
                        y = torch.zeros(4, device="cuda").as_strided(ref.shape, y.stride())
                    run = ops.reduce(x, y, op, axes, keep)
                    done(run)
                    limit = tol[dt] if dt != torch.float32 else 1e-5
                    report("reduce %s %s %s axes=%s keep=%d [%s]" % (op, dt, shape, axes, keep, run.kernel),
                           rel_err(y, ref), limit)
        # Transposed and sliced inputs, f16/bf16 outputs.
        base = rnd((300, 517), dt)
        for view, axes in ((base.t(), (1,)), (base.t(), (0,)), (base[::3, 10:400], (1,)), (base[::3, 10:400], (0,))):
            for ydt in (torch.float32, torch.float16, torch.bfloat16):
                ref = reduce_ref(view, "sum", axes, False)
                y = torch.full(ref.shape, float("nan"), device="cuda", dtype=ydt)
                run = ops.reduce(view, y, "sum", axes, False)
                done(run)
                report("reduce sum %s view %s %s axes=%s -> %s [%s]" % (dt, tuple(view.shape), view.stride(), axes,
                                                                        ydt, run.kernel),
                       rel_err(y, ref), tol[dt] if ydt == torch.float32 else 1e-2)
    # Determinism: the same input, bitwise the same output.
    x = rnd((1 << 24,), torch.float32)
    outs = []
    for _ in range(3):
        y = torch.empty((), device="cuda")
        done(ops.reduce(x, y, "sum", (0,), False))
        outs.append(y.clone())
    state["count"] += 1
    if not all(torch.equal(o, outs[0]) for o in outs):
        state["fails"] += 1
        print("FAIL reduce sum 2^24: results differ between runs")

    # Elementwise.
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        for shape in ((4096, 3072), (7, 13), (3, 5, 8), (1,), (2, 1000003 // 2 + 1)):
            for act in ACTS:
                for bias_kind in ("row", "none", "col", "full"):
                    x = rnd(shape, dt, 2.0)
                    bias = None
                    if bias_kind == "row":
                        bias = rnd((1,) * (len(shape) - 1) + (shape[-1],), dt)
                    elif bias_kind == "col":
                        bias = rnd(shape[:1] + (1,) * (len(shape) - 1), dt)
                    elif bias_kind == "full":
                        bias = rnd(shape, dt)
                    v = x.double() + (bias.double() if bias is not None else 0.0)
                    ref = act_ref(v, act)
                    y = torch.full_like(x, float("nan"))
                    run = ops.bias_act(x, y, act, bias)
                    done(run)
                    report("bias_act %s %s %s bias=%s [%s]" % (act, dt, shape, bias_kind, run.kernel),
                           rel_err(y, ref), tol[dt])
        # In place, strided output, misaligned input.
        x = rnd((300, 770), dt)
        b = rnd((770,), dt)
        ref = act_ref(x.double() + b.double(), "gelu_tanh")
        done(ops.bias_act(x, x, "gelu_tanh", b.view(1, 770)))
        report("bias_act gelu_tanh %s in place" % dt, rel_err(x, ref), tol[dt])
        xb = rnd((300 * 770 + 1,), dt)
        x = xb[1:].view(300, 770)
        ybig = torch.full((300, 800), float("nan"), device="cuda", dtype=dt)
        y = ybig[:, :770]
        done(ops.bias_act(x, y, "silu", b.view(1, 770)))
        report("bias_act silu %s misaligned x, strided y" % dt,
               rel_err(y, act_ref(x.double() + b.double(), "silu")), tol[dt])
        # PReLU per channel (NCHW) and per last dim.
        for shape, sshape in (((32, 64, 56, 56), (1, 64, 1, 1)), ((8, 3, 7, 7), (1, 3, 1, 1)),
                              ((100, 24), (1, 24)), ((5, 6, 7), (1, 1, 1))):
            x = rnd(shape, dt)
            s = rnd(sshape, dt, 0.2)
            ref = torch.where(x.double() > 0, x.double(), s.double() * x.double())
            y = torch.full_like(x, float("nan"))
            run = ops.prelu(x, s, y)
            done(run)
            report("prelu %s %s slope %s [%s]" % (dt, shape, sshape, run.kernel), rel_err(y, ref), tol[dt])
        # Weighted sums, 1..8 inputs, one broadcast.
        for n in (1, 2, 3, 8):
            shape = (257, 1031)
            ins = [rnd(shape, dt) for _ in range(n)]
            if n > 1:
                ins[-1] = rnd((1, 1031), dt)
            coefs = [0.5 + i for i in range(n)]
            ref = sum(c * t.double() for c, t in zip(coefs, ins))
            y = torch.full(shape, float("nan"), device="cuda", dtype=dt)
            run = ops.weighted_sum(ins, coefs, y)
            done(run)
            report("weighted_sum %s n=%d [%s]" % (dt, n, run.kernel), rel_err(y, ref), tol[dt])
    print("check: %d cases, %d failures" % (state["count"], state["fails"]))
    return state["fails"]


# ------------------------------------------------------------------ timing
def timing_cases():
    cases = []
    for dt in (torch.float16, torch.float32):
        for rows, cols in ((16384, 768), (16384, 1024), (8192, 4096), (2048, 16384), (256, 65536)):
            cases.append(("layernorm", dt, (rows, cols)))
    for dt in (torch.float16, torch.float32):
        for rows, cols in ((16384, 768), (8192, 4096), (256, 65536)):
            cases.append(("rmsnorm", dt, (rows, cols)))
    cases.append(("fused_ln", torch.float16, (16384, 768)))
    cases.append(("reduce_sum_last", torch.float32, (8192, 8192)))
    cases.append(("reduce_sum_first", torch.float32, (8192, 8192)))
    cases.append(("reduce_sum_all", torch.float32, (8192, 8192)))
    cases.append(("reduce_max_last", torch.float32, (8192, 8192)))
    cases.append(("reduce_max_first", torch.float32, (8192, 8192)))
    cases.append(("global_pool", torch.float32, (64, 256, 56, 56)))
    cases.append(("global_pool", torch.float16, (64, 256, 56, 56)))
    cases.append(("bias_gelu", torch.float16, (4096, 3072)))
    cases.append(("bias_gelu", torch.float32, (4096, 3072)))
    cases.append(("bias_gelu", torch.float16, (16384, 4096)))
    cases.append(("prelu", torch.float32, (32, 64, 56, 56)))
    cases.append(("weighted_sum3", torch.float16, (16384, 4096)))
    return cases


def build_case(ops, op, dt, shape):
    """Returns (name, tops run, torch fn, output, reference fn, bytes, bytes_read)."""
    dname = str(dt).replace("torch.", "")
    sname = "x".join(map(str, shape))
    x = torch.randn(shape, device="cuda", dtype=dt)
    es = x.element_size()
    if op in ("layernorm", "rmsnorm"):
        rms = op == "rmsnorm"
        cols = shape[-1]
        gamma = torch.randn(cols, device="cuda", dtype=dt) * 0.1 + 1
        beta = None if rms else torch.randn(cols, device="cuda", dtype=dt) * 0.1
        y = torch.empty_like(x)
        run = ops.norm(x, y, rms=rms, gamma=gamma, beta=beta)
        if rms:
            ref = lambda: F.rms_norm(x, (cols,), gamma, 1e-5)
        else:
            ref = lambda: F.layer_norm(x, (cols,), gamma, beta, 1e-5)
        nbytes = 2 * x.numel() * es + (1 if rms else 2) * cols * es
        return "%s %s %s" % (op, dname, sname), run, ref, y, ref, nbytes, nbytes
    if op == "fused_ln":
        cols = shape[-1]
        gamma = torch.randn(cols, device="cuda", dtype=dt) * 0.1 + 1
        beta = torch.randn(cols, device="cuda", dtype=dt) * 0.1
        bias = torch.randn(cols, device="cuda", dtype=dt)
        res = torch.randn(shape, device="cuda", dtype=dt)
        y = torch.empty_like(x)
        pre = torch.empty_like(x)
        run = ops.norm(x, y, gamma=gamma, beta=beta, bias=bias, residual=res, prenorm=pre)

        def composed():
            s = x + bias + res
            return F.layer_norm(s, (cols,), gamma, beta, 1e-5), s
        nbytes = 4 * x.numel() * es + 3 * cols * es
        return ("add_bias_residual+layernorm %s %s (y and prenorm)" % (dname, sname), run, composed, y,
                lambda: composed()[0], nbytes, nbytes)
    if op.startswith("reduce_") or op == "global_pool":
        if op == "global_pool":
            red, axes, ropname = "mean", (2, 3), "mean"
            name = "reduce mean %s %s over (2,3) (global pool)" % (dname, sname)
        else:
            _, ropname, where = op.split("_")
            axes = {"last": (1,), "first": (0,), "all": (0, 1)}[where]
            red = ropname
            name = "reduce %s %s %s %s-dim" % (ropname, dname, sname, where)
        out_shape = [s for i, s in enumerate(shape) if i not in axes]
        y = torch.empty(out_shape, device="cuda", dtype=dt)
        run = ops.reduce(x, y, red, axes, False)
        tfn = {"sum": lambda: x.sum(axes), "max": lambda: x.amax(axes), "mean": lambda: x.mean(axes)}[red]
        nread = x.numel() * es
        return name, run, tfn, y, tfn, nread + y.numel() * es, nread
    if op == "bias_gelu":
        bias = torch.randn(shape[-1], device="cuda", dtype=dt)
        y = torch.empty_like(x)
        run = ops.bias_act(x, y, "gelu_erf", bias.view(1, -1))
        fn = lambda: F.gelu(x + bias)
        nbytes = 2 * x.numel() * es + bias.numel() * es
        return "bias+gelu(erf) %s %s" % (dname, sname), run, fn, y, fn, nbytes, nbytes
    if op == "prelu":
        slope = torch.rand(shape[1], device="cuda", dtype=dt) * 0.2
        y = torch.empty_like(x)
        run = ops.prelu(x, slope.view(1, -1, 1, 1), y)
        fn = lambda: F.prelu(x, slope)
        nbytes = 2 * x.numel() * es
        return "prelu per-channel %s %s" % (dname, sname), run, fn, y, fn, nbytes, nbytes
    if op == "weighted_sum3":
        a, b = torch.randn_like(x), torch.randn_like(x)
        y = torch.empty_like(x)
        run = ops.weighted_sum([x, a, b], [0.5, -1.25, 2.0], y)
        fn = lambda: 0.5 * x - 1.25 * a + 2.0 * b
        nbytes = 4 * x.numel() * es
        return "weighted sum of 3 %s %s" % (dname, sname), run, fn, y, fn, nbytes, nbytes
    raise ValueError(op)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--lib", default=os.path.join(here, "..", "build", "libtops.so"))
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--only", help="substring filter on case names")
    ap.add_argument("--check", action="store_true", help="run the feature matrix instead of timing")
    a = ap.parse_args()

    torch.manual_seed(0)
    ops = TopsOps(Tops(a.lib))
    if a.check:
        return 1 if check_features(ops) else 0
    timer = Timer(a.reps, a.warmup)
    dev = torch.cuda.get_device_properties(0)
    n = 512 << 18
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = timer(lambda: dst.copy_(src))
    copy_gbs = 2 * src.numel() * 4 / copy_ms / 1e6
    del src, dst
    print("device: %s (%d SMs), torch %s; copy ceiling %.1f GB/s (512 MiB f32 d2d)" %
          (dev.name, dev.multi_processor_count, torch.__version__, copy_gbs))
    print("%-52s %-32s %8s %8s %7s %8s %7s %7s %9s" % ("case", "tops kernel", "floor ms", "tops ms", "torch ms",
                                                       "speedup", "tops%cp", "torch%", "rel.err"))
    results = []
    for op, dt, shape in timing_cases():
        name, run, torch_fn, y, ref_fn, nbytes, nread = build_case(ops, op, dt, shape)
        if a.only and a.only not in name:
            continue
        run()
        ref = ref_fn()
        torch.cuda.synchronize()
        err = rel_err(y, ref)
        tops_ms = timer(run)
        torch_ms = timer(torch_fn)
        is_reduce = name.startswith("reduce")
        counted = nread if is_reduce else nbytes
        floor_ms = counted / (copy_gbs * 1e6)
        r = {"case": name, "dtype": str(dt).replace("torch.", ""), "shape": list(shape), "kernel": run.kernel,
             "tops_ms": tops_ms, "torch_ms": torch_ms, "speedup": torch_ms / tops_ms, "bytes": counted,
             "bytes_note": "bytes read" if is_reduce else "bytes read + written", "floor_ms": floor_ms,
             "tops_gbs": counted / tops_ms / 1e6, "torch_gbs": counted / torch_ms / 1e6, "rel_err": err}
        r["tops_pct_copy"] = 100 * r["tops_gbs"] / copy_gbs
        r["torch_pct_copy"] = 100 * r["torch_gbs"] / copy_gbs
        results.append(r)
        print("%-52s %-32s %8.4f %8.4f %8.4f %6.2fx %6.1f%% %6.1f%% %9.2e" %
              (name[:52], run.kernel[:32], floor_ms, tops_ms, torch_ms, r["speedup"], r["tops_pct_copy"],
               r["torch_pct_copy"], err))
        sys.stdout.flush()
        del run, y, ref
        torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": dev.name, "sms": dev.multi_processor_count, "torch": torch.__version__,
                       "copy_gbs": copy_gbs, "timing": "median of %d cold-L2 CUDA-event times, %d warm-up" %
                       (a.reps, a.warmup), "results": results}, f, indent=1)
    bad = [r["case"] for r in results if not r["rel_err"] < (1e-5 if r["dtype"] == "float32" else 1e-2)]
    if bad:
        print("MISMATCH vs torch:", ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
