"""Float arithmetic and broadcasting: binary ops, their `_scalar` forms and
operators (scalars on either side), neg, powers, matmul, NaN/inf."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnbook import Int, Tensor

from .oracle import SETTINGS, assert_tensor, check_op, float_arrays, float_pairs, shapes

BINARY = [
    # (name, burnbook, numpy)
    ("add", lambda a, b: a.add(b), np.add),
    ("+", lambda a, b: a + b, np.add),
    ("sub", lambda a, b: a.sub(b), np.subtract),
    ("-", lambda a, b: a - b, np.subtract),
    ("mul", lambda a, b: a.mul(b), np.multiply),
    ("*", lambda a, b: a * b, np.multiply),
    ("div", lambda a, b: a.div(b), np.divide),
    ("/", lambda a, b: a / b, np.divide),
]

SCALAR = [
    ("add_scalar", lambda a: a.add_scalar(2.5), lambda x: x + 2.5),
    ("t + s", lambda a: a + 2.5, lambda x: x + 2.5),
    ("s + t", lambda a: 2.5 + a, lambda x: 2.5 + x),
    ("sub_scalar", lambda a: a.sub_scalar(1.5), lambda x: x - 1.5),
    ("t - s", lambda a: a - 1.5, lambda x: x - 1.5),
    ("s - t", lambda a: 1.5 - a, lambda x: 1.5 - x),
    ("mul_scalar", lambda a: a.mul_scalar(-3.0), lambda x: x * -3.0),
    ("t * s", lambda a: a * 3, lambda x: x * 3),
    ("s * t", lambda a: -3.0 * a, lambda x: -3.0 * x),
    ("div_scalar", lambda a: a.div_scalar(4.0), lambda x: x / 4.0),
    ("t / s", lambda a: a / 4.0, lambda x: x / 4.0),
    ("s / t", lambda a: 4.0 / a, lambda x: 4.0 / x),
    ("neg", lambda a: a.neg(), np.negative),
    ("-t", lambda a: -a, np.negative),
    ("abs", lambda a: a.abs(), np.abs),
    ("powf_scalar", lambda a: a.abs().powf_scalar(1.5), lambda x: np.abs(x) ** 1.5),
    ("powi_scalar", lambda a: a.powi_scalar(3), lambda x: x ** 3),
    ("t ** 2", lambda a: a ** 2, lambda x: x ** 2),
    ("2 ** t", lambda a: 2.0 ** a, lambda x: 2.0 ** x),
]


# -- hand-computed --------------------------------------------------------------------------

def test_min_max_normalisation_from_the_book(backend):
    x = Tensor[backend, 1].from_floats([1.0, 2.0, 3.0, 4.0])
    lo, hi = x.clone().min(), x.clone().max()
    assert_tensor((x.clone() - lo.clone()).div(hi - lo), np.array([0.0, 1 / 3, 2 / 3, 1.0]))


def test_ones_like_addition_from_the_book(backend):
    t = Tensor[backend, 2].from_data([[2.0, 3.0], [4.0, 5.0]])
    assert_tensor(t + t.ones_like(), np.array([[3.0, 4.0], [5.0, 6.0]]))


def test_broadcast_row_and_column(backend):
    col = Tensor[backend, 2].from_floats([[1.0], [2.0]])
    row = Tensor[backend, 2].from_floats([[10.0, 20.0, 30.0]])
    assert_tensor(col + row, np.array([[11.0, 21.0, 31.0], [12.0, 22.0, 32.0]]))
    assert_tensor(row - col, np.array([[9.0, 19.0, 29.0], [8.0, 18.0, 28.0]]))
    assert_tensor(row * col, np.array([[10.0, 20.0, 30.0], [20.0, 40.0, 60.0]]))


def test_powf_and_powi_with_tensors(backend):
    base = Tensor[backend, 1].from_floats([2.0, 3.0, 4.0])
    assert_tensor(base.powf(Tensor[backend, 1].from_floats([3.0, 0.5, -1.0])), np.array([8.0, 3 ** 0.5, 0.25]))
    assert_tensor(base.powi(Tensor[backend, 1, Int].from_ints([2, 0, 1])), np.array([4.0, 1.0, 4.0]))
    assert_tensor(base ** Tensor[backend, 1].from_floats([2.0, 2.0, 2.0]), np.array([4.0, 9.0, 16.0]))


def test_matmul_by_hand(backend):
    a = Tensor[backend, 2].from_floats([[1.0, 2.0], [3.0, 4.0]])
    b = Tensor[backend, 2].from_floats([[5.0, 6.0], [7.0, 8.0]])
    assert_tensor(a.matmul(b), np.array([[19.0, 22.0], [43.0, 50.0]]))
    assert_tensor(a @ b, np.array([[19.0, 22.0], [43.0, 50.0]]))


@pytest.mark.parametrize("name, op, ref", BINARY[::2], ids=[b[0] for b in BINARY[::2]])
def test_nan_and_inf_pass_through(backend, name, op, ref):
    a = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    b = np.array([1.0, 2.0, 3.0, np.nan], np.float32)
    check_op(backend, op, ref, a, b)


def test_nan_and_inf_through_scalar_ops(backend):
    a = np.array([np.nan, np.inf, -np.inf], np.float32)
    check_op(backend, lambda t: (t + 1.0) * 2.0 - 3.0, lambda x: (x + 1.0) * 2.0 - 3.0, a)
    check_op(backend, lambda t: -t.abs(), lambda x: -np.abs(x), a)


# -- NumPy oracle ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, op, ref", BINARY, ids=[b[0] for b in BINARY])
@SETTINGS
@given(pair=float_pairs())
def test_binary_ops_broadcast_like_numpy(backend, name, op, ref, pair):
    a, b = pair
    if name in ("div", "/"):
        b = np.where(np.abs(b) < 0.5, np.float32(0.5), b)
    check_op(backend, op, ref, a, b)


@pytest.mark.parametrize("name, op, ref", SCALAR, ids=[s[0] for s in SCALAR])
@SETTINGS
@given(a=shapes().flatmap(lambda s: float_arrays(s, 0.5, 4.0)), negate=st.booleans())
def test_scalar_and_unary_ops_match_numpy(backend, name, op, ref, a, negate):
    a = -a if negate else a
    check_op(backend, op, ref, a, rtol=1e-5)


@SETTINGS
@given(pair=float_pairs(lo=0.5, hi=3.0))
def test_powf_matches_numpy(backend, pair):
    a, b = pair
    check_op(backend, lambda x, y: x.powf(y), np.power, a, b, rtol=1e-4)


@st.composite
def matmul_case(draw):
    m, k, n = (draw(st.integers(1, 4)) for _ in range(3))
    batch = draw(st.sampled_from([(), (2,), (1, 3), (3, 1)]))
    other = tuple(1 if draw(st.booleans()) else b for b in batch)
    return draw(float_arrays(batch + (m, k), -3, 3)), draw(float_arrays(other + (k, n), -3, 3))


@SETTINGS
@given(case=matmul_case())
def test_matmul_matches_numpy(backend, case):
    a, b = case
    check_op(backend, lambda x, y: x.matmul(y), np.matmul, a, b, rtol=1e-5, atol=1e-5)
