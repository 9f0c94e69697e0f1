"""Fusion[Taichi]'s row lanes (burnbook/backend/fusion/rows.py): a fused map
whose operands are contiguous along the row or broadcast along it runs
`fused_rows`, LANES elements at a time, with the scalar kernel's results
bit for bit; rows that do not split into whole vectors keep the scalar
kernel."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.backend.fusion import Fusion, rows
from burnbook.backend.taichi import Taichi as T
from burnbook.backend.taichi.settings import SETTINGS

F = Fusion[T]
DEV = T.default_device()


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("BURNBOOK_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    T.default_device()
    if not SETTINGS.lanes:
        pytest.skip("lanes are off on this arch")


def f(a):
    return F.float_from_data(np.asarray(a), DEV)


def _softmax_like(x, m, mask, bias):
    """exp(x * 0.5 masked - m) / row sum stand-in, + bias: three broadcast kinds at once."""
    z = F.float_mask_fill(F.float_mul_scalar(x, 0.5), F.float_greater_elem(mask, 0.5), -1.0e4)
    z = F.float_exp(F.float_sub(z, m))
    return F.float_add(z, bias)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(3, 4, 16, 16), (2, 1, 8, 40), (1, 2, 3, 4096 + 8)])
def test_broadcast_maps_in_row_lanes_equal_the_scalar_kernel(shape, dtype) -> None:
    rng = np.random.default_rng(sum(shape))
    b, h, s, d = shape
    x = rng.standard_normal(shape).astype(dtype)
    m = rng.standard_normal((b, h, s, 1)).astype(dtype)          # a row statistic: stride 0 along the row
    mask = (rng.random((1, 1, s, d)) > 0.7).astype(dtype)        # shared by every batch and head
    bias = rng.standard_normal((1, 1, 1, d)).astype(dtype)       # a bias: stride 0 across rows

    def run():
        out = _softmax_like(f(x), f(m), f(mask), f(bias))
        return F.float_into_data(out)

    before = F.stats()["rows"]
    got = run()
    assert F.stats()["rows"] == before + 1
    with SETTINGS.override(lanes=0):
        scalar = run()
    assert F.stats()["rows"] == before + 1
    np.testing.assert_array_equal(got, scalar)
    want = np.exp(np.where(mask > 0.5, dtype(-1.0e4), x * dtype(0.5)) - m) + bias
    tol = 1e-6 if dtype == np.float32 else 1e-13   # exp(.) + bias cancels near 0: absolute too
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_row_lanes_write_a_bool_output_and_a_kept_intermediate() -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((12, 24)).astype(np.float32)
    mean = rng.standard_normal((12, 1)).astype(np.float32)
    centred = F.float_sub(f(x), f(mean))                         # kept: referenced below
    positive = F.float_greater_elem(F.float_mul(centred, centred), 0.25)
    before = F.stats()["rows"]
    got = F.bool_into_data(positive)
    assert F.stats()["rows"] == before + 1 and centred.node is None
    np.testing.assert_array_equal(got, (x - mean) ** 2 > np.float32(0.25))
    np.testing.assert_array_equal(F.float_into_data(centred), x - mean)


def test_row_lanes_write_a_kept_intermediate_of_a_smaller_shape() -> None:
    """LayerNorm's normalise: `sqrt(var + eps)` `[rows, 1]` is kept (the
    backward pass reads it), so the kernel writes it beside the `[rows, d]` result."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((10, 32)).astype(np.float32)
    mean = rng.standard_normal((10, 1)).astype(np.float32)
    var = rng.uniform(0.5, 2.0, (10, 1)).astype(np.float32)
    gamma = rng.standard_normal((1, 32)).astype(np.float32)

    def run():
        std = F.float_sqrt(F.float_add_scalar(f(var), 1e-5))          # kept: [10, 1]
        y = F.float_mul(F.float_div(F.float_sub(f(x), f(mean)), std), f(gamma))
        return F.float_into_data(y), std

    before = F.stats()["rows"]
    y, std = run()
    assert F.stats()["rows"] == before + 1 and std.node is None
    with SETTINGS.override(lanes=0):
        y0, std0 = run()
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(F.float_into_data(std), F.float_into_data(std0))
    np.testing.assert_allclose(F.float_into_data(std), np.sqrt(var + np.float32(1e-5)), rtol=1e-7)


def test_rows_that_do_not_split_into_vectors_keep_the_scalar_kernel() -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((16, 12)).astype(np.float32)
    cases = {
        "ragged row": (f(x), f(rng.standard_normal((16, 1)).astype(np.float32))),
        "strided row": (F.float_permute(f(x.T.copy()), (1, 0)), f(rng.standard_normal((1, 12)).astype(np.float32))),
        "offset not a whole vector": (F.float_slice(f(rng.standard_normal((16, 20)).astype(np.float32)),
                                                    [slice(0, 16), slice(3, 11)]), f(np.ones((16, 1), np.float32))),
    }
    for name, (a, b) in cases.items():
        before = F.stats()["rows"]
        got = F.float_into_data(F.float_mul(F.float_add_scalar(a, 1.0), b))
        assert F.stats()["rows"] == before, name
        np.testing.assert_allclose(got, (F.float_into_data(a) + 1) * F.float_into_data(b), rtol=1e-6)


