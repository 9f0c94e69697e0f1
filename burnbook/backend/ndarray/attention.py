"""NdArray's scaled dot-product attention (`ModuleOps.attention`, its
weights-returning forward and its backward; the math and shapes are in
`backend/attention_ops.py`), in NumPy: the scores, mask, softmax and their
backward each run in place on one `[b, h, sq, sk]` array, where the default
makes a fresh array per primitive op (a GPT step's attention made ~10 of
them per layer, forward and backward). q, k, v arrive as strided views of
the heads' projections (`swap_dims`); one contiguous copy each lets every
batched matmul take BLAS's fast path."""

from __future__ import annotations

from typing import Any

import numpy as np


def _t(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


def attention_with_weights(B: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Any, scale: float,
                           fill: float) -> tuple:
    """`(out [b, h, sq, dv], weights [b, h, sq, sk])`."""
    q, k, v = (np.ascontiguousarray(a) for a in (q, k, v))
    w = np.matmul(q, _t(k))
    w *= w.dtype.type(scale)
    if mask is not None:
        np.copyto(w, w.dtype.type(fill), where=mask)
    w -= w.max(axis=-1, keepdims=True)
    np.exp(w, out=w)
    w /= w.sum(axis=-1, keepdims=True)
    return np.matmul(w, v), w


def attention(B: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Any, scale: float,
              fill: float) -> np.ndarray:
    return attention_with_weights(B, q, k, v, mask, scale, fill)[0]


def attention_backward(B: Any, q: np.ndarray, k: np.ndarray, v: np.ndarray, weights: np.ndarray,
                       grad: np.ndarray, mask: Any, scale: float) -> tuple:
    """`(dq, dk, dv)`."""
    grad = np.ascontiguousarray(grad)
    dv = np.matmul(_t(weights), grad)
    ds = np.matmul(grad, _t(np.ascontiguousarray(v)))
    ds -= np.einsum("...j,...j->...", ds, weights)[..., None]
    ds *= weights
    ds *= ds.dtype.type(scale)
    if mask is not None:
        np.copyto(ds, ds.dtype.type(0.0), where=mask)
    dq = np.matmul(ds, np.ascontiguousarray(k))
    dk = np.matmul(_t(ds), np.ascontiguousarray(q))
    return dq, dk, dv
