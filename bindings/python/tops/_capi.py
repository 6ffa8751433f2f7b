"""ctypes declarations of include/tops/tops.h and the loader of libtops.

Kept in the header's order so a field added there is easy to mirror here.
"""
import ctypes
import os
from pathlib import Path

MAX_RANK = 8
MAX_SUM_INPUTS = 8

# tops_status_t
SUCCESS = 0
STATUS_NAMES = {
    0x000: "TOPS_SUCCESS", 0x100: "TOPS_ERROR_INVALID_ARGUMENT", 0x101: "TOPS_ERROR_NULL_POINTER",
    0x102: "TOPS_ERROR_BAD_STRUCT_SIZE", 0x103: "TOPS_ERROR_BAD_DTYPE", 0x104: "TOPS_ERROR_BAD_RANK",
    0x105: "TOPS_ERROR_BAD_SHAPE", 0x106: "TOPS_ERROR_BAD_STRIDE", 0x107: "TOPS_ERROR_BAD_AXIS",
    0x108: "TOPS_ERROR_MISSING_ARGUMENT", 0x109: "TOPS_ERROR_UNKNOWN_ARGUMENT",
    0x10A: "TOPS_ERROR_WORKSPACE_TOO_SMALL", 0x10B: "TOPS_ERROR_CONTEXT_MISMATCH",
    0x200: "TOPS_ERROR_NOT_SUPPORTED", 0x201: "TOPS_ERROR_BACKEND_UNAVAILABLE",
    0x300: "TOPS_ERROR_OUT_OF_MEMORY", 0x400: "TOPS_ERROR_DEVICE", 0x401: "TOPS_ERROR_DEVICE_LAUNCH",
    0x500: "TOPS_ERROR_INTERNAL",
}
ERROR_INVALID_ARGUMENT = 0x100
ERROR_NULL_POINTER = 0x101
ERROR_BAD_DTYPE = 0x103
ERROR_BAD_SHAPE = 0x105
ERROR_NOT_SUPPORTED = 0x200
ERROR_BACKEND_UNAVAILABLE = 0x201

# tops_dtype_t
DTYPE_INVALID, DTYPE_F32, DTYPE_F16, DTYPE_BF16, DTYPE_I32, DTYPE_I8, DTYPE_U8 = range(7)
# tops_backend_t
BACKEND_DEFAULT, BACKEND_CPU, BACKEND_CUDA = range(3)
# tops_arg_kind_t
ARG_X, ARG_Y, ARG_MASK, ARG_LENGTHS, ARG_GAMMA, ARG_BETA, ARG_BIAS = 1, 2, 3, 4, 5, 6, 7
ARG_RESIDUAL, ARG_PRENORM, ARG_MEAN, ARG_RSTD, ARG_SLOPE = 8, 9, 10, 11, 12
ARG_INPUT0 = 16
ARG_A, ARG_B, ARG_C, ARG_D = 24, 25, 26, 27
ARG_Q, ARG_K, ARG_V, ARG_O, ARG_LSE = 28, 29, 30, 31, 32
ARG_SEQLENS_K, ARG_CU_SEQLENS_Q, ARG_CU_SEQLENS_K = 33, 34, 35
SOFTMAX_LOG = 1
NORM_LAYER, NORM_RMS = 0, 1
REDUCE_OPS = {"sum": 0, "mean": 1, "max": 2, "min": 3, "prod": 4, "sumsq": 5, "norm2": 6}
ACTIVATIONS = {None: 0, "none": 0, "relu": 1, "gelu": 2, "gelu_erf": 2, "gelu_tanh": 3, "silu": 4}
GEMM_ALLOW_TF32 = 1
ATTN_CAUSAL = 1

c_enum = ctypes.c_int


class TensorDesc(ctypes.Structure):
    _fields_ = [("dtype", c_enum), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_int64 * MAX_RANK), ("strides", ctypes.c_int64 * MAX_RANK)]


class Arg(ctypes.Structure):
    _fields_ = [("kind", c_enum), ("ptr", ctypes.c_void_p)]


class SoftmaxDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("x", TensorDesc), ("y", TensorDesc),
                ("axis", ctypes.c_int32), ("scale", ctypes.c_float), ("flags", ctypes.c_uint32),
                ("mask", TensorDesc), ("lengths", TensorDesc)]


class TransposeDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("x", TensorDesc), ("y", TensorDesc),
                ("perm", ctypes.c_int32 * MAX_RANK)]


class NormDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("kind", c_enum), ("x", TensorDesc), ("y", TensorDesc),
                ("normalized_rank", ctypes.c_int32), ("eps", ctypes.c_float),
                ("gamma", TensorDesc), ("beta", TensorDesc), ("bias", TensorDesc),
                ("residual", TensorDesc), ("prenorm", TensorDesc), ("mean", TensorDesc),
                ("rstd", TensorDesc)]


class ReduceDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("op", c_enum), ("x", TensorDesc), ("y", TensorDesc),
                ("axes", ctypes.c_uint32), ("keepdims", ctypes.c_int32)]


class BiasActDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("x", TensorDesc), ("bias", TensorDesc),
                ("y", TensorDesc), ("act", c_enum)]


class PreluDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("x", TensorDesc), ("slope", TensorDesc),
                ("y", TensorDesc)]


class WeightedSumDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("num_inputs", ctypes.c_int32),
                ("inputs", TensorDesc * MAX_SUM_INPUTS), ("coefs", ctypes.c_float * MAX_SUM_INPUTS),
                ("y", TensorDesc)]


class GemmDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("a", TensorDesc), ("b", TensorDesc), ("c", TensorDesc),
                ("d", TensorDesc), ("bias", TensorDesc), ("trans_a", ctypes.c_int32),
                ("trans_b", ctypes.c_int32), ("alpha", ctypes.c_float), ("beta", ctypes.c_float),
                ("act", c_enum), ("flags", ctypes.c_uint32)]


class AttentionDesc(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("q", TensorDesc), ("k", TensorDesc), ("v", TensorDesc),
                ("o", TensorDesc), ("lse", TensorDesc), ("seqlens_k", TensorDesc),
                ("cu_seqlens_q", TensorDesc), ("cu_seqlens_k", TensorDesc),
                ("max_seqlen_q", ctypes.c_int32), ("max_seqlen_k", ctypes.c_int32),
                ("scale", ctypes.c_float), ("flags", ctypes.c_uint32),
                ("window_left", ctypes.c_int32), ("window_right", ctypes.c_int32)]


OP_DESCS = {"softmax": SoftmaxDesc, "transpose": TransposeDesc, "norm": NormDesc, "reduce": ReduceDesc,
            "bias_act": BiasActDesc, "prelu": PreluDesc, "weighted_sum": WeightedSumDesc,
            "gemm": GemmDesc, "attention": AttentionDesc}


def _candidates():
    env = os.environ.get("TOPS_LIB")
    if env:
        yield Path(env)
        return
    root = Path(__file__).resolve().parents[3]
    for build in ["build", "build-cpu", "build-bind"]:
        yield root / build / "libtops.so"
    yield Path("libtops.so.0")  # the system's search path (an installed package)


def _declare(lib):
    P = ctypes.POINTER
    vp, sz, cs = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p
    sigs = {
        "tops_version": (cs, []), "tops_version_number": (ctypes.c_int, []),
        "tops_status_string": (cs, [c_enum]), "tops_last_error": (cs, []),
        "tops_dtype_size": (sz, [c_enum]), "tops_dtype_name": (cs, [c_enum]),
        "tops_tensor_desc_init": (c_enum, [P(TensorDesc), c_enum, ctypes.c_int32, P(ctypes.c_int64),
                                           P(ctypes.c_int64)]),
        "tops_backend_name": (cs, [c_enum]),
        "tops_backend_available": (ctypes.c_int, [c_enum, P(cs)]),
        "tops_cpu_isa": (cs, []),
        "tops_context_create": (c_enum, [c_enum, ctypes.c_int, P(vp)]),
        "tops_context_destroy": (c_enum, [vp]),
        "tops_context_get_backend": (c_enum, [vp, P(c_enum)]),
        "tops_context_set_stream": (c_enum, [vp, vp]),
        "tops_context_set_num_threads": (c_enum, [vp, ctypes.c_int]),
        "tops_op_workspace_size": (c_enum, [vp, P(sz)]),
        "tops_op_kernel_name": (cs, [vp]),
        "tops_op_execute": (c_enum, [vp, vp, P(Arg), sz, vp, sz]),
        "tops_op_destroy": (c_enum, [vp]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    for op, desc in OP_DESCS.items():
        d = getattr(lib, "tops_%s_desc_default" % op)
        d.restype, d.argtypes = desc, []
        c = getattr(lib, "tops_%s_create" % op)
        c.restype, c.argtypes = c_enum, [vp, P(desc), P(vp)]
    return lib


def load():
    """Open libtops: $TOPS_LIB, else the repository's CMake build tree, else the system's."""
    tried = []
    for path in _candidates():
        if path.is_absolute() and not path.exists():
            tried.append(str(path))
            continue
        try:
            return _declare(ctypes.CDLL(str(path)))
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("tops: libtops.so not found; set TOPS_LIB to its path. Tried: " + ", ".join(tried))


lib = load()
