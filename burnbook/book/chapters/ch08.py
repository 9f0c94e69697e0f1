"""Checks for chapter 08, Autodiff and Gradient Descent.

The expected values come from the updates themselves, run here in float64
NumPy (the chapter runs them through the autodiff engine in float32)."""

from __future__ import annotations

import numpy as np

from burnbook import Distribution, Tensor
from burnbook.backend import Autodiff, NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, compare, describe, kept_random_state

TITLE = "Autodiff and Gradient Descent"
_B = Autodiff[NdArray]


def _pair(answer, what: str) -> tuple:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair {what}")
    return tuple(answer)


def _descend(x: float, lr: float, steps: int) -> list[float]:
    """x after each step of gradient descent on (x - 3)^2, whose gradient is 2(x - 3)."""
    path = []
    for _ in range(steps):
        x = x - lr * 2.0 * (x - 3.0)
        path.append(x)
    return path


def _descend_without_two(x: float, lr: float, steps: int) -> list[float]:
    """The same steps with the derivative missing its factor 2 (a typical slip)."""
    out = []
    for _ in range(steps):
        x = x - lr * (x - 3.0)
        out.append(x)
    return out


def _one_step(answer) -> str | None:
    got = as_array(answer, "your three values")
    if got.shape == (4,):
        return "your answer has four values; pass x after steps 1, 2 and 3 (not the start, x = 0)"
    if got.shape == (3,) and np.allclose(got, _descend_without_two(0.0, 0.5, 3)):
        return "your steps use f'(x) = x - 3; the derivative of (x - 3)^2 is 2(x - 3)"
    return compare(got, _descend(0.0, 0.5, 3), "your three values")


def _too_large(answer) -> str | None:
    bounce, distance = _pair(answer, "(x after 20 steps with lr = 1.0, how far from 3 x ends with lr = 1.1)")
    problem = compare(bounce, _descend(0.0, 1.0, 20)[-1], "your x after 20 steps with lr = 1.0", atol=1e-4)
    if problem:
        return problem + " (what does one step with lr = 1.0 do to x - 3?)"
    end = _descend(0.0, 1.1, 20)[-1]
    value = as_array(distance, "your distance from 3")
    if value.size == 1 and abs(float(value.reshape(())) - end) < 1e-3 * abs(end):
        return "that is x itself after 20 steps with lr = 1.1; pass its distance from 3, |x - 3|"
    return compare(value, abs(end - 3.0), "your distance from 3 with lr = 1.1", rtol=1e-3)


def _regression_data() -> tuple[np.ndarray, np.ndarray]:
    """The chapter's data: x = 0, 0.1, ..., 9.9 and y = 2x + 1 + uniform noise drawn right after B.seed(0)."""
    x = np.arange(100) / 10.0
    with kept_random_state(NdArray):
        _B.seed(0)
        noise = Tensor[_B, 1].random([100], Distribution.Uniform(-0.25, 0.25)).to_numpy().astype(np.float64)
    return x, 2.0 * x + 1.0 + noise


def _fit(x: np.ndarray, y: np.ndarray, lr: float, steps: int = 100) -> tuple[float, float]:
    """Gradient descent on the mean squared error of y = w x + b, from w = b = 0.5."""
    w = b = 0.5
    for _ in range(steps):
        r = w * x + b - y
        w, b = w - lr * 2.0 * np.mean(r * x), b - lr * 2.0 * np.mean(r)
    return w, b


def _centred(answer) -> str | None:
    w, b = _pair(answer, "(w, b) after 100 steps of the centred fit with lr = 0.1")
    x, y = _regression_data()
    w_c, c = _fit(x - x.mean(), y, 0.1)
    got_b = as_array(b, "your b")
    if got_b.size == 1 and abs(float(got_b.reshape(())) - c) < 1e-2:
        return "your b is c, the centred line's intercept at x = mean(x); recover b = c - w * mean(x)"
    w_raw, b_raw = _fit(x, y, 0.01)
    if got_b.size == 1 and abs(float(got_b.reshape(())) - b_raw) < 1e-3:
        return "your b is the chapter's fit on the raw inputs (lr = 0.01); fit on x - mean(x) with lr = 0.1"
    return (compare(w, w_c, "your w", atol=1e-3, rtol=0)
            or compare(got_b, c - w_c * x.mean(), "your b", atol=1e-3, rtol=0))


def _settle(lr: float, mu: float, steps: int = 400, tol: float = 0.01) -> tuple[int, int]:
    """(the first step after which x is within tol of 3, the first step from which it stays), counted from 1."""
    x, v, distance = 0.0, 0.0, []
    for _ in range(steps):
        v = mu * v + 2.0 * (x - 3.0)
        x -= lr * v
        distance.append(abs(x - 3.0))
    distance = np.array(distance)
    outside = np.nonzero(distance >= tol)[0]
    return int(np.argmax(distance < tol)) + 1, int(outside[-1]) + 2


def _momentum(answer) -> str | None:
    plain, heavy = _pair(answer, "(steps with mu = 0, steps with mu = 0.9)")
    (_, plain_right), (heavy_first, heavy_right) = _settle(0.02, 0.0), _settle(0.02, 0.9)
    problem = compare(plain, plain_right, "your count for mu = 0")
    if problem:
        return problem + " (each plain step multiplies x - 3 by 1 - 2 lr)"
    got = as_array(heavy, "your count for mu = 0.9")
    if got.size == 1 and float(got.reshape(())) == heavy_first:
        return ("your count for mu = 0.9 is where x first comes within 0.01, while it swings past 3; "
                "count from when it stays")
    return compare(got, heavy_right, "your count for mu = 0.9")


EXERCISES = [
    Exercise("08", 1, "One step to the minimum", _one_step,
             expects="the values of x after steps 1, 2 and 3 with lr = 0.5, from x = 0 (a list of three)",
             hints=("Each step maps x - 3 to (1 - 2 lr)(x - 3).",
                    "What is 1 - 2 lr for lr = 0.5, and what does it do to x - 3?")),
    Exercise("08", 2, "Too large a step", _too_large,
             expects="a pair (x after 20 steps with lr = 1.0, |x - 3| after 20 steps with lr = 1.1)",
             hints=("The factor 1 - 2 lr is -1 for lr = 1.0: what does multiplying by -1 twenty times give?",
                    "For lr = 1.1 the factor is -1.2; x starts 3 away from the minimum.")),
    Exercise("08", 3, "Centre the inputs", _centred,
             expects="a pair (w, b) after 100 steps on x - mean(x) with lr = 0.1, b recovered as c - w * mean(x)",
             hints=("Fit y = w (x - mean) + c with the chapter's loop, on X - mean(x_data), starting at 0.5, 0.5.",
                    "The line's intercept at x = 0 is c - w * mean(x).")),
    Exercise("08", 4, "Momentum", _momentum,
             expects="a pair of integers (steps until x stays within 0.01 of 3 for mu = 0, for mu = 0.9)",
             hints=("Count the first step from which every later x is within 0.01 of 3, not the first arrival.",
                    "Keep |x - 3| for each of a few hundred steps; the answer is one past the last step outside.")),
]
