"""tops: tensor ops over the tops C API (ctypes, no compile step).

CPU tensors are numpy arrays; CUDA tensors are torch tensors, objects with
__cuda_array_interface__ (CuPy) or DLPack producers. Pointers are passed to
the library as they are: no copies. Every function picks the backend from its
inputs' device, creates the op, runs it on the current stream and returns the
output (allocated next to the input unless out= is given). For repeated calls
use the *_plan functions: they return a Plan whose run() only executes.
"""
import ctypes
import threading

from . import _capi as C
from ._tensor import Error, Tensor, view, empty_like, workspace, current_stream

__all__ = ["Error", "Context", "Plan", "version", "cpu_isa", "backend_available", "softmax", "transpose",
           "layer_norm", "rms_norm", "reduce", "bias_act", "prelu", "weighted_sum", "gemm", "attention",
           "softmax_plan", "transpose_plan", "norm_plan", "reduce_plan", "bias_act_plan", "prelu_plan",
           "weighted_sum_plan", "gemm_plan", "attention_plan"]

_lib = C.lib
_BACKENDS = {"cpu": C.BACKEND_CPU, "cuda": C.BACKEND_CUDA, "default": C.BACKEND_DEFAULT}


def _check(status):
    if status != C.SUCCESS:
        raise Error(status, _lib.tops_last_error().decode())


def version():
    return _lib.tops_version().decode()


def cpu_isa():
    return _lib.tops_cpu_isa().decode()


def backend_available(backend):
    """(available, reason) for "cpu" or "cuda"."""
    why = ctypes.c_char_p()
    ok = _lib.tops_backend_available(_BACKENDS[backend], ctypes.byref(why))
    return bool(ok), (why.value or b"").decode()


class Context:
    """A tops context: one backend and device, used by one thread at a time."""

    def __init__(self, backend="cpu", device=0, num_threads=0):
        if backend not in _BACKENDS:
            raise Error(C.ERROR_INVALID_ARGUMENT, "unknown backend %r (cpu, cuda, default)" % (backend,))
        self._h = ctypes.c_void_p()
        _check(_lib.tops_context_create(_BACKENDS[backend], device, ctypes.byref(self._h)))
        self.backend, self.device = backend, device
        if num_threads:
            _check(_lib.tops_context_set_num_threads(self._h, num_threads))

    @property
    def handle(self):
        if not self._h:
            raise Error(C.ERROR_NULL_POINTER, "the context is closed")
        return self._h

    def set_stream(self, stream):
        _check(_lib.tops_context_set_stream(self.handle, ctypes.c_void_p(int(stream or 0))))

    def set_num_threads(self, n):
        _check(_lib.tops_context_set_num_threads(self.handle, n))

    def close(self):
        if self._h:
            _lib.tops_context_destroy(self._h)
            self._h = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None):
            self.close()


_local = threading.local()


def _context_for(t, ctx):
    if ctx is not None:
        return ctx
    key = t.device
    cache = getattr(_local, "contexts", None)
    if cache is None:
        cache = _local.contexts = {}
    if key not in cache:
        cache[key] = Context(key[0], key[1])
    return cache[key]


class Plan:
    """A created op bound to its argument tensors; run() executes it (again)."""

    def __init__(self, ctx, create, desc, args, outputs, keep, lead):
        self.ctx, self.lead = ctx, lead
        self._op = ctypes.c_void_p()
        _check(create(ctx.handle, ctypes.byref(desc), ctypes.byref(self._op)))
        self._args = (C.Arg * len(args))(*[C.Arg(k, t.ptr) for k, t in args])
        self._keep = keep
        self.outputs = outputs
        n = ctypes.c_size_t()
        _check(_lib.tops_op_workspace_size(self._op, ctypes.byref(n)))
        self._ws, self._ws_ptr = workspace(lead, n.value)
        self.workspace_bytes = n.value

    @property
    def kernel_name(self):
        return _lib.tops_op_kernel_name(self._op).decode()

    def run(self):
        if not self._op:
            raise Error(C.ERROR_NULL_POINTER, "the plan is closed")
        if self.lead.device[0] == "cuda":
            self.ctx.set_stream(current_stream(self.lead))
        _check(_lib.tops_op_execute(self.ctx.handle, self._op, self._args, len(self._args),
                                    self._ws_ptr, self.workspace_bytes))
        return self.outputs

    __call__ = run

    def close(self):
        if self._op:
            _lib.tops_op_destroy(self._op)
            self._op = ctypes.c_void_p()

    def __del__(self):
        if getattr(self, "_op", None):
            self.close()


