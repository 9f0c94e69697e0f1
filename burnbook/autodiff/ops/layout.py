"""Layout: reshape, swap_dims, permute, expand, slice, slice_assign, cat.

These move values around without arithmetic, so each backward moves the
gradient back the same way.
"""

from __future__ import annotations

from ._spec import cat_op, general, unary, unbroadcast, zeros


@unary("reshape")
def reshape(F, g, n, x, out):
    return F.float_reshape(g, n.parents[0].shape)


@unary("swap_dims")
def swap_dims(F, g, n, x, out):
    d1, d2 = n.args
    return F.float_swap_dims(g, d1, d2)


@unary("permute")
def permute(F, g, n, x, out):
    axes = n.args[0]
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return F.float_permute(g, tuple(inverse))


@unary("expand")
def expand(F, g, n, x, out):
    return unbroadcast(F, g, n.shape, n.parents[0].shape)


@unary("slice")
def slice_(F, g, n, x, out):
    return F.float_slice_assign(zeros(F, n.parents[0].shape, g), n.args[0], g)


@general("slice_assign", tensors=(0, 2))
def slice_assign(F, g, n, x, values):
    # out = x with the region replaced: x gets g outside it, values g inside.
    ranges = n.args[0]
    region = F.float_slice(g, ranges)
    px, pv = n.parents
    gx = gv = None
    if px is not None:
        gx = F.float_slice_assign(g, ranges, zeros(F, F.float_shape(region), g))
    if pv is not None:
        gv = unbroadcast(F, region, tuple(F.float_shape(region)), pv.shape)
    return gx, gv


def _cat_sizes(inner, out, ps, dim):
    return (dim, tuple(inner.float_shape(p)[dim] for p in ps))


@cat_op("cat", state=_cat_sizes)
def cat(F, g, n):
    dim, sizes = n.args
    lead = tuple(slice(0, s, 1) for s in n.shape[:dim])
    grads, start = [], 0
    for p, size in zip(n.parents, sizes):
        if p is None:
            grads.append(None)
        else:
            grads.append(F.float_slice(g, lead + (slice(start, start + size, 1),)))
        start += size
    return tuple(grads)