def test_pattern_names_vector_and_broadcast_leaves() -> None:
    out = ((64, 8, 1), 0)
    assert rows.pattern((4, 8, 8), (out, ((64, 8, 1), 0), ((8, 1, 0), 0)), 1, 4096) == (True, True, False)
    assert rows.pattern((4, 8, 8), (out, ((64, 8, 1), 0), ((0, 0, 1), 0)), 1, 4096) == (True, True, True)
    assert rows.pattern((4, 8, 8), (((8, 1, 0), 0), ((64, 8, 1), 0)), 1, 4096) == (False, True)
    assert rows.pattern((4, 8, 6), (((48, 6, 1), 0), ((48, 6, 1), 0), ((6, 1, 0), 0)), 1, 4096) is None
    assert rows.pattern((4, 8, 8), (out, ((64, 8, 1), 4), ((8, 1, 0), 0)), 1, 4096) is None
    assert rows.pattern((4, 8, 8), (out, ((1, 4, 32), 0)), 1, 4096) is None


@pytest.mark.parametrize("mean", [False, True])
@pytest.mark.parametrize("shape", [(4, 3, 16, 64), (6, 40), (2, 4096)])
def test_a_sum_along_the_row_in_row_lanes_matches_the_scalar_kernel(shape, mean) -> None:
    """softmax's denominator: sum(exp(x - max)) along the last dim, the max
    broadcast; f64 lanes added at the end, so equal to the scalar kernel's
    in-order f64 sum after rounding to f32 (to 1 ulp, for a rare tie)."""
    rng = np.random.default_rng(len(shape) + shape[-1])
    x = rng.standard_normal(shape).astype(np.float32)
    m = x.max(-1, keepdims=True)
    dim = len(shape) - 1
    op = F.float_mean_dim if mean else F.float_sum_dim

    def run():
        e = F.float_exp(F.float_sub(f(x), f(m)))
        return F.float_into_data(op(e, dim))

    before = F.stats()["rows"]
    got = run()
    assert F.stats()["rows"] == before + 1
    with SETTINGS.override(lanes=0):
        scalar = run()
    np.testing.assert_allclose(got, scalar, rtol=1.2e-7, atol=0)
    want = np.exp(x.astype(np.float64) - m).sum(-1, keepdims=True) / (shape[-1] if mean else 1)
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-6)


def test_a_row_sum_writes_its_kept_intermediate() -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((12, 32)).astype(np.float32)
    centred = F.float_sub(f(x), f(x.mean(1, keepdims=True)))
    var = F.float_mean_dim(F.float_mul(centred, centred), 1)
    got = F.float_into_data(var)
    np.testing.assert_allclose(got, x.var(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(F.float_into_data(centred), x - x.mean(1, keepdims=True), rtol=1e-6, atol=1e-7)


def test_row_sums_that_do_not_fit_keep_the_scalar_kernel() -> None:
    rng = np.random.default_rng(12)
    for name, shape, dim in (("ragged row", (5, 12), 1), ("longer than a block", (2, 4096 + 8), 1),
                             ("not the row", (8, 16, 1), 0)):
        x = rng.standard_normal(shape).astype(np.float32)
        before = F.stats()["rows"]
        with SETTINGS.override(reduce="kernel"):   # keep dim 0 in Fusion's own kernels
            got = F.float_into_data(F.float_sum_dim(F.float_add_scalar(f(x), 1.0), dim))
        assert F.stats()["rows"] == before, name
        np.testing.assert_allclose(got, (x.astype(np.float64) + 1).sum(dim, keepdims=True), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("which", ["max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_and_min_along_the_row_in_row_lanes_equal_the_scalar_kernel(which, dtype) -> None:
    """softmax's row maximum of masked scores: the same values as the scalar
    kernel; a NaN in a row wins it, an all -inf row stays -inf."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal((5, 3, 16, 32)).astype(dtype)
    x[0, 0, 3, 17] = np.nan
    x[1, 2, 4, :] = -np.inf if which == "max" else np.inf
    mask = (rng.random((1, 1, 16, 32)) > 0.6).astype(dtype)
    op = F.float_max_dim if which == "max" else F.float_min_dim

    def run():
        z = F.float_mask_fill(F.float_mul_scalar(f(x), 0.5), F.float_greater_elem(f(mask), 0.5), -1.0e4)
        return F.float_into_data(op(z, 3))

    before = F.stats()["rows"]
    got = run()
    assert F.stats()["rows"] == before + 1
    with SETTINGS.override(lanes=0):
        scalar = run()
    np.testing.assert_array_equal(got, scalar)
    z = np.where(mask > 0.5, dtype(-1.0e4), x * dtype(0.5))
    want = (np.max if which == "max" else np.min)(z, axis=3, keepdims=True)   # NaN propagates, as here
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[0, 0, 3, 0])
