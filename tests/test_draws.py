"""Uniform draws split over two threads give one sequential draw's values and
leave the generator where that draw would (burnbook/_draws.py)."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook._draws import SPLIT_DRAWS, uniform_halves


@pytest.mark.parametrize("n", [5, SPLIT_DRAWS - 1, SPLIT_DRAWS, 3 * SPLIT_DRAWS + 7])
@pytest.mark.parametrize("bits", [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937])
def test_halves_equal_one_sequential_draw(n: int, bits) -> None:
    rng, reference = np.random.Generator(bits(7)), np.random.Generator(bits(7))
    rng.random(3)
    reference.random(3)
    got = np.full(n, np.nan)
    parts = []

    def use(u, part):
        parts.append(part)
        got[part] = u

    uniform_halves(rng, n, use)
    np.testing.assert_array_equal(got, reference.random(n))
    assert len(parts) == (2 if n >= SPLIT_DRAWS and hasattr(rng.bit_generator, "advance") else 1)
    np.testing.assert_array_equal(rng.random(4), reference.random(4))  # and the stream goes on alike


def test_taichi_dropout_masks_equal_ndarrays_for_the_same_seed() -> None:
    from burnbook.backend import NdArray, Taichi
    from burnbook.tensor.distribution import Distribution

    shape = (64, 16, 24, 24)  # a guide CNN activation: above SPLIT_DRAWS
    for backend in (NdArray, Taichi):
        backend.seed(11)
    dev = Taichi.default_device()
    for _ in range(2):
        want = NdArray.float_random(shape, Distribution.Bernoulli(0.5), NdArray.default_device())
        got = Taichi.float_into_data(Taichi.float_random(shape, Distribution.Bernoulli(0.5), dev))
        np.testing.assert_array_equal(got, want)
