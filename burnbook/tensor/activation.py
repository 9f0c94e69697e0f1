"""Activation functions (Burn's `burn::tensor::activation`), built from tensor
primitives so that every backend, and autodiff, gets them for free."""

from __future__ import annotations

import math

from .kind import Float
from .tensor import Tensor


def relu(t: Tensor) -> Tensor:
    """max(x, 0); the gradient at exactly 0 is 0, as in Burn and PyTorch."""
    if t._K is not Float:
        return t.mask_fill(t.lower_equal_elem(0), 0)
    return t._like(t._ops.relu(t._p))


def leaky_relu(t: Tensor, negative_slope: float = 0.01) -> Tensor:
    return t.mask_where(t.lower_elem(0.0), t.mul_scalar(negative_slope))


def sigmoid(t: Tensor) -> Tensor:
    """1 / (1 + e^-x), written as (1 + tanh(x/2)) / 2 so large |x| cannot overflow."""
    return t.mul_scalar(0.5).tanh().add_scalar(1.0).mul_scalar(0.5)


def log_sigmoid(t: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return softplus(t.neg(), 1.0).neg()


def softplus(t: Tensor, beta: float = 1.0) -> Tensor:
    """log(1 + e^(beta x)) / beta, as max(z, 0) + log1p(e^-|z|) to stay finite."""
    z = t.mul_scalar(beta)
    return z.clamp_min(0.0).add(z.abs().neg().exp().log1p()).div_scalar(beta)


def tanh(t: Tensor) -> Tensor:
    return t.tanh()


def gelu(t: Tensor) -> Tensor:
    """x * Phi(x) with the exact error function (PyTorch's default)."""
    return t.mul(t.div_scalar(math.sqrt(2.0)).erf().add_scalar(1.0)).mul_scalar(0.5)


def silu(t: Tensor) -> Tensor:
    """x * sigmoid(x) (also called swish)."""
    return t.mul(sigmoid(t))


def mish(t: Tensor) -> Tensor:
    """x * tanh(softplus(x))."""
    return t.mul(softplus(t, 1.0).tanh())


def softmax(t: Tensor, dim: int) -> Tensor:
    """e^x / sum(e^x) along `dim`, shifted by the max for stability."""
    shifted = t.sub(t.detach().max_dim(dim))
    e = shifted.exp()
    return e.div(e.sum_dim(dim))


def log_softmax(t: Tensor, dim: int) -> Tensor:
    shifted = t.sub(t.detach().max_dim(dim))
    return shifted.sub(shifted.exp().sum_dim(dim).log())


def quiet_softmax(t: Tensor, dim: int) -> Tensor:
    """e^x / (1 + sum(e^x)): lets a row attend to nothing (Burn's quiet_softmax)."""
    m = t.detach().max_dim(dim)
    e = t.sub(m).exp()
    return e.div(e.sum_dim(dim).add(m.neg().exp()))


def hard_sigmoid(t: Tensor, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
    return t.mul_scalar(alpha).add_scalar(beta).clamp(0.0, 1.0)
