"""NdArray's table erf for f32 arrays (burnbook/backend/ndarray/erf.py) gives
exactly libm's erf rounded to f32: on every f32 in a dense window, on random
values of every magnitude, on the specials (NaN, +-inf, -0.0, subnormals, the
+-4 clamp), on both sides of the size where it takes over from the
per-element loop, and on a strided view; and an activation.gelu through it
agrees with torch's F.gelu."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burnbook.backend.ndarray import erf as nd
from burnbook.backend.ndarray.erf import erf_f32


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


def test_small_gelu_is_within_one_and_a_half_ulp_of_x_phi_x_and_matches_torch() -> None:
    """Below `_GELU_NDTR_BELOW` elements NdArray's GELU, x * Phi(x) with
    SciPy's ndtr, is within 1.5 ulp of the exact value (f64 from libm's
    erfc) and agrees with torch's F.gelu; Autodiff[NdArray] runs the same op
    (GELU is one tracked op there). Larger arrays: `test_ndarray_gelu.py`."""
    torch = pytest.importorskip("torch")
    from burnbook import Tensor
    from burnbook.backend import Autodiff, NdArray
    from burnbook.tensor import activation

    from burnbook.backend.ndarray.layers import _GELU_NDTR_BELOW

    x = np.concatenate([np.linspace(-10, 10, _GELU_NDTR_BELOW - 6), [0.0, -0.0, 1e-30, -5.5, 7.25]]).astype(np.float32)
    got = activation.gelu(Tensor[NdArray, 1].from_data(x)).to_numpy()
    exact = np.array([v * 0.5 * math.erfc(-v / math.sqrt(2.0)) for v in x.astype(np.float64)])
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    # Phi rounded to f32, then the product: at most 1.5 ulp (1.34 at worst here)
    assert np.all(np.abs(got.astype(np.float64) - exact) <= 1.5 * ulp), "more than 1.5 ulp from x * Phi(x)"
    want = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    tracked = Tensor[Autodiff[NdArray], 1].from_data(x).require_grad()
    np.testing.assert_array_equal(activation.gelu(tracked).to_numpy(), got)


def test_the_two_thread_split_equals_libm(monkeypatch) -> None:
    """When NumPy's BLAS has several threads, a large erf shares its blocks
    with the helper thread; the bits are the same (an odd size, so the
    halves and the last block are uneven), also when this call builds the
    tables (as the first erf of a process does: the helper thread must not
    build them a second time)."""
    monkeypatch.setattr(nd, "_columns", [])
    monkeypatch.setattr(nd, "_pairs", [])
    monkeypatch.setattr(nd, "_blas_threads", lambda: 2)
    monkeypatch.setattr(nd, "TWO_CORES", True)
    size = nd._SPLIT_FROM + 3 * nd._BLOCK + 17
    x = np.concatenate([SPECIAL, np.random.default_rng(5).uniform(-5, 5, size).astype(np.float32)])
    _assert_libm(erf_f32(x), x)
    assert len(nd._columns) == 4 and len(nd._pairs) == 2
