"""Helpers of the conformance suite: build tensors from NumPy arrays, compare
tensors with NumPy results, and hypothesis strategies for small random shapes.

`check_op(backend, fn_tensor, fn_numpy, *arrays)` is the one oracle check:
it runs `fn_tensor` on tensors of `backend` made from `arrays` and `fn_numpy`
on the arrays themselves, then compares shapes, element types and values.
"""

from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from burnbook import Bool, Float, Int, Tensor
from burnbook.backend import NdArray

# Few examples: every backend runs every property, and Taichi compiles kernels.
SETTINGS = settings(max_examples=15, deadline=None, derandomize=True)

KIND_OF_DTYPE = {"f": Float, "i": Int, "u": Int, "b": Bool}
DTYPE_OF_KIND = {Float: np.float32, Int: np.int64, Bool: np.bool_}
DTYPE_NAME = {Float: "f32", Int: "i64", Bool: "bool"}


def tensor(backend, array, kind=None):
    """A `Tensor[backend, array.ndim, kind]` holding `array` (kind from dtype)."""
    array = np.asarray(array)
    kind = kind or KIND_OF_DTYPE[array.dtype.kind]
    return Tensor[backend, array.ndim, kind].from_data(array)


def assert_tensor(t, expected, kind=None, rtol=1e-5, atol=1e-6):
    """`t` is a tensor of `expected`'s rank and shape, of the kind's default
    element type, holding `expected`'s values (NaN equal to NaN)."""
    expected = np.asarray(expected)
    kind = kind or KIND_OF_DTYPE[expected.dtype.kind]
    assert isinstance(t, Tensor), f"expected a Tensor, got {type(t).__name__}"
    assert t.kind is kind, f"kind {t.kind.name}, expected {kind.name}"
    assert t.ndim == expected.ndim, f"rank {t.ndim}, expected {expected.ndim}"
    assert t.dims() == list(expected.shape), f"shape {t.dims()}, expected {list(expected.shape)}"
    got = t.to_numpy()
    assert got.dtype == DTYPE_OF_KIND[kind], f"to_numpy dtype {got.dtype}"
    assert str(t.dtype) == DTYPE_NAME[kind]
    if kind is Float:
        np.testing.assert_allclose(got, expected.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


def check_op(backend, fn_tensor, fn_numpy, *arrays, rtol=1e-5, atol=1e-6):
    """Run one op on `backend` and on NumPy and compare the results.

    `arrays` become tensors of their own rank and kind; `fn_numpy` gets the
    arrays (floats widened to float64, so NumPy is the more exact side) and
    may return a tuple when `fn_tensor` does. Float results are compared with
    `rtol`/`atol`, Int and Bool results exactly.
    """
    tensors = [tensor(backend, a) for a in arrays]
    if backend.is_autodiff:
        # Float inputs are tracked, so the forward runs on the graph-building path.
        tensors = [t.require_grad() if t.kind is Float else t for t in tensors]
    wide = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays]
    got = fn_tensor(*tensors)
    with np.errstate(all="ignore"):
        want = fn_numpy(*wide)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_tensor(g, w, rtol=rtol, atol=atol)
    else:
        assert_tensor(got, want, rtol=rtol, atol=atol)
    if backend.is_autodiff:
        _check_backward_runs(tensors, got)
    return got


def _check_backward_runs(inputs, outputs):
    """On autodiff backends: backward from every Float output runs and gives
    each tracked input a gradient of its own shape, or None (values are the
    autodiff suite's business)."""
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    for out in outputs:
        if out.kind is not Float:
            continue
        grads = out.sum().backward()
        for x in inputs:
            if x.kind is Float:
                g = x.grad(grads)
                assert g is None or g.dims() == x.dims(), f"grad shape {g.dims()} for input {x.dims()}"


def keep_rank(index, shape):
    """NumPy's view of a burnbook index: an int `i` keeps its dim as `i:i+1`."""
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    for i, size in zip(index, shape):
        if isinstance(i, int):
            j = i + size if i < 0 else i
            out.append(slice(j, j + 1))
        else:
            out.append(i)
    return tuple(out)


def other_backend(backend):
    """A backend class different from `backend` (for mixed-backend errors)."""
    if backend is not NdArray:
        return NdArray

    class OtherNdArray(NdArray):
        @classmethod
        def name(cls):
            return "other-ndarray"

    return OtherNdArray


# -- hypothesis strategies ----------------------------------------------------------

def shapes(min_dims=1, max_dims=3, min_side=1, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def floats(lo=-10.0, hi=10.0):
    return st.floats(lo, hi, width=32, allow_nan=False, allow_infinity=False)


def float_arrays(shape, lo=-10.0, hi=10.0):
    return hnp.arrays(np.float32, shape, elements=floats(lo, hi))


def int_arrays(shape, lo=-20, hi=20):
    return hnp.arrays(np.int64, shape, elements=st.integers(lo, hi))


def bool_arrays(shape):
    return hnp.arrays(np.bool_, shape, elements=st.booleans())


@st.composite
def broadcast_shapes(draw, max_dims=3):
    """Two same-rank shapes that broadcast: each dim is shared or 1 on one side."""
    shape = draw(shapes(max_dims=max_dims))
    lhs, rhs = list(shape), list(shape)
    for d in range(len(shape)):
        side = draw(st.sampled_from(["both", "lhs1", "rhs1"]))
        if side == "lhs1":
            lhs[d] = 1
        elif side == "rhs1":
            rhs[d] = 1
    return tuple(lhs), tuple(rhs)


@st.composite
def float_pairs(draw, lo=-10.0, hi=10.0):
    """Two float32 arrays of broadcasting shapes."""
    a, b = draw(broadcast_shapes())
    return draw(float_arrays(a, lo, hi)), draw(float_arrays(b, lo, hi))


@st.composite
def shape_and_dim(draw, max_dims=3):
    """A shape and a valid dim of it, sometimes negative."""
    shape = draw(shapes(max_dims=max_dims))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    return shape, dim


def distinct_floats(rng, shape):
    """float32 values with no ties, so argmax/argmin have one answer."""
    n = int(np.prod(shape))
    return (rng.permutation(n).astype(np.float32) - n / 2).reshape(shape) / 4
