"""Layout ops on every kind: reshape, flatten, (un)squeeze, dim moves, repeat,
cat/stack, narrow/chunk, and slicing (which never changes the rank)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnbook import Int, Tensor, activation

from .oracle import SETTINGS, assert_tensor, check_op, float_arrays, keep_rank, shapes, tensor

M = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)   # [[1, 2, 3], [4, 5, 6]]
KIND_ARRAYS = {
    "float": M,
    "int": M.astype(np.int64),
    "bool": (M.astype(np.int64) % 2 == 0),
}


@pytest.fixture(params=list(KIND_ARRAYS))
def m(request):
    """The 2x3 matrix M as a numpy array of each kind."""
    return KIND_ARRAYS[request.param]


# -- hand-computed --------------------------------------------------------------------------

def test_slice_never_changes_rank(backend):
    t = tensor(backend, M)
    assert_tensor(t[0:2, 1], np.array([[2.0], [5.0]]))
    assert_tensor(t[1], np.array([[4.0, 5.0, 6.0]]))
    assert_tensor(t[-1, -1], np.array([[6.0]]))


def test_slice_negative_bounds_and_steps(backend):
    t = tensor(backend, M)
    assert_tensor(t[:, -2:], np.array([[2.0, 3.0], [5.0, 6.0]]))
    assert_tensor(t[:, ::-1], np.array([[3.0, 2.0, 1.0], [6.0, 5.0, 4.0]]))
    assert_tensor(t[::-1, ::2], np.array([[4.0, 6.0], [1.0, 3.0]]))
    assert_tensor(t[:, -1:0:-1], np.array([[3.0, 2.0], [6.0, 5.0]]))


def test_slice_method_forms(backend):
    t = tensor(backend, M)
    assert_tensor(t.slice([(0, 2), (1, 3)]), np.array([[2.0, 3.0], [5.0, 6.0]]))
    assert_tensor(t.slice([slice(1, 2)]), np.array([[4.0, 5.0, 6.0]]))
    assert_tensor(t.slice([(0, 1), (-2, None)]), np.array([[2.0, 3.0]]))


def test_slice_assign_returns_a_new_tensor(backend, m):
    t = tensor(backend, m)
    values = tensor(backend, m[:, :1][::-1].copy())
    out = t.slice_assign([(0, 2), (2, 3)], values)
    expected = m.copy()
    expected[:, 2:3] = m[:, :1][::-1]
    assert_tensor(out, expected)
    assert_tensor(t, m)   # the input is unchanged


def test_slice_assign_with_negative_step(backend):
    t = tensor(backend, M)
    out = t.slice_assign([slice(None), slice(None, None, -1)], tensor(backend, M))
    assert_tensor(out, M[:, ::-1])


def test_reshape_flatten_squeeze_unsqueeze(backend, m):
    t = tensor(backend, m)
    assert_tensor(t.reshape([3, 2]), m.reshape(3, 2))
    assert_tensor(t.reshape([-1]), m.reshape(-1))
    assert_tensor(t.reshape([1, -1, 2]), m.reshape(1, 3, 2))
    assert_tensor(t.reshape([3, 2]).flatten(0, 1), m.reshape(-1))
    assert_tensor(t.unsqueeze(), m[None])
    assert_tensor(t.unsqueeze_dim(1), m[:, None])
    assert_tensor(t.unsqueeze_dim(-1), m[:, :, None])
    assert_tensor(t.unsqueeze_dim(1).squeeze(1), m)


def test_flatten_middle_dims(backend):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert_tensor(tensor(backend, a).flatten(1, 2), a.reshape(2, 12))
    assert_tensor(tensor(backend, a).flatten(0, -2), a.reshape(6, 4))


def test_dim_moves(backend, m):
    t = tensor(backend, m)
    assert_tensor(t.transpose(), m.T)
    assert_tensor(t.T, m.T)
    assert_tensor(t.swap_dims(0, -1), m.T)
    a = (np.arange(24).reshape(2, 3, 4) % 5).astype(m.dtype)
    t3 = tensor(backend, a)
    assert_tensor(t3.permute([2, 0, 1]), a.transpose(2, 0, 1))
    assert_tensor(t3.permute([-1, 1, 0]), a.transpose(2, 1, 0))
    assert_tensor(t3.transpose(), a.swapaxes(1, 2))


def test_repeat_tiles_along_a_dim(backend, m):
    t = tensor(backend, m)
    assert_tensor(t.repeat(1, 2), np.tile(m, (1, 2)))
    assert_tensor(t.repeat(0, 3), np.tile(m, (3, 1)))
    assert_tensor(Tensor[backend, 1].from_floats([1.0, 2.0]).repeat(0, 2), np.array([1.0, 2.0, 1.0, 2.0]))


def test_cat_and_stack(backend, m):
    a, b = tensor(backend, m), tensor(backend, m[:, ::-1].copy())
    assert_tensor(Tensor.cat([a, b], 0), np.concatenate([m, m[:, ::-1]], 0))
    assert_tensor(Tensor.cat([a, b, a], -1), np.concatenate([m, m[:, ::-1], m], 1))
    assert_tensor(Tensor.stack([a, b], 0), np.stack([m, m[:, ::-1]], 0))
    assert_tensor(Tensor.stack([a, b], 2), np.stack([m, m[:, ::-1]], 2))


def test_narrow_and_chunk(backend, m):
    t = tensor(backend, m)
    assert_tensor(t.narrow(1, 1, 2), m[:, 1:3])
    assert_tensor(t.narrow(-2, 1, 1), m[1:2])
    chunks = t.chunk(2, 1)
    assert [c.dims() for c in chunks] == [[2, 2], [2, 1]]
    assert_tensor(chunks[0], m[:, :2])
    assert_tensor(chunks[1], m[:, 2:])
    assert [c.dims() for c in Tensor[backend, 1].zeros([6]).chunk(3)] == [[2], [2], [2]]


def test_expand_broadcasts_size_one_dims(backend):
    t = Tensor[backend, 2].from_floats([[1.0], [2.0]])
    assert_tensor(t.expand([2, 3]), np.array([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]))


def test_equal_on_every_kind(backend, m):
    t = tensor(backend, m)
    assert_tensor(t.equal(t), np.ones((2, 3), bool))


NEGATIVE_DIMS = [
    # (name, op(t, dim)): on the [2, 3, 4] tensor, dim -1 must act as dim 2 and -3 as 0
    ("sum_dim", lambda t, d: t.sum_dim(d)),
    ("mean_dim", lambda t, d: t.mean_dim(d)),
    ("max_dim", lambda t, d: t.max_dim(d)),
    ("argmin", lambda t, d: t.argmin(d)),
    ("var", lambda t, d: t.var(d)),
    ("repeat", lambda t, d: t.repeat(d, 2)),
    ("chunk", lambda t, d: t.chunk(2, d)[0]),
    ("narrow", lambda t, d: t.narrow(d, 1, 1)),
    ("cat", lambda t, d: Tensor.cat([t, t], d)),
    ("stack", lambda t, d: Tensor.stack([t, t], d - 1 if d < 0 else d)),  # -2 of the new rank 4 is 2
    ("swap_dims", lambda t, d: t.swap_dims(d, 1)),
    ("flatten", lambda t, d: t.flatten(0, d)),
    ("squeeze", lambda t, d: t.sum_dim(d).squeeze(d)),
    ("select", lambda t, d: t.select(d, Tensor[t._B, 1, Int].from_ints([1, 0]))),
    ("gather", lambda t, d: t.gather(d, t.argmax(d))),
    ("softmax", lambda t, d: activation.softmax(t, d)),
]


@pytest.mark.parametrize("name, op", NEGATIVE_DIMS, ids=[n[0] for n in NEGATIVE_DIMS])
def test_negative_dims_count_from_the_end(backend, name, op):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 7
    t = tensor(backend, a)
    for neg, pos in ((-1, 2), (-3, 0)):
        got, want = op(t, neg), op(t, pos)
        assert_tensor(got, want.to_numpy(), kind=want.kind)


# -- NumPy oracle -----------------------------------------------------------------------------

@st.composite
def array_and_index(draw):
    """A float32 array and an index of ints and slices (negative bounds/steps)."""
    a = draw(float_arrays(draw(shapes(max_dims=3, max_side=5))))
    index = []
    for size in a.shape[: draw(st.integers(1, a.ndim))]:
        if draw(st.booleans()):
            index.append(draw(st.integers(-size, size - 1)))
        else:
            bound = st.none() | st.integers(-size - 1, size + 1)
            step = draw(st.none() | st.sampled_from([1, 2, -1, -2]))
            index.append(slice(draw(bound), draw(bound), step))
    return a, tuple(index)


@SETTINGS
@given(case=array_and_index())
def test_slicing_matches_numpy(backend, case):
    a, index = case
    check_op(backend, lambda t: t[index], lambda x: x[keep_rank(index, x.shape)], a)


@SETTINGS
@given(case=array_and_index())
def test_slice_assign_matches_numpy(backend, case):
    a, index = case
    np_index = keep_rank(index, a.shape)
    values = -np.ones_like(a[np_index]) * np.arange(a[np_index].size, dtype=np.float32).reshape(a[np_index].shape)

    def numpy_assign(x, v):
        out = x.copy()
        out[np_index] = v
        return out

    check_op(backend, lambda t, v: t.slice_assign(list(index), v), numpy_assign, a, values)


@SETTINGS
@given(a=shapes(max_dims=3).flatmap(float_arrays), data=st.data())
def test_permute_reshape_match_numpy(backend, a, data):
    axes = data.draw(st.permutations(range(a.ndim)))
    check_op(backend, lambda t: t.permute(list(axes)), lambda x: x.transpose(axes), a)
    check_op(backend, lambda t: t.reshape([-1, 1]), lambda x: x.reshape(-1, 1), a)
    check_op(backend, lambda t: t.flatten(0, -1), lambda x: x.reshape(-1), a)
