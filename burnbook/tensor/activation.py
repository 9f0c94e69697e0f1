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
    return t._like(t._B.float_relu(t._p))


def leaky_relu(t: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x for x > 0, negative_slope * x otherwise. At exactly 0 the gradient is
    negative_slope, as in PyTorch and as relu's is 0 there (Burn's own mask
    gives 1), so leaky_relu with slope 0 is relu, gradient included."""
    return t.mask_where(t.lower_equal_elem(0.0), t.mul_scalar(negative_slope))


def sigmoid(t: Tensor) -> Tensor:
    """1 / (1 + e^-x), accurate on both tails (`Tensor.sigmoid`, the backend's
    `float_sigmoid`; its gradient is y (1 - y) from the output, as in Burn and
    PyTorch)."""
    return t.sigmoid()


def log_sigmoid(t: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return softplus(t.neg(), 1.0).neg()


def softplus(t: Tensor, beta: float = 1.0) -> Tensor:
    """log(1 + e^(beta x)) / beta, finite and accurate on both tails.

    With z = beta x: log1p(e^z) where z <= 0 and z + log1p(e^-z) where
    z > 0, each branch fed a clamped z so neither exponential overflows. The
    gradient is then e^z / (1 + e^z) on the negative side, relatively
    accurate down to e^-88 (a sum like (z + |z|) / 2 + ... would add 0.5 and
    -0.5 to the tiny term and lose it), and sigmoid(0) = 0.5 at z = 0."""
    z = t.mul_scalar(beta)
    neg = z.clamp_max(0.0)
    pos = z.clamp_min(0.0)
    out = neg.exp().log1p().mask_where(z.greater_elem(0.0), pos.add(pos.neg().exp().log1p()))
    return out.div_scalar(beta) if beta != 1.0 else out


def tanh(t: Tensor) -> Tensor:
    return t.tanh()


_GELU_TANH_LINEAR = 2.0 * math.sqrt(2.0 / math.pi)
_GELU_TANH_CUBIC = _GELU_TANH_LINEAR * 0.044715


def gelu(t: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x) with the exact error function (PyTorch's default), or with
    `approximate="tanh"` PyTorch's tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x +
    0.044715 x^3))).

    The tanh form is computed as x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)),
    the same function (0.5 (1 + tanh z) = sigmoid(2z)) in six ops instead of
    nine, and on the negative tail sigmoid keeps the relative accuracy that
    1 + tanh(z) cancels away."""
    if approximate == "tanh":
        return t.mul(sigmoid(t.mul(t).mul_scalar(_GELU_TANH_CUBIC).add_scalar(_GELU_TANH_LINEAR).mul(t)))
    if approximate != "none":
        raise ValueError(f"gelu: approximate={approximate!r}, expected 'none' or 'tanh' (as PyTorch's)")
    return t._like(t._B.gelu(t._p))   # one backend op (`ModuleOps.gelu`)


def silu(t: Tensor) -> Tensor:
    """x * sigmoid(x) (also called swish)."""
    return t.mul(sigmoid(t))


def mish(t: Tensor) -> Tensor:
    """x * tanh(softplus(x))."""
    return t.mul(softplus(t, 1.0).tanh())


def _shift(t: Tensor, dim: int) -> Tensor:
    """The detached max along `dim`, the stability shift of the softmaxes; 0
    when `dim` is empty, whose softmax is an empty tensor (as in torch)."""
    d = t._dim(dim, "softmax")
    if t.dims()[d] == 0:
        shape = t.dims()
        shape[d] = 1
        return type(t).full(shape, 0.0, t.device())
    return t.detach().max_dim(d)


def softmax(t: Tensor, dim: int) -> Tensor:
    """e^x / sum(e^x) along `dim`, shifted by the max for stability."""
    shifted = t.sub(_shift(t, dim))
    e = shifted.exp()
    return e.div(e.sum_dim(dim))


def log_softmax(t: Tensor, dim: int) -> Tensor:
    shifted = t.sub(_shift(t, dim))
    if t.num_elements() == 0:
        return shifted  # empty either way; skips log(0) of an empty sum and its warning
    return shifted.sub(shifted.exp().sum_dim(dim).log())


def quiet_softmax(t: Tensor, dim: int) -> Tensor:
    """e^x / (1 + sum(e^x)): lets a row attend to nothing (Burn's quiet_softmax)."""
    m = _shift(t, dim)
    e = t.sub(m).exp()
    return e.div(e.sum_dim(dim).add(m.neg().exp()))


def hard_sigmoid(t: Tensor, alpha: float = 0.2, beta: float = 0.5) -> Tensor:
    """max(0, min(1, alpha x + beta)): one backend op (`ModuleOps.hard_sigmoid`)."""
    return t._like(t._B.hard_sigmoid(t._p, float(alpha), float(beta)))
