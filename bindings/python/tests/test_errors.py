"""Bad input raises tops.Error (a ValueError) with the library's status and message; nothing crashes."""
import numpy as np
import pytest

import tops


def f32(*shape):
    return np.ones(shape, np.float32)


def test_mismatched_shapes():
    with pytest.raises(tops.Error) as e:
        tops.softmax(f32(3, 4), out=f32(3, 5))
    assert e.value.status_name == "TOPS_ERROR_BAD_SHAPE" and "softmax" in e.value.message


def test_gemm_inner_dims_mismatch():
    with pytest.raises(tops.Error) as e:
        tops.gemm(f32(3, 4), f32(5, 6))
    assert e.value.status == 0x105 and e.value.message


def test_wrong_dtype():
    with pytest.raises(tops.Error) as e:
        tops.softmax(np.ones((2, 2), np.float64))
    assert e.value.status_name == "TOPS_ERROR_BAD_DTYPE"
    with pytest.raises(tops.Error):
        tops.gemm(f32(2, 2), np.ones((2, 2), np.float16))


def test_bad_axis_and_perm():
    with pytest.raises(tops.Error) as e:
        tops.softmax(f32(2, 2), axis=5)
    assert e.value.status_name == "TOPS_ERROR_BAD_AXIS"
    with pytest.raises(tops.Error):
        tops.transpose(f32(2, 3), (0, 0))
    with pytest.raises(tops.Error):
        tops.reduce(f32(2, 3), axis=2)


def test_not_an_array_and_none():
    with pytest.raises(tops.Error):
        tops.softmax([1.0, 2.0])
    with pytest.raises(tops.Error) as e:
        tops.prelu(f32(2), None)
    assert e.value.status_name == "TOPS_ERROR_NULL_POINTER"


def test_unknown_names():
    with pytest.raises(tops.Error):
        tops.reduce(f32(2), "median")
    with pytest.raises(tops.Error):
        tops.bias_act(f32(2), act="tanh")
    with pytest.raises(tops.Error):
        tops.Context("tpu")


def test_too_many_inputs_and_rank():
    with pytest.raises(tops.Error):
        tops.weighted_sum([f32(2)] * 9)
    with pytest.raises(tops.Error):
        tops.softmax(np.ones((1,) * 9, np.float32))


def test_negative_strides():
    with pytest.raises(tops.Error) as e:
        tops.softmax(f32(4, 4)[::-1])
    assert e.value.status_name == "TOPS_ERROR_BAD_STRIDE"


def test_is_value_error():
    with pytest.raises(ValueError):
        tops.softmax(f32(3, 4), out=f32(4, 3))


class _FakeCuda:
    """A __cuda_array_interface__ producer; on a host without CUDA, tops must refuse it cleanly."""

    def __init__(self, shape):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (0, False), "strides": None,
                                         "version": 3}


def test_cuda_tensor_without_cuda_backend():
    if tops.backend_available("cuda")[0]:
        pytest.skip("CUDA is available here")
    with pytest.raises(tops.Error) as e:
        tops.softmax(_FakeCuda((2, 3)), out=_FakeCuda((2, 3)))
    assert e.value.status_name == "TOPS_ERROR_BACKEND_UNAVAILABLE" and e.value.message
    with pytest.raises(tops.Error):
        tops.softmax(_FakeCuda((2, 3)))  # no library to allocate the output with


def test_mixed_devices():
    with pytest.raises(tops.Error, match="different devices"):
        tops.softmax(f32(2, 3), out=_FakeCuda((2, 3)))
