"""NdArray's table erf for f32 arrays (burnbook/backend/ndarray_erf.py) gives
exactly libm's erf rounded to f32: on every f32 in a dense window, on random
values of every magnitude, on the specials (NaN, +-inf, -0.0, subnormals, the
+-4 clamp), on both sides of the size where it takes over from the
per-element loop, and on a strided view; and an activation.gelu through it
agrees with torch's F.gelu."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burnbook.backend import ndarray as nd
from burnbook.backend.ndarray_erf import erf_f32


def _libm(x: np.ndarray) -> np.ndarray:
    return np.array([math.erf(v) for v in x.astype(np.float64).ravel().tolist()]).astype(np.float32).reshape(x.shape)


def _assert_libm(got: np.ndarray, x: np.ndarray) -> None:
    want = _libm(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    bad = np.flatnonzero(~same.ravel())[:5]
    assert same.all(), f"erf differs from libm at x = {x.ravel()[bad]}: {got.ravel()[bad]} vs {want.ravel()[bad]}"
    assert np.array_equal(np.signbit(got), np.signbit(want))  # -0.0 stays -0.0


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1.2e-38, 1e-30, 2.0 ** -12, 0.5, 3.9, 3.92,
                    3.9999998, 4.0, 4.0000005, 4.5, -3.93, 9.0, -1e30, 3.4e38], np.float32)


def test_dense_window_and_random_values_equal_libm() -> None:
    """Every f32 in [1.0, 1.0 + 2^-8) (65536 consecutive values, where erf's
    rounding boundaries are dense), and 200k random values over six decades."""
    dense = (np.float32(1.0) + np.arange(65536, dtype=np.float32) * np.float32(2.0 ** -23)).astype(np.float32)
    _assert_libm(erf_f32(dense), dense)
    rng = np.random.default_rng(3)
    wide = (rng.standard_normal(200_000) * 10.0 ** rng.uniform(-6, 0.7, 200_000)).astype(np.float32)
    _assert_libm(erf_f32(wide), wide)


@pytest.mark.parametrize("size", [1, nd._ERF_SCIPY_BELOW - 1, nd._ERF_SCIPY_BELOW, 4 * nd._ERF_SCIPY_BELOW])
def test_np_erf_on_both_sides_of_the_table_threshold(size: int) -> None:
    """f32 erf is SciPy's below `_ERF_SCIPY_BELOW` elements and the table's
    from there: both libm's value rounded, on dense and strided arrays."""
    rng = np.random.default_rng(size)
    x = np.concatenate([SPECIAL, rng.uniform(-5, 5, size).astype(np.float32)])[:size]
    _assert_libm(nd.np_erf(x), x)
    strided = np.concatenate([x, x]).reshape(2, -1)[:, ::2]  # a non-contiguous view
    _assert_libm(nd.np_erf(strided), strided)


def test_gelu_through_the_table_is_unchanged_and_matches_torch() -> None:
    """GELU's values are bit for bit those of the per-element erf, and agree
    with torch's F.gelu (whose own erf differs from libm's by an ulp)."""
    torch = pytest.importorskip("torch")
    from burnbook import Tensor
    from burnbook.backend import NdArray
    from burnbook.tensor import activation

    x = np.concatenate([np.linspace(-10, 10, 2 * nd._ERF_SCIPY_BELOW), [0.0, -0.0, 1e-30]]).astype(np.float32)
    got = activation.gelu(Tensor[NdArray, 1].from_data(x)).to_numpy()
    u = x / np.float32(math.sqrt(2.0))
    np.testing.assert_array_equal(got, x * (_libm(u) + np.float32(1.0)) * np.float32(0.5))
    want = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
