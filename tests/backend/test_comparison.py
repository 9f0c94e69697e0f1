"""Comparisons on Float and Int tensors: tensor and `_elem` forms, broadcasting;
the result is a Bool tensor of the same rank."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from .oracle import SETTINGS, assert_tensor, broadcast_shapes, check_op, int_arrays, tensor

COMPARE = [
    ("equal", np.equal),
    ("greater", np.greater),
    ("greater_equal", np.greater_equal),
    ("lower", np.less),
    ("lower_equal", np.less_equal),
]

A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
B = np.array([[3.0, 2.0, 1.0], [6.0, 5.0, 4.0]], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_comparisons_by_hand(backend, dtype):
    a, b = tensor(backend, A.astype(dtype)), tensor(backend, B.astype(dtype))
    assert_tensor(a.equal(b), np.array([[False, True, False], [False, True, False]]))
    assert_tensor(a.greater(b), np.array([[False, False, True], [False, False, True]]))
    assert_tensor(a.greater_equal(b), np.array([[False, True, True], [False, True, True]]))
    assert_tensor(a.lower(b), np.array([[True, False, False], [True, False, False]]))
    assert_tensor(a.lower_equal(b), np.array([[True, True, False], [True, True, False]]))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_elem_comparisons_by_hand(backend, dtype):
    a = tensor(backend, A.astype(dtype))
    assert_tensor(a.equal_elem(2), np.array([[False, True, False], [False, False, False]]))
    assert_tensor(a.greater_elem(4), np.array([[False, False, False], [False, True, True]]))
    assert_tensor(a.greater_equal_elem(4), np.array([[False, False, False], [True, True, True]]))
    assert_tensor(a.lower_elem(2), np.array([[True, False, False], [False, False, False]]))
    assert_tensor(a.lower_equal_elem(2), np.array([[True, True, False], [False, False, False]]))


def test_comparison_broadcasts(backend):
    col = tensor(backend, np.array([[2.0], [5.0]], np.float32))
    assert_tensor(tensor(backend, A).greater(col), np.array([[False, False, True], [False, False, True]]))


def test_nan_compares_false(backend):
    t = tensor(backend, np.array([np.nan, 1.0], np.float32))
    assert_tensor(t.equal(t), np.array([False, True]))
    assert_tensor(t.greater_elem(0.0), np.array([False, True]))
    assert_tensor(t.lower_equal_elem(1.0), np.array([False, True]))


@st.composite
def int_pairs(draw):
    a, b = draw(broadcast_shapes())
    return draw(int_arrays(a, -3, 3)), draw(int_arrays(b, -3, 3))


@pytest.mark.parametrize("name, ref", COMPARE, ids=[c[0] for c in COMPARE])
@SETTINGS
@given(pair=int_pairs(), as_float=st.booleans(), scalar=st.integers(-3, 3))
def test_comparisons_match_numpy(backend, name, ref, pair, as_float, scalar):
    a, b = (x.astype(np.float32) for x in pair) if as_float else pair
    check_op(backend, lambda x, y: getattr(x, name)(y), ref, a, b)
    check_op(backend, lambda x: getattr(x, name + "_elem")(scalar), lambda x: ref(x, scalar), a)
