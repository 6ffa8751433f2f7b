"""Views of caller arrays as tops tensor descriptors, without copies.

CPU: numpy arrays. CUDA: torch tensors, objects with __cuda_array_interface__
(CuPy, Numba) or DLPack capsules' producers (__dlpack__).
"""
import ctypes

from . import _capi as C

_NUMPY_DTYPES = {"float32": C.DTYPE_F32, "float16": C.DTYPE_F16, "bfloat16": C.DTYPE_BF16,
                 "int32": C.DTYPE_I32, "int8": C.DTYPE_I8, "uint8": C.DTYPE_U8, "bool": C.DTYPE_U8}
_TYPESTRS = {"f4": C.DTYPE_F32, "f2": C.DTYPE_F16, "i4": C.DTYPE_I32, "i1": C.DTYPE_I8, "u1": C.DTYPE_U8,
             "b1": C.DTYPE_U8}
# DLPack type codes: (code, bits) -> dtype
_DLPACK_DTYPES = {(2, 32): C.DTYPE_F32, (2, 16): C.DTYPE_F16, (4, 16): C.DTYPE_BF16, (0, 32): C.DTYPE_I32,
                  (0, 8): C.DTYPE_I8, (1, 8): C.DTYPE_U8, (6, 8): C.DTYPE_U8}
_DL_CPU, _DL_CUDA = 1, 2


class Error(ValueError):
    """A tops call failed: .status is the tops_status_t code, .status_name its name, .message the text."""

    def __init__(self, status, message):
        self.status = int(status)
        self.status_name = C.STATUS_NAMES.get(self.status, "TOPS_STATUS_0x%x" % self.status)
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message))


class Tensor:
    """A borrowed strided view: data pointer, tops dtype, dims, element strides, device."""
    __slots__ = ("ptr", "dtype", "shape", "strides", "device", "obj", "keep")

    def __init__(self, ptr, dtype, shape, strides, device, obj, keep=None):
        self.ptr, self.dtype, self.shape, self.strides = ptr, dtype, tuple(shape), tuple(strides)
        self.device, self.obj, self.keep = device, obj, keep

    def desc(self):
        d = C.TensorDesc()
        if len(self.shape) > C.MAX_RANK:
            raise Error(0x104, "rank %d exceeds %d" % (len(self.shape), C.MAX_RANK))
        d.dtype, d.rank = self.dtype, len(self.shape)
        for i, (n, s) in enumerate(zip(self.shape, self.strides)):
            d.dims[i], d.strides[i] = n, s
        return d


def _is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _from_torch(x):
    import torch
    dt = {torch.float32: C.DTYPE_F32, torch.float16: C.DTYPE_F16, torch.bfloat16: C.DTYPE_BF16,
          torch.int32: C.DTYPE_I32, torch.int8: C.DTYPE_I8, torch.uint8: C.DTYPE_U8,
          torch.bool: C.DTYPE_U8}.get(x.dtype)
    if dt is None:
        raise Error(C.ERROR_BAD_DTYPE, "torch dtype %s is not supported" % x.dtype)
    dev = ("cuda", x.device.index or 0) if x.is_cuda else ("cpu", 0)
    return Tensor(x.data_ptr(), dt, x.shape, x.stride(), dev, x)