def _same_device(ts):
    devs = {t.device for t in ts if t is not None}
    if len(devs) > 1:
        raise Error(C.ERROR_INVALID_ARGUMENT, "tensors on different devices: %s" % sorted(devs))


def _build(op, desc, args, outputs, ctx):
    """args: [(kind, Tensor)] in order; the first is the lead tensor (device, context, allocation)."""
    ts = [t for _, t in args]
    _same_device(ts)
    lead = ts[0]
    ctx = _context_for(lead, ctx)
    create = getattr(_lib, "tops_%s_create" % op)
    return Plan(ctx, create, desc, args, outputs, [t.obj for t in ts] + [t.keep for t in ts], lead)


def _out(lead, out, shape, dtype, name="out"):
    if out is None:
        out = empty_like(lead, shape, dtype)
    return out, view(out, name)


def _opt(x, name):
    return None if x is None else view(x, name)


def _result(outs):
    return outs[0] if len(outs) == 1 else tuple(outs)


# ---------------------------------------------------------------- softmax
def softmax_plan(x, axis=-1, mask=None, lengths=None, scale=1.0, log=False, out=None, ctx=None):
    tx = view(x, "x")
    y, ty = _out(tx, out, tx.shape, tx.dtype)
    d = _lib.tops_softmax_desc_default()
    d.x, d.y, d.axis, d.scale = tx.desc(), ty.desc(), axis, scale
    d.flags = C.SOFTMAX_LOG if log else 0
    args = [(C.ARG_X, tx), (C.ARG_Y, ty)]
    if mask is not None:
        tm = view(mask, "mask")
        d.mask = tm.desc()
        args.append((C.ARG_MASK, tm))
    if lengths is not None:
        tl = view(lengths, "lengths")
        d.lengths = tl.desc()
        args.append((C.ARG_LENGTHS, tl))
    return _build("softmax", d, args, [y], ctx)


def softmax(x, axis=-1, mask=None, lengths=None, scale=1.0, log=False, out=None, ctx=None):
    """softmax(scale * x) along axis; mask (u8, broadcastable, 0 = masked out) and lengths (i32,
    dims[axis] == 1) limit each row; log=True gives log-softmax."""
    return softmax_plan(x, axis, mask, lengths, scale, log, out, ctx).run()[0]


# ---------------------------------------------------------------- transpose
def transpose_plan(x, perm, out=None, ctx=None):
    tx = view(x, "x")
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(tx.shape))):
        raise Error(0x107, "perm %s is not a permutation of 0..%d" % (perm, len(tx.shape) - 1))
    y, ty = _out(tx, out, [tx.shape[p] for p in perm], tx.dtype)
    d = _lib.tops_transpose_desc_default()
    d.x, d.y = tx.desc(), ty.desc()
    for i, p in enumerate(perm):
        d.perm[i] = p
    return _build("transpose", d, [(C.ARG_X, tx), (C.ARG_Y, ty)], [y], ctx)


def transpose(x, perm, out=None, ctx=None):
    """y = x.transpose(perm), written dense (or into out with any strides)."""
    return transpose_plan(x, perm, out, ctx).run()[0]


