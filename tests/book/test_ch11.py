"""Chapter 11's checks accept the right answers and refuse typical wrong ones."""

from __future__ import annotations

import math

from burnbook.book import exercises
from burnbook.optim.lr_scheduler import LrScheduler

ex = exercises("11")


def test_step_schedule():
    assert ex[1].verdict([0.1, 0.1, 0.01, 0.01, 0.001, 0.001]).ok
    assert "one iteration early" in ex[1].verdict([0.1, 0.01, 0.01, 0.001, 0.001, 1e-4]).message
    assert "every iteration" in ex[1].verdict([0.1, 0.01, 0.001, 1e-4, 1e-5, 1e-6]).message
    assert "6 rates" in ex[1].verdict([0.1, 0.1, 0.01, 0.01]).message


def test_cosine_of_two_iterations():
    assert ex[2].verdict((0.1, 0.05, 0.0, 0.1)).ok
    assert "starts again" in ex[2].verdict([0.1, 0.05, 0.0, 0.0]).message
    assert "one iteration early" in ex[2].verdict([0.1, 0.05, 0.1, 0.05]).message


def test_exponential_decay():
    assert ex[3].verdict((0.95, 0.2 * 0.95 ** 59)).ok
    assert "not the one" in ex[3].verdict((0.5, 0.2 * 0.5 ** 59)).message
    assert "one decay too far" in ex[3].verdict((0.95, 0.2 * 0.95 ** 60)).message
    assert "pair" in ex[3].verdict(0.95).message
    assert "not one of the two" in ex[3].verdict((0.9, 0.01)).message


def make(rate):
    class Schedule(LrScheduler):
        def __init__(self, peak_lr, warmup, num_iters):
            super().__init__()
            self.peak_lr, self.warmup, self.num_iters = peak_lr, warmup, num_iters

        def lr_at(self, t):
            return rate(self, t)
    return Schedule


def right(s, t):
    if t < s.warmup:
        return s.peak_lr * (t + 1) / s.warmup
    return 0.5 * s.peak_lr * (1 + math.cos(math.pi * min(t - s.warmup, s.num_iters) / s.num_iters))


def test_own_scheduler():
    assert ex[4].verdict(make(right)).ok
    from_zero = make(lambda s, t: s.peak_lr * t / s.warmup if t < s.warmup else right(s, t))
    assert "off at" in ex[4].verdict(from_zero).message
    half_cosine = make(lambda s, t: right(s, t) if t < s.warmup else
                       s.peak_lr * math.cos(0.5 * math.pi * (t - s.warmup) / s.num_iters))
    assert not ex[4].verdict(half_cosine).ok
    assert "subclass of LrScheduler" in ex[4].verdict(lambda peak, warmup, n: None).message

    class Forgets(make(right)):
        def load_record(self, record):
            return self
    assert "resumed" in ex[4].verdict(Forgets).message
