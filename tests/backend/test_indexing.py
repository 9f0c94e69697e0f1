"""Indexing ops: gather, scatter (adds), select, select_assign (adds),
mask_where, mask_fill."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from burnbook import Tensor

from .oracle import SETTINGS, assert_tensor, check_op, float_arrays, shape_and_dim, tensor

M = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)


def ints(backend, values):
    return tensor(backend, np.array(values, dtype=np.int64))


# -- hand-computed ------------------------------------------------------------------------

def test_gather_along_each_dim(backend):
    t = tensor(backend, M)
    assert_tensor(t.gather(1, ints(backend, [[2, 0], [1, 1]])), np.array([[3.0, 1.0], [5.0, 5.0]]))
    assert_tensor(t.gather(0, ints(backend, [[1, 0, 1]])), np.array([[4.0, 2.0, 6.0]]))
    assert_tensor(t.gather(-1, ints(backend, [[0], [2]])), np.array([[1.0], [6.0]]))


def test_scatter_adds_into_existing_values(backend):
    t = Tensor[backend, 1].from_floats([10.0, 20.0, 30.0])
    out = t.scatter(0, ints(backend, [0, 0, 2]), Tensor[backend, 1].from_floats([1.0, 2.0, 3.0]))
    assert_tensor(out, np.array([13.0, 20.0, 33.0]))
    assert_tensor(t, np.array([10.0, 20.0, 30.0]))


def test_scatter_on_dim_one(backend):
    t = tensor(backend, np.zeros((2, 3), np.float32))
    out = t.scatter(1, ints(backend, [[2, 2], [0, 1]]), tensor(backend, M[:, :2].copy()))
    assert_tensor(out, np.array([[0.0, 0.0, 3.0], [4.0, 5.0, 0.0]]))


def test_select_picks_slices(backend):
    t = tensor(backend, M)
    assert_tensor(t.select(1, ints(backend, [2, 0, 2])), M[:, [2, 0, 2]])
    assert_tensor(t.select(0, ints(backend, [1])), M[[1]])
    assert_tensor(t.select(-1, ints(backend, [1])), M[:, [1]])


def test_select_assign_adds(backend):
    t = tensor(backend, M)
    values = tensor(backend, np.array([[10.0, 100.0], [20.0, 200.0]], np.float32))
    out = t.select_assign(1, ints(backend, [0, 0]), values)
    assert_tensor(out, np.array([[111.0, 2.0, 3.0], [224.0, 5.0, 6.0]]))
    assert_tensor(t, M)


def test_mask_where_and_mask_fill(backend):
    t = tensor(backend, M)
    mask = tensor(backend, np.array([[True, False, True], [False, False, True]]))
    values = tensor(backend, -M)
    assert_tensor(t.mask_where(mask, values), np.array([[-1.0, 2.0, -3.0], [4.0, 5.0, -6.0]]))
    assert_tensor(t.mask_fill(mask, 0.5), np.array([[0.5, 2.0, 0.5], [4.0, 5.0, 0.5]]))


def test_mask_broadcasts(backend):
    t = tensor(backend, M)
    row_mask = tensor(backend, np.array([[False, True, False]]))
    assert_tensor(t.mask_fill(row_mask, -1.0), np.array([[1.0, -1.0, 3.0], [4.0, -1.0, 6.0]]))
    assert_tensor(t.mask_where(row_mask, Tensor[backend, 2].zeros([1, 1])), np.array([[1.0, 0.0, 3.0], [4.0, 0.0, 6.0]]))


def test_indexing_on_int_tensors(backend):
    t = tensor(backend, M.astype(np.int64))
    assert_tensor(t.gather(1, ints(backend, [[1], [0]])), np.array([[2], [4]]))
    assert_tensor(t.select(0, ints(backend, [1, 1])), np.array([[4, 5, 6], [4, 5, 6]]))
    assert_tensor(t.scatter(0, ints(backend, [[1, 1, 1]]), ints(backend, [[1, 1, 1]])), np.array([[1, 2, 3], [5, 6, 7]]))
    assert_tensor(t.select_assign(0, ints(backend, [0]), ints(backend, [[1, 1, 1]])), np.array([[2, 3, 4], [4, 5, 6]]))
    mask = tensor(backend, np.array([[True, False, False], [False, False, True]]))
    assert_tensor(t.mask_fill(mask, -7), np.array([[-7, 2, 3], [4, 5, -7]]))
    assert_tensor(t.mask_where(mask, t.neg()), np.array([[-1, 2, 3], [4, 5, -6]]))


def test_select_and_mask_where_on_bool_tensors(backend):
    b = tensor(backend, np.array([[True, False], [False, False]]))
    assert_tensor(b.select(1, ints(backend, [1, 0])), np.array([[False, True], [False, False]]))
    mask = tensor(backend, np.array([[False, True], [True, False]]))
    assert_tensor(b.mask_where(mask, mask), np.array([[True, True], [True, False]]))


# -- NumPy oracle -------------------------------------------------------------------------

@st.composite
def gather_case(draw):
    (shape, dim) = draw(shape_and_dim())
    a = draw(float_arrays(shape))
    d = dim % len(shape)
    idx_shape = list(shape)
    idx_shape[d] = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    idx = rng.integers(0, shape[d], size=idx_shape)
    return a, dim, idx


@SETTINGS
@given(case=gather_case())
def test_gather_matches_numpy(backend, case):
    a, dim, idx = case
    check_op(backend, lambda t, i: t.gather(dim, i), lambda x, i: np.take_along_axis(x, i, axis=dim), a, idx)


@SETTINGS
@given(case=gather_case())
def test_scatter_matches_numpy_add_at(backend, case):
    a, dim, idx = case
    d = dim % a.ndim
    values = np.arange(1, idx.size + 1, dtype=np.float32).reshape(idx.shape)

    def numpy_scatter(x, i, v):
        out = x.copy()
        where = list(np.indices(i.shape, sparse=True))
        where[d] = i
        np.add.at(out, tuple(where), v)
        return out

    check_op(backend, lambda t, i, v: t.scatter(dim, i, v), numpy_scatter, a, idx, values)


@SETTINGS
@given(case=shape_and_dim(), data=st.data())
def test_select_and_select_assign_match_numpy(backend, case, data):
    shape, dim = case
    a = data.draw(float_arrays(shape))
    idx = np.array(data.draw(st.lists(st.integers(0, shape[dim] - 1), min_size=1, max_size=4)), np.int64)
    check_op(backend, lambda t, i: t.select(dim, i), lambda x, i: np.take(x, i, axis=dim), a, idx)
    v_shape = list(shape)
    v_shape[dim] = idx.size
    values = np.ones(v_shape, np.float32)

    def numpy_select_assign(x, i, v):
        out = x.copy()
        where = [slice(None)] * x.ndim
        where[dim] = i
        np.add.at(out, tuple(where), v)
        return out

    check_op(backend, lambda t, i, v: t.select_assign(dim, i, v), numpy_select_assign, a, idx, values)


@SETTINGS
@given(case=shape_and_dim(), data=st.data())
def test_mask_ops_match_numpy(backend, case, data):
    shape, _ = case
    a = data.draw(float_arrays(shape))
    mask = data.draw(st.lists(st.booleans(), min_size=a.size, max_size=a.size))
    mask = np.array(mask, bool).reshape(shape)
    check_op(backend, lambda t, m, v: t.mask_where(m, v), lambda x, m, v: np.where(m, v, x), a, mask, -a)
    check_op(backend, lambda t, m: t.mask_fill(m, 2.5), lambda x, m: np.where(m, 2.5, x), a, mask)
