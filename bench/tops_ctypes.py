"""The one ctypes loader of libtops.so for the PyTorch comparison scripts.

Mirrors the descriptor structs of include/tops/tops.h (C API only) and wraps
each op's create call in a method that takes torch tensors (their dims,
strides and data pointers), and returns a runner: a callable that executes
the op on the context's stream (torch's current stream), with .kernel (the
kernel name tops chose) and the workspace kept alive beside it.

Adding an op: its desc struct below (fields in the header's order), its arg
tags, one method on Tops that fills the desc and calls _make.
"""
import ctypes
import math

import torch

MAX_RANK = 8
MAX_SUM_INPUTS = 8
DT = {torch.float32: 1, torch.float16: 2, torch.bfloat16: 3, torch.int32: 4, torch.uint8: 6}
BACKEND_CUDA = 2

# tops_arg_kind_t
ARG_X, ARG_Y, ARG_MASK, ARG_LENGTHS = 1, 2, 3, 4
ARG_GAMMA, ARG_BETA, ARG_BIAS, ARG_RESIDUAL, ARG_PRENORM, ARG_MEAN, ARG_RSTD, ARG_SLOPE = 5, 6, 7, 8, 9, 10, 11, 12
ARG_INPUT0 = 16
ARG_A, ARG_B, ARG_C, ARG_D = 24, 25, 26, 27
ARG_Q, ARG_K, ARG_V, ARG_O, ARG_LSE, ARG_SEQLENS_K, ARG_CU_SEQLENS_Q, ARG_CU_SEQLENS_K = 28, 29, 30, 31, 32, 33, 34, 35
ARG_W = 36
ARG_CU_SEQLENS = 40

SOFTMAX_LOG = 1
NORM_LAYER, NORM_RMS = 0, 1
REDUCE_OPS = {"sum": 0, "mean": 1, "max": 2, "min": 3, "prod": 4, "sumsq": 5, "norm2": 6}
ACTS = {"none": 0, "relu": 1, "gelu_erf": 2, "gelu_tanh": 3, "silu": 4}
ACT_GELU_ERF, ACT_GELU_TANH = ACTS["gelu_erf"], ACTS["gelu_tanh"]
GEMM_ALLOW_TF32 = 1
CONV_NCHW, CONV_NHWC, CONV_FILTER_KCRS, CONV_FILTER_KRSC, CONV_ALLOW_TF32 = 0, 1, 0, 1, 1
ATTN_CAUSAL = 1


class TensorDesc(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_int64 * MAX_RANK), ("strides", ctypes.c_int64 * MAX_RANK)]


class Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("ptr", ctypes.c_void_p)]


class SoftmaxDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("x", TensorDesc), ("y", TensorDesc),
                ("axis", ctypes.c_int32), ("scale", ctypes.c_float), ("flags", ctypes.c_uint32),
                ("mask", TensorDesc), ("lengths", TensorDesc)]


class TransposeDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("x", TensorDesc), ("y", TensorDesc),
                ("perm", ctypes.c_int32 * MAX_RANK)]


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
    _fields_ = [("struct_size", ctypes.c_uint32), ("num_inputs", ctypes.c_int32),
                ("inputs", TensorDesc * MAX_SUM_INPUTS), ("coefs", ctypes.c_float * MAX_SUM_INPUTS),
                ("y", TensorDesc)]


class GemmDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("a", TensorDesc), ("b", TensorDesc), ("c", TensorDesc),
                ("d", TensorDesc), ("bias", TensorDesc), ("trans_a", ctypes.c_int32), ("trans_b", ctypes.c_int32),
                ("alpha", ctypes.c_float), ("beta", ctypes.c_float), ("act", ctypes.c_int),
                ("flags", ctypes.c_uint32)]


class AttentionDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("q", TensorDesc), ("k", TensorDesc), ("v", TensorDesc),
                ("o", TensorDesc), ("lse", TensorDesc), ("seqlens_k", TensorDesc), ("cu_seqlens_q", TensorDesc),
                ("cu_seqlens_k", TensorDesc), ("max_seqlen_q", ctypes.c_int32), ("max_seqlen_k", ctypes.c_int32),
                ("scale", ctypes.c_float), ("flags", ctypes.c_uint32), ("window_left", ctypes.c_int32),
                ("window_right", ctypes.c_int32)]


class PadDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("padded", TensorDesc), ("packed", TensorDesc),
                ("lengths", TensorDesc), ("cu_seqlens", TensorDesc)]


# op name -> desc struct returned by tops_<name>_desc_default()
class Conv2dDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("layout", ctypes.c_int), ("filter_layout", ctypes.c_int),
                ("x", TensorDesc), ("w", TensorDesc), ("bias", TensorDesc), ("residual", TensorDesc),
                ("y", TensorDesc), ("stride_h", ctypes.c_int32), ("stride_w", ctypes.c_int32),
                ("pad_top", ctypes.c_int32), ("pad_bottom", ctypes.c_int32), ("pad_left", ctypes.c_int32),
                ("pad_right", ctypes.c_int32), ("dilation_h", ctypes.c_int32), ("dilation_w", ctypes.c_int32),
                ("groups", ctypes.c_int32), ("act", ctypes.c_int), ("flags", ctypes.c_uint32)]


DESCS = {"conv2d": Conv2dDesc, "softmax": SoftmaxDesc, "transpose": TransposeDesc, "norm": NormDesc, "reduce": ReduceDesc,
         "bias_act": BiasActDesc, "prelu": PreluDesc, "weighted_sum": WeightedSumDesc, "gemm": GemmDesc,
         "attention": AttentionDesc, "pad": PadDesc}


