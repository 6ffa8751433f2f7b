#!/usr/bin/env python3
"""Times tops' CUDA softmax, transpose and GEMM against PyTorch on the same GPU.

Both sides run on the same torch tensors and the same stream; tops is called
through a minimal ctypes loader of libtops.so (the C API only). Each call is
timed alone with CUDA events after L2 has been flushed (cold cache, as
triton's do_bench does), median over the repetitions, after warm-up. Bytes
count each input read once and each output written once (the mask and
lengths are not counted). The copy ceiling is a device-to-device copy of
512 MiB timed the same way. GEMM cases (MxNxK, FLOPs 2MNK) run against
torch.matmul (f16, bf16, f32, and f32 with TF32 allowed on both sides) and
GEMM + bias + GELU against the eager F.gelu(F.linear(x, w, b)) composition.

With --check it instead runs a feature matrix (dtypes, axes, strides,
masks, lengths, log, in place, many row lengths and permutations) against an
fp64 torch reference and reports every mismatch.

usage: compare_torch.py [--lib build/libtops.so] [--reps 30] [--json out.json] [--check]
"""
import argparse
import ctypes
import json
import os
import statistics
import sys

import torch

MAX_RANK = 8
DT = {torch.float32: 1, torch.float16: 2, torch.bfloat16: 3, torch.int32: 4, torch.uint8: 6}
BACKEND_CUDA = 2
ARG_X, ARG_Y, ARG_MASK, ARG_LENGTHS = 1, 2, 3, 4
SOFTMAX_LOG = 1


class TensorDesc(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_int64 * MAX_RANK), ("strides", ctypes.c_int64 * MAX_RANK)]


class SoftmaxDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("x", TensorDesc), ("y", TensorDesc),
                ("axis", ctypes.c_int32), ("scale", ctypes.c_float), ("flags", ctypes.c_uint32),
                ("mask", TensorDesc), ("lengths", TensorDesc)]


class TransposeDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("x", TensorDesc), ("y", TensorDesc),
                ("perm", ctypes.c_int32 * MAX_RANK)]


ARG_A, ARG_B, ARG_D, ARG_BIAS = 24, 25, 27, 7
ACT_GELU_ERF, ACT_GELU_TANH = 2, 3
GEMM_ALLOW_TF32 = 1


class GemmDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("a", TensorDesc), ("b", TensorDesc), ("c", TensorDesc),
                ("d", TensorDesc), ("bias", TensorDesc), ("trans_a", ctypes.c_int32), ("trans_b", ctypes.c_int32),
                ("alpha", ctypes.c_float), ("beta", ctypes.c_float), ("act", ctypes.c_int),
                ("flags", ctypes.c_uint32)]


class Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("ptr", ctypes.c_void_p)]