# ---------------------------------------------------------------- norms
def norm_plan(x, kind, weight=None, bias=None, eps=1e-5, normalized_rank=1, residual=None, add_bias=None,
              return_prenorm=False, return_stats=False, out=None, ctx=None):
    tx = view(x, "x")
    y, ty = _out(tx, out, tx.shape, tx.dtype)
    d = _lib.tops_norm_desc_default()
    d.kind = C.NORM_LAYER if kind == "layer" else C.NORM_RMS
    d.x, d.y, d.normalized_rank, d.eps = tx.desc(), ty.desc(), normalized_rank, eps
    args = [(C.ARG_X, tx), (C.ARG_Y, ty)]
    outs = [y]
    for field, arg, val in (("gamma", C.ARG_GAMMA, weight), ("beta", C.ARG_BETA, bias),
                            ("bias", C.ARG_BIAS, add_bias), ("residual", C.ARG_RESIDUAL, residual)):
        if val is not None:
            t = view(val, field)
            setattr(d, field, t.desc())
            args.append((arg, t))
    if return_prenorm:
        p, tp = _out(tx, None, tx.shape, tx.dtype)
        d.prenorm = tp.desc()
        args.append((C.ARG_PRENORM, tp))
        outs.append(p)
    if return_stats:
        lead = tx.shape[:max(len(tx.shape) - normalized_rank, 0)]
        fields = [("mean", C.ARG_MEAN), ("rstd", C.ARG_RSTD)] if kind == "layer" else [("rstd", C.ARG_RSTD)]
        for field, arg in fields:
            s, ts = _out(tx, None, lead, C.DTYPE_F32)
            setattr(d, field, ts.desc())
            args.append((arg, ts))
            outs.append(s)
    return _build("norm", d, args, outs, ctx)


def layer_norm(x, weight=None, bias=None, eps=1e-5, normalized_rank=1, residual=None, add_bias=None,
               return_prenorm=False, return_stats=False, out=None, ctx=None):
    """LayerNorm over the last normalized_rank dims of s = x [+ add_bias] [+ residual]. Returns y, or
    (y[, prenorm][, mean, rstd]) with return_prenorm / return_stats."""
    return _result(norm_plan(x, "layer", weight, bias, eps, normalized_rank, residual, add_bias,
                             return_prenorm, return_stats, out, ctx).run())


def rms_norm(x, weight=None, eps=1e-5, normalized_rank=1, residual=None, add_bias=None,
             return_prenorm=False, return_stats=False, out=None, ctx=None):
    """RMSNorm over the last normalized_rank dims (see layer_norm); stats are (rstd,)."""
    return _result(norm_plan(x, "rms", weight, None, eps, normalized_rank, residual, add_bias,
                             return_prenorm, return_stats, out, ctx).run())


# ---------------------------------------------------------------- reduce
def reduce_plan(x, op="sum", axis=None, keepdims=False, dtype=None, out=None, ctx=None):
    tx = view(x, "x")
    rank = len(tx.shape)
    if op not in C.REDUCE_OPS:
        raise Error(C.ERROR_INVALID_ARGUMENT, "unknown reduction %r (%s)" % (op, ", ".join(C.REDUCE_OPS)))
    axes = list(range(rank)) if axis is None else [axis] if isinstance(axis, int) else list(axis)
    bits = 0
    for a in axes:
        if not -rank <= a < rank:
            raise Error(0x107, "axis %d out of range for rank %d" % (a, rank))
        bits |= 1 << (a % rank)
    shape = [1 if bits >> i & 1 else n for i, n in enumerate(tx.shape)]
    if not keepdims:
        shape = [n for i, n in enumerate(tx.shape) if not bits >> i & 1]
    y, ty = _out(tx, out, shape, tx.dtype if dtype is None else _dtype_code(dtype))
    d = _lib.tops_reduce_desc_default()
    d.op, d.x, d.y, d.axes, d.keepdims = C.REDUCE_OPS[op], tx.desc(), ty.desc(), bits, int(bool(keepdims))
    return _build("reduce", d, [(C.ARG_X, tx), (C.ARG_Y, ty)], [y], ctx)


def _dtype_code(dtype):
    names = {"float32": C.DTYPE_F32, "f32": C.DTYPE_F32, "float16": C.DTYPE_F16, "f16": C.DTYPE_F16,
             "bfloat16": C.DTYPE_BF16, "bf16": C.DTYPE_BF16}
    key = str(dtype).replace("torch.", "")
    if key not in names:
        try:
            import numpy
            key = numpy.dtype(dtype).name
        except TypeError:
            pass
    if key not in names:
        raise Error(C.ERROR_BAD_DTYPE, "unsupported output dtype %r" % (dtype,))
    return names[key]


def reduce(x, op="sum", axis=None, keepdims=False, dtype=None, out=None, ctx=None):
    """op in sum, mean, max, min, prod, sumsq, norm2 over axis (int, tuple, None = all)."""
    return reduce_plan(x, op, axis, keepdims, dtype, out, ctx).run()[0]


