"""Whole-layer ops with a backward rule of their own: layer norm and GELU.

Their forwards are one backend op each (`ModuleOps.layer_norm`, `gelu`), so
`Autodiff[B]` records one node where the composite would record a dozen, and
the rules call one backend helper each: `layer_norm_backward` (dx, dgamma
and dbeta from x, gamma and the output grad, and the statistics that the
tracked forward, `layer_norm_with_stats`, let the backend keep); GELU's tracked forward runs
`gelu_with_derivative`, which also returns Phi(x) + x phi(x) (made from the
same Phi and phi as the output), so its backward is grad times that, as
attention keeps its weights. The helpers have defaults written with
primitives (`backend/module_layers.py`); under `backward(create_graph=True)`,
where B is `Autodiff[B]` itself, GELU's rule calls `gelu_backward(x, grad)`
(Burn's `ActivationOps::gelu_backward`) instead, and they are tracked, so
second derivatives flow through them.
"""

from __future__ import annotations

from .module import module_op


def _with_stats(inner, fn, args):
    """The tracked forward: the output, and whatever statistics the backend
    keeps for its backward (None: recomputed there)."""
    out, stats = inner.layer_norm_with_stats(*args)
    return out, (stats,)


@module_op("layer_norm", tensors=(0, 1, 2), save=(True, True, False), tracked=_with_stats)
def layer_norm(B, g, n, x, gamma, beta):
    epsilon, stats = n.args
    if getattr(B, "is_autodiff", False):   # create_graph: recompute them from the tracked x
        stats = None
    grads = B.layer_norm_backward(x, gamma, g, epsilon, stats)
    return tuple(d if p is not None else None for d, p in zip(grads, n.parents))


def _with_derivative(inner, fn, args):
    """The tracked forward: GELU and its derivative, kept for the backward."""
    out, derivative = inner.gelu_with_derivative(*args)
    return out, (derivative,)


@module_op("gelu", tensors=(0,), save=(True,), tracked=_with_derivative)
def gelu(B, g, n, x):
    if getattr(B, "is_autodiff", False):   # create_graph: a derivative that carries the graph
        return B.gelu_backward(x, g)
    return B.float_mul(g, n.args[0])
