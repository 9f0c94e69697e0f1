"""Indexing: gather, scatter, select, select_assign, mask_where, mask_fill.

Indices and masks are Int/Bool primitives of the inner backend, kept as
static arguments in `n.args`. `scatter` and `select_assign` add, so their
backward is gather/select of the gradient; gather/select scatter it back
(adding, so a repeated index accumulates).
"""

from __future__ import annotations

from .table import general, grad_for, unary, unbroadcast, zeros


@general("gather", tensors=(1,))
def gather(B, g, n, x):
    dim, indices = n.args
    return B.float_scatter(dim, zeros(B, n.parents[0].shape, g), indices, g)


@general("scatter", tensors=(1, 3))
def scatter(B, g, n, x, values):
    dim, indices = n.args
    gv = None if n.parents[1] is None else B.float_gather(dim, g, indices)
    return g, gv


@unary("select")
def select(B, g, n, x, out):
    dim, indices = n.args
    return B.float_select_assign(zeros(B, n.parents[0].shape, g), dim, indices, g)


@general("select_assign", tensors=(0, 3))
def select_assign(B, g, n, x, values):
    dim, indices = n.args
    pv = n.parents[1]
    gv = None
    if pv is not None:
        gv = B.float_select(g, dim, indices)
        gv = unbroadcast(B, gv, tuple(B.float_shape(gv)), pv.shape)
    return g, gv


@general("mask_where", tensors=(0, 2))
def mask_where(B, g, n, x, values):
    # out = values where mask, else x
    (mask,) = n.args
    gx = gv = None
    if n.parents[0] is not None:
        gx = grad_for(B, B.float_mask_fill(g, mask, 0.0), n, 0)
    if n.parents[1] is not None:
        gv = grad_for(B, B.float_mask_fill(g, B.bool_not(mask), 0.0), n, 1)
    return gx, gv


@unary("mask_fill")
def mask_fill(B, g, n, x, out):
    mask, _value = n.args
    return grad_for(B, B.float_mask_fill(g, mask, 0.0), n, 0)
