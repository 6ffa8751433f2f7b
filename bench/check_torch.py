"""Feature matrices of `compare_torch.py --check`: tops' CUDA ops against an
fp64 PyTorch reference over dtypes, sizes around every kernel boundary,
strides, offsets, masks, in-place and fused forms. One function per op family
(registered in CHECKS); each reports every mismatch through the Checker.
"""
import random

import torch
import torch.nn.functional as F

from tops_ctypes import REDUCE_OPS, ACTS, rel_err


class Checker:
    """Counts cases and failures; one generator and one tolerance table for every family."""

    TOL = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 1e-2}

    def __init__(self, seed):
        self.g = torch.Generator(device="cuda").manual_seed(seed)
        self.count = 0
        self.fails = 0

    def report(self, name, err, limit):
        self.count += 1
        if not err <= limit:
            self.fails += 1
            print("FAIL %-80s rel.err %.3e (limit %.0e)" % (name, err, limit))

    def exact(self, name, ok):
        self.count += 1
        if not ok:
            self.fails += 1
            print("FAIL " + name)

    def rnd(self, shape, dt, scale=1.0, shift=0.0):
        return (torch.randn(shape, device="cuda", generator=self.g) * scale + shift).to(dt)

    @staticmethod
    def done(run):
        run()
        torch.cuda.synchronize()


# ------------------------------------------------------------------ references (fp64)
def softmax_ref(x, scale, axis, log, mask=None, lengths=None):
    """fp64 reference with tops' rules: masked -> 0 (-inf for log), empty rows -> all 0 (-inf)."""
    v = x.double() * scale
    keep = torch.ones_like(v, dtype=torch.bool)
    if mask is not None:
        keep &= mask.bool().expand_as(v)
    if lengths is not None:
        n = v.shape[axis]
        shape = [1] * v.dim()
        shape[axis] = n
        pos = torch.arange(n, device=v.device).view(shape)
        keep &= pos < lengths.long().clamp(0, n).expand_as(v)
    v = v.masked_fill(~keep, float("-inf"))
    out = torch.log_softmax(v, axis) if log else torch.softmax(v, axis)
    any_kept = keep.any(axis, keepdim=True).expand_as(v)
    out = torch.where(any_kept, out, torch.full_like(out, float("-inf") if log else 0.0))
    return torch.where(keep, out, torch.full_like(out, float("-inf") if log else 0.0))


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