class Tops:
    """A CUDA context of libtops.so on torch's current device and stream."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        L = self.lib
        L.tops_last_error.restype = ctypes.c_char_p
        for name, desc in DESCS.items():
            getattr(L, "tops_%s_desc_default" % name).restype = desc
        L.tops_op_workspace_size.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        L.tops_op_kernel_name.restype = ctypes.c_char_p
        L.tops_op_kernel_name.argtypes = [ctypes.c_void_p]
        L.tops_op_destroy.argtypes = [ctypes.c_void_p]
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

    def _make(self, name, d, args):
        """Creates the op (tops_<name>_create) and returns its runner."""
        L = self.lib
        op = ctypes.c_void_p()
        self.check(getattr(L, "tops_%s_create" % name)(self.ctx, ctypes.byref(d), ctypes.byref(op)))
        ws_bytes = ctypes.c_size_t(0)
        self.check(L.tops_op_workspace_size(op, ctypes.byref(ws_bytes)))
        ws = torch.empty(max(ws_bytes.value, 1), dtype=torch.uint8, device="cuda")
        ws_ptr = ctypes.c_void_p(ws.data_ptr()) if ws_bytes.value else None
        arr = (Arg * len(args))(*args)

        def run():
            self.check(L.tops_op_execute(self.ctx, op, arr, len(args), ws_ptr, ws_bytes.value))
        run.kernel = L.tops_op_kernel_name(op).decode()
        run.keep = (ws, op, arr)
        return run

    def _optional(self, d, args, named):
        """Sets each (field, arg tag, tensor) whose tensor is not None."""
        for field, tag, t in named:
            if t is not None:
                setattr(d, field, self.desc(t))
                args.append(Arg(tag, t.data_ptr()))

    # ------------------------------------------------------------------ ops
    def softmax(self, x, y, scale=1.0, mask=None, log=False, axis=-1, lengths=None):
        d = self.lib.tops_softmax_desc_default()
        d.x, d.y, d.axis, d.scale = self.desc(x), self.desc(y), axis, scale
        d.flags = SOFTMAX_LOG if log else 0
        args = [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr())]
        self._optional(d, args, (("mask", ARG_MASK, mask), ("lengths", ARG_LENGTHS, lengths)))
        return self._make("softmax", d, args)

    def transpose(self, x, y, perm):
        d = self.lib.tops_transpose_desc_default()
        d.x, d.y = self.desc(x), self.desc(y)
        for i, p in enumerate(perm):
            d.perm[i] = p
        return self._make("transpose", d, [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr())])

    def norm(self, x, y, rms=False, k=1, eps=1e-5, gamma=None, beta=None, bias=None, residual=None,
             prenorm=None, mean=None, rstd=None):
        d = self.lib.tops_norm_desc_default()
        d.kind = NORM_RMS if rms else NORM_LAYER
        d.x, d.y, d.normalized_rank, d.eps = self.desc(x), self.desc(y), k, eps
        args = [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr())]
        self._optional(d, args, (("gamma", ARG_GAMMA, gamma), ("beta", ARG_BETA, beta), ("bias", ARG_BIAS, bias),
                                 ("residual", ARG_RESIDUAL, residual), ("prenorm", ARG_PRENORM, prenorm),
                                 ("mean", ARG_MEAN, mean), ("rstd", ARG_RSTD, rstd)))
        return self._make("norm", d, args)

    def reduce(self, x, y, op, axes, keepdims):
        d = self.lib.tops_reduce_desc_default()
        d.op, d.x, d.y, d.keepdims = REDUCE_OPS[op], self.desc(x), self.desc(y), int(keepdims)
        d.axes = sum(1 << a for a in axes)
        return self._make("reduce", d, [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr())])

    def bias_act(self, x, y, act, bias=None):
        d = self.lib.tops_bias_act_desc_default()
        d.x, d.y, d.act = self.desc(x), self.desc(y), ACTS[act]
        args = [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr())]
        self._optional(d, args, (("bias", ARG_BIAS, bias),))
        return self._make("bias_act", d, args)

    def prelu(self, x, slope, y):
        d = self.lib.tops_prelu_desc_default()
        d.x, d.slope, d.y = self.desc(x), self.desc(slope), self.desc(y)
        return self._make("prelu", d, [Arg(ARG_X, x.data_ptr()), Arg(ARG_Y, y.data_ptr()),
                                       Arg(ARG_SLOPE, slope.data_ptr())])

    def weighted_sum(self, inputs, coefs, y):
        d = self.lib.tops_weighted_sum_desc_default()
        d.num_inputs, d.y = len(inputs), self.desc(y)
        args = [Arg(ARG_Y, y.data_ptr())]
        for i, (t, c) in enumerate(zip(inputs, coefs)):
            d.inputs[i] = self.desc(t)
            d.coefs[i] = c
            args.append(Arg(ARG_INPUT0 + i, t.data_ptr()))
        return self._make("weighted_sum", d, args)

    def gemm(self, a, b, d, bias=None, act=0, trans_b=False, tf32=False):
        """D = act(op(a) @ op(b) + bias); b is [N, K] with trans_b (a linear layer's weight)."""
        g = self.lib.tops_gemm_desc_default()
        g.a, g.b, g.d, g.trans_b, g.act = self.desc(a), self.desc(b), self.desc(d), int(trans_b), act
        g.flags = GEMM_ALLOW_TF32 if tf32 else 0
        args = [Arg(ARG_A, a.data_ptr()), Arg(ARG_B, b.data_ptr()), Arg(ARG_D, d.data_ptr())]
        self._optional(g, args, (("bias", ARG_BIAS, bias),))
        return self._make("gemm", g, args)

    def attention(self, q, k, v, o, causal=False, scale=0.0, lse=None, seqlens_k=None, cu_seqlens_q=None,
                  cu_seqlens_k=None, max_seqlen_q=0, max_seqlen_k=0, window=(-1, -1)):
        """Padded q, o [B, Sq, H, D], k, v [B, Sk, Hk, D] (any strides), or varlen with cu_seqlens."""
        d = self.lib.tops_attention_desc_default()
        d.q, d.k, d.v, d.o = self.desc(q), self.desc(k), self.desc(v), self.desc(o)
        d.scale, d.flags = scale, ATTN_CAUSAL if causal else 0
        d.max_seqlen_q, d.max_seqlen_k = max_seqlen_q, max_seqlen_k
        d.window_left, d.window_right = window
        args = [Arg(ARG_Q, q.data_ptr()), Arg(ARG_K, k.data_ptr()), Arg(ARG_V, v.data_ptr()),
                Arg(ARG_O, o.data_ptr())]
        self._optional(d, args, (("lse", ARG_LSE, lse), ("seqlens_k", ARG_SEQLENS_K, seqlens_k),
                                 ("cu_seqlens_q", ARG_CU_SEQLENS_Q, cu_seqlens_q),
                                 ("cu_seqlens_k", ARG_CU_SEQLENS_K, cu_seqlens_k)))
        return self._make("attention", d, args)

    def conv2d(self, x, w, y, stride=(1, 1), pad=(0, 0, 0, 0), dilation=(1, 1), groups=1, bias=None, residual=None,
               act="none", nhwc=False, krsc=False, tf32=False):
        """x, y, residual in NHWC dims order with nhwc (else NCHW), w in KRSC with krsc (else KCRS); any strides.
        pad = (top, bottom, left, right)."""
        d = self.lib.tops_conv2d_desc_default()
        d.layout, d.filter_layout = CONV_NHWC if nhwc else CONV_NCHW, CONV_FILTER_KRSC if krsc else CONV_FILTER_KCRS
        d.x, d.w, d.y = self.desc(x), self.desc(w), self.desc(y)
        d.stride_h, d.stride_w = stride
        d.pad_top, d.pad_bottom, d.pad_left, d.pad_right = pad
        d.dilation_h, d.dilation_w = dilation
        d.groups, d.act, d.flags = groups, ACTS[act], CONV_ALLOW_TF32 if tf32 else 0
        args = [Arg(ARG_X, x.data_ptr()), Arg(ARG_W, w.data_ptr()), Arg(ARG_Y, y.data_ptr())]
        self._optional(d, args, (("bias", ARG_BIAS, bias), ("residual", ARG_RESIDUAL, residual)))
        return self._make("conv2d", d, args)

    def unpad(self, padded, packed, lengths, cu_seqlens):
        """padded [B, S, F...] -> packed [total, F...] rows of the lengths (i32 [B]); writes cu_seqlens (i32 [B+1])."""
        d = self.lib.tops_pad_desc_default()
        d.padded, d.packed = self.desc(padded), self.desc(packed)
        d.lengths, d.cu_seqlens = self.desc(lengths), self.desc(cu_seqlens)
        return self._make("unpad", d, [Arg(ARG_X, padded.data_ptr()), Arg(ARG_Y, packed.data_ptr()),
                                       Arg(ARG_LENGTHS, lengths.data_ptr()),
                                       Arg(ARG_CU_SEQLENS, cu_seqlens.data_ptr())])

    def pad(self, packed, padded, cu_seqlens):
        """packed [total, F...] -> padded [B, S, F...] by cu_seqlens (i32 [B+1]); padding rows set to 0."""
        d = self.lib.tops_pad_desc_default()
        d.padded, d.packed, d.cu_seqlens = self.desc(padded), self.desc(packed), self.desc(cu_seqlens)
        return self._make("pad", d, [Arg(ARG_X, packed.data_ptr()), Arg(ARG_Y, padded.data_ptr()),
                                     Arg(ARG_CU_SEQLENS, cu_seqlens.data_ptr())])


def rel_err(a, b):
    """Relative Frobenius error of a against b over b's finite elements (inf when the finite sets differ).

    b's norm counts as at least that of its elements all at the smallest normal value of a's dtype: an
    output in that dtype's subnormal range is stored to a fixed absolute step (f16: 6e-8, 3% of a value
    of 1e-6, however exact the math before the rounding), so a case of a few such outputs is judged by
    that step, not by their own size."""
    tiny = torch.finfo(a.dtype).tiny if a.dtype.is_floating_point else 0.0
    a, b = a.double(), b.double()
    finite = torch.isfinite(b)
    if not torch.equal(torch.isfinite(a), finite):
        return float("inf")
    floor = max(tiny * math.sqrt(int(finite.sum())), 1e-30)
    return ((a[finite] - b[finite]).norm() / b[finite].norm().clamp_min(floor)).item()
