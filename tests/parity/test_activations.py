"""Every activation (the nn modules and the tensor functions) against
PyTorch on the tails: ±1e-3 to ±88 (sigmoid(-88) is the last normal-range
f32 value PyTorch keeps), forward and input gradient, plus PReLU's slope."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import nn
from burnbook.module import Module
from burnbook.tensor import activation as act
from .helpers import EXTREMES, F32, TAIL, Tol, close, match, run_ours, run_torch, set_param, torch

F = torch.nn.functional

# The tails as a [3, 5] batch (softmaxes run along dim 1), and a second row
# set of large magnitudes for the softmaxes.
X = EXTREMES.reshape(3, 5)
LARGE = np.array([[-3e4, -1e4, 0.0, 1e4, 3e4], [1e4, 1e4 + 1, 1e4 + 2, -1e4, 0.0]], np.float32)

# GELU is x * (1 + erf(x / sqrt 2)) / 2 in f32 on both sides: below x = -5
# the 1 + erf(...) cancels, and past x = -6 both read 0. The gradient's terms
# there (Phi(x) and x phi(x), below 1e-20) are rounding noise of that sum.
GELU = Tol(1e-5, 1e-12)
# softmax's backward is y (g - sum(g y)): where y ~ 1 the difference of two
# order-1 numbers keeps an absolute error of a few f32 ulps of 1.
SOFTMAX = Tol(1e-5, 3e-7)

# name -> (ours(tensor) or a module factory, torch fn, tolerance, input)
CASES = {
    "relu": (lambda: nn.Relu(), F.relu, F32, X),
    "leaky_relu": (lambda: nn.LeakyReluConfig(0.1).init(), lambda x: F.leaky_relu(x, 0.1), F32, X),
    "sigmoid": (lambda: nn.Sigmoid(), torch.sigmoid, TAIL, X),
    "tanh": (lambda: nn.Tanh(), torch.tanh, TAIL, X),
    "silu": (lambda: nn.Silu(), F.silu, TAIL, X),
    "mish": (lambda: nn.Mish(), F.mish, TAIL, X),
    "softplus": (lambda: nn.Softplus(), F.softplus, TAIL, X),
    "softplus_beta2": (lambda: nn.Softplus(beta=2.0), lambda x: F.softplus(x, beta=2.0), TAIL, X),
    "gelu": (lambda: nn.Gelu(), F.gelu, GELU, X),
    "log_sigmoid": (lambda: act.log_sigmoid, F.logsigmoid, TAIL, X),
    "hard_sigmoid": (lambda: (lambda t: act.hard_sigmoid(t, 1.0 / 6.0, 0.5)), F.hardsigmoid, F32, X * 0.1),
    "softmax": (lambda: (lambda t: act.softmax(t, 1)), lambda x: F.softmax(x, 1), SOFTMAX, X),
    "log_softmax": (lambda: (lambda t: act.log_softmax(t, 1)), lambda x: F.log_softmax(x, 1), F32, X),
    "softmax_large": (lambda: (lambda t: act.softmax(t, 1)), lambda x: F.softmax(x, 1), SOFTMAX, LARGE),
    "log_softmax_large": (lambda: (lambda t: act.log_softmax(t, 1)), lambda x: F.log_softmax(x, 1), F32, LARGE),
}


@pytest.mark.parametrize("name", list(CASES))
def test_activation_matches_torch(B, name: str) -> None:
    make, theirs_fn, tol, x = CASES[name]
    fn = make()
    forward = fn.forward if isinstance(fn, Module) else fn
    ours = run_ours(B, None, lambda _, t: forward(t), x)
    match(ours, run_torch(theirs_fn, x), {}, tol)


def test_prelu_matches_torch(B) -> None:
    prelu = nn.PReluConfig(num_parameters=3, alpha=0.25).init(backend=B)
    ref = torch.nn.PReLU(3, 0.25)
    set_param(ref.weight, np.array([0.25, 0.25, 0.25], np.float32))
    x = EXTREMES.reshape(5, 3)
    ours = run_ours(B, prelu, lambda m, t: m.forward(t), x)
    theirs = run_torch(ref, x)
    match(ours, theirs, {"alpha": lambda: ref.weight.grad.numpy()}, F32)


def test_sigmoid_keeps_the_negative_tail_relative() -> None:
    """The issue's symptom itself: sigmoid(-20), sigmoid(-50), sigmoid(-80)
    are 2e-9, 2e-22, 2e-35 to f32 relative accuracy, not 0 or a tanh
    cancellation (-80, not -88: a Taichi CPU kernel launched earlier in the
    process may have set flush-to-zero, and sigmoid(-88) is subnormal)."""
    from burnbook import Tensor
    from burnbook.backend import NdArray

    x = np.array([-20.0, -50.0, -80.0], np.float32)
    ours = act.sigmoid(Tensor[NdArray, 1].from_data(x)).to_numpy()
    close(ours, 1.0 / (1.0 + np.exp(-x.astype(np.float64))), Tol(1e-6, 0.0), "sigmoid tail")
