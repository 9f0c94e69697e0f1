"""Arithmetic: + - * / pow (tensor and scalar forms), neg, abs, clamp.

Binary ops broadcast, so each gradient is summed back to its input's shape
(`grad_for`).
"""

from __future__ import annotations

from .table import binary, grad_for, unary, zeros


@binary("add")
def add(B, g, n, x, y):
    return grad_for(B, g, n, 0), grad_for(B, g, n, 1)


@binary("sub")
def sub(B, g, n, x, y):
    gy = None if n.parents[1] is None else grad_for(B, B.float_neg(g), n, 1)
    return grad_for(B, g, n, 0), gy


@binary("mul", save=True)
def mul(B, g, n, x, y):
    px, py = n.parents
    gx = None if px is None else grad_for(B, B.float_mul(g, y), n, 0)
    gy = None if py is None else grad_for(B, B.float_mul(g, x), n, 1)
    return gx, gy


@binary("div", save=True)
def div(B, g, n, x, y):
    # d(x/y)/dx = 1/y ; d(x/y)/dy = -x/y^2 = -(g/y) * x / y
    gx = B.float_div(g, y)
    gy = None
    if n.parents[1] is not None:
        gy = grad_for(B, B.float_neg(B.float_div(B.float_mul(gx, x), y)), n, 1)
    return grad_for(B, gx, n, 0), gy


@binary("powf", save=True)
def powf(B, g, n, x, y):
    # d(x^y)/dx = y x^(y-1) (0 where y == 0, as torch); d(x^y)/dy = x^y ln x
    # (0 where x == 0, so that 0^y stays differentiable in y for y >= 0).
    px, py = n.parents
    gx = gy = None
    if px is not None:
        d = B.float_mul(y, B.float_powf(x, B.float_sub_scalar(y, 1.0)))
        d = B.float_mask_fill(d, B.float_equal_elem(y, 0.0), 0.0)
        gx = grad_for(B, B.float_mul(g, d), n, 0)
    if py is not None:
        d = B.float_mul(B.float_powf(x, y), B.float_log(x))
        d = B.float_mask_fill(d, B.float_equal_elem(x, 0.0), 0.0)
        gy = grad_for(B, B.float_mul(g, d), n, 1)
    return gx, gy


@unary("add_scalar")
def add_scalar(B, g, n, x, out):
    return g


@unary("sub_scalar")
def sub_scalar(B, g, n, x, out):
    return g


@unary("mul_scalar")
def mul_scalar(B, g, n, x, out):
    return B.float_mul_scalar(g, n.args[0])


@unary("div_scalar")
def div_scalar(B, g, n, x, out):
    return B.float_div_scalar(g, n.args[0])


@unary("powf_scalar", save_x=True)
def powf_scalar(B, g, n, x, out):
    s = n.args[0]
    if s == 0:
        return zeros(B, n.shape, g)
    if s == 1:
        return g
    if s == 2:  # the common square: exact and one op cheaper
        return B.float_mul(g, B.float_mul_scalar(x, 2.0))
    return B.float_mul(g, B.float_mul_scalar(B.float_powf_scalar(x, s - 1.0), s))


@unary("neg")
def neg(B, g, n, x, out):
    return B.float_neg(g)


@unary("abs", save_x=True)
def abs_(B, g, n, x, out):
    # sign(x) * g, with 0 at x == 0 (torch's convention)
    gx = B.float_mask_where(g, B.float_lower_elem(x, 0.0), B.float_neg(g))
    return B.float_mask_fill(gx, B.float_equal_elem(x, 0.0), 0.0)


@unary("clamp", save_x=True)
def clamp(B, g, n, x, out):
    # Pass-through inside [lo, hi] (bounds included), zero outside.
    lo, hi = n.args
    if lo is not None:
        g = B.float_mask_fill(g, B.float_lower_elem(x, lo), 0.0)
    if hi is not None:
        g = B.float_mask_fill(g, B.float_greater_elem(x, hi), 0.0)
    return g