# ---------------------------------------------------------------- elementwise
def _act(act):
    if act not in C.ACTIVATIONS:
        raise Error(C.ERROR_INVALID_ARGUMENT, "unknown activation %r (relu, gelu, gelu_tanh, silu)" % (act,))
    return C.ACTIVATIONS[act]


def bias_act_plan(x, bias=None, act="relu", out=None, ctx=None):
    tx = view(x, "x")
    y, ty = _out(tx, out, tx.shape, tx.dtype)
    d = _lib.tops_bias_act_desc_default()
    d.x, d.y, d.act = tx.desc(), ty.desc(), _act(act)
    args = [(C.ARG_X, tx), (C.ARG_Y, ty)]
    if bias is not None:
        tb = view(bias, "bias")
        d.bias = tb.desc()
        args.append((C.ARG_BIAS, tb))
    return _build("bias_act", d, args, [y], ctx)


def bias_act(x, bias=None, act="relu", out=None, ctx=None):
    """y = act(x + bias); bias broadcastable (same rank, dims equal or 1)."""
    return bias_act_plan(x, bias, act, out, ctx).run()[0]


def prelu_plan(x, slope, out=None, ctx=None):
    tx, ts = view(x, "x"), view(slope, "slope")
    y, ty = _out(tx, out, tx.shape, tx.dtype)
    d = _lib.tops_prelu_desc_default()
    d.x, d.slope, d.y = tx.desc(), ts.desc(), ty.desc()
    return _build("prelu", d, [(C.ARG_X, tx), (C.ARG_Y, ty), (C.ARG_SLOPE, ts)], [y], ctx)


def prelu(x, slope, out=None, ctx=None):
    """y = x > 0 ? x : slope * x; slope broadcastable (same rank, dims equal or 1)."""
    return prelu_plan(x, slope, out, ctx).run()[0]


def weighted_sum_plan(inputs, coefs=None, out=None, ctx=None):
    ts = [view(x, "inputs[%d]" % i) for i, x in enumerate(inputs)]
    if not 1 <= len(ts) <= C.MAX_SUM_INPUTS:
        raise Error(C.ERROR_INVALID_ARGUMENT, "weighted_sum takes 1..%d inputs, got %d"
                    % (C.MAX_SUM_INPUTS, len(ts)))
    coefs = [1.0] * len(ts) if coefs is None else list(coefs)
    if len(coefs) != len(ts):
        raise Error(C.ERROR_INVALID_ARGUMENT, "%d coefs for %d inputs" % (len(coefs), len(ts)))
    shape = [max(dims) for dims in zip(*[t.shape for t in ts])] if len({len(t.shape) for t in ts}) == 1 \
        else ts[0].shape
    y, ty = _out(ts[0], out, shape, ts[0].dtype)
    d = _lib.tops_weighted_sum_desc_default()
    d.num_inputs, d.y = len(ts), ty.desc()
    args = [(C.ARG_Y, ty)]
    for i, (t, c) in enumerate(zip(ts, coefs)):
        d.inputs[i], d.coefs[i] = t.desc(), c
        args.append((C.ARG_INPUT0 + i, t))
    return _build("weighted_sum", d, args, [y], ctx)


def weighted_sum(inputs, coefs=None, out=None, ctx=None):
    """y = sum_i coefs[i] * inputs[i] (inputs broadcast to y)."""
    return weighted_sum_plan(inputs, coefs, out, ctx).run()[0]


