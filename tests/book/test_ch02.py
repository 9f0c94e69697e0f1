"""Chapter 02's checks accept the right answers and refuse the typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook.book import exercises
from burnbook.tensor import Tensor

ex = exercises("02")


def test_sum_of_cubes():
    x = np.array([1.0, -2.0, 3.0])
    assert ex[1].verdict((float((x ** 3).sum()), 3 * x ** 2)).ok
    assert "dy/dx is off" in ex[1].verdict((20.0, 3 * x * np.abs(x))).message  # kept the sign
    assert "dy/dx is off everywhere by the same factor" in ex[1].verdict((20.0, x ** 2)).message  # lost the 3
    assert "your y is off" in ex[1].verdict((36.0, 3 * x ** 2)).message  # cubed |x|
    assert "pair" in ex[1].verdict(20.0).message


def test_mean_divides_the_gradient():
    x = np.array([1.0, 2.0, 3.0])
    assert ex[2].verdict(2 * x / 3).ok
    assert "same factor" in ex[2].verdict(2 * x).message  # the sum's gradient
    assert "same factor" in ex[2].verdict(x / 3).message  # lost the 2
    assert "has shape [], where the answer has shape [3]" in ex[2].verdict(np.mean(2 * x)).message  # one number


def _unit(first_only=True, root=True):
    def unit(B, values):
        x = Tensor[B, 1].from_floats(values).require_grad()
        norm = (x * x).sum()
        u = x / (norm.sqrt() if root else norm)
        if not B.is_autodiff:
            return u.to_numpy(), None
        picked = u.slice([(0, 1)]) if first_only else u
        return u.to_numpy(), x.grad(picked.sum().backward())
    return unit


def test_unit_on_every_backend():
    assert ex[3].verdict(_unit()).ok
    assert "gradient of the first element" in ex[3].verdict(_unit(first_only=False)).message
    assert "scaled vector" in ex[3].verdict(_unit(root=False)).message
    assert "no gradient" in ex[3].verdict(lambda B, values: (np.array(values) / np.linalg.norm(values), None)).message
    assert "return a pair" in ex[3].verdict(lambda B, values: np.array(values) / np.linalg.norm(values)).message
