"""Forward and backward of every float op against torch.autograd, on random
shapes (broadcasting included). Skipped when torch is not installed."""

from __future__ import annotations

import numpy as np
import pytest

from .cases import CASES
from .conftest import host

torch = pytest.importorskip("torch")

TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}
_TORCH_CASES = [c for c in CASES if c.torch is not None]


def run_ours(B, case, ctx, arrays, w):
    leaves = [B.float_require_grad(B.float_from_data(a, B.default_device())) for a in arrays]
    out = case.fn(B, ctx, *leaves)
    wp = B.float_from_data(w.astype(arrays[0].dtype), B.default_device())
    grads = B.float_backward(B.float_sum(B.float_mul(out, wp)))
    return host(B, out), [host(B, B.float_grad(x, grads)) for x in leaves]


def run_torch(case, ctx, arrays, w):
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = case.torch(ctx, *ts)
    (out * torch.as_tensor(w, dtype=out.dtype)).sum().backward()
    return out.detach().numpy(), [t.grad.numpy() for t in ts]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("case", _TORCH_CASES, ids=[c.id for c in _TORCH_CASES])
def test_matches_torch(backend, case, seed, dtype):
    rng = np.random.default_rng(100 + seed)
    arrays, ctx = case.gen(rng)
    arrays = [a.astype(dtype) for a in arrays]
    ref_out, ref_grads = run_torch(case, ctx, arrays, np.ones(1))  # shape probe
    w = rng.uniform(-1.5, 1.5, size=ref_out.shape)
    ref_out, ref_grads = run_torch(case, ctx, arrays, w)
    out, grads = run_ours(backend, case, ctx, arrays, w)
    assert out.shape == ref_out.shape
    np.testing.assert_allclose(out, ref_out, **TOL[dtype], err_msg=f"{case.id} forward")
    for i, (g, rg) in enumerate(zip(grads, ref_grads)):
        assert g.shape == rg.shape, f"{case.id} grad {i} shape"
        np.testing.assert_allclose(g, rg, **TOL[dtype], err_msg=f"{case.id} grad of input {i}")


def test_mlp_step_matches_torch(backend):
    """A 3-layer MLP with a log-softmax loss: every parameter gradient."""
    rng = np.random.default_rng(7)
    shapes = [(12, 8), (1, 8), (8, 6), (1, 6), (6, 4), (1, 4)]
    params = [rng.normal(0, 0.5, s).astype(np.float32) for s in shapes]
    x = rng.normal(size=(5, 12)).astype(np.float32)
    onehot = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 5)]
    B = backend
    d = B.default_device()
    ps = [B.float_require_grad(B.float_from_data(p, d)) for p in params]
    h = B.float_from_data(x, d)
    for layer in range(3):
        h = B.float_add(B.float_matmul(h, ps[2 * layer]), ps[2 * layer + 1])
        if layer < 2:
            h = B.float_mask_fill(h, B.float_lower_equal_elem(h, 0.0), 0.0)  # relu
    m = B.float_detach(B.float_max_dim(h, 1))
    z = B.float_sub(h, m)
    logp = B.float_sub(z, B.float_log(B.float_sum_dim(B.float_exp(z), 1)))
    loss = B.float_neg(B.float_mean_dim(B.float_sum_dim(B.float_mul(logp, B.float_from_data(onehot, d)), 1), 0))
    grads = B.float_backward(loss)

    tp = [torch.tensor(p, requires_grad=True) for p in params]
    th = torch.tensor(x)
    for layer in range(3):
        th = th @ tp[2 * layer] + tp[2 * layer + 1]
        if layer < 2:
            th = th.relu()
    tl = -(torch.log_softmax(th, 1) * torch.tensor(onehot)).sum(1).mean()
    tl.backward()
    np.testing.assert_allclose(host(B, loss).reshape(-1), [tl.item()], rtol=1e-5)
    for p, t in zip(ps, tp):
        np.testing.assert_allclose(host(B, B.float_grad(p, grads)), t.grad.numpy(), rtol=1e-4, atol=1e-6)
