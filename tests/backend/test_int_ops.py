"""Int tensors: arithmetic (division truncates toward zero, as in Burn),
scalar forms, neg/abs/clamp, powers, conversion to Float, arange."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnbook import Int, Tensor

from .oracle import SETTINGS, assert_tensor, broadcast_shapes, check_op, int_arrays, shapes


def ints(backend, values):
    return Tensor[backend, 1, Int].from_ints(values)


def trunc_div(a, b):
    """Integer division rounding toward zero (C, Rust, Burn)."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) ^ (b < 0), -q, q)


INT_BINARY = [
    ("add", lambda a, b: a + b, np.add),
    ("sub", lambda a, b: a.sub(b), np.subtract),
    ("mul", lambda a, b: a * b, np.multiply),
    ("div", lambda a, b: a / b, trunc_div),
]

INT_SCALAR = [
    ("add_scalar", lambda a: a.add_scalar(3), lambda x: x + 3),
    ("s + t", lambda a: 3 + a, lambda x: 3 + x),
    ("sub_scalar", lambda a: a.sub_scalar(3), lambda x: x - 3),
    ("s - t", lambda a: 3 - a, lambda x: 3 - x),
    ("mul_scalar", lambda a: a.mul_scalar(-2), lambda x: x * -2),
    ("div_scalar", lambda a: a.div_scalar(3), lambda x: trunc_div(x, 3)),
    ("t / -3", lambda a: a / -3, lambda x: trunc_div(x, -3)),
    ("neg", lambda a: -a, np.negative),
    ("abs", lambda a: a.abs(), np.abs),
    ("clamp", lambda a: a.clamp(-2, 5), lambda x: np.clip(x, -2, 5)),
    ("clamp_min", lambda a: a.clamp_min(0), lambda x: np.maximum(x, 0)),
    ("clamp_max", lambda a: a.clamp_max(0), lambda x: np.minimum(x, 0)),
    ("powi_scalar", lambda a: a.powi_scalar(2), lambda x: x ** 2),
    ("float", lambda a: a.float(), lambda x: x.astype(np.float32)),
]


# -- hand-computed --------------------------------------------------------------------------

def test_division_truncates_toward_zero(backend):
    a = ints(backend, [-7, 7, -7, 7, 6, -6])
    b = ints(backend, [2, 2, -2, -2, 3, 4])
    assert_tensor(a / b, np.array([-3, 3, 3, -3, 2, -1]))
    assert_tensor(a.div(b), np.array([-3, 3, 3, -3, 2, -1]))
    assert_tensor(ints(backend, [-7, 7]).div_scalar(2), np.array([-3, 3]))
    assert_tensor(ints(backend, [-7, 7]) / -2, np.array([3, -3]))


def test_int_arithmetic_by_hand(backend):
    a, b = ints(backend, [1, -2, 3]), ints(backend, [4, 5, -6])
    assert_tensor(a + b, np.array([5, 3, -3]))
    assert_tensor(a - b, np.array([-3, -7, 9]))
    assert_tensor(a * b, np.array([4, -10, -18]))
    assert_tensor(-a, np.array([-1, 2, -3]))
    assert_tensor(a.abs(), np.array([1, 2, 3]))
    assert_tensor(a * 2 + 1, np.array([3, -3, 7]))


def test_int_powers(backend):
    a = ints(backend, [2, 3, -2])
    assert_tensor(a.powi_scalar(3), np.array([8, 27, -8]))
    assert_tensor(a.powi(ints(backend, [0, 2, 3])), np.array([1, 9, -8]))
    assert_tensor(a ** 2, np.array([4, 9, 4]))


def test_int_to_float_and_back(backend):
    a = ints(backend, [-3, 0, 4])
    assert_tensor(a.float(), np.array([-3.0, 0.0, 4.0]))
    assert_tensor(a.float().int(), np.array([-3, 0, 4]))


def test_int_values_beyond_float32_precision(backend):
    big = 2 ** 40 + 1
    assert ints(backend, [big]).into_scalar() == big
    assert (ints(backend, [big]) + 1).into_scalar() == big + 1


def test_arange_feeds_int_ops(backend):
    r = Tensor[backend, 1, Int].arange(5, 10)
    assert_tensor(r * 2, np.array([10, 12, 14, 16, 18]))
    assert_tensor(r.sum(), np.array([35]))
    assert_tensor(Tensor[backend, 1, Int].arange_step(0, 10, 3).float(), np.array([0.0, 3.0, 6.0, 9.0]))


# -- NumPy oracle -------------------------------------------------------------------------

@st.composite
def int_pairs(draw):
    a, b = draw(broadcast_shapes())
    return draw(int_arrays(a)), draw(int_arrays(b))


@pytest.mark.parametrize("name, op, ref", INT_BINARY, ids=[b[0] for b in INT_BINARY])
@SETTINGS
@given(pair=int_pairs())
def test_int_binary_ops_match_numpy(backend, name, op, ref, pair):
    a, b = pair
    if name == "div":
        b = np.where(b == 0, 7, b)
    check_op(backend, op, ref, a, b)


@pytest.mark.parametrize("name, op, ref", INT_SCALAR, ids=[s[0] for s in INT_SCALAR])
@SETTINGS
@given(a=shapes().flatmap(int_arrays))
def test_int_scalar_ops_match_numpy(backend, name, op, ref, a):
    check_op(backend, op, ref, a)
