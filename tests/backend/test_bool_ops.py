"""Bool tensors: not/and/or (and their operators), conversion to Float and
Int, Float/Int to Bool, equality, layout and masks built from comparisons."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnbook import Tensor

from .oracle import SETTINGS, assert_tensor, bool_arrays, broadcast_shapes, check_op, tensor

P = np.array([[True, False], [True, True]])
Q = np.array([[False, False], [True, False]])


def test_not_and_or_by_hand(backend):
    p, q = tensor(backend, P), tensor(backend, Q)
    assert_tensor(p.bool_not(), ~P)
    assert_tensor(~p, np.array([[False, True], [False, False]]))
    assert_tensor(p.bool_and(q), np.array([[False, False], [True, False]]))
    assert_tensor(p & q, P & Q)
    assert_tensor(p.bool_or(q), np.array([[True, False], [True, True]]))
    assert_tensor(p | q, P | Q)


def test_bool_to_float_and_int(backend):
    p = tensor(backend, P)
    assert_tensor(p.float(), np.array([[1.0, 0.0], [1.0, 1.0]]))
    assert_tensor(p.int(), np.array([[1, 0], [1, 1]]))


def test_numbers_to_bool(backend):
    assert_tensor(Tensor[backend, 1].from_floats([0.0, -0.5, 2.0]).bool(), np.array([False, True, True]))
    assert_tensor(tensor(backend, np.array([0, 3, -1])).bool(), np.array([False, True, True]))


def test_bool_equal_and_layout(backend):
    p, q = tensor(backend, P), tensor(backend, Q)
    assert_tensor(p.equal(q), P == Q)
    assert_tensor(p.reshape([4]), P.reshape(4))
    assert_tensor(Tensor.cat([p, q], 1), np.concatenate([P, Q], 1))
    assert_tensor(p[1:, :1], P[1:, :1])
    assert_tensor(p.swap_dims(0, 1), P.T)


def test_comparison_masks_combine(backend):
    t = Tensor[backend, 1].from_floats([-1.0, 0.5, 2.0, 5.0])
    inside = t.greater_elem(0.0) & t.lower_elem(3.0)
    assert_tensor(inside, np.array([False, True, True, False]))
    assert_tensor(t.mask_fill(~inside, 0.0), np.array([0.0, 0.5, 2.0, 0.0]))


@st.composite
def bool_pairs(draw):
    a, b = draw(broadcast_shapes())
    return draw(bool_arrays(a)), draw(bool_arrays(b))


@SETTINGS
@given(pair=bool_pairs())
def test_bool_ops_match_numpy(backend, pair):
    a, b = pair
    check_op(backend, lambda x, y: x & y, np.logical_and, a, b)
    check_op(backend, lambda x, y: x | y, np.logical_or, a, b)
    check_op(backend, lambda x: ~x, np.logical_not, a)
    check_op(backend, lambda x: x.int(), lambda x: x.astype(np.int64), a)


def test_bool_equal_elem(backend):
    """Burn's Bool tensors have `equal_elem`: True gives the values, False their negation."""
    p = tensor(backend, P)
    assert_tensor(p.equal_elem(True), P)
    assert_tensor(p.equal_elem(False), ~P)
    assert_tensor(p.equal(False), ~P)
    assert_tensor(p[:, 1:].equal_elem(False), ~P[:, 1:])
    for bad in (0.5, 2, 1.0):
        with pytest.raises(TypeError, match="True or False"):
            p.equal_elem(bad)
    with pytest.raises(TypeError, match="not available for Bool"):
        p.greater_elem(True)
