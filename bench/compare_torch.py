#!/usr/bin/env python3
"""Times tops' CUDA softmax and transpose against PyTorch on the same GPU.

Both sides run on the same torch tensors and the same stream; tops is called
through a minimal ctypes loader of libtops.so (the C API only). Each call is
timed alone with CUDA events after L2 has been flushed (cold cache, as
triton's do_bench does), median over the repetitions, after warm-up. Bytes
count each input read once and each output written once (the mask and
lengths are not counted). The copy ceiling is a device-to-device copy of
512 MiB timed the same way.

usage: compare_torch.py [--lib build/libtops.so] [--reps 30] [--json out.json]
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

    def softmax(self, x, y, scale=1.0, mask=None, log=False):
        d = self.lib.tops_softmax_desc_default()
        d.x, d.y, d.axis, d.scale = self.desc(x), self.desc(y), -1, scale
        d.flags = SOFTMAX_LOG if log else 0
        args = [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr())]
        if mask is not None:
            d.mask = self.desc(mask)
            args.append(Arg(ARG_MASK, mask.data_ptr()))
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

    def _runner(self, op, args):
        arr = (Arg * len(args))(*args)
        name = self.lib.tops_op_kernel_name(op).decode()

        def run():
            self.check(self.lib.tops_op_execute(self.ctx, op, arr, len(args), None, 0))
        run.kernel = name
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--lib", default=os.path.join(here, "..", "build", "libtops.so"))
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--only", help="substring filter on case names")
    a = ap.parse_args()

    torch.manual_seed(0)
    tops = Tops(a.lib)
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
