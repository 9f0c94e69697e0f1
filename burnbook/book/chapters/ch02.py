"""Checks for chapter 02, Why burnbook?"""

from __future__ import annotations

import numpy as np

from burnbook.backend import Autodiff, NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, call_reader, compare, describe

TITLE = "Why burnbook?"


def _pair(answer, what: str) -> tuple:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair {what}")
    return tuple(answer)


def _cubes(answer) -> str | None:
    y, grad = _pair(answer, "(y, dy/dx)")
    x = np.array([1.0, -2.0, 3.0])
    return compare(y, np.sum(x ** 3), "your y") or compare(grad, 3.0 * x ** 2, "your dy/dx")


def _mean(answer) -> str | None:
    x = np.array([1.0, 2.0, 3.0])
    return compare(answer, 2.0 * x / x.size, "your gradient of (x * x).mean()")


def _unit_gradient(x: np.ndarray) -> np.ndarray:
    """d(x_0 / |x|)/dx_j = (delta_0j |x|^2 - x_0 x_j) / |x|^3."""
    norm = np.linalg.norm(x)
    first = np.zeros_like(x)
    first[0] = 1.0
    return (first * norm ** 2 - x[0] * x) / norm ** 3


def _unit(answer) -> str | None:
    cases = ([3.0, 4.0], [1.0, 2.0, 2.0], [-1.0, 0.5, 2.0, 3.0], [0.0, 5.0])
    for B in (NdArray, Autodiff[NdArray]):
        for i, values in enumerate(cases):
            on = f"on {B.name()} with values {values}" + (" (values you have not tried)" if i else "")
            result = call_reader(answer, B, list(values), what="your unit", on=on)
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                return f"your unit returned {describe(result)} {on}; return a pair (the scaled vector, the gradient)"
            u, grad = result
            x = np.array(values)
            problem = compare(u, x / np.linalg.norm(x), f"your scaled vector {on}", rtol=1e-4, atol=1e-6)
            if problem:
                return problem
            if B.is_autodiff:
                if grad is None:
                    return f"your unit returned no gradient {on}, an autodiff backend"
                problem = compare(grad, _unit_gradient(x), f"your gradient of the first element {on}",
                                  rtol=1e-3, atol=1e-5)
                if problem:
                    return problem
    return None


EXERCISES = [
    Exercise("02", 1, "A sum of cubes", _cubes,
             expects="a pair (y, dy/dx): y a number, dy/dx a list, array or tensor of three numbers",
             hints=("Sum the cubes one by one; the derivative of x^3 is 3x^2.",
                    "A square forgets the sign of x.")),
    Exercise("02", 2, "The mean instead of the sum", _mean,
             expects="the gradient of (x * x).mean() at x = [1, 2, 3], a list, array or tensor",
             hints=("The mean is the sum divided by n, and a constant factor carries into the derivative.",
                    "The gradient of the sum of squares is 2x; divide by the number of elements.")),
    Exercise("02", 3, "One function, four backends", _unit, expects="a function unit(B, values) that returns "
             "(the vector divided by its length, the gradient of its first element, or None off autodiff)",
             hints=("Write it once against Tensor[B, 1]; B.is_autodiff says whether a gradient can be taken.",
                    "Take the first element with slice([(0, 1)]), sum it to a scalar, and call backward().",
                    "By hand: d(x_0/|x|)/dx_j = (delta_0j |x|^2 - x_0 x_j) / |x|^3.")),
]
