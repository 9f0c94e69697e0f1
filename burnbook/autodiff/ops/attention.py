"""Scaled dot-product attention's backward rule (`ModuleOps.attention`; the
math is in `backend/attention_ops.py`).

When an input is tracked the forward runs B's `attention_with_weights` and
keeps the weights `[b, h, sq, sk]` (a static argument, after `mask`, `scale`
and `fill`), so the backward is B's `attention_backward`: two matmuls for
the weights' and values' gradients, the softmax's Jacobian in one formula,
two matmuls for q and k. With `backward(create_graph=True)` (B is then the
Autodiff backend itself) the weights are recomputed from the tracked q and k
through the protocol's composite, so second derivatives flow through them.
"""

from __future__ import annotations

from .module import module_op


def _with_weights(inner, fn, args):
    """The tracked forward: the output, and the weights for the backward."""
    out, weights = inner.attention_with_weights(*args)
    return out, (weights,)


@module_op("attention", tensors=(0, 1, 2), save=(True, True, True), tracked=_with_weights)
def attention(B, g, n, q, k, v):
    mask, scale, fill, weights = n.args
    if getattr(B, "is_autodiff", False):   # create_graph: weights that carry the graph
        weights = B.attention_with_weights(q, k, v, mask, scale, fill)[1]
    dq, dk, dv = B.attention_backward(q, k, v, weights, g, mask, scale)
    return tuple(d if p is not None else None for d, p in zip((dq, dk, dv), n.parents))
