"""Chapter 08's checks accept the right answers and refuse the typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook import Distribution, Tensor
from burnbook.backend import Autodiff, NdArray
from burnbook.book import exercises

ex = exercises("08")


def test_one_step_to_the_minimum():
    assert ex[1].verdict([3.0, 3.0, 3.0]).ok
    assert "not the start" in ex[1].verdict([0.0, 3.0, 3.0, 3.0]).message
    assert "2(x - 3)" in ex[1].verdict([1.5, 2.25, 2.625]).message  # forgot the factor 2
    assert "off" in ex[1].verdict([0.0, 3.0, 3.0]).message  # the start and two steps


def test_too_large_a_step():
    end = 3.0 - 3.0 * 1.2 ** 20  # x itself: from x = 0, x - 3 = -3 * (-1.2)^20
    assert ex[2].verdict((0.0, 3.0 * 1.2 ** 20)).ok
    assert "lr = 1.0" in ex[2].verdict((6.0, 3.0 * 1.2 ** 20)).message  # an odd number of jumps
    assert "x itself" in ex[2].verdict((0.0, end)).message
    assert "distance from 3 with lr = 1.1 is off" in ex[2].verdict((0.0, 1.2 ** 20)).message  # forgot the start's 3


def _fit(x, y, lr, steps=100):
    w = b = 0.5
    for _ in range(steps):  # gradients of mean((w x + b - y)^2), by hand
        r = w * x + b - y
        w, b = w - lr * 2 * np.mean(r * x), b - lr * 2 * np.mean(r)
    return w, b


def test_centre_the_inputs():
    B = Autodiff[NdArray]
    B.seed(0)
    noise = Tensor[B, 1].random([100], Distribution.Uniform(-0.25, 0.25)).to_numpy().astype(np.float64)
    x = np.arange(100) / 10
    y = 2 * x + 1 + noise
    w, c = _fit(x - x.mean(), y, 0.1)
    assert ex[3].verdict((w, c - w * x.mean())).ok
    assert "b = c - w * mean(x)" in ex[3].verdict((w, c)).message
    assert "raw inputs" in ex[3].verdict(_fit(x, y, 0.01)).message
    assert "your b is off" in ex[3].verdict((w, c + w * x.mean())).message  # the wrong sign


def test_momentum():
    assert ex[4].verdict((140, 101)).ok
    assert "first comes within 0.01" in ex[4].verdict((140, 56)).message
    assert "mu = 0 is off" in ex[4].verdict((139, 101)).message
    assert "mu = 0.9 is off" in ex[4].verdict((140, 100)).message