# ---------------------------------------------------------------- gemm
def gemm_plan(a, b, c=None, bias=None, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, act=None,
              allow_tf32=False, out_dtype=None, out=None, ctx=None):
    ta, tb = view(a, "a"), view(b, "b")
    if len(ta.shape) not in (2, 3) or len(tb.shape) not in (2, 3):
        raise Error(0x104, "gemm: a and b must have rank 2 or 3, got %d and %d" % (len(ta.shape), len(tb.shape)))
    m = ta.shape[-1] if trans_a else ta.shape[-2]
    n = tb.shape[-2] if trans_b else tb.shape[-1]
    shape = [m, n]
    if len(ta.shape) == 3 or len(tb.shape) == 3:
        batch = max(t.shape[0] if len(t.shape) == 3 else 1 for t in (ta, tb))
        shape = [batch, m, n]
    dt = ta.dtype if out_dtype is None else _dtype_code(out_dtype)
    d_, td = _out(ta, out, shape, dt)
    g = _lib.tops_gemm_desc_default()
    g.a, g.b, g.d = ta.desc(), tb.desc(), td.desc()
    g.trans_a, g.trans_b, g.alpha, g.beta, g.act = int(bool(trans_a)), int(bool(trans_b)), alpha, beta, _act(act)
    g.flags = C.GEMM_ALLOW_TF32 if allow_tf32 else 0
    args = [(C.ARG_A, ta), (C.ARG_B, tb), (C.ARG_D, td)]
    if c is not None:
        tc = view(c, "c")
        g.c = tc.desc()
        args.append((C.ARG_C, tc))
    if bias is not None:
        tbias = view(bias, "bias")
        g.bias = tbias.desc()
        args.append((C.ARG_BIAS, tbias))
    return _build("gemm", g, args, [d_], ctx)


def gemm(a, b, c=None, bias=None, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, act=None,
         allow_tf32=False, out_dtype=None, out=None, ctx=None):
    """D = act(alpha * op(a) @ op(b) + beta * c + bias); a linear layer is gemm(x, w, trans_b=True, bias=b)."""
    return gemm_plan(a, b, c, bias, trans_a, trans_b, alpha, beta, act, allow_tf32, out_dtype, out, ctx).run()[0]


# ---------------------------------------------------------------- attention
def attention_plan(q, k, v, causal=True, scale=None, window=(-1, -1), seqlens_k=None, cu_seqlens_q=None,
                   cu_seqlens_k=None, max_seqlen_q=0, max_seqlen_k=0, return_lse=False, out=None, ctx=None):
    tq, tk, tv = view(q, "q"), view(k, "k"), view(v, "v")
    o, to = _out(tq, out, tq.shape, tq.dtype)
    d = _lib.tops_attention_desc_default()
    d.q, d.k, d.v, d.o = tq.desc(), tk.desc(), tv.desc(), to.desc()
    d.scale = 0.0 if scale is None else scale
    d.flags = C.ATTN_CAUSAL if causal else 0
    d.window_left, d.window_right = window
    d.max_seqlen_q, d.max_seqlen_k = max_seqlen_q, max_seqlen_k
    args = [(C.ARG_Q, tq), (C.ARG_K, tk), (C.ARG_V, tv), (C.ARG_O, to)]
    outs = [o]
    for field, arg, val in (("seqlens_k", C.ARG_SEQLENS_K, seqlens_k),
                            ("cu_seqlens_q", C.ARG_CU_SEQLENS_Q, cu_seqlens_q),
                            ("cu_seqlens_k", C.ARG_CU_SEQLENS_K, cu_seqlens_k)):
        if val is not None:
            t = view(val, field)
            setattr(d, field, t.desc())
            args.append((arg, t))
    if return_lse:
        if cu_seqlens_q is not None:
            shape = [tq.shape[1], tq.shape[0]]
        else:
            shape = [tq.shape[0], tq.shape[2], tq.shape[1]]
        lse, tl = _out(tq, None, shape, C.DTYPE_F32)
        d.lse = tl.desc()
        args.append((C.ARG_LSE, tl))
        outs.append(lse)
    return _build("attention", d, args, outs, ctx)


def attention(q, k, v, causal=True, scale=None, window=(-1, -1), seqlens_k=None, cu_seqlens_q=None,
              cu_seqlens_k=None, max_seqlen_q=0, max_seqlen_k=0, return_lse=False, out=None, ctx=None):
    """O = softmax(scale * Q K^T [causal, window]) V with Q, O [B, Sq, H, D] and K, V [B, Sk, Hk, D]
    (or packed varlen with cu_seqlens_*). Returns O, or (O, LSE) with return_lse."""
    return _result(attention_plan(q, k, v, causal, scale, window, seqlens_k, cu_seqlens_q, cu_seqlens_k,
                                  max_seqlen_q, max_seqlen_k, return_lse, out, ctx).run())
