"""NdArray's table GELU (`backend/ndarray/gelu.py`) and the ops autodiff's
GELU and layer-norm rules call (`gelu_with_derivative`, `gelu_backward`,
`layer_norm_backward`): accuracy against f64 (SciPy's ndtr, libm's erf),
the two-thread split, f16/f64, and the non-finite inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burnbook.backend import NdArray, module_layers
from burnbook.backend.ndarray import erf, gelu as table
from burnbook.backend.ndarray.layers import _GELU_NDTR_BELOW

ndtr = pytest.importorskip("scipy.special").ndtr


def _inputs(n: int = 1 << 17) -> np.ndarray:
    rng = np.random.default_rng(7)
    return np.concatenate([rng.standard_normal(n) * 2, np.linspace(-20, 20, 40001), [0.0, -0.0, 1e-30, -1e-30]]
                          ).astype(np.float32)


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / ulp


def test_table_gelu_is_within_two_and_a_half_ulp_of_x_phi_x() -> None:
    x = _inputs()
    exact = x.astype(np.float64) * ndtr(x.astype(np.float64))
    got = NdArray.gelu(x)
    assert x.size >= _GELU_NDTR_BELOW and got.dtype == np.float32
    seen = np.abs(exact) > 1e-30   # past -11 x Phi(x) is below 1e-27: absolute error there is ~0
    assert _ulps(got, exact)[seen].max() <= 2.5
    assert np.abs(got - exact)[~seen].max() < 1e-35


def test_table_derivative_and_backward_match_phi_plus_x_density() -> None:
    x = _inputs()
    x64 = x.astype(np.float64)
    exact = ndtr(x64) + x64 * np.exp(-x64 * x64 / 2) / math.sqrt(2 * math.pi)
    out, derivative = NdArray.gelu_with_derivative(x)
    np.testing.assert_array_equal(out, NdArray.gelu(x))   # the same Phi gives the same forward
    np.testing.assert_allclose(derivative, exact, rtol=2e-6, atol=1e-7)
    grad = np.random.default_rng(3).standard_normal(x.size).astype(np.float32)
    np.testing.assert_allclose(NdArray.gelu_backward(x, grad), grad * exact, rtol=2e-6, atol=1e-7)


def test_nonfinite_inputs_give_what_the_formula_gives() -> None:
    x = np.concatenate([[np.inf, -np.inf, np.nan], np.zeros(_GELU_NDTR_BELOW)]).astype(np.float32)
    got = NdArray.gelu(x)
    formula = module_layers.gelu(NdArray, x.astype(np.float64))   # libm's erf, exact
    assert got[0] == np.inf and np.isnan(got[1]) and np.isnan(got[2])
    np.testing.assert_array_equal(got[:3], formula[:3])
    _, derivative = NdArray.gelu_with_derivative(x)
    assert np.isnan(derivative[2]) and derivative[3] == 0.5


def test_f64_is_the_exact_formula_and_f16_runs_in_f32() -> None:
    x = _inputs(1 << 12)
    np.testing.assert_array_equal(NdArray.gelu(x.astype(np.float64)), module_layers.gelu(NdArray, x.astype(np.float64)))
    half = x.astype(np.float16)
    got = NdArray.gelu(half)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, NdArray.gelu(half.astype(np.float32)).astype(np.float16))
    out, derivative = NdArray.gelu_with_derivative(half)
    assert out.dtype == derivative.dtype == np.float16


def test_the_two_thread_split_gives_the_same_bits(monkeypatch) -> None:
    """With NumPy's BLAS on two threads a large array's blocks are shared with
    the helper thread (an odd size: uneven halves and a short last block),
    also when this call builds the table. The bits are the same down to x =
    -12; below, Phi and phi are subnormal f32, which a thread whose
    floating-point mode flushes them to zero (as some libraries set it on
    theirs) reads as 0: there the two agree to 1e-35."""
    x = _inputs(1 << 19)[: (1 << 19) + 12345]
    grad = np.random.default_rng(5).standard_normal(x.size).astype(np.float32)
    monkeypatch.setattr(erf, "_blas_threads", lambda: 1)   # erf.in_halves splits GELU's blocks too
    one = table.gelu_with_derivative_f32(x), table.gelu_backward_f32(x, grad)
    monkeypatch.setattr(erf, "_blas_threads", lambda: 2)
    monkeypatch.setattr(erf, "TWO_CORES", True)
    monkeypatch.setattr(table, "_table", [])
    two = table.gelu_with_derivative_f32(x), table.gelu_backward_f32(x, grad)
    normal = x > -12
    for a, b in zip((*one[0], one[1]), (*two[0], two[1])):
        np.testing.assert_array_equal(a[normal], b[normal])
        assert np.all(np.abs(a[~normal] - b[~normal]) < 1e-35)


@pytest.mark.parametrize("shape", [(3, 7), (2, 5, 64), (4, 1)])
def test_layer_norm_backward_is_the_default_formula(shape) -> None:
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    gamma, beta = (rng.standard_normal(shape[-1]).astype(np.float32) for _ in range(2))
    grad = rng.standard_normal(shape).astype(np.float32)
    got = NdArray.layer_norm_backward(x, gamma, grad, 1e-5)
    want = module_layers.layer_norm_backward(NdArray, x.astype(np.float64), gamma.astype(np.float64),
                                             grad.astype(np.float64), 1e-5)
    for g, w, s in zip(got, want, (shape, (shape[-1],), (shape[-1],))):
        assert g.shape == s and g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
    assert beta.shape == (shape[-1],)


_LN_SHAPES = [(3, 7), (2, 5, 64), (300, 128), (2, 1024, 130)]


@pytest.mark.parametrize("shape", _LN_SHAPES)
def test_layer_norm_forward_matches_f64_on_both_sides_of_the_blas_row_sums(shape) -> None:
    """NdArray's layer norm sums rows with NumPy below `_ROW_SUMS_BY_BLAS`
    elements and through BLAS from there on (here 21 to 266K elements):
    both within f32 rounding of the f64 formula, with (x^, 1/std) kept for
    the backward equal to what the output was made from."""
    from burnbook.backend.ndarray import layers

    rng = np.random.default_rng(12)
    x = (rng.standard_normal(shape) * 3 + 2).astype(np.float32)
    gamma, beta = (rng.standard_normal(shape[-1]).astype(np.float32) for _ in range(2))
    x64 = x.astype(np.float64)
    centred = x64 - x64.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt((centred ** 2).mean(-1, keepdims=True) + 1e-5)
    want = centred * rstd * gamma + beta
    sizes = [math.prod(s) for s in _LN_SHAPES]
    assert min(sizes) < layers._ROW_SUMS_BY_BLAS <= max(sizes)   # the cases straddle the switch
    out, (xhat, r) = NdArray.layer_norm_with_stats(x, gamma, beta, 1e-5)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(r, rstd, rtol=2e-6)
    np.testing.assert_allclose(xhat * gamma + beta, out, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(NdArray.layer_norm(x, gamma, beta, 1e-5), out)
