"""Reductions keep the rank, as in Burn: `sum()` has shape [1], `sum_dim(d)`
and `argmax(d)` keep size 1 at `d`. Variance: `var` unbiased, `var_bias` not."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnbook import Tensor

from .oracle import SETTINGS, assert_tensor, check_op, distinct_floats, float_arrays, shape_and_dim, tensor

M = np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], np.float32)


# -- hand-computed --------------------------------------------------------------------------

def test_full_reductions_have_shape_one(backend):
    t = tensor(backend, M)
    assert_tensor(t.sum(), np.array([21.0]))
    assert_tensor(t.mean(), np.array([3.5]))
    assert_tensor(t.max(), np.array([6.0]))
    assert_tensor(t.min(), np.array([1.0]))


def test_dim_reductions_keep_the_dim(backend):
    t = tensor(backend, M)
    assert_tensor(t.sum_dim(1), np.array([[9.0], [12.0]]))
    assert_tensor(t.sum_dim(0), np.array([[5.0, 7.0, 9.0]]))
    assert_tensor(t.mean_dim(-1), np.array([[3.0], [4.0]]))
    assert_tensor(t.max_dim(1), np.array([[5.0], [6.0]]))
    assert_tensor(t.min_dim(0), np.array([[1.0, 2.0, 3.0]]))


def test_argmax_argmin_keep_the_dim(backend):
    t = tensor(backend, M)
    assert_tensor(t.argmax(1), np.array([[1], [2]]))
    assert_tensor(t.argmin(1), np.array([[0], [1]]))
    assert_tensor(t.argmax(0), np.array([[1, 0, 1]]))
    assert_tensor(t.argmin(-2), np.array([[0, 1, 0]]))


def test_dim_with_indices(backend):
    t = tensor(backend, M)
    values, indices = t.max_dim_with_indices(1)
    assert_tensor(values, np.array([[5.0], [6.0]]))
    assert_tensor(indices, np.array([[1], [2]]))
    values, indices = t.min_dim_with_indices(0)
    assert_tensor(values, np.array([[1.0, 2.0, 3.0]]))
    assert_tensor(indices, np.array([[0, 1, 0]]))


def test_variance_unbiased_and_biased(backend):
    t = Tensor[backend, 2].from_floats([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]])
    assert_tensor(t.var(1), np.array([[5 / 3], [0.0]]))
    assert_tensor(t.var_bias(1), np.array([[1.25], [0.0]]))
    var, mean = t.var_mean(1)
    assert_tensor(var, np.array([[5 / 3], [0.0]]))
    assert_tensor(mean, np.array([[2.5], [2.0]]))
    var, mean = t.var_mean_bias(-1)
    assert_tensor(var, np.array([[1.25], [0.0]]))
    assert_tensor(mean, np.array([[2.5], [2.0]]))


def test_int_reductions(backend):
    t = tensor(backend, M.astype(np.int64))
    assert_tensor(t.sum(), np.array([21]))
    assert_tensor(t.sum_dim(0), np.array([[5, 7, 9]]))
    assert_tensor(t.max(), np.array([6]))
    assert_tensor(t.min_dim(1), np.array([[1], [2]]))
    assert_tensor(t.argmax(1), np.array([[1], [2]]))
    assert_tensor(t.mean_dim(1), np.array([[3], [4]]))


def test_sum_of_nan_is_nan(backend):
    t = tensor(backend, np.array([1.0, np.nan], np.float32))
    assert np.isnan(t.sum().into_scalar())


# -- NumPy oracle -------------------------------------------------------------------------

DIM_REDUCTIONS = [
    ("sum_dim", lambda t, d: t.sum_dim(d), lambda x, d: x.sum(d, keepdims=True)),
    ("mean_dim", lambda t, d: t.mean_dim(d), lambda x, d: x.mean(d, keepdims=True)),
    ("max_dim", lambda t, d: t.max_dim(d), lambda x, d: x.max(d, keepdims=True)),
    ("min_dim", lambda t, d: t.min_dim(d), lambda x, d: x.min(d, keepdims=True)),
    ("argmax", lambda t, d: t.argmax(d), lambda x, d: np.expand_dims(x.argmax(d), d)),
    ("argmin", lambda t, d: t.argmin(d), lambda x, d: np.expand_dims(x.argmin(d), d)),
    ("max_dim_with_indices", lambda t, d: t.max_dim_with_indices(d),
     lambda x, d: (x.max(d, keepdims=True), np.expand_dims(x.argmax(d), d))),
    ("min_dim_with_indices", lambda t, d: t.min_dim_with_indices(d),
     lambda x, d: (x.min(d, keepdims=True), np.expand_dims(x.argmin(d), d))),
    ("var", lambda t, d: t.var(d), lambda x, d: x.var(d, ddof=1, keepdims=True)),
    ("var_bias", lambda t, d: t.var_bias(d), lambda x, d: x.var(d, keepdims=True)),
    ("var_mean", lambda t, d: t.var_mean(d), lambda x, d: (x.var(d, ddof=1, keepdims=True), x.mean(d, keepdims=True))),
    ("var_mean_bias", lambda t, d: t.var_mean_bias(d), lambda x, d: (x.var(d, keepdims=True), x.mean(d, keepdims=True))),
]

FULL_REDUCTIONS = [
    ("sum", lambda t: t.sum(), lambda x: x.sum().reshape(1)),
    ("mean", lambda t: t.mean(), lambda x: x.mean().reshape(1)),
    ("max", lambda t: t.max(), lambda x: x.max().reshape(1)),
    ("min", lambda t: t.min(), lambda x: x.min().reshape(1)),
]


@pytest.mark.parametrize("name, op, ref", DIM_REDUCTIONS, ids=[r[0] for r in DIM_REDUCTIONS])
@SETTINGS
@given(case=shape_and_dim(), seed=st.integers(0, 2**16))
def test_dim_reductions_match_numpy(backend, name, op, ref, case, seed):
    shape, dim = case
    if name.startswith("var") and shape[dim] < 2:
        shape = shape[:dim % len(shape)] + (2,) + shape[dim % len(shape) + 1:]
    a = distinct_floats(np.random.default_rng(seed), shape)
    check_op(backend, lambda t: op(t, dim), lambda x: ref(x, dim), a, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name, op, ref", FULL_REDUCTIONS, ids=[r[0] for r in FULL_REDUCTIONS])
@SETTINGS
@given(case=shape_and_dim(), data=st.data())
def test_full_reductions_match_numpy(backend, name, op, ref, case, data):
    a = data.draw(float_arrays(case[0]))
    check_op(backend, op, ref, a, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["sum_dim", "max_dim", "min_dim", "argmax", "argmin"])
@SETTINGS
@given(case=shape_and_dim(), seed=st.integers(0, 2**16))
def test_int_dim_reductions_match_numpy(backend, name, case, seed):
    shape, dim = case
    op, ref = next((o, r) for n, o, r in DIM_REDUCTIONS if n == name)
    a = np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape).astype(np.int64) - 5
    check_op(backend, lambda t: op(t, dim), lambda x: ref(x, dim), a)
