"""Scaled dot-product attention as one backend op (`F.attention`,
`ModuleOps.attention`, its rule in autodiff/ops/attention.py): forward and
gradients equal PyTorch's (scores, `masked_fill` with -1e4, softmax, value
product) on NdArray, Taichi and Fusion[Taichi], plain and under Autodiff;
a fully masked row gives uniform weights and no gradient to its scores; and a
second derivative through it equals the one through the primitives."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Bool, Tensor
from burnbook.backend import Autodiff, NdArray
from burnbook.tensor import module as F

torch = pytest.importorskip("torch")


def _backends():
    out = [NdArray]
    try:
        from burnbook.backend import Fusion, Taichi

        out += [Taichi, Fusion[Taichi]]
    except ImportError:  # pragma: no cover - Taichi missing
        pass
    return out


def _inputs(seed=0, b=2, h=3, sq=5, sk=5, dk=4, dv=6):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((b, h, sq, dk), (b, h, sk, dk), (b, h, sk, dv)))
    mask = np.broadcast_to(np.triu(np.ones((sq, sk), bool), k=1), (b, 1, sq, sk)).copy()
    mask[-1, 0, sq - 1, :] = True   # a fully masked row
    g = rng.standard_normal((b, h, sq, dv)).astype(np.float32)
    return q, k, v, mask, g


def _torch_reference(q, k, v, mask, g, scale):
    tq, tk, tv = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (q, k, v))
    s = (tq @ tk.transpose(-1, -2) * scale).masked_fill(torch.from_numpy(mask), -1.0e4)
    out = torch.softmax(s, -1) @ tv
    out.backward(torch.from_numpy(g).double())
    return out.detach().numpy(), [t.grad.numpy() for t in (tq, tk, tv)]


@pytest.mark.parametrize("inner", _backends(), ids=lambda B: repr(B))
def test_forward_and_gradients_equal_pytorch(inner):
    q, k, v, mask, g = _inputs()
    scale = 0.5
    want, grads = _torch_reference(q, k, v, mask, g, scale)
    plain = F.attention(*(Tensor[inner, 4].from_data(a) for a in (q, k, v)), Tensor[inner, 4, Bool].from_data(mask),
                        scale=scale)
    np.testing.assert_allclose(plain.to_numpy(), want, rtol=1e-5, atol=1e-5)
    B = Autodiff[inner]
    tq, tk, tv = (Tensor[B, 4].from_data(a).require_grad() for a in (q, k, v))
    out = F.attention(tq, tk, tv, Tensor[B, 4, Bool].from_data(mask), scale=scale)
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-5, atol=1e-5)
    got = (out * Tensor[B, 4].from_data(g)).sum().backward()
    for t, ref, name in zip((tq, tk, tv), grads, "qkv"):
        np.testing.assert_allclose(t.grad(got).to_numpy(), ref, rtol=1e-4, atol=1e-5, err_msg=f"d{name}")


def test_a_fully_masked_row_is_uniform_and_passes_no_gradient_to_its_scores():
    q, k, v, mask, g = _inputs()
    B = Autodiff[NdArray]
    tq = Tensor[B, 4].from_data(q).require_grad()
    out = F.attention(tq, Tensor[B, 4].from_data(k), Tensor[B, 4].from_data(v), Tensor[B, 4, Bool].from_data(mask))
    np.testing.assert_allclose(out.to_numpy()[1, :, 4], np.broadcast_to(v[1].mean(1), (3, 6)), rtol=1e-5, atol=1e-6)
    dq = tq.grad((out * Tensor[B, 4].from_data(g)).sum().backward()).to_numpy()
    assert np.all(dq[1, 0, 4] == 0.0)   # every score of that row is the constant fill


def test_no_mask_default_scale_and_different_lengths():
    q, k, v, _, _ = _inputs(seed=1, sq=3, sk=7)
    g = np.ones((2, 3, 3, 6), np.float32)
    want, _ = _torch_reference(q, k, v, np.zeros((2, 1, 3, 7), bool), g, 1 / np.sqrt(4))
    got = F.attention(*(Tensor[NdArray, 4].from_data(a) for a in (q, k, v)))
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-5, atol=1e-6)


def test_second_derivative_equals_the_primitives():
    """d/dq of sum(grad_q(attention)^2) through the op (create_graph) and
    through the composite of primitives agree."""
    from burnbook.backend import attention_ops

    q, k, v, mask, g = _inputs(seed=2, b=1, h=2, sq=3, sk=3, dk=2, dv=2)
    B = Autodiff[NdArray]
    results = []
    for fused in (True, False):
        tq, tk, tv = (Tensor[B, 4].from_data(a).require_grad() for a in (q, k, v))
        m = Tensor[B, 4, Bool].from_data(mask)
        if fused:
            out = F.attention(tq, tk, tv, m, scale=0.7)
        else:
            out = tq._like(attention_ops.attention(B, tq._p, tk._p, tv._p, m._p, 0.7, -1.0e4))
        first = (out * Tensor[B, 4].from_data(g)).sum().backward(create_graph=True)
        second = (tq.grad(first) ** 2).sum().backward()
        results.append(tk.grad(second).to_numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-4, atol=1e-6)


def test_shapes_are_checked():
    q = Tensor[NdArray, 4].from_data(np.zeros((1, 2, 3, 4), np.float32))
    with pytest.raises(ValueError, match="do not fit"):
        F.attention(q, Tensor[NdArray, 4].from_data(np.zeros((1, 2, 3, 5), np.float32)), q)
    with pytest.raises(ValueError, match="mask"):
        F.attention(q, q, q, Tensor[NdArray, 4, Bool].from_data(np.zeros((1, 2, 3, 2), bool)))


def test_multi_head_attention_runs_the_op_and_makes_weights_only_when_read(monkeypatch):
    """Without active dropout `MultiHeadAttention` calls the backend's
    `attention` op; its `weights` are computed on first read, equal to the
    softmax the context used (each row sums to 1, 0 above the diagonal)."""
    from burnbook import nn

    B = Autodiff[NdArray]
    mha = nn.MultiHeadAttentionConfig(8, 2, dropout=0.0).init(backend=B)
    x = Tensor[B, 3].from_data(np.random.default_rng(3).standard_normal((2, 4, 8)).astype(np.float32))
    causal = nn.generate_autoregressive_mask(2, 4, backend=B)
    calls = []
    inner = NdArray.attention_with_weights.__func__
    monkeypatch.setattr(NdArray, "attention_with_weights", classmethod(lambda *a: calls.append(1) or inner(*a)))
    out = mha.forward(nn.MhaInput.self_attn(x).mask_attn(causal))
    assert calls and out._make is not None        # the op ran; no weights made yet
    w = out.weights.to_numpy()
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-6)
    assert np.all(w[:, :, np.triu_indices(4, 1)[0], np.triu_indices(4, 1)[1]] == 0.0)
    v = mha.value.forward(x).reshape([2, 4, 2, 4]).swap_dims(1, 2).to_numpy()
    context = (w @ v).transpose(0, 2, 1, 3).reshape(2, 4, 8)
    want = mha.output.forward(Tensor[B, 3].from_data(context.astype(np.float32))).to_numpy()
    np.testing.assert_allclose(out.context.to_numpy(), want, rtol=1e-5, atol=1e-6)


def test_ndarray_two_thread_batch_split_gives_the_same_values(monkeypatch) -> None:
    """With NumPy's BLAS on two threads NdArray splits large attention over
    the batch (two halves on two threads, each walked in cache-sized chunks
    of batch elements): the same outputs and gradients,
    with a per-batch mask and with one broadcast over the batch."""
    from burnbook.backend import NdArray
    from burnbook.backend.ndarray import attention as sdpa

    rng = np.random.default_rng(4)
    q, k, v, g = (rng.standard_normal((3, 2, 5, 4)).astype(np.float32) for _ in range(4))
    causal = np.triu(np.ones((5, 5), bool), k=1)
    for mask in (np.broadcast_to(causal, (3, 1, 5, 5)), causal[None, None], None):
        monkeypatch.setattr(sdpa, "_blas_threads", lambda: 1)
        out1, w1 = NdArray.attention_with_weights(q, k, v, mask, 0.5, -1.0e4)
        grads1 = NdArray.attention_backward(q, k, v, w1, g, mask, 0.5)
        monkeypatch.setattr(sdpa, "_blas_threads", lambda: 2)
        monkeypatch.setattr(sdpa, "_SPLIT_FROM", 1)
        monkeypatch.setattr(sdpa, "TWO_CORES", True)
        monkeypatch.setattr(sdpa, "_CHUNK", 1)   # and one batch element a chunk
        out2, w2 = NdArray.attention_with_weights(q, k, v, mask, 0.5, -1.0e4)
        grads2 = NdArray.attention_backward(q, k, v, w2, g, mask, 0.5)
        for a, b in zip((out1, w1, *grads1), (out2, w2, *grads2)):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_ndarray_reads_strided_heads_and_lays_its_outputs_out_as_the_projections() -> None:
    """NdArray's attention takes q, k, v as views of `[b, s, h, d]`
    projections straight to BLAS and lays out the output and dq, dk, dv as
    such projections (merging the heads is then a view); inputs BLAS cannot
    read (a negative or a zero row stride, a transposed matrix) are copied
    first: every layout gives the contiguous inputs' values."""
    from burnbook.backend.ndarray import attention as sdpa

    rng = np.random.default_rng(5)
    b, h, s, d = 2, 3, 5, 4
    base = [rng.standard_normal((b, s, h, d)).astype(np.float32) for _ in range(4)]
    q, k, v, g = (a.transpose(0, 2, 1, 3) for a in base)          # the heads' views
    mask = np.triu(np.ones((s, s), bool), k=1)[None, None]
    want_out, want_w = NdArray.attention_with_weights(*(np.ascontiguousarray(a) for a in (q, k, v)), mask, 0.5, -1e4)
    want_grads = NdArray.attention_backward(*(np.ascontiguousarray(a) for a in (q, k, v)), want_w,
                                            np.ascontiguousarray(g), mask, 0.5)
    out, w = NdArray.attention_with_weights(q, k, v, mask, 0.5, -1e4)
    grads = NdArray.attention_backward(q, k, v, w, g, mask, 0.5)
    for got, want in zip((out, w, *grads), (want_out, want_w, *want_grads)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    for a in (out, *grads):   # [b, h, s, d] over [b, s, h, d] memory: the merge is free
        assert a.transpose(0, 2, 1, 3).flags.c_contiguous
    odd = (q[:, :, ::-1], np.broadcast_to(k[:, :, :1], k.shape), np.swapaxes(np.swapaxes(v, 2, 3).copy(), 2, 3))
    assert not any(sdpa._rows(a) is a for a in odd)
    flipped, _ = NdArray.attention_with_weights(odd[0], k, v, mask, 0.5, -1e4)
    np.testing.assert_allclose(flipped, NdArray.attention_with_weights(np.ascontiguousarray(odd[0]), k, v, mask,
                                                                       0.5, -1e4)[0], rtol=1e-6, atol=1e-7)
    got = NdArray.attention_backward(q, *odd[1:], w, g, mask, 0.5)
    want = NdArray.attention_backward(q, *(np.ascontiguousarray(a) for a in odd[1:]), w, g, mask, 0.5)
    for a, c in zip(got, want):
        np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-7)
