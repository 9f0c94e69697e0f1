"""Checks for chapter 07, Autodiff."""

from __future__ import annotations

import numpy as np

from burnbook.backend import Autodiff, NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import (AnswerError, as_array, call_reader, compare, compare_function, describe,
                                 kept_random_state)
from burnbook.tensor import Distribution, Tensor, activation

TITLE = "Autodiff"
_B = Autodiff[NdArray]


def _pair(answer, names: tuple[str, str]) -> tuple:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair ({names[0]}, {names[1]})")
    return tuple(answer)


def _both_gradients(answer) -> str | None:
    gx, gy = _pair(answer, ("x's gradient", "y's gradient"))
    return (compare(gx, [4.0, 5.0, 6.0], "x's gradient")
            or compare(gy, [1.0, 2.0, 3.0], "y's gradient"))


def _where(answer) -> str | None:
    plain, graph = _pair(answer, ("the name after backward()", "the name after backward(create_graph=True)"))
    for given, right, when in ((plain, "ndarray", "after backward()"),
                               (graph, "autodiff<ndarray>", "after backward(create_graph=True)")):
        if not isinstance(given, str):
            return f"the name {when} is {describe(given)}; pass the string `backend.name()` returns"
        if given.strip() != right:
            return f"the backend {when} is not {given.strip()!r}"
    return None


def _inputs() -> list:
    def make(shape, seed):
        def build():
            with kept_random_state(NdArray):  # the reader's own draws are not moved by the check's
                _B.seed(seed)
                return (Tensor[_B, len(shape)].random(shape, Distribution.Default, _B.default_device()),)
        return build
    return [make([2, 3], 0), make([5], 1), make([3, 1, 4], 2)]


def _swish(answer) -> str | None:
    problem = compare_function(answer, lambda t: t * activation.sigmoid(t), _inputs(), what="your swish")
    if problem:
        return problem
    for build in _inputs():
        (x,) = build()
        x = x.require_grad()
        out = call_reader(answer, x, what="your swish", on=f"on a tracked {list(x.dims())} input")
        try:
            grad = x.grad(out.sum().backward())
        except Exception as err:
            raise AnswerError(f"backward through your swish failed ({type(err).__name__}: {err})") from None
        if grad is None:
            return "your swish's output does not depend on x through the graph (is x detached?)"
        s = 1.0 / (1.0 + np.exp(-x.to_numpy().astype(np.float64)))
        expected = s + x.to_numpy() * s * (1.0 - s)
        problem = compare(grad, expected, "the gradient of your swish", rtol=1e-4, atol=1e-5)
        if problem:
            return problem + " (the values are right, so one of the two paths to x is cut: a detach?)"
    return None


def _newton(answer) -> str | None:
    value = as_array(answer, "your x")
    if value.size != 1:
        return f"your x has {value.size} numbers; pass the one x Newton's method ends at"
    root = max(np.roots([4.0, 0.0, -6.0, 1.0]).real)
    if abs(float(value.reshape(())) - root) < 1e-4:
        return None
    if any(abs(float(value.reshape(())) - r) < 1e-4 for r in np.roots([4.0, 0.0, -6.0, 1.0]).real):
        return "your x is a root of f', but not the one Newton's method reaches from x = 2"
    return "your x is not where f'(x) = 0 (run more steps, or check the update's sign)"


EXERCISES = [
    Exercise("07", 1, "Predict both gradients", _both_gradients,
             expects="a pair (x's gradient, y's gradient), each a list, array or tensor",
             hints=("The gradient of a sum of products with respect to one factor is the other factor.",
                    "d/dx_i of sum_j x_j * y_j is y_i.")),
    Exercise("07", 2, "Where does a gradient live?", _where,
             expects="a pair of strings, as `backend.name()` returns them",
             hints=("A plain backward() hands back gradients you cannot differentiate again.",
                    "create_graph=True keeps the gradient on the autodiff backend, so it can be tracked.")),
    Exercise("07", 3, "Check your own gradient", _swish,
             expects="a function swish(t) that returns t * sigmoid(t) for a tensor t",
             hints=("x appears twice in swish: both uses must stay in the graph.",
                    "activation.sigmoid(t) and t * ... are both tracked ops; detach() cuts a path.")),
    Exercise("07", 4, "Newton's method", _newton,
             expects="the float x where Newton's method ends, starting from x = 2",
             hints=("Newton's step is x - f'(x) / f''(x); get f' with backward(create_graph=True).",
                    "Differentiate the tracked f' once more for f''; repeat until x stops moving.")),
]
