"""Indexing: gather, scatter, select, select_assign, mask_where, mask_fill.

Indices and masks are Int/Bool primitives of the inner backend, kept as
static arguments in `n.args`. `scatter` and `select_assign` add, so their
backward is gather/select of the gradient; gather/select scatter it back
(adding, so a repeated index accumulates).
"""

from __future__ import annotations

from ._spec import general, grad_for, unary, unbroadcast, zeros


@general("gather", tensors=(1,))
def gather(F, g, n, x):
    dim, indices = n.args
    return F.float_scatter(dim, zeros(F, n.parents[0].shape, g), indices, g)


@general("scatter", tensors=(1, 3))
def scatter(F, g, n, x, values):
    dim, indices = n.args
    gv = None if n.parents[1] is None else F.float_gather(dim, g, indices)
    return g, gv


@unary("select")
def select(F, g, n, x, out):
    dim, indices = n.args
    return F.float_select_assign(zeros(F, n.parents[0].shape, g), dim, indices, g)


@general("select_assign", tensors=(0, 3))
def select_assign(F, g, n, x, values):
    dim, indices = n.args
    pv = n.parents[1]
    gv = None
    if pv is not None:
        gv = F.float_select(g, dim, indices)
        gv = unbroadcast(F, gv, tuple(F.float_shape(gv)), pv.shape)
    return g, gv


@general("mask_where", tensors=(0, 2))
def mask_where(F, g, n, x, values):
    # out = values where mask, else x
    (mask,) = n.args
    gx = gv = None
    if n.parents[0] is not None:
        gx = grad_for(F, F.float_mask_fill(g, mask, 0.0), n, 0)
    if n.parents[1] is not None:
        gv = grad_for(F, F.float_mask_fill(g, F.bool_not(mask), 0.0), n, 1)
    return gx, gv


@unary("mask_fill")
def mask_fill(F, g, n, x, out):
    mask, _value = n.args
    return grad_for(F, F.float_mask_fill(g, mask, 0.0), n, 0)
