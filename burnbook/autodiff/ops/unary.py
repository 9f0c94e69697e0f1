"""Unary math: exp, log, log1p, erf, sqrt, recip, cos, sin, tanh, relu, sigmoid.

Where the derivative is a function of the output (exp, sqrt, recip, tanh, sigmoid) the
output is saved instead of recomputed.
"""

from __future__ import annotations

import math

from ._spec import unary

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@unary("exp", save_out=True)
def exp(F, g, n, x, out):
    return F.float_mul(g, out)


@unary("log", save_x=True)
def log(F, g, n, x, out):
    return F.float_div(g, x)


@unary("log1p", save_x=True)
def log1p(F, g, n, x, out):
    return F.float_div(g, F.float_add_scalar(x, 1.0))


@unary("erf", save_x=True)
def erf(F, g, n, x, out):
    # d erf(x)/dx = 2/sqrt(pi) * exp(-x^2)
    d = F.float_mul_scalar(F.float_exp(F.float_neg(F.float_mul(x, x))), _TWO_OVER_SQRT_PI)
    return F.float_mul(g, d)


@unary("sqrt", save_out=True)
def sqrt(F, g, n, x, out):
    return F.float_div(F.float_mul_scalar(g, 0.5), out)


@unary("recip", save_out=True)
def recip(F, g, n, x, out):
    # d(1/x)/dx = -1/x^2 = -out^2
    return F.float_neg(F.float_mul(g, F.float_mul(out, out)))


@unary("cos", save_x=True)
def cos(F, g, n, x, out):
    return F.float_neg(F.float_mul(g, F.float_sin(x)))


@unary("sin", save_x=True)
def sin(F, g, n, x, out):
    return F.float_mul(g, F.float_cos(x))


@unary("tanh", save_out=True)
def tanh(F, g, n, x, out):
    # d tanh(x)/dx = 1 - tanh(x)^2
    return F.float_mul(g, F.float_add_scalar(F.float_neg(F.float_mul(out, out)), 1.0))


@unary("relu", save_out=True)
def relu(F, g, n, x, out):
    # The gradient is 0 where the output is 0 (x <= 0), as in Burn and PyTorch.
    return F.float_mask_fill(g, F.float_lower_equal_elem(out, 0.0), 0.0)


@unary("sigmoid", save_out=True)
def sigmoid(F, g, n, x, out):
    # d sigmoid(x)/dx = y (1 - y): relative accuracy on the negative tail,
    # where y is tiny and 1 - y is 1; on the positive tail y (1 - y) is
    # 1 - y's rounding, as in PyTorch.
    return F.float_mul(g, F.float_mul(out, F.float_add_scalar(F.float_neg(out), 1.0)))
