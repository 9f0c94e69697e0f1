"""Reductions: sum, sum_dim, mean_dim, max, min (full) and max_dim, min_dim.

Reductions keep the rank, so the gradient is the output gradient expanded
back over the reduced dims.
"""

from __future__ import annotations

from .table import unary, zeros


def _spread(B, g, shape):
    """A `(1,)` gradient of a full reduction, expanded to `shape`."""
    if len(shape) != 1:
        g = B.float_reshape(g, (1,) * len(shape))
    return B.float_expand(g, tuple(shape))


@unary("sum")
def sum_(B, g, n, x, out):
    return _spread(B, g, n.parents[0].shape)


@unary("sum_dim")
def sum_dim(B, g, n, x, out):
    return B.float_expand(g, n.parents[0].shape)


@unary("mean_dim")
def mean_dim(B, g, n, x, out):
    shape = n.parents[0].shape
    return B.float_expand(B.float_div_scalar(g, float(shape[n.args[0]])), shape)


def extreme(B, g, n, x, out):
    # Shared evenly between tied extremes (torch's `max()` convention).
    shape = n.parents[0].shape
    hit = B.float_equal(x, _spread(B, out, shape))
    sel = B.float_mask_fill(zeros(B, shape, g), hit, 1.0)
    share = B.float_div(g, B.float_sum(sel))
    return B.float_mul(_spread(B, share, shape), sel)


unary("max", save_x=True, save_out=True)(extreme)
unary("min", save_x=True, save_out=True)(extreme)


def _argmax(inner, out, x, dim):
    return (dim, inner.float_argmax(x, dim))


def _argmin(inner, out, x, dim):
    return (dim, inner.float_argmin(x, dim))


def to_index(B, g, n, x, out):
    # The whole gradient goes to the (first) arg-extreme along `dim`.
    dim, index = n.args
    return B.float_scatter(dim, zeros(B, n.parents[0].shape, g), index, g)


unary("max_dim", state=_argmax)(to_index)
unary("min_dim", state=_argmin)(to_index)
