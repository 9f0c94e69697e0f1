"""Unary math: exp, log, log1p, erf, sqrt, recip, cos, sin, tanh, relu, sigmoid.

Where the derivative is a function of the output (exp, sqrt, recip, tanh, sigmoid) the
output is saved instead of recomputed.
"""

from __future__ import annotations

import math

from .table import unary

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@unary("exp", save_out=True)
def exp(B, g, n, x, out):
    return B.float_mul(g, out)


@unary("log", save_x=True)
def log(B, g, n, x, out):
    return B.float_div(g, x)


@unary("log1p", save_x=True)
def log1p(B, g, n, x, out):
    return B.float_div(g, B.float_add_scalar(x, 1.0))


@unary("erf", save_x=True)
def erf(B, g, n, x, out):
    # d erf(x)/dx = 2/sqrt(pi) * exp(-x^2)
    d = B.float_mul_scalar(B.float_exp(B.float_neg(B.float_mul(x, x))), _TWO_OVER_SQRT_PI)
    return B.float_mul(g, d)


@unary("sqrt", save_out=True)
def sqrt(B, g, n, x, out):
    return B.float_div(B.float_mul_scalar(g, 0.5), out)


@unary("recip", save_out=True)
def recip(B, g, n, x, out):
    # d(1/x)/dx = -1/x^2 = -out^2
    return B.float_neg(B.float_mul(g, B.float_mul(out, out)))


@unary("cos", save_x=True)
def cos(B, g, n, x, out):
    return B.float_neg(B.float_mul(g, B.float_sin(x)))


@unary("sin", save_x=True)
def sin(B, g, n, x, out):
    return B.float_mul(g, B.float_cos(x))


@unary("tanh", save_out=True)
def tanh(B, g, n, x, out):
    # d tanh(x)/dx = 1 - tanh(x)^2
    return B.float_mul(g, B.float_add_scalar(B.float_neg(B.float_mul(out, out)), 1.0))


@unary("relu", save_out=True)
def relu(B, g, n, x, out):
    # The gradient is 0 where the output is 0 (x <= 0), as in Burn and PyTorch.
    return B.float_mask_fill(g, B.float_lower_equal_elem(out, 0.0), 0.0)


@unary("sigmoid", save_out=True)
def sigmoid(B, g, n, x, out):
    # d sigmoid(x)/dx = y (1 - y): relative accuracy on the negative tail,
    # where y is tiny and 1 - y is 1; on the positive tail y (1 - y) is
    # 1 - y's rounding, as in PyTorch.
    return B.float_mul(g, B.float_mul(out, B.float_add_scalar(B.float_neg(out), 1.0)))
