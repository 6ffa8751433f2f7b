"""Every op on the CUDA backend over torch tensors (pointers passed, no copies), compared with the CPU backend."""
import numpy as np
import pytest

import tops

torch = pytest.importorskip("torch", reason="torch is not installed")
pytestmark = pytest.mark.cuda
ok, why = tops.backend_available("cuda")
if not torch.cuda.is_available() or not ok:
    pytest.skip("CUDA not usable: torch says %s, tops says %r" % (torch.cuda.is_available(), why),
                allow_module_level=True)


def dev(a, dtype=torch.float16):
    return torch.from_numpy(np.ascontiguousarray(a)).to("cuda", dtype)


def check(gpu, cpu, tol=2e-2):
    g = gpu.float().cpu().numpy().astype(np.float64)
    c = np.asarray(cpu, np.float64)
    assert g.shape == c.shape
    assert not np.isnan(g).any()
    assert np.linalg.norm(g - c) / max(np.linalg.norm(c), 1e-30) <= tol


def rnd(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float16)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cuda_ops_match_cpu(dtype):
    x, g, b = rnd(8, 128), rnd(128), rnd(128)
    xc = x.astype(np.float32) if dtype == torch.bfloat16 else x
    gc, bc = g.astype(xc.dtype), b.astype(xc.dtype)
    xc = dev(x, dtype).float().cpu().numpy().astype(xc.dtype)  # the values the GPU sees
    X = dev(xc, dtype)
    check(tops.softmax(X), tops.softmax(xc))
    y = tops.softmax(X)
    assert y.device == X.device and y.dtype == dtype
    check(tops.transpose(X, (1, 0)), tops.transpose(xc, (1, 0)), 0)
    G, B = dev(gc, dtype), dev(bc, dtype)
    gcs, bcs = G.float().cpu().numpy().astype(xc.dtype), B.float().cpu().numpy().astype(xc.dtype)
    check(tops.layer_norm(X, G, B), tops.layer_norm(xc, gcs, bcs))
    check(tops.rms_norm(X, G), tops.rms_norm(xc, gcs))
    check(tops.reduce(X, "sum", axis=1), tops.reduce(xc, "sum", axis=1))
    check(tops.bias_act(X, B.reshape(1, -1), "gelu"), tops.bias_act(xc, bcs.reshape(1, -1), "gelu"))
    check(tops.prelu(X, B.reshape(1, -1)), tops.prelu(xc, bcs.reshape(1, -1)))
    check(tops.weighted_sum([X, X], [1.0, -0.5]), tops.weighted_sum([xc, xc], [1.0, -0.5]))
    W = dev(rnd(64, 128), dtype)  # a linear layer's [out, in] weight
    wc = W.float().cpu().numpy().astype(xc.dtype)
    check(tops.gemm(X, W, trans_b=True), tops.gemm(xc, wc, trans_b=True))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cuda_attention_matches_cpu(dtype):
    q = dev(rnd(2, 33, 4, 64), dtype)
    qc = q.float().cpu().numpy()
    try:
        out = tops.attention(q, q, q, causal=True)
    except tops.Error as e:
        if "not implemented on this backend" in str(e):
            pytest.skip("the CUDA backend has no attention kernel yet: %s" % e)
        raise
    check(out, tops.attention(qc, qc, qc, causal=True))


def test_cuda_no_copy_and_errors():
    X = torch.randn(4, 64, device="cuda", dtype=torch.float16)
    out = torch.empty_like(X)
    y = tops.softmax(X, out=out)
    assert y.data_ptr() == out.data_ptr()
    with pytest.raises(tops.Error):
        tops.softmax(X, out=torch.empty(4, 63, device="cuda", dtype=torch.float16))
    with pytest.raises(tops.Error):
        tops.softmax(X, out=np.empty((4, 64), np.float16))  # devices differ
