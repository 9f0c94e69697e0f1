"""Uniform draws made in two halves on two threads, with exactly the values
one sequential draw gives (the Taichi backend's dropout masks)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from burnbook._helper_thread import TWO_CORES, both

SPLIT_DRAWS = 1 << 16
"""Draws from this many on are made in two halves on two threads (`uniform_halves`)."""


def uniform_halves(rng: np.random.Generator, n: int, use: Callable[[np.ndarray, slice], None]) -> None:
    """Call `use(u, part)` for parts covering range(n) with `u` the values
    `rng.random(n)` would give at `part`, leaving `rng` as that call would.
    Large draws from a generator that can jump ahead (PCG64, NumPy's
    default) run as two halves at once: a twin of the generator, advanced
    by the first half's length, draws the second half on another thread,
    and each `random()` double takes exactly one 64-bit step, so the values
    are the same as one sequential draw (half the time on two cores)."""
    bits = rng.bit_generator
    if n < SPLIT_DRAWS or not hasattr(bits, "advance") or not TWO_CORES:
        use(rng.random(n), slice(0, n))
        return
    k = n // 2
    twin = type(bits)()
    twin.state = bits.state
    twin.advance(k)
    second = np.random.Generator(twin)
    both(lambda: use(rng.random(k), slice(0, k)), lambda: use(second.random(n - k), slice(k, n)))
    bits.advance(n - k)
