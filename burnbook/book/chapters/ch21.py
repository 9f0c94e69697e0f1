"""Checks for chapter 21, Backend Extension.

Everything runs on NdArray and Autodiff[NdArray] (no Taichi kernel is
compiled); the expected gradients are written out in NumPy from the
chain rule, so a reader's backward is compared with closed forms."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from burnbook import Tensor
from burnbook.backend import Autodiff, NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe

TITLE = "Backend Extension"
_AD = Autodiff[NdArray]
_SEED = 1  # the chapter's inputs(B, seed=1)


def _draw(shapes: list[list[int]], seed: int) -> list[np.ndarray]:
    """float32 arrays drawn in order from default_rng(seed), as the chapter's `inputs`."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s).astype(np.float32) for s in shapes]


def _bias_gradient(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair (the [1, 2, 2] bias's gradient, "
                          "the [2, 2, 2] bias's gradient)")
    for given, bias_shape in zip(answer, ([1, 2, 2], [2, 2, 2])):
        lhs, rhs, bias = _draw([[2, 2, 3], [2, 3, 2], bias_shape], _SEED)
        positive = (np.matmul(lhs, rhs) + bias > 0).astype(np.float32)  # where the ReLU lets the gradient through
        expected = positive.sum(axis=0, keepdims=True) if bias_shape[0] == 1 else positive
        problem = compare(given, expected, f"the gradient of the {bias_shape} bias", rtol=0, atol=1e-6)
        if problem:
            if bias_shape[0] == 1 and as_array(given).shape == (2, 2, 2):
                return problem + (" (the [1, 2, 2] bias was broadcast over the batch: what does that do to its "
                                  "gradient?)")
            return problem
    return None


def _broken_backward(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        raise AnswerError(f"your answer is {describe(answer)}; pass a triple (the names whose gradients go wrong, "
                          "check_grad's ok on inputs(AD), inputs (lhs, rhs, bias) on which it would not notice)")
    names, ok, quiet = answer
    lhs, rhs, bias = (a.astype(np.float64) for a in _draw([[2, 2, 3], [2, 3, 2], [1, 2, 2]], _SEED))
    z = np.matmul(lhs, rhs) + bias
    gradients = {}  # each input's gradient of out.sum(): with the ReLU's mask, and without it
    for masked in (True, False):
        g = (z > 0).astype(np.float64) if masked else np.ones_like(z)
        grads = [np.matmul(g, np.swapaxes(rhs, 1, 2)), np.matmul(np.swapaxes(lhs, 1, 2), g), _sum_to(g, bias.shape)]
        gradients[masked] = dict(zip(("lhs", "rhs", "bias"), grads))
    wrong = {n for n in ("lhs", "rhs", "bias") if not np.allclose(gradients[True][n], gradients[False][n])}
    if isinstance(names, str) or not isinstance(names, (set, frozenset, list, tuple)):
        return f"the first item is {describe(names)}; pass a set of names among 'lhs', 'rhs', 'bias'"
    got = {str(n) for n in names}
    if got != wrong:
        return ("not only those: the unmasked gradient flows back to every input through the clamped outputs"
                if got < wrong else f"{sorted(got - wrong)[0]!r} is not an input whose gradient goes wrong")
    if not isinstance(ok, (bool, np.bool_)):
        return f"the second item is {describe(ok)}; pass check_grad(...).ok, True or False"
    if bool(ok) != bool((z > 0).all()):
        return "check_grad compares with finite differences: does it pass a backward whose gradients are wrong?"
    if not isinstance(quiet, (tuple, list)) or len(quiet) != 3:
        return f"the third item is {describe(quiet)}; pass the inputs (lhs, rhs, bias) as a triple of arrays"
    arrays = [as_array(a, f"your {n}").astype(np.float64) for a, n in zip(quiet, ("lhs", "rhs", "bias"))]
    for a, shape, n in zip(arrays, ([2, 2, 3], [2, 3, 2], [1, 2, 2]), ("lhs", "rhs", "bias")):
        if list(a.shape) != shape:
            return f"your {n} has shape {list(a.shape)}; keep the chapter's shapes ({n} {shape})"
    clamped = int((np.matmul(arrays[0], arrays[1]) + arrays[2] <= 0).sum())
    if clamped:
        return (f"on your inputs {clamped} outputs are clamped by the ReLU, so the missing mask still shows: "
                "pick inputs where every output is positive")
    return None


def _sum_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The gradient of a broadcast input: `g` summed over the axes where `shape` has size 1."""
    axes = tuple(d for d, (n, m) in enumerate(zip(shape, g.shape)) if n == 1 and m != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def _gradients(fn: Callable, arrays: list[np.ndarray], weights: np.ndarray, what: str) -> tuple[np.ndarray, list]:
    """The reader's `fn` on tracked Autodiff[NdArray] copies of `arrays`: its output, and
    the gradient of sum(output * weights) with respect to each input (None when it has none)."""
    shapes = ", ".join(str(list(a.shape)) for a in arrays)
    tracked = [Tensor[_AD, a.ndim].from_data(a).require_grad() for a in arrays]
    out = call_reader(fn, *tracked, what=what, on=f"on tracked inputs {shapes}")
    if not hasattr(out, "backward") or not hasattr(out, "dims"):
        raise AnswerError(f"{what} returned {describe(out)} for tensors; it should return a tensor")
    if list(out.dims()) != list(weights.shape):
        raise AnswerError(f"{what}'s output on inputs {shapes} has shape {list(out.dims())}, "
                          f"where it should be {list(weights.shape)}")
    loss = (out * Tensor[_AD, weights.ndim].from_data(weights)).sum()
    grads = call_reader(loss.backward, what="the backward through your operation", on=f"on inputs {shapes}")
    return as_array(out, f"{what}'s output"), [t.grad(grads) for t in tracked]


def _compare_all(names, got, expected, on: str) -> str | None:
    for name, g, e in zip(names, got, expected):
        if g is None:
            return f"{name} gets no gradient {on}: does your backward register one for every tracked input?"
        problem = compare(g, e, f"the gradient of {name} {on}", rtol=1e-4, atol=1e-5)
        if problem:
            return problem
    return None


def _leaky(answer) -> str | None:
    cases = [([2, 2, 3], [2, 3, 2], [1, 2, 2], _SEED), ([3, 4, 5], [3, 5, 2], [3, 4, 2], 7),
             ([2, 1, 4], [2, 4, 3], [1, 1, 3], 8)]
    for i, (*shapes, seed) in enumerate(cases):
        lhs, rhs, bias = _draw(shapes, seed)
        on = "on the chapter's inputs" if i == 0 else f"on inputs {shapes} (new to you)"
        z = np.matmul(lhs.astype(np.float64), rhs) + bias
        weights = np.random.default_rng(seed + 100).normal(size=z.shape).astype(np.float32)
        out, got = _gradients(answer, [lhs, rhs, bias], weights, "your matmul_add_leaky_relu")
        problem = compare(out, np.where(z > 0, z, 0.1 * z), f"your output {on}", rtol=1e-4, atol=1e-5)
        if problem:
            return problem
        g = weights * np.where(z > 0, 1.0, 0.1)  # the upstream gradient through the leaky ReLU
        expected = [np.matmul(g, np.swapaxes(rhs, 1, 2)), np.matmul(np.swapaxes(lhs, 1, 2), g), _sum_to(g, bias.shape)]
        problem = _compare_all(["lhs", "rhs", "bias"], got, expected, on)
        if problem:
            return problem + (" (where the output is not positive, the gradient is scaled by 0.1, not cut)"
                              if "off" in problem else "")
    return None


def _silu(answer) -> str | None:
    for i, (shape, seed) in enumerate((([3, 4], 5), ([7], 9), ([2, 3, 5], 11))):
        (x,) = _draw([shape], seed)
        x = x * 3  # reach where sigmoid saturates too
        on = "on the chapter's [3, 4] input" if i == 0 else f"on a {shape} input (new to you)"
        plain = call_reader(answer, Tensor[NdArray, x.ndim].from_data(x), what="your silu", on=f"{on} on NdArray")
        x64 = x.astype(np.float64)
        s = 1.0 / (1.0 + np.exp(-x64))
        problem = compare(plain, x64 * s, f"your silu's NdArray output {on}", rtol=1e-4, atol=1e-5)
        if problem:
            return problem
        weights = np.random.default_rng(seed + 100).normal(size=x.shape).astype(np.float32)
        _, (grad,) = _gradients(answer, [x], weights, "your silu")
        problem = _compare_all(["x"], [grad], [weights * (s + x64 * s * (1.0 - s))], on)
        if problem:
            return problem
    return None


EXERCISES = [
    Exercise("21", 1, "Predict the bias gradient", _bias_gradient,
             expects="a pair (the [1, 2, 2] bias's gradient, the [2, 2, 2] bias's gradient), arrays or nested lists",
             hints=("out.sum() sends a gradient of 1 to every output; the ReLU keeps it only where the output is > 0.",
                    "A bias broadcast over the batch receives the sum of the gradients of every batch entry.")),
    Exercise("21", 2, "Break the backward", _broken_backward,
             expects="a triple (the set of names among 'lhs', 'rhs', 'bias' whose gradients go wrong, "
                     "check_grad(..., raise_error=False).ok on inputs(AD), inputs (lhs, rhs, bias) on which it "
                     "would not notice)",
             hints=("The mask is applied to the gradient before it is split among the three inputs.",
                    "Where no output is clamped, the mask keeps every entry: with or without it, the same gradient.")),
    Exercise("21", 3, "A leaky variant", _leaky,
             expects="a function f(lhs, rhs, bias) -> tensor, your op's apply (lhs [b, n, k], rhs [b, k, m], bias "
                     "broadcast to [b, n, m])",
             hints=("Both the forward and the backward change: the forward scales z by 0.1 where z <= 0.",
                    "In the backward, where the output is not positive, multiply the gradient by 0.1 instead of "
                    "zeroing it; a broadcast bias still sums its gradient.")),
    Exercise("21", 4, "A new operation from scratch", _silu,
             expects="a function silu(x) -> tensor, your CustomOp's apply, for NdArray and Autodiff[NdArray] tensors",
             hints=("The forward is x * sigmoid(x) in NumPy; the autodiff part keeps x as the state.",
                    "The backward multiplies the incoming gradient by s + x * s * (1 - s), s = sigmoid(x), written "
                    "with inner-backend ops (float_sigmoid, float_mul, ...).")),
]
