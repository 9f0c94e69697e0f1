"""Checks for chapter 10, Optimizers.

Every expected value is a NumPy re-derivation of the update rule on the
chapter's loss w^2 (gradient 2w), not a run of burnbook's optimizers."""

from __future__ import annotations

import numpy as np

from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, compare, compare_function

TITLE = "Optimizers"


def _momentum(start: float, lr: float, steps: int, mu: float = 0.9, d: float = 0.1,
              dampen_first: bool = False) -> list[float]:
    """w after each SGD-with-momentum step on w^2: v_1 = g_1 (undampened, as in
    Burn and PyTorch), then v = mu v + (1 - d) g; w <- w - lr v."""
    w, v, out = float(start), None, []
    for _ in range(steps):
        g = 2.0 * w
        v = ((1.0 - d) * g if dampen_first else g) if v is None else mu * v + (1.0 - d) * g
        w -= lr * v
        out.append(w)
    return out


def _adam(start: float, lr: float, steps: int, beta_1: float = 0.9, beta_2: float = 0.999,
          epsilon: float = 1e-5) -> float:
    """w after `steps` Adam steps on w^2, with Burn's defaults (epsilon 1e-5)."""
    w, m, v = float(start), 0.0, 0.0
    for t in range(1, steps + 1):
        g = 2.0 * w
        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g * g
        w -= lr * (m / (1 - beta_1 ** t)) / (np.sqrt(v / (1 - beta_2 ** t)) + epsilon)
    return w


def _clipped(start: float, lr: float, steps: int, clip: float) -> list[float]:
    """w after each SGD step whose gradient 2w is clamped to [-clip, clip]."""
    w, out = float(start), []
    for _ in range(steps):
        w -= lr * float(np.clip(2.0 * w, -clip, clip))
        out.append(w)
    return out


def _three_values(answer, expected: list[float], what: str) -> str | None:
    values = as_array(answer, what)
    if values.ndim != 1 or values.size != len(expected):
        raise AnswerError(f"{what} has {values.size} number(s) in shape {list(values.shape)}; "
                          f"pass a list of the {len(expected)} values of w, one per step")
    return compare(values, expected, what, rtol=1e-4, atol=1e-4)


def _momentum_at_minimum(answer) -> str | None:
    problem = _three_values(answer, _momentum(1.0, 0.5, 3), "your list")
    if problem and np.allclose(as_array(answer).astype(float), 0.0, atol=1e-6):
        return "momentum does not stay at 0: the gradient there is 0, but is the velocity?"
    return problem


def _adam_six_steps(answer) -> str | None:
    value = as_array(answer, "your w")
    if value.size != 1:
        return f"your w has {value.size} numbers; pass the one value of w after the sixth step"
    w = float(value.reshape(()))
    if abs(w - _adam(100.0, 1.0, 6)) < 1e-2:  # a prediction of "about 94" is the idea
        return None
    if abs(w - _adam(100.0, 1.0, 5)) < 5e-3 or abs(w - _adam(100.0, 1.0, 7)) < 5e-3:
        return "your w is Adam's after a different number of steps (count six)"
    if w < 0 or w > 100:
        return "your w moved by far more than Adam moves: is the step the gradient times the rate?"
    return "your w is not where six Adam steps end"


def _clip_by_value(answer) -> str | None:
    problem = _three_values(answer, _clipped(100.0, 0.1, 3, 0.5), "your list")
    if problem and compare(answer, [100.0 * 0.8 ** (k + 1) for k in range(3)]) is None:
        return "your values are plain SGD's, as if nothing were clipped"
    return problem


def _momentum_by_hand(answer) -> str | None:
    cases = [(1.0, 0.1, 6), (1.0, 0.5, 3), (-2.0, 0.05, 8), (100.0, 0.01, 5)]
    problem = compare_function(answer, lambda s, lr, n: _momentum(s, lr, n), cases,
                               what="your momentum_by_hand", rtol=1e-4, atol=1e-5)
    if problem and compare_function(answer, lambda s, lr, n: _momentum(s, lr, n, dampen_first=True), cases,
                                    rtol=1e-4, atol=1e-5) is None:
        return "your momentum_by_hand dampens the first velocity, and Burn's does not"
    return problem


EXERCISES = [
    Exercise("10", 1, "Momentum at the minimum", _momentum_at_minimum,
             expects="a list of the three values of w, one per step",
             hints=("At w = 0 the gradient is 0, but the velocity remembers the steps before.",
                    "v_2 = mu * v_1 + (1 - d) * g_2 with mu = 0.9 and d = 0.1; then w_3 the same way.")),
    Exercise("10", 2, "Adam moves by about the rate", _adam_six_steps,
             expects="a float, w after six Adam steps",
             hints=("Adam divides the mean gradient by the root of its mean square: the gradient's size cancels.",
                    "With a steady gradient each bias-corrected step is close to lr.")),
    Exercise("10", 3, "Clipping by value", _clip_by_value,
             expects="a list of the three values of w, one per step",
             hints=("Clipping by value clamps each gradient entry to [-0.5, 0.5] before the step.",
                    "The gradient 2w = 200 is far above 0.5; each step moves w by lr times the clamped value.")),
    Exercise("10", 4, "Momentum by hand", _momentum_by_hand,
             expects="a function momentum_by_hand(start, lr, steps) returning the list of w after each step",
             hints=("The loss is w^2, so the gradient is 2w; keep the velocity between steps.",
                    "Compare with trajectory(...): the first velocity is one of g or (1 - d) g; "
                    "later ones are mu * v + (1 - d) * g.")),
]