class Tops:
    """The few tops calls this script needs."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        L = self.lib
        L.tops_last_error.restype = ctypes.c_char_p
        L.tops_softmax_desc_default.restype = SoftmaxDesc
        L.tops_transpose_desc_default.restype = TransposeDesc
        L.tops_gemm_desc_default.restype = GemmDesc
        L.tops_op_workspace_size.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        L.tops_op_kernel_name.restype = ctypes.c_char_p
        L.tops_op_kernel_name.argtypes = [ctypes.c_void_p]
        L.tops_context_set_stream.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        L.tops_op_execute.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(Arg), ctypes.c_size_t,
                                      ctypes.c_void_p, ctypes.c_size_t]
        L.tops_backend_available.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        why = ctypes.c_char_p()
        if not L.tops_backend_available(BACKEND_CUDA, ctypes.byref(why)):
            raise RuntimeError("tops cuda backend unavailable: " + why.value.decode())
        self.ctx = ctypes.c_void_p()
        self.check(L.tops_context_create(BACKEND_CUDA, torch.cuda.current_device(), ctypes.byref(self.ctx)))
        self.check(L.tops_context_set_stream(self.ctx, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)))

    def check(self, status):
        if status != 0:
            raise RuntimeError("tops error 0x%x: %s" % (status, self.lib.tops_last_error().decode()))

    @staticmethod
    def desc(t):
        d = TensorDesc()
        d.dtype = DT[t.dtype]
        d.rank = t.dim()
        for i in range(t.dim()):
            d.dims[i] = t.shape[i]
            d.strides[i] = t.stride(i)
        return d

    def softmax(self, x, y, scale=1.0, mask=None, log=False, axis=-1, lengths=None):
        d = self.lib.tops_softmax_desc_default()
        d.x, d.y, d.axis, d.scale = self.desc(x), self.desc(y), axis, scale
        d.flags = SOFTMAX_LOG if log else 0
        args = [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr())]
        if mask is not None:
            d.mask = self.desc(mask)
            args.append(Arg(ARG_MASK, mask.data_ptr()))
        if lengths is not None:
            d.lengths = self.desc(lengths)
            args.append(Arg(ARG_LENGTHS, lengths.data_ptr()))
        op = ctypes.c_void_p()
        self.check(self.lib.tops_softmax_create(self.ctx, ctypes.byref(d), ctypes.byref(op)))
        return self._runner(op, args)

    def transpose(self, x, y, perm):
        d = self.lib.tops_transpose_desc_default()
        d.x, d.y = self.desc(x), self.desc(y)
        for i, p in enumerate(perm):
            d.perm[i] = p
        op = ctypes.c_void_p()
        self.check(self.lib.tops_transpose_create(self.ctx, ctypes.byref(d), ctypes.byref(op)))
        return self._runner(op, [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr())])

    def gemm(self, a, b, d, bias=None, act=0, trans_b=False, tf32=False):
        """D = act(op(a) @ op(b) + bias); b is [N, K] with trans_b (a linear layer's weight)."""
        g = self.lib.tops_gemm_desc_default()
        g.a, g.b, g.d, g.trans_b, g.act = self.desc(a), self.desc(b), self.desc(d), int(trans_b), act
        g.flags = GEMM_ALLOW_TF32 if tf32 else 0
        args = [Arg(ARG_A, a.data_ptr()), Arg(ARG_B, b.data_ptr()), Arg(ARG_D, d.data_ptr())]
        if bias is not None:
            g.bias = self.desc(bias)
            args.append(Arg(ARG_BIAS, bias.data_ptr()))
        op = ctypes.c_void_p()
        self.check(self.lib.tops_gemm_create(self.ctx, ctypes.byref(g), ctypes.byref(op)))
        return self._runner(op, args)

    def _runner(self, op, args):
        arr = (Arg * len(args))(*args)
        name = self.lib.tops_op_kernel_name(op).decode()
        ws_bytes = ctypes.c_size_t(0)
        self.check(self.lib.tops_op_workspace_size(op, ctypes.byref(ws_bytes)))
        ws = torch.empty(max(ws_bytes.value, 1), dtype=torch.uint8, device="cuda")
        ws_ptr = ctypes.c_void_p(ws.data_ptr()) if ws_bytes.value else None

        def run():
            self.check(self.lib.tops_op_execute(self.ctx, op, arr, len(args), ws_ptr, ws_bytes.value))
        run.kernel = name
        run.workspace = ws
        return run


class Timer:
    """Median of per-call CUDA-event times with L2 flushed before each call."""

    def __init__(self, reps, warmup):
        self.reps, self.warmup = reps, warmup
        self.flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")

    def __call__(self, fn):
        for _ in range(self.warmup):
            fn()
        times = []
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        for _ in range(self.reps):
            self.flush.zero_()
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        return statistics.median(times)


def rel_err(a, b):
    a, b = a.double(), b.double()
    finite = torch.isfinite(b)
    if not torch.equal(torch.isfinite(a), finite):
        return float("inf")
    return ((a[finite] - b[finite]).norm() / b[finite].norm().clamp_min(1e-30)).item()


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


def check_features(tops):
    """Feature matrix against fp64 torch; returns the number of failures."""
    g = torch.Generator(device="cuda").manual_seed(1)
    tol = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 1e-2}
    fails = 0
    count = 0

    def report(name, err, limit):
        nonlocal fails, count
        count += 1
        if not err <= limit:
            fails += 1
            print("FAIL %-70s rel.err %.3e (limit %.0e)" % (name, err, limit))

    lens = [1, 2, 7, 31, 32, 33, 100, 127, 128, 129, 255, 256, 257, 1000, 1023, 1024, 1025, 2047, 2048, 2049,
            4095, 4096, 5000, 8191, 16385, 32768, 40000, 65536 + 8, 131072]
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        for n in lens:
            rows = max(1, min(64, (1 << 21) // n))
            for variant in ("plain", "scale+log", "mask+lengths", "inplace", "mask_rowwise", "offset"):
                x = torch.randn(rows, n, device="cuda", dtype=dt, generator=g) * 3
                mask = lengths = None
                scale, log = 1.0, False
                if variant == "scale+log":
                    scale, log = 0.3, True
                if variant == "mask+lengths":
                    mask = (torch.rand(rows, n, device="cuda", generator=g) > 0.3).to(torch.uint8)
                    lengths = torch.randint(-2, n + 3, (rows, 1), device="cuda", dtype=torch.int32, generator=g)
                    lengths[0] = 0
                if variant == "mask_rowwise":  # mask broadcast along the axis (stride 0 there)
                    mask = (torch.rand(rows, 1, device="cuda", generator=g) > 0.5).to(torch.uint8)
                    log = True
                if variant == "offset":  # misaligned start: no 16-byte vectors
                    big = torch.randn(rows * n + 1, device="cuda", dtype=dt, generator=g)
                    x = big[1:].view(rows, n)
                ref = softmax_ref(x, scale, -1, log, mask, lengths)
                y = x if variant == "inplace" else torch.full_like(x, float("nan"))
                run = tops.softmax(x, y, scale=scale, mask=mask, log=log, lengths=lengths)
                run()
                torch.cuda.synchronize()
                report("softmax %s n=%d rows=%d %s [%s]" % (dt, n, rows, variant, run.kernel), rel_err(y, ref), tol[dt])
    # Other axes and strided views.
    for dt in (torch.float32, torch.float16):
        for shape, axis in (((8, 300, 5), 1), ((64, 33), 0), ((4, 6, 7, 129), 2), ((3, 1000, 2), 1),
                            ((2, 3, 4, 5, 6, 7, 8, 9), 3)):
            x = torch.randn(shape, device="cuda", dtype=dt, generator=g)
            mshape = [1] * len(shape)
            mshape[axis] = shape[axis]
            mshape[0] = shape[0]
            mask = (torch.rand(mshape, device="cuda", generator=g) > 0.2).to(torch.uint8)
            for log in (False, True):
                y = torch.full_like(x, float("nan"))
                run = tops.softmax(x, y, scale=1.7, mask=mask, log=log, axis=axis)
                run()
                torch.cuda.synchronize()
                report("softmax %s %s axis=%d log=%d [%s]" % (dt, shape, axis, log, run.kernel),
                       rel_err(y, softmax_ref(x, 1.7, axis, log, mask)), tol[dt])
        base = torch.randn(40, 2100, device="cuda", dtype=dt, generator=g)
        for view in (base[:, :2048], base[::2, 5:1005], base.t()[:700]):
            y = torch.full_like(view, float("nan"))
            run = tops.softmax(view, y)
            run()
            torch.cuda.synchronize()
            report("softmax %s strided view %s %s [%s]" % (dt, tuple(view.shape), view.stride(), run.kernel),
                   rel_err(y, softmax_ref(view, 1.0, -1, False)), tol[dt])
    # Transposes: exact.
    import itertools
    import random
    rnd = random.Random(3)
    tcases = [((8192, 8192), (1, 0)), ((32, 512, 12, 64), (0, 2, 1, 3)), ((16, 32, 64, 64, 8), (0, 4, 2, 3, 1)),
              ((1, 1), (1, 0)), ((7, 13), (1, 0)), ((65, 33, 3), (2, 0, 1)), ((3, 5, 7, 11), (3, 2, 1, 0)),
              ((2, 3, 2, 3, 2, 3, 2, 3), (7, 6, 5, 4, 3, 2, 1, 0)), ((100, 3), (1, 0)), ((5, 2049), (1, 0)),
              ((4, 64, 64), (0, 2, 1)), ((6, 5, 4), (0, 1, 2))]
    for _ in range(25):
        r = rnd.randint(1, 6)
        shape = tuple(rnd.choice([1, 2, 3, 5, 8, 17, 32, 33, 64]) for _ in range(r))
        perm = list(range(r))
        rnd.shuffle(perm)
        tcases.append((shape, tuple(perm)))
    for dt in (torch.float32, torch.float16, torch.uint8):
        for shape, perm in tcases:
            if dt != torch.float32 and shape == (8192, 8192):
                continue
            x = (torch.randn(shape, device="cuda", generator=g) * 50).to(dt)
            y = torch.empty([shape[p] for p in perm], device="cuda", dtype=dt)
            y.view(torch.uint8).fill_(0xAB)
            run = tops.transpose(x, y, perm)
            run()
            torch.cuda.synchronize()
            count += 1
            if not torch.equal(y, x.permute(perm)):
                fails += 1
                print("FAIL transpose %s %s perm %s [%s]" % (dt, shape, perm, run.kernel))
    # Strided transpose inputs and outputs.
    for dt in (torch.float32, torch.float16):
        base = torch.randn(70, 90, device="cuda", generator=g).to(dt)
        x = base[::2, 3:83]
        ybig = torch.zeros(160, 100, device="cuda", dtype=dt)
        y = ybig[::2, :35]
        run = tops.transpose(x, y, (1, 0))
        run()
        torch.cuda.synchronize()
        count += 1
        if not torch.equal(y, x.t()) or ybig[1::2].abs().sum().item() != 0:
            fails += 1
            print("FAIL transpose strided %s [%s]" % (dt, run.kernel))
    print("check: %d cases, %d failures" % (count, fails))
    return fails


GEMM_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 3072, 768), (4096, 768, 3072),
               (16384, 4096, 4096))
