"""Reductions: sum, sum_dim, mean_dim, max, min (full) and max_dim, min_dim.

Reductions keep the rank, so the gradient is the output gradient expanded
back over the reduced dims.
"""

from __future__ import annotations

from ._spec import unary, zeros


def _spread(F, g, shape):
    """A `(1,)` gradient of a full reduction, expanded to `shape`."""
    if len(shape) != 1:
        g = F.float_reshape(g, (1,) * len(shape))
    return F.float_expand(g, tuple(shape))


@unary("sum")
def sum_(F, g, n, x, out):
    return _spread(F, g, n.parents[0].shape)


@unary("sum_dim")
def sum_dim(F, g, n, x, out):
    return F.float_expand(g, n.parents[0].shape)


@unary("mean_dim")
def mean_dim(F, g, n, x, out):
    shape = n.parents[0].shape
    return F.float_expand(F.float_div_scalar(g, float(shape[n.args[0]])), shape)


def _extreme(F, g, n, x, out):
    # Shared evenly between tied extremes (torch's `max()` convention).
    shape = n.parents[0].shape
    hit = F.float_equal(x, _spread(F, out, shape))
    sel = F.float_mask_fill(zeros(F, shape, g), hit, 1.0)
    share = F.float_div(g, F.float_sum(sel))
    return F.float_mul(_spread(F, share, shape), sel)


unary("max", save_x=True, save_out=True)(_extreme)
unary("min", save_x=True, save_out=True)(_extreme)


def _argmax(inner, out, x, dim):
    return (dim, inner.float_argmax(x, dim))


def _argmin(inner, out, x, dim):
    return (dim, inner.float_argmin(x, dim))


def _to_index(F, g, n, x, out):
    # The whole gradient goes to the (first) arg-extreme along `dim`.
    dim, index = n.args
    return F.float_scatter(dim, zeros(F, n.parents[0].shape, g), index, g)


unary("max_dim", state=_argmax)(_to_index)
unary("min_dim", state=_argmin)(_to_index)
