"""Scaled dot-product attention as one backend op (`ModuleOps.attention`),
its forward that also returns the weights, and its backward: the defaults,
written with the protocol's primitive ops, so every backend has them (Taichi
and Fusion run these; NdArray overrides them with NumPy in place,
`ndarray/attention.py`).

Shapes: `q [batch, heads, seq_q, d_k]`, `k [batch, heads, seq_k, d_k]`,
`v [batch, heads, seq_k, d_v]`; `mask` a Bool primitive `[batch, 1 | heads,
seq_q, seq_k]`, True where a query may not look, or None. The forward is

    scores  = (q @ k^T) * scale, masked entries set to `fill`
    weights = softmax(scores) over seq_k
    out     = weights @ v                      [batch, heads, seq_q, d_v]

`fill` is a finite number (Burn's `min_float`, -1e4), not -inf, so a fully
masked row gives uniform weights instead of NaN, as `MultiHeadAttention`
always did. The backward, with g = dL/dout:

    dv = weights^T @ g
    dw = g @ v^T
    ds = weights * (dw - sum(dw * weights, seq_k)) * scale,  0 where masked
    dq = ds @ k,   dk = ds^T @ q

(the softmax's Jacobian applied in one formula; a masked score is a
constant, so its gradient is 0, as `mask_fill`'s backward gives).
"""

from __future__ import annotations

from typing import Any


def _expanded_mask(B: Any, mask: Any, shape: tuple) -> Any:
    """`mask` `[b, 1|h, sq, sk]` broadcast to the scores' `shape`."""
    return mask if tuple(B.bool_shape(mask)) == shape else B.bool_expand(mask, shape)


def attention_with_weights(B: Any, q: Any, k: Any, v: Any, mask: Any, scale: float, fill: float) -> tuple:
    """`(out [b, h, sq, dv], weights [b, h, sq, sk])` (see the module doc)."""
    scores = B.float_mul_scalar(B.float_matmul(q, B.float_swap_dims(k, 2, 3)), float(scale))
    if mask is not None:
        scores = B.float_mask_fill(scores, _expanded_mask(B, mask, tuple(B.float_shape(scores))), fill)
    top = B.float_max_dim(scores, 3)
    e = B.float_exp(B.float_sub(scores, top))
    weights = B.float_div(e, B.float_sum_dim(e, 3))
    return B.float_matmul(weights, v), weights


def attention(B: Any, q: Any, k: Any, v: Any, mask: Any, scale: float, fill: float) -> Any:
    """softmax(q k^T * scale, masked to `fill`) @ v: `[b, h, sq, dv]`."""
    return attention_with_weights(B, q, k, v, mask, scale, fill)[0]


def attention_backward(B: Any, q: Any, k: Any, v: Any, weights: Any, grad: Any, mask: Any,
                       scale: float) -> tuple:
    """`(dq, dk, dv)` from the forward's `weights` and `grad` = dL/dout."""
    dv = B.float_matmul(B.float_swap_dims(weights, 2, 3), grad)
    dw = B.float_matmul(grad, B.float_swap_dims(v, 2, 3))
    row = B.float_sum_dim(B.float_mul(dw, weights), 3)
    ds = B.float_mul_scalar(B.float_mul(weights, B.float_sub(dw, row)), float(scale))
    if mask is not None:
        ds = B.float_mask_fill(ds, _expanded_mask(B, mask, tuple(B.float_shape(ds))), 0.0)
    dq = B.float_matmul(ds, k)
    dk = B.float_matmul(B.float_swap_dims(ds, 2, 3), q)
    return dq, dk, dv
