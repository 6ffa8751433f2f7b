"""Every op of the Python binding on the CPU backend against numpy (float64) references."""
import math
import re
from pathlib import Path

import numpy as np
import pytest

import tops

RNG = np.random.default_rng(7)
TOL = {np.float32: 1e-5, np.float16: 1e-2}


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def rel_err(out, ref):
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    assert not np.isnan(out).any() or np.isnan(ref).any()
    den = np.linalg.norm(ref)
    return np.linalg.norm(out - ref) / (den if den else 1.0)


def close(out, ref, dtype=np.float32):
    err = rel_err(out, ref)
    assert err < TOL[dtype], err


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def gelu_erf(x):
    return x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


ACTS = {"relu": lambda x: np.maximum(x, 0), "gelu": gelu_erf,
        "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
        "silu": lambda x: x / (1 + np.exp(-x)), None: lambda x: x}


def test_version_and_backend():
    assert tops.version().startswith("tops ")
    assert tops.backend_available("cpu") == (True, "ok")
    assert tops.cpu_isa() in ("sse4", "avx2", "avx512")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(dtype, axis):
    x = rand(4, 37, 5, dtype=dtype)
    close(tops.softmax(x, axis=axis, scale=0.5), np_softmax(0.5 * x.astype(np.float64), axis), dtype)


def test_log_softmax_strided():
    base = rand(6, 40)
    x = base[:, ::2]  # non-contiguous input
    ref = np.log(np_softmax(x.astype(np.float64)))
    close(tops.softmax(x, log=True), ref)


def test_softmax_mask_and_lengths():
    x = rand(3, 4, 9)
    mask = (RNG.random((3, 1, 9)) > 0.3).astype(np.uint8)
    mask[1] = 0  # fully masked rows
    lengths = np.array([9, 4, 0], np.int32).reshape(3, 1, 1)
    y = tops.softmax(x, mask=mask, lengths=lengths)
    keep = (mask != 0) & (np.arange(9).reshape(1, 1, 9) < lengths)
    z = np.where(keep, x.astype(np.float64), -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.where(keep, np.exp(z - z.max(-1, keepdims=True)), 0)
        ref = np.nan_to_num(e / e.sum(-1, keepdims=True))
    close(y, ref)
    assert np.all(y[1] == 0) and np.all(y[2] == 0)


@pytest.mark.parametrize("perm", [(1, 0, 2), (2, 1, 0), (0, 2, 1)])
def test_transpose(perm):
    x = rand(5, 17, 3)
    assert np.array_equal(tops.transpose(x, perm), x.transpose(perm))


def test_transpose_into_strided_out():
    x = rand(4, 6)
    out = np.zeros((6, 8), np.float32)
    tops.transpose(x, (1, 0), out=out[:, :4])
    assert np.array_equal(out[:, :4], x.T) and not out[:, 4:].any()


def ref_layer_norm(s, g, b, eps):
    mu = s.mean(-1, keepdims=True)
    var = ((s - mu) ** 2).mean(-1, keepdims=True)
    return (s - mu) / np.sqrt(var + eps) * g + b, mu[..., 0], 1 / np.sqrt(var[..., 0] + eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_layer_norm(dtype):
    x, g, b = rand(7, 65, dtype=dtype), rand(65, dtype=dtype), rand(65, dtype=dtype)
    ref, _, _ = ref_layer_norm(x.astype(np.float64), g, b, 1e-5)
    close(tops.layer_norm(x, g, b), ref, dtype)


def test_layer_norm_residual_prenorm_stats():
    x, r, bias, g, b = rand(5, 33), rand(5, 33), rand(33), rand(33), rand(33)
    y, pre, mean, rstd = tops.layer_norm(x, g, b, eps=1e-3, residual=r, add_bias=bias,
                                         return_prenorm=True, return_stats=True)
    s = x.astype(np.float64) + bias + r
    ref, mu, rs = ref_layer_norm(s, g, b, 1e-3)
    close(y, ref)
    close(pre, s)
    close(mean, mu)
    close(rstd, rs)


def test_rms_norm():
    x, g = rand(9, 2, 16), rand(2, 16)
    s = x.astype(np.float64)
    rs = 1 / np.sqrt((s ** 2).mean(axis=(1, 2), keepdims=True) + 1e-6)
    y, rstd = tops.rms_norm(x, g, eps=1e-6, normalized_rank=2, return_stats=True)
    close(y, s * rs * g)
    close(rstd, rs.reshape(9))


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "sumsq", "norm2"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, True), ((0, 2), False)])
def test_reduce(op, axis, keepdims):
    x = (rand(4, 6, 5) * 0.5 + 1.0).astype(np.float32)
    s = x.astype(np.float64)
    f = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
         "sumsq": lambda a, **k: np.sum(a * a, **k), "norm2": lambda a, **k: np.sqrt(np.sum(a * a, **k))}[op]
    ref = np.asarray(f(s, axis=axis, keepdims=keepdims))
    close(tops.reduce(x, op, axis=axis, keepdims=keepdims), ref)


