"""Chapter 10's checks accept the right answers and refuse typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook.book import exercises

ex = exercises("10")


def momentum(start, lr, steps, dampen_first=False):
    """Heavy-ball SGD on w^2 (gradient 2w), mu 0.9, dampening 0.1, written out anew."""
    w, v, out = np.float32(start), None, []
    for _ in range(steps):
        g = 2 * w
        v = (0.9 * g if dampen_first else g) if v is None else 0.9 * v + 0.9 * g
        w = w - lr * v
        out.append(float(w))
    return out


def test_momentum_at_the_minimum():
    assert ex[1].verdict([0.0, -0.9, -0.9]).ok
    stays = ex[1].verdict([0.0, 0.0, 0.0])
    assert not stays.ok and "velocity" in stays.message
    assert "3 value" in ex[1].verdict([0.0, -0.9]).message
    assert "off at" in ex[1].verdict([0.0, -0.9, 0.0]).message


def test_adam_six_steps():
    w, m, v = 100.0, 0.0, 0.0
    for t in range(1, 7):
        g = 2 * w
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        w -= (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-5)
    assert ex[2].verdict(w).ok and ex[2].verdict(94.0).ok  # "about the rate" per step
    assert "different number of steps" in ex[2].verdict(95.0).message
    assert "far more" in ex[2].verdict(100.0 - 6 * 200.0).message
    assert not ex[2].verdict([94.0, 94.0]).ok


def test_clipping_by_value():
    assert ex[3].verdict(np.array([99.95, 99.9, 99.85])).ok
    assert "plain SGD" in ex[3].verdict([80.0, 64.0, 51.2]).message
    assert "off at 3 of 3" in ex[3].verdict([99.5, 99.0, 98.5]).message  # clipped at 5, not 0.5
    assert not ex[3].verdict([99.95, 99.9]).ok


def test_momentum_by_hand():
    assert ex[4].verdict(momentum).ok
    dampened = ex[4].verdict(lambda s, lr, n: momentum(s, lr, n, dampen_first=True))
    assert not dampened.ok and "dampens the first" in dampened.message
    plain = ex[4].verdict(lambda s, lr, n: [s * (1 - 2 * lr) ** (k + 1) for k in range(n)])
    assert not plain.ok and "off at" in plain.message
    short = ex[4].verdict(lambda s, lr, n: momentum(s, lr, n)[:-1])
    assert not short.ok and "shape" in short.message