def _from_numpy(x):
    name = x.dtype.name
    if name not in _NUMPY_DTYPES:
        raise Error(C.ERROR_BAD_DTYPE, "numpy dtype %s is not supported" % name)
    item = x.dtype.itemsize
    if any(s % item for s in x.strides):
        raise Error(0x106, "array strides %s are not multiples of the element size" % (x.strides,))
    strides = [s // item for s in x.strides]
    if any(s < 0 for s in strides):
        raise Error(0x106, "negative strides %s are not supported; pass a copy" % (x.strides,))
    return Tensor(x.ctypes.data, _NUMPY_DTYPES[name], x.shape, strides, ("cpu", 0), x)


def _from_cai(x):
    cai = x.__cuda_array_interface__
    typestr = cai["typestr"]
    dt = _TYPESTRS.get(typestr[1:])
    if dt is None:
        raise Error(C.ERROR_BAD_DTYPE, "__cuda_array_interface__ typestr %s is not supported" % typestr)
    item = int(typestr[2:])
    shape = tuple(cai["shape"])
    if cai.get("strides") is None:
        strides, acc = [], 1
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= n
    else:
        strides = [s // item for s in cai["strides"]]
    ptr = cai["data"][0]
    device = getattr(getattr(x, "device", None), "id", 0) or 0
    return Tensor(ptr, dt, shape, strides, ("cuda", device), x)


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
                ("ndim", ctypes.c_int32), ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


def _from_dlpack(x):
    capsule = x.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    t = _DLTensor.from_address(get(capsule, b"dltensor"))  # DLManagedTensor starts with its DLTensor
    dt = _DLPACK_DTYPES.get((t.dtype.code, t.dtype.bits))
    if dt is None or t.dtype.lanes != 1:
        raise Error(C.ERROR_BAD_DTYPE, "DLPack dtype code %d bits %d is not supported"
                    % (t.dtype.code, t.dtype.bits))
    shape = [t.shape[i] for i in range(t.ndim)]
    if t.strides:
        strides = [t.strides[i] for i in range(t.ndim)]
    else:
        strides, acc = [], 1
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= n
    dev = ("cuda", t.device_id) if t.device_type == _DL_CUDA else ("cpu", 0)
    # the capsule owns the DLManagedTensor: keep it alive as long as the view
    return Tensor((t.data or 0) + t.byte_offset, dt, shape, strides, dev, x, keep=capsule)


def view(x, name="tensor"):
    """A Tensor over x's memory (no copy); raises Error for anything tops cannot read."""
    if x is None:
        raise Error(C.ERROR_NULL_POINTER, "%s is None" % name)
    if isinstance(x, Tensor):
        return x
    if _is_torch(x):
        return _from_torch(x)
    if hasattr(x, "__cuda_array_interface__"):
        return _from_cai(x)
    try:
        import numpy as np
        if isinstance(x, np.ndarray):
            return _from_numpy(x)
    except ImportError:
        pass
    if hasattr(x, "__dlpack__"):
        return _from_dlpack(x)
    raise Error(C.ERROR_INVALID_ARGUMENT, "%s: %s is neither a numpy array nor a CUDA array "
                "(torch, __cuda_array_interface__, DLPack)" % (name, type(x).__name__))


def empty_like(t, shape, dtype):
    """A new dense array of shape/dtype on t's device, of t's array library."""
    if t.device[0] == "cpu" and not _is_torch(t.obj):
        import numpy as np
        npdt = {C.DTYPE_F32: np.float32, C.DTYPE_F16: np.float16, C.DTYPE_I32: np.int32,
                C.DTYPE_U8: np.uint8, C.DTYPE_I8: np.int8}.get(dtype)
        if npdt is None:
            if dtype == C.DTYPE_BF16 and t.obj.dtype.name == "bfloat16":
                npdt = t.obj.dtype
            else:
                raise Error(C.ERROR_BAD_DTYPE, "no numpy dtype for tops dtype %d" % dtype)
        return np.empty(shape, dtype=npdt)
    if _is_torch(t.obj):
        import torch
        tdt = {C.DTYPE_F32: torch.float32, C.DTYPE_F16: torch.float16, C.DTYPE_BF16: torch.bfloat16,
               C.DTYPE_I32: torch.int32, C.DTYPE_U8: torch.uint8, C.DTYPE_I8: torch.int8}[dtype]
        return torch.empty(tuple(shape), dtype=tdt, device=t.obj.device)
    mod = type(t.obj).__module__.split(".")[0]
    if mod == "cupy":
        import cupy
        cdt = {C.DTYPE_F32: "float32", C.DTYPE_F16: "float16", C.DTYPE_I32: "int32",
               C.DTYPE_U8: "uint8", C.DTYPE_I8: "int8"}[dtype]
        with cupy.cuda.Device(t.device[1]):
            return cupy.empty(tuple(shape), dtype=cdt)
    raise Error(C.ERROR_INVALID_ARGUMENT, "cannot allocate an output next to a %s; pass out=" % type(t.obj))


def workspace(t, nbytes):
    """A byte buffer of nbytes on t's device (None for 0)."""
    if nbytes == 0:
        return None, 0
    if t.device[0] == "cpu":
        buf = (ctypes.c_uint8 * nbytes)()
        return buf, ctypes.addressof(buf)
    arr = empty_like(t, (nbytes,), C.DTYPE_U8)
    return arr, view(arr).ptr


def current_stream(t):
    """The CUDA stream t's library currently uses (as an int), 0 for the default stream."""
    if _is_torch(t.obj):
        import torch
        return torch.cuda.current_stream(t.obj.device).cuda_stream
    if type(t.obj).__module__.split(".")[0] == "cupy":
        import cupy
        return cupy.cuda.get_current_stream().ptr
    return 0