@pytest.mark.parametrize("act", ["relu", "gelu", "gelu_tanh", "silu", None])
def test_bias_act(act):
    x, bias = rand(8, 31), rand(1, 31)
    close(tops.bias_act(x, bias, act), ACTS[act](x.astype(np.float64) + bias))


def test_bias_act_in_place_without_bias():
    x = rand(3, 10)
    ref = np.maximum(x, 0)
    y = tops.bias_act(x, act="relu", out=x)
    assert y is x and np.array_equal(x, ref)


def test_prelu():
    x, slope = rand(2, 3, 4, 5), rand(1, 3, 1, 1)
    ref = np.where(x > 0, x, slope * x.astype(np.float64))
    close(tops.prelu(x, slope), ref)


def test_weighted_sum():
    a, b, c = rand(6, 7), rand(1, 7), rand(6, 1)
    close(tops.weighted_sum([a, b, c], [0.5, -2.0, 3.0]), 0.5 * a.astype(np.float64) - 2 * b + 3 * c)


@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_gemm_transposes(trans_a, trans_b):
    m, n, k = 13, 17, 29
    a = rand(k, m) if trans_a else rand(m, k)
    b = rand(n, k) if trans_b else rand(k, n)
    ref = (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b)
    close(tops.gemm(a, b, trans_a=trans_a, trans_b=trans_b), ref)


def test_gemm_epilogue_and_batch():
    a, b, c, bias = rand(3, 8, 12), rand(12, 5), rand(3, 8, 5), rand(5)
    ref = ACTS["gelu"](0.5 * (a.astype(np.float64) @ b) + 2.0 * c + bias)
    close(tops.gemm(a, b, c=c, bias=bias, alpha=0.5, beta=2.0, act="gelu"), ref)


def ref_attention(q, k, v, causal, scale=None):
    b, sq, h, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    scale = 1 / math.sqrt(d) if scale is None else scale
    kk = np.repeat(k.astype(np.float64), h // hk, axis=2)
    vv = np.repeat(v.astype(np.float64), h // hk, axis=2)
    s = np.einsum("bqhd,bkhd->bhqk", q.astype(np.float64), kk) * scale
    if causal:
        i, j = np.arange(sq)[:, None], np.arange(sk)[None, :]
        s = np.where(j <= i + sk - sq, s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    lse = (np.log(e.sum(-1)) + m[..., 0])
    return np.einsum("bhqk,bkhd->bqhd", e / e.sum(-1, keepdims=True), vv), lse


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_attention(causal, dtype):
    q, k, v = rand(2, 19, 4, 16, dtype=dtype), rand(2, 23, 2, 16, dtype=dtype), rand(2, 23, 2, 16, dtype=dtype)
    o, lse = tops.attention(q, k, v, causal=causal, return_lse=True)
    ref, ref_lse = ref_attention(q, k, v, causal)
    close(o, ref, dtype)
    close(lse, ref_lse, dtype)


def test_plan_reuse():
    x = rand(4, 8)
    plan = tops.softmax_plan(x)
    assert plan.kernel_name
    first = plan.run()[0].copy()
    x *= 2
    second = plan.run()[0]
    close(first, np_softmax(x.astype(np.float64) / 2))
    close(second, np_softmax(x.astype(np.float64)))
    plan.close()
    with pytest.raises(tops.Error, match="closed"):
        plan.run()


def test_explicit_context_threads():
    with tops.Context("cpu", num_threads=1) as ctx:
        x = rand(3, 4)
        close(tops.softmax(x, ctx=ctx), np_softmax(x.astype(np.float64)))
    with pytest.raises(tops.Error, match="closed") as e:
        tops.softmax(x, ctx=ctx)
    assert e.value.status == 0x101


def test_readme_example():
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README.md has no python example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_compat_loader_runs_on_cpu():
    from tops.compat import Tops
    t = Tops(backend="cpu")
    x, w = rand(5, 12), rand(7, 12)
    y, d = np.empty_like(x), np.empty((5, 7), np.float32)
    run = t.softmax(x, y, scale=2.0)
    run()
    assert run.kernel
    close(y, np_softmax(2.0 * x.astype(np.float64)))
    t.gemm(x, w, d, act=1, trans_b=True)()
    close(d, np.maximum(x.astype(np.float64) @ w.T, 0))
    yt = np.empty((12, 5), np.float32)
    t.transpose(x, yt, (1, 0))()
    assert np.array_equal(yt, x.T)


class _DLPackOnly:
    """Exposes only __dlpack__ (as a foreign array library would)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()


def test_dlpack_input_and_output():
    x = rand(3, 8)
    out = np.zeros_like(x)
    y = tops.softmax(_DLPackOnly(x), out=_DLPackOnly(out))
    assert isinstance(y, _DLPackOnly)
    close(out, np_softmax(x.astype(np.float64)))


def test_reduce_f16_input_f32_output():
    x = rand(5, 300, dtype=np.float16)
    y = tops.reduce(x, "mean", axis=1, dtype=np.float32)
    assert y.dtype == np.float32
    close(y, x.astype(np.float64).mean(axis=1))