# ------------------------------------------------------------------ softmax
def check_softmax(tops, ck):
    lens = [1, 2, 7, 31, 32, 33, 100, 127, 128, 129, 255, 256, 257, 1000, 1023, 1024, 1025, 2047, 2048, 2049,
            4095, 4096, 5000, 8191, 16385, 32768, 40000, 65536 + 8, 131072]
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        for n in lens:
            rows = max(1, min(64, (1 << 21) // n))
            for variant in ("plain", "scale+log", "mask+lengths", "inplace", "mask_rowwise", "offset"):
                x = torch.randn(rows, n, device="cuda", dtype=dt, generator=ck.g) * 3
                mask = lengths = None
                scale, log = 1.0, False
                if variant == "scale+log":
                    scale, log = 0.3, True
                if variant == "mask+lengths":
                    mask = (torch.rand(rows, n, device="cuda", generator=ck.g) > 0.3).to(torch.uint8)
                    lengths = torch.randint(-2, n + 3, (rows, 1), device="cuda", dtype=torch.int32, generator=ck.g)
                    lengths[0] = 0
                if variant == "mask_rowwise":  # mask broadcast along the axis (stride 0 there)
                    mask = (torch.rand(rows, 1, device="cuda", generator=ck.g) > 0.5).to(torch.uint8)
                    log = True
                if variant == "offset":  # misaligned start: no 16-byte vectors
                    big = torch.randn(rows * n + 1, device="cuda", dtype=dt, generator=ck.g)
                    x = big[1:].view(rows, n)
                ref = softmax_ref(x, scale, -1, log, mask, lengths)
                y = x if variant == "inplace" else torch.full_like(x, float("nan"))
                run = tops.softmax(x, y, scale=scale, mask=mask, log=log, lengths=lengths)
                run()
                torch.cuda.synchronize()
                ck.report("softmax %s n=%d rows=%d %s [%s]" % (dt, n, rows, variant, run.kernel), rel_err(y, ref),
                          ck.TOL[dt])
    # Other axes and strided views.
    for dt in (torch.float32, torch.float16):
        for shape, axis in (((8, 300, 5), 1), ((64, 33), 0), ((4, 6, 7, 129), 2), ((3, 1000, 2), 1),
                            ((2, 3, 4, 5, 6, 7, 8, 9), 3)):
            x = torch.randn(shape, device="cuda", dtype=dt, generator=ck.g)
            mshape = [1] * len(shape)
            mshape[axis] = shape[axis]
            mshape[0] = shape[0]
            mask = (torch.rand(mshape, device="cuda", generator=ck.g) > 0.2).to(torch.uint8)
            for log in (False, True):
                y = torch.full_like(x, float("nan"))
                run = tops.softmax(x, y, scale=1.7, mask=mask, log=log, axis=axis)
                run()
                torch.cuda.synchronize()
                ck.report("softmax %s %s axis=%d log=%d [%s]" % (dt, shape, axis, log, run.kernel),
                          rel_err(y, softmax_ref(x, 1.7, axis, log, mask)), ck.TOL[dt])
        base = torch.randn(40, 2100, device="cuda", dtype=dt, generator=ck.g)
        for view in (base[:, :2048], base[::2, 5:1005], base.t()[:700]):
            y = torch.full_like(view, float("nan"))
            run = tops.softmax(view, y)
            run()
            torch.cuda.synchronize()
            ck.report("softmax %s strided view %s %s [%s]" % (dt, tuple(view.shape), view.stride(), run.kernel),
                      rel_err(y, softmax_ref(view, 1.0, -1, False)), ck.TOL[dt])


# ------------------------------------------------------------------ transpose
def check_transpose(tops, ck):
    # Transposes: exact.
    prng = random.Random(3)
    tcases = [((8192, 8192), (1, 0)), ((32, 512, 12, 64), (0, 2, 1, 3)), ((16, 32, 64, 64, 8), (0, 4, 2, 3, 1)),
              ((1, 1), (1, 0)), ((7, 13), (1, 0)), ((65, 33, 3), (2, 0, 1)), ((3, 5, 7, 11), (3, 2, 1, 0)),
              ((2, 3, 2, 3, 2, 3, 2, 3), (7, 6, 5, 4, 3, 2, 1, 0)), ((100, 3), (1, 0)), ((5, 2049), (1, 0)),
              ((4, 64, 64), (0, 2, 1)), ((6, 5, 4), (0, 1, 2))]
    for _ in range(25):
        r = prng.randint(1, 6)
        shape = tuple(prng.choice([1, 2, 3, 5, 8, 17, 32, 33, 64]) for _ in range(r))
        perm = list(range(r))
        prng.shuffle(perm)
        tcases.append((shape, tuple(perm)))
    for dt in (torch.float32, torch.float16, torch.uint8):
        for shape, perm in tcases:
            if dt != torch.float32 and shape == (8192, 8192):
                continue
            x = (torch.randn(shape, device="cuda", generator=ck.g) * 50).to(dt)
            y = torch.empty([shape[p] for p in perm], device="cuda", dtype=dt)
            y.view(torch.uint8).fill_(0xAB)
            run = tops.transpose(x, y, perm)
            run()
            torch.cuda.synchronize()
            ck.count += 1
            if not torch.equal(y, x.permute(perm)):
                ck.fails += 1
                print("FAIL transpose %s %s perm %s [%s]" % (dt, shape, perm, run.kernel))
    # Strided transpose inputs and outputs.
    for dt in (torch.float32, torch.float16):
        base = torch.randn(70, 90, device="cuda", generator=ck.g).to(dt)
        x = base[::2, 3:83]
        ybig = torch.zeros(160, 100, device="cuda", dtype=dt)
        y = ybig[::2, :35]
        run = tops.transpose(x, y, (1, 0))
        run()
        torch.cuda.synchronize()
        ck.count += 1
        if not torch.equal(y, x.t()) or ybig[1::2].abs().sum().item() != 0:
            ck.fails += 1
            print("FAIL transpose strided %s [%s]" % (dt, run.kernel))


# ------------------------------------------------------------------ norm
def check_norm(tops, ck):
    # Norms: lengths around every strategy boundary, both vector widths.
    cols_list = [1, 3, 4, 8, 31, 32, 33, 127, 128, 129, 255, 256, 257, 768, 769, 1024, 1025, 2048, 2049, 4096,
                 4097, 8192, 16384, 16392, 32768, 32776, 65536]
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        for cols in cols_list:
            rows = max(1, min(97, (1 << 20) // cols))
            for variant in ("ln", "rms", "fused", "fused_rms_f32params", "inplace", "offset", "strided"):
                rms = "rms" in variant
                pdt = torch.float32 if "f32params" in variant else dt
                x = ck.rnd((rows, cols), dt, 2.0, 0.5)
                gamma = ck.rnd((cols,), pdt, 0.5, 1.0)
                beta = None if rms else ck.rnd((cols,), pdt, 0.5)
                bias = residual = prenorm = mean = rstd = None
                if variant.startswith("fused"):
                    bias = ck.rnd((cols,), pdt)
                    residual = ck.rnd((rows, cols), dt)
                    prenorm = torch.full_like(x, float("nan"))
                    rstd = torch.full((rows,), float("nan"), device="cuda")
                    if not rms:
                        mean = torch.full((rows,), float("nan"), device="cuda")
                if variant == "offset":
                    big = ck.rnd((rows * cols + 1,), dt, 2.0, 0.5)
                    x = big[1:].view(rows, cols)
                if variant == "strided":
                    big = ck.rnd((rows, cols + 5), dt, 2.0, 0.5)
                    x = big[:, 3:3 + cols]
                ry, rs, rmean, rrstd = norm_ref(x, rms, 1, 1e-5, gamma, beta, bias, residual)
                y = x if variant == "inplace" else torch.full_like(x, float("nan"))
                run = tops.norm(x, y, rms=rms, gamma=gamma, beta=beta, bias=bias, residual=residual,
                                prenorm=prenorm, mean=mean, rstd=rstd)
                ck.done(run)
                name = "norm %s %dx%d %s [%s]" % (dt, rows, cols, variant, run.kernel)
                ck.report(name, rel_err(y, ry), ck.TOL[dt])
                if prenorm is not None:
                    ck.report(name + " prenorm", rel_err(prenorm, rs), ck.TOL[dt])
                    ck.report(name + " rstd", rel_err(rstd, rrstd), 1e-5)
                if mean is not None:
                    ck.report(name + " mean", rel_err(mean, rmean), 1e-5)
    # Fused residual in place: prenorm written over the residual, y over x.
    for dt in (torch.float16, torch.float32):
        x = ck.rnd((64, 768), dt)
        res = ck.rnd((64, 768), dt)
        ry, rs, _, _ = norm_ref(x, False, 1, 1e-5, None, None, None, res)
        ck.done(tops.norm(x, x, residual=res, prenorm=res))
        ck.report("norm %s fused in place (y=x, prenorm=residual)" % dt, rel_err(x, ry), ck.TOL[dt])
        ck.report("norm %s fused in place prenorm" % dt, rel_err(res, rs), ck.TOL[dt])
    # Several normalized dims.
    x = ck.rnd((6, 5, 7, 9), torch.float32)
    y = torch.full_like(x, float("nan"))
    ck.done(tops.norm(x, y, k=2))
    ck.report("norm f32 normalized_rank 2", rel_err(y, norm_ref(x, False, 2, 1e-5)[0]), 1e-5)


# ------------------------------------------------------------------ reduce
def check_reduce(tops, ck):
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
                if torch.Size(shape).numel() == 0:
                    # torch gives every empty tensor a NULL data pointer (as_strided views too), which the
                    # C API rejects; empty reductions are covered by tests/test_reduce.cpp.
                    continue
                x = ck.rnd(shape, dt, 1.0, 0.0) if op != "prod" else (1.0 + 0.01 * ck.rnd(shape, torch.float32)).to(dt)
                for keep in (False, True):
                    if keep and torch.Size(shape).numel() > big:
                        continue
                    ref = reduce_ref(x, op, axes, keep)
                    y = torch.full(ref.shape, float("nan"), device="cuda", dtype=torch.float32)
                    if y.numel() == 0:
                        y = torch.zeros(4, device="cuda").as_strided(ref.shape, y.stride())
                    run = tops.reduce(x, y, op, axes, keep)
                    ck.done(run)
                    limit = ck.TOL[dt] if dt != torch.float32 else 1e-5
                    ck.report("reduce %s %s %s axes=%s keep=%d [%s]" % (op, dt, shape, axes, keep, run.kernel),
                              rel_err(y, ref), limit)
        # Transposed and sliced inputs, f16/bf16 outputs.
        base = ck.rnd((300, 517), dt)
        for view, axes in ((base.t(), (1,)), (base.t(), (0,)), (base[::3, 10:400], (1,)), (base[::3, 10:400], (0,))):
            for ydt in (torch.float32, torch.float16, torch.bfloat16):
                ref = reduce_ref(view, "sum", axes, False)
                y = torch.full(ref.shape, float("nan"), device="cuda", dtype=ydt)
                run = tops.reduce(view, y, "sum", axes, False)
                ck.done(run)
                ck.report("reduce sum %s view %s %s axes=%s -> %s [%s]" % (dt, tuple(view.shape), view.stride(), axes,
                                                                           ydt, run.kernel),
                          rel_err(y, ref), ck.TOL[dt] if ydt == torch.float32 else 1e-2)
    # Determinism: the same input, bitwise the same output.
    x = ck.rnd((1 << 24,), torch.float32)
    outs = []
    for _ in range(3):
        y = torch.empty((), device="cuda")
        ck.done(tops.reduce(x, y, "sum", (0,), False))
        outs.append(y.clone())
    ck.count += 1
    if not all(torch.equal(o, outs[0]) for o in outs):
        ck.fails += 1
        print("FAIL reduce sum 2^24: results differ between runs")


# ------------------------------------------------------------------ eltwise
def check_eltwise(tops, ck):
    # Elementwise.
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        for shape in ((4096, 3072), (7, 13), (3, 5, 8), (1,), (2, 1000003 // 2 + 1)):
            for act in ACTS:
                for bias_kind in ("row", "none", "col", "full"):
                    x = ck.rnd(shape, dt, 2.0)
                    bias = None
                    if bias_kind == "row":
                        bias = ck.rnd((1,) * (len(shape) - 1) + (shape[-1],), dt)
                    elif bias_kind == "col":
                        bias = ck.rnd(shape[:1] + (1,) * (len(shape) - 1), dt)
                    elif bias_kind == "full":
                        bias = ck.rnd(shape, dt)
                    v = x.double() + (bias.double() if bias is not None else 0.0)
                    ref = act_ref(v, act)
                    y = torch.full_like(x, float("nan"))
                    run = tops.bias_act(x, y, act, bias)
                    ck.done(run)
                    ck.report("bias_act %s %s %s bias=%s [%s]" % (act, dt, shape, bias_kind, run.kernel),
                              rel_err(y, ref), ck.TOL[dt])
        # In place, strided output, misaligned input.
        x = ck.rnd((300, 770), dt)
        b = ck.rnd((770,), dt)
        ref = act_ref(x.double() + b.double(), "gelu_tanh")
        ck.done(tops.bias_act(x, x, "gelu_tanh", b.view(1, 770)))
        ck.report("bias_act gelu_tanh %s in place" % dt, rel_err(x, ref), ck.TOL[dt])
        xb = ck.rnd((300 * 770 + 1,), dt)
        x = xb[1:].view(300, 770)
        ybig = torch.full((300, 800), float("nan"), device="cuda", dtype=dt)
        y = ybig[:, :770]
        ck.done(tops.bias_act(x, y, "silu", b.view(1, 770)))
        ck.report("bias_act silu %s misaligned x, strided y" % dt,
                  rel_err(y, act_ref(x.double() + b.double(), "silu")), ck.TOL[dt])
        # PReLU per channel (NCHW) and per last dim.
        for shape, sshape in (((32, 64, 56, 56), (1, 64, 1, 1)), ((8, 3, 7, 7), (1, 3, 1, 1)),
                              ((100, 24), (1, 24)), ((5, 6, 7), (1, 1, 1))):
            x = ck.rnd(shape, dt)
            s = ck.rnd(sshape, dt, 0.2)
            ref = torch.where(x.double() > 0, x.double(), s.double() * x.double())
            y = torch.full_like(x, float("nan"))
            run = tops.prelu(x, s, y)
            ck.done(run)
            ck.report("prelu %s %s slope %s [%s]" % (dt, shape, sshape, run.kernel), rel_err(y, ref), ck.TOL[dt])
        # Weighted sums, 1..8 inputs, one broadcast.
        for n in (1, 2, 3, 8):
            shape = (257, 1031)
            ins = [ck.rnd(shape, dt) for _ in range(n)]
            if n > 1:
                ins[-1] = ck.rnd((1, 1031), dt)
            coefs = [0.5 + i for i in range(n)]
            ref = sum(c * t.double() for c, t in zip(coefs, ins))
            y = torch.full(shape, float("nan"), device="cuda", dtype=dt)
            run = tops.weighted_sum(ins, coefs, y)
            ck.done(run)
            ck.report("weighted_sum %s n=%d [%s]" % (dt, n, run.kernel), rel_err(y, ref), ck.TOL[dt])


# ------------------------------------------------------------------ conv2d
# (N, C, H, W, K, R, S, stride, pad (top, bottom, left, right), dilation, groups)
CONV_CASES = [
    (2, 64, 9, 11, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (1, 16, 7, 5, 24, 3, 3, (2, 1), (2, 0, 1, 3), (1, 2), 1),
    (3, 32, 13, 13, 40, 5, 5, (1, 1), (3, 3, 4, 2), (2, 2), 2),
    (2, 3, 17, 19, 8, 7, 7, (2, 2), (3, 3, 3, 3), (1, 1), 1),
    (2, 48, 6, 6, 33, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    (1, 24, 1, 1, 16, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    (1, 8, 1, 1, 8, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (2, 32, 11, 7, 32, 3, 3, (4, 4), (1, 1, 1, 1), (1, 1), 1),
    (2, 32, 9, 9, 32, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 32),
    (1, 8, 7, 6, 16, 3, 5, (2, 1), (0, 2, 2, 1), (3, 1), 8),
    (2, 24, 8, 8, 16, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2),
    (2, 128, 14, 14, 200, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (1, 64, 31, 29, 136, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (2, 16, 5, 5, 16, 2, 2, (1, 1), (0, 0, 0, 0), (3, 3), 1),
    (1, 40, 23, 23, 48, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1),
]
CONV_IGEMM_CONFIGS = ("128x128x32_s4_w64x32", "128x64x32_s4_w64x32", "64x64x64_s4_w32x32", "64x64x32_s6_w32x32")


def conv2d_ref(x, w, stride, pad, dilation, groups, bias=None, residual=None, act="none"):
    """fp64 reference on canonical NCHW / KCRS views."""
    t, b, l, r = pad
    v = F.conv2d(F.pad(x.double(), (l, r, t, b)), w.double(), stride=stride, dilation=dilation, groups=groups)
    if bias is not None:
        v = v + bias.double().view(1, -1, 1, 1)
    if residual is not None:
        v = v + residual.double()
    return act_ref(v, act)


def conv2d_case(tops, ck, case, dt, nhwc, krsc, bias=False, residual=False, act="none", in_place=False,
                x_offset=0, c_slice=0, tag=""):
    n, c, h, wd, k, r, s, stride, pad, dil, groups = case
    cg = c // groups
    p = (h + pad[0] + pad[1] - dil[0] * (r - 1) - 1) // stride[0] + 1
    q = (wd + pad[2] + pad[3] - dil[1] * (s - 1) - 1) // stride[1] + 1
    # x in the caller's dims order, optionally a channel slice of a wider tensor or offset by x_offset elements.
    xshape = (n, h, wd, c + c_slice) if nhwc else (n, c + c_slice, h, wd)
    numel = n * h * wd * (c + c_slice)
    xbuf = ck.rnd((numel + x_offset,), dt)
    xfull = xbuf[x_offset:].view(xshape)
    x = xfull[..., :c] if nhwc else xfull[:, :c]
    wt = ck.rnd((k, r, s, cg) if krsc else (k, cg, r, s), dt, scale=(cg * r * s) ** -0.5)
    y = torch.full((n, p, q, k) if nhwc else (n, k, p, q), float("nan"), device="cuda", dtype=dt)
    bt = ck.rnd((k,), dt) if bias else None
    res = ck.rnd(y.shape, dt) if residual else None
    xc = x.permute(0, 3, 1, 2) if nhwc else x
    wc = wt.permute(0, 3, 1, 2) if krsc else wt
    rc = None if res is None else (res.permute(0, 3, 1, 2) if nhwc else res)
    ref = conv2d_ref(xc, wc, stride, pad, dil, groups, bt, rc, act)
    out = y
    if in_place:
        out = res
    run = tops.conv2d(x, wt, out, stride=stride, pad=pad, dilation=dil, groups=groups, bias=bt, residual=res,
                      act=act, nhwc=nhwc, krsc=krsc)
    ck.done(run)
    outc = out.permute(0, 3, 1, 2) if nhwc else out
    name = "conv2d %s %s/%s N%d C%d %dx%d K%d %dx%d s%s p%s d%s g%d%s%s%s [%s]" % (
        str(dt)[6:], "nhwc" if nhwc else "nchw", "krsc" if krsc else "kcrs", n, c, h, wd, k, r, s, stride, pad, dil,
        groups, " bias" if bias else "", " res" + ("(in place)" if in_place else "") if residual else "",
        " " + act if act != "none" else "", run.kernel + tag)
    ck.report(name, rel_err(outc, ref), ck.TOL[dt])


def check_conv2d(tops, ck):
    import os
    for dt in (torch.float16, torch.bfloat16, torch.float32):
        for case in CONV_CASES:
            for nhwc, krsc in ((True, True), (False, False)):
                conv2d_case(tops, ck, case, dt, nhwc, krsc)
    for dt in (torch.float16, torch.bfloat16, torch.float32):
        big = CONV_CASES[11]
        conv2d_case(tops, ck, big, dt, True, True, bias=True, residual=True, act="relu")
        conv2d_case(tops, ck, big, dt, True, True, bias=True, residual=True, act="silu", in_place=True)
        conv2d_case(tops, ck, CONV_CASES[2], dt, True, True, bias=True, act="gelu_erf")
        conv2d_case(tops, ck, CONV_CASES[1], dt, False, False, bias=True, residual=True, act="gelu_tanh")
        conv2d_case(tops, ck, CONV_CASES[0], dt, True, False)           # NHWC x with a KCRS filter
        conv2d_case(tops, ck, CONV_CASES[0], dt, True, True, x_offset=1)  # unaligned x: fallback at execute
        conv2d_case(tops, ck, CONV_CASES[0], dt, True, True, c_slice=8)   # channel slice, strides % 8 == 0
        conv2d_case(tops, ck, CONV_CASES[0], dt, True, True, c_slice=3)   # channel slice, odd strides
        conv2d_case(tops, ck, CONV_CASES[8], dt, True, True, bias=True, residual=True, act="relu")
    for cfg in CONV_IGEMM_CONFIGS:
        os.environ["TOPS_CONV_IGEMM_CONFIG"] = cfg
        try:
            for case in (CONV_CASES[12], CONV_CASES[2], CONV_CASES[14]):
                conv2d_case(tops, ck, case, torch.float16, True, True, bias=True, residual=True, act="relu",
                            tag=" forced")
        finally:
            del os.environ["TOPS_CONV_IGEMM_CONFIG"]


# family -> feature matrix; compare_torch.py --check [--only FAMILY] runs these.
# Attention and conv2d families add their check_<family> here.
CHECKS = {
    "softmax": check_softmax,
    "transpose": check_transpose,
    "norm": check_norm,
    "reduce": check_reduce,
    "eltwise": check_eltwise,
    "conv2d": check_conv2d,
}


def run_checks(tops, families, seed):
    """Runs the feature matrices of the selected families; returns the number of failures."""
    ck = Checker(seed)
    for fam in families:
        if fam not in CHECKS:
            print("check %s: no feature matrix for this family" % fam)
            continue
        before = (ck.count, ck.fails)
        CHECKS[fam](tops, ck)
        print("check %-10s %5d cases, %d failures" % (fam, ck.count - before[0], ck.fails - before[1]))
    print("check: %d cases, %d failures" % (ck.count, ck.fails))
    return ck.fails
