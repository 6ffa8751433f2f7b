"""Drop-in for the minimal ctypes loader of bench/compare_torch.py.

    from tops.compat import Tops
    tops = Tops("build/libtops.so")
    run = tops.softmax(x, y, scale=0.5)   # creates the op once
    run()                                  # executes it (on torch's current stream)
    run.kernel                             # the kernel the op chose

Each method takes the output tensor and returns a runner: a callable with
.kernel (kernel name) and .workspace (the workspace buffer), like the loader's.
"""
import os

from . import _capi as C
from . import Context, Error, gemm_plan, softmax_plan, transpose_plan


class Tops:
    """The calls compare_torch.py needs, on one CUDA context (CPU with backend="cpu")."""

    def __init__(self, path=None, backend="cuda", device=None):
        if path and os.path.realpath(path) != os.path.realpath(C.lib._name):
            raise Error(C.ERROR_INVALID_ARGUMENT, "tops is already loaded from %s; set TOPS_LIB=%s before "
                        "importing tops" % (C.lib._name, path))
        self.lib = C.lib
        if device is None:
            device = 0
            if backend == "cuda":
                import torch
                device = torch.cuda.current_device()
        self.context = Context(backend, device)
        self.ctx = self.context.handle

    def check(self, status):
        if status != C.SUCCESS:
            raise Error(status, self.lib.tops_last_error().decode())

    @staticmethod
    def _runner(plan):
        def run():
            plan.run()
        run.kernel = plan.kernel_name
        run.workspace = plan._ws
        run.plan = plan
        return run

    def softmax(self, x, y, scale=1.0, mask=None, log=False, axis=-1, lengths=None):
        return self._runner(softmax_plan(x, axis, mask, lengths, scale, log, out=y, ctx=self.context))

    def transpose(self, x, y, perm):
        return self._runner(transpose_plan(x, perm, out=y, ctx=self.context))

    def gemm(self, a, b, d, bias=None, act=0, trans_b=False, tf32=False):
        act_name = {v: k for k, v in C.ACTIVATIONS.items() if k is not None}[int(act)]
        return self._runner(gemm_plan(a, b, bias=bias, trans_b=trans_b, act=act_name, allow_tf32=tf32, out=d,
                                      ctx=self.context))


__all__ = ["Tops"]
