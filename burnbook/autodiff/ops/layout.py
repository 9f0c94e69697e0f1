"""Layout: reshape, swap_dims, permute, expand, slice, slice_assign, cat.

These move values around without arithmetic, so each backward moves the
gradient back the same way.
"""

from __future__ import annotations

from .table import cat_op, general, unary, unbroadcast, zeros


@unary("reshape")
def reshape(B, g, n, x, out):
    return B.float_reshape(g, n.parents[0].shape)


@unary("swap_dims")
def swap_dims(B, g, n, x, out):
    d1, d2 = n.args
    return B.float_swap_dims(g, d1, d2)


@unary("permute")
def permute(B, g, n, x, out):
    axes = n.args[0]
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return B.float_permute(g, tuple(inverse))


@unary("expand")
def expand(B, g, n, x, out):
    return unbroadcast(B, g, n.shape, n.parents[0].shape)


@unary("slice")
def slice_(B, g, n, x, out):
    return B.float_slice_assign(zeros(B, n.parents[0].shape, g), n.args[0], g)


@general("slice_assign", tensors=(0, 2))
def slice_assign(B, g, n, x, values):
    # out = x with the region replaced: x gets g outside it, values g inside.
    ranges = n.args[0]
    region = B.float_slice(g, ranges)
    px, pv = n.parents
    gx = gv = None
    if px is not None:
        gx = B.float_slice_assign(g, ranges, zeros(B, B.float_shape(region), g))
    if pv is not None:
        gv = unbroadcast(B, region, tuple(B.float_shape(region)), pv.shape)
    return gx, gv


def _cat_sizes(inner, out, ps, dim):
    return (dim, tuple(inner.float_shape(p)[dim] for p in ps))


@cat_op("cat", state=_cat_sizes)
def cat(B, g, n):
    dim, sizes = n.args
    lead = tuple(slice(0, s, 1) for s in n.shape[:dim])
    grads, start = [], 0
    for p, size in zip(n.parents, sizes):
        if p is None:
            grads.append(None)
        else:
            grads.append(B.float_slice(g, lead + (slice(start, start + size, 1),)))
        start += size
    return tuple(grads)