GEMM_ROUNDS = 3


def gemm_cases(tops, timer, only):
    """tops GEMM vs torch.matmul, and GEMM + bias + GELU vs the eager composition (MxNxK)."""
    import torch.nn.functional as F
    results = []
    print("%-48s %-30s %9s %9s %7s %8s %8s %9s" % ("gemm case (MxNxK)", "tops kernel", "tops ms", "torch ms",
                                                  "ratio", "tops TF", "torch TF", "rel.err"))
    cases = [("matmul", dt, s) for dt in ("float16", "bfloat16", "float32", "tf32") for s in GEMM_SHAPES]
    cases += [("linear_bias_gelu_" + form, "float16", (4096, 3072, 768)) for form in ("tanh", "erf")]
    cases += [("linear_bias_gelu_" + form, "bfloat16", (4096, 3072, 768)) for form in ("tanh", "erf")]
    for op, dname, (m, n, k) in cases:
        name = "gemm %s %s %dx%dx%d" % (op, dname, m, n, k)
        if only and only not in name:
            continue
        tf32 = dname == "tf32"
        dt = torch.float32 if tf32 else getattr(torch, dname)
        torch.backends.cuda.matmul.allow_tf32 = tf32
        x = torch.randn(m, k, device="cuda", dtype=dt)
        d = torch.empty(m, n, device="cuda", dtype=dt)
        if op == "matmul":
            w = torch.randn(k, n, device="cuda", dtype=dt)
            run = tops.gemm(x, w, d, tf32=tf32)
            ref_fn = lambda: torch.matmul(x, w)
        else:
            form = op.rsplit("_", 1)[1]
            w = torch.randn(n, k, device="cuda", dtype=dt) / k ** 0.5
            bias = torch.randn(n, device="cuda", dtype=dt)
            act = ACT_GELU_TANH if form == "tanh" else ACT_GELU_ERF
            run = tops.gemm(x, w, d, bias=bias, act=act, trans_b=True)
            approximate = "tanh" if form == "tanh" else "none"
            ref_fn = lambda: F.gelu(F.linear(x, w, bias), approximate=approximate)
        d.fill_(float("nan"))
        run()
        ref = ref_fn()
        torch.cuda.synchronize()
        err = rel_err(d, ref)
        # Alternating rounds, median of the round medians: clock drift hits both sides alike.
        tops_rounds, torch_rounds = [], []
        for _ in range(GEMM_ROUNDS):
            tops_rounds.append(timer(run))
            torch_rounds.append(timer(ref_fn))
        tops_ms, torch_ms = statistics.median(tops_rounds), statistics.median(torch_rounds)
        flops = 2.0 * m * n * k
        r = {"case": name, "op": "gemm_" + op, "dtype": dname, "shape": [m, n, k], "kernel": run.kernel,
             "tops_ms": tops_ms, "torch_ms": torch_ms, "speedup": torch_ms / tops_ms,
             "tops_tflops": flops / tops_ms / 1e9, "torch_tflops": flops / torch_ms / 1e9, "rel_err": err}
        results.append(r)
        print("%-48s %-30s %9.4f %9.4f %6.3fx %8.1f %8.1f %9.2e" %
              (name, run.kernel[:30], tops_ms, torch_ms, r["speedup"], r["tops_tflops"], r["torch_tflops"], err))
        sys.stdout.flush()
        del x, w, d, ref, run
    torch.backends.cuda.matmul.allow_tf32 = False
    return results


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
    tops = Tops(a.lib)
    if a.check:
        return 1 if check_features(tops) else 0
    timer = Timer(a.reps, a.warmup)
    dev = torch.cuda.get_device_properties(0)

    n = 512 << 18  # 512 MiB of f32
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = timer(lambda: dst.copy_(src))
    copy_gbs = 2 * src.numel() * 4 / copy_ms / 1e6
    del src, dst
    print("device: %s (%d SMs), torch %s; copy ceiling %.1f GB/s (512 MiB f32 d2d)" %
          (dev.name, dev.multi_processor_count, torch.__version__, copy_gbs))

    cases = []
    for dt in (torch.float32, torch.float16):
        for rows, cols in ((65536, 128), (16384, 1024), (8192, 4096), (4096, 32768), (1024, 131072)):
            cases.append(("softmax", dt, (rows, cols)))
    cases.append(("masked_softmax", torch.float16, (32, 12, 512, 512)))
    cases.append(("transpose", torch.float32, (8192, 8192), (1, 0)))
    cases.append(("transpose", torch.float16, (32, 512, 12, 64), (0, 2, 1, 3)))
    cases.append(("transpose", torch.float32, (16, 32, 64, 64, 8), (0, 4, 2, 3, 1)))

    results = []
    results += gemm_cases(tops, timer, a.only)
    hdr = "%-44s %-34s %9s %9s %7s %7s %7s %9s" % ("case", "tops kernel", "tops ms", "torch ms", "speedup",
                                                   "tops%cp", "torch%", "rel.err")
    print(hdr)
    for c in cases:
        op, dt, shape = c[0], c[1], c[2]
        dname = str(dt).replace("torch.", "")
        x = torch.randn(shape, device="cuda", dtype=dt)
        if op == "transpose":
            perm = c[3]
            name = "transpose %s %s perm%s" % (dname, "x".join(map(str, shape)), tuple(perm))
            y = torch.empty([shape[p] for p in perm], device="cuda", dtype=dt)
            run = tops.transpose(x, y, perm)
            ref_fn = lambda: x.permute(perm).contiguous()
            bytes_moved = 2 * x.numel() * x.element_size()
        elif op == "softmax":
            name = "softmax %s %s" % (dname, "x".join(map(str, shape)))
            y = torch.empty_like(x)
            run = tops.softmax(x, y)
            ref_fn = lambda: torch.softmax(x, -1)
            bytes_moved = 2 * x.numel() * x.element_size()
        else:
            b, h, s, _ = shape
            scale = 0.125
            name = "masked softmax %s %s scale+key mask" % (dname, "x".join(map(str, shape)))
            lens = torch.randint(s // 2, s + 1, (b,), device="cuda")
            keep = (torch.arange(s, device="cuda")[None, :] < lens[:, None]).view(b, 1, 1, s)
            mask_u8 = keep.to(torch.uint8)
            y = torch.empty_like(x)
            run = tops.softmax(x, y, scale=scale, mask=mask_u8)
            ref_fn = lambda: torch.softmax((x * scale).masked_fill(~keep, float("-inf")), -1)
            bytes_moved = 2 * x.numel() * x.element_size()
        if a.only and a.only not in name:
            continue
        y.fill_(float("nan"))
        run()
        ref = ref_fn()
        torch.cuda.synchronize()
        err = rel_err(y, ref)
        tops_ms = timer(run)
        torch_ms = timer(ref_fn)
        r = {
            "case": name, "op": op, "dtype": dname, "shape": list(shape), "kernel": run.kernel,
            "tops_ms": tops_ms, "torch_ms": torch_ms, "speedup": torch_ms / tops_ms,
            "tops_gbs": bytes_moved / tops_ms / 1e6, "torch_gbs": bytes_moved / torch_ms / 1e6,
            "bytes": bytes_moved, "rel_err": err,
        }
        r["tops_pct_copy"] = 100 * r["tops_gbs"] / copy_gbs
        r["torch_pct_copy"] = 100 * r["torch_gbs"] / copy_gbs
        results.append(r)
        print("%-44s %-34s %9.4f %9.4f %6.2fx %6.1f%% %6.1f%% %9.2e" %
              (name, run.kernel[:34], tops_ms, torch_ms, r["speedup"], r["tops_pct_copy"], r["torch_pct_copy"], err))
        sys.stdout.flush()
        del x, y, ref

    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": dev.name, "sms": dev.multi_processor_count, "torch": torch.__version__,
                       "copy_gbs": copy_gbs, "timing": "median of %d cold-L2 CUDA-event times, %d warm-up" %
                       (a.reps, a.warmup), "results": results}, f, indent=1)
    bad = [r["case"] for r in results if not r["rel_err"] < (1e-5 if "float32" in r["dtype"] else 1e-2)]
    if bad:
        print("MISMATCH vs torch:", ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
