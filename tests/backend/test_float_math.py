"""Float math: exp, log, log1p, erf, sqrt, recip, cos, sin, tanh, sign; clamp, abs,
triu/tril (Float and Int), conversion to Int."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnbook import Tensor

from .oracle import SETTINGS, assert_tensor, check_op, float_arrays, shapes, tensor

erf = np.vectorize(math.erf, otypes=[np.float64])

UNARY = [
    # (name, burnbook, numpy, input range)
    ("exp", lambda t: t.exp(), np.exp, (-10, 10)),
    ("log", lambda t: t.log(), np.log, (1e-3, 100)),
    ("log1p", lambda t: t.log1p(), np.log1p, (-0.9, 100)),
    ("erf", lambda t: t.erf(), erf, (-4, 4)),
    ("sqrt", lambda t: t.sqrt(), np.sqrt, (0, 100)),
    ("recip", lambda t: t.recip(), np.reciprocal, (0.1, 10)),
    ("cos", lambda t: t.cos(), np.cos, (-10, 10)),
    ("sin", lambda t: t.sin(), np.sin, (-10, 10)),
    ("tanh", lambda t: t.tanh(), np.tanh, (-10, 10)),
    ("sign", lambda t: t.sign(), np.sign, (-10, 10)),
]

SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0], np.float32)


# -- hand-computed --------------------------------------------------------------------------

def test_unary_math_by_hand(backend):
    t = Tensor[backend, 1].from_floats([0.0, 1.0, 4.0])
    assert_tensor(t.exp(), np.array([1.0, math.e, math.e ** 4]))
    assert_tensor(t.sqrt(), np.array([0.0, 1.0, 2.0]))
    assert_tensor((t + 1.0).log(), np.array([0.0, math.log(2), math.log(5)]))
    assert_tensor(t.log1p(), np.array([0.0, math.log(2), math.log(5)]))
    assert_tensor((t + 1.0).recip(), np.array([1.0, 0.5, 0.2]))
    assert_tensor(t.erf(), np.array([0.0, 0.8427007929, 0.9999999846]))
    assert_tensor(t.tanh(), np.array([0.0, 0.7615941559, 0.9993292997]))
    assert_tensor(t.sin(), np.array([0.0, 0.8414709848, -0.7568024953]))
    assert_tensor(t.cos(), np.array([1.0, 0.5403023059, -0.6536436209]))


def test_log1p_is_accurate_near_zero(backend):
    t = Tensor[backend, 1].from_floats([1e-7, -1e-7])
    assert_tensor(t.log1p(), np.log1p(np.array([1e-7, -1e-7])), rtol=1e-6, atol=0)


def test_clamp_family(backend):
    t = Tensor[backend, 1].from_floats([-2.0, 0.5, 3.0])
    assert_tensor(t.clamp(0.0, 1.0), np.array([0.0, 0.5, 1.0]))
    assert_tensor(t.clamp_min(0.0), np.array([0.0, 0.5, 3.0]))
    assert_tensor(t.clamp_max(1.0), np.array([-2.0, 0.5, 1.0]))
    assert_tensor(t.abs(), np.array([2.0, 0.5, 3.0]))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_triu_and_tril(backend, dtype):
    a = np.arange(1, 10).reshape(3, 3).astype(dtype)
    t = tensor(backend, a)
    assert_tensor(t.triu(0), np.triu(a))
    assert_tensor(t.triu(1), np.array([[0, 2, 3], [0, 0, 6], [0, 0, 0]], dtype))
    assert_tensor(t.tril(0), np.tril(a))
    assert_tensor(t.tril(-1), np.array([[0, 0, 0], [4, 0, 0], [7, 8, 0]], dtype))


def test_triu_on_a_batch_of_matrices(backend):
    a = np.ones((2, 2, 3), np.float32)
    assert_tensor(tensor(backend, a).triu(0), np.triu(a))
    assert_tensor(tensor(backend, a).tril(1), np.tril(a, 1))


def test_int_conversion_truncates_toward_zero(backend):
    t = Tensor[backend, 1].from_floats([-1.7, -0.5, 0.5, 1.7, 3.0])
    assert_tensor(t.int(), np.array([-1, 0, 0, 1, 3]))


@pytest.mark.parametrize("name, op, ref, _", UNARY, ids=[u[0] for u in UNARY])
def test_nan_and_inf_through_unary_ops(backend, name, op, ref, _):
    check_op(backend, op, ref, SPECIAL)


# -- NumPy oracle -------------------------------------------------------------------------

@pytest.mark.parametrize("name, op, ref, bounds", UNARY, ids=[u[0] for u in UNARY])
@SETTINGS
@given(shape=shapes(), seed=st.integers(0, 2**16))
def test_unary_math_matches_numpy(backend, name, op, ref, bounds, shape, seed):
    a = np.random.default_rng(seed).uniform(*bounds, size=shape).astype(np.float32)
    check_op(backend, op, ref, a, rtol=2e-6, atol=1e-6)


@SETTINGS
@given(a=shapes().flatmap(float_arrays))
def test_clamp_matches_numpy(backend, a):
    check_op(backend, lambda t: t.clamp(-2.0, 3.0), lambda x: np.clip(x, -2.0, 3.0), a)
    check_op(backend, lambda t: t.clamp_min(1.0), lambda x: np.maximum(x, 1.0), a)
    check_op(backend, lambda t: t.clamp_max(1.0), lambda x: np.minimum(x, 1.0), a)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_ndarray_erf_on_both_sides_of_the_exact_path_threshold(dtype):
    """NdArray's erf is libm's per element below `_ERF_EXACT_BELOW`
    elements and a Chebyshev fit above for f16; f64 stays exact and f32 is
    erf rounded to f32 at every size (SciPy's, then the table's); all agree
    with math.erf, specials included."""
    from burnbook.backend.ndarray import erf as nd

    rng = np.random.default_rng(7)
    for size in (1, nd._ERF_EXACT_BELOW - 1, nd._ERF_EXACT_BELOW, 3 * nd._ERF_EXACT_BELOW):
        x = np.concatenate([SPECIAL, rng.uniform(-5, 5, size)])[:size].astype(dtype)
        got = nd.np_erf(x.reshape(1, -1) if size % 2 else x)
        assert got.dtype == dtype and got.size == size
        want = erf(x.astype(np.float64))
        if dtype is not np.float16 or size < nd._ERF_EXACT_BELOW:
            np.testing.assert_array_equal(got.ravel(), want.astype(dtype))
        else:
            np.testing.assert_allclose(got.ravel(), want, rtol=2e-6 if dtype is np.float32 else 1e-3, atol=1e-7)
        if size > 4:  # erf(-0.0) is -0.0
            assert np.signbit(got.ravel()[4]) and np.signbit(x[4])
