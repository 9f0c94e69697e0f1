"""`burnbook.tensor.layout_of`: shape, strides, offset, contiguity and storage
size of a tensor, checked against PyTorch's `stride()` and `storage_offset()`
for every view PyTorch also makes without copying, on every backend.

Where burnbook differs from PyTorch the test says so:
- a slice with a negative step is a view with a negative stride in burnbook
  (NumPy's and Taichi's views allow it); PyTorch refuses negative steps, and
  its `flip` copies;
- `unsqueeze`/`squeeze` of a non-contiguous tensor are views on every
  backend, with PyTorch's strides, except the stride of a size-1 dim added
  last on NdArray (NumPy's reshape repeats the stride before it; the stride
  of a size-1 dim is never read).
"""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor
from burnbook.tensor import Layout, layout_of

torch = pytest.importorskip("torch")

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

# (name, burnbook view, the same view in PyTorch); burnbook slicing keeps the
# rank (an int index keeps a dim of size 1), so PyTorch's side slices i:i+1.
VIEWS = [
    ("transpose", lambda t: t.swap_dims(1, 2), lambda t: t.transpose(1, 2)),
    ("T of a matrix", lambda t: t.reshape([6, 4]).T, lambda t: t.reshape(6, 4).T),
    ("swap_dims", lambda t: t.swap_dims(0, 2), lambda t: t.transpose(0, 2)),
    ("permute", lambda t: t.permute([1, 2, 0]), lambda t: t.permute(1, 2, 0)),
    ("slice", lambda t: t[1:2, 1:3], lambda t: t[1:2, 1:3]),
    ("slice with steps", lambda t: t[:, 0:3:2, 1:4:2], lambda t: t[:, 0:3:2, 1:4:2]),
    ("slice with an int", lambda t: t[1, 0:2], lambda t: t[1:2, 0:2]),
    ("narrow", lambda t: t.narrow(2, 1, 2), lambda t: t.narrow(2, 1, 2)),
    ("expand", lambda t: t[:, 0:1].expand([2, 5, 4]), lambda t: t[:, 0:1].expand(2, 5, 4)),
    ("broadcast a row", lambda t: t[0:1, 0:1].expand([3, 2, 4]), lambda t: t[0:1, 0:1].expand(3, 2, 4)),
    ("unsqueeze", lambda t: t.unsqueeze(), lambda t: t.unsqueeze(0)),
    ("unsqueeze_dim", lambda t: t.unsqueeze_dim(1), lambda t: t.unsqueeze(1)),
    ("unsqueeze last", lambda t: t.unsqueeze_dim(3), lambda t: t.unsqueeze(3)),
    ("squeeze", lambda t: t[0:1].squeeze(0), lambda t: t[0:1].squeeze(0)),
    ("reshape of a contiguous tensor", lambda t: t.reshape([6, 4]), lambda t: t.reshape(6, 4)),
    ("reshape of a contiguous slice", lambda t: t[1:2].reshape([3, 4]), lambda t: t[1:2].reshape(3, 4)),
    ("flatten", lambda t: t.flatten(0, 1), lambda t: t.flatten(0, 1)),
    ("slice of a transpose", lambda t: t.swap_dims(1, 2)[:, 1:4:2], lambda t: t.transpose(1, 2)[:, 1:4:2]),
    ("expand of a slice", lambda t: t[:, 1:2, 2:3].expand([2, 3, 4]), lambda t: t[:, 1:2, 2:3].expand(2, 3, 4)),
]


def _torch_layout(t) -> tuple:
    return (tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.is_contiguous(),
            t.untyped_storage().nbytes() // t.element_size())


def _layout(t: Layout) -> tuple:
    return (t.shape, t.strides, t.offset, t.contiguous, t.storage)


@pytest.mark.parametrize("name, view, torch_view", VIEWS, ids=[v[0] for v in VIEWS])
def test_views_match_pytorch(backend, name, view, torch_view):
    x = Tensor[backend, 3].from_data(X)
    got = view(x)
    expected = torch_view(torch.from_numpy(X.copy()))
    assert _layout(layout_of(got)) == _torch_layout(expected), name
    np.testing.assert_array_equal(got.to_numpy(), expected.numpy())


def test_a_fresh_tensor_is_contiguous(backend):
    lay = layout_of(Tensor[backend, 3].from_data(X))
    assert lay == Layout((2, 3, 4), (12, 4, 1), 0, True, 24)
    assert lay.offset_of((1, 2, 3)) == 23
    assert lay.offsets() == list(range(24))


def test_offset_of_reads_the_element(backend):
    """index -> offset: the storage cell `offset + sum(i * stride)` holds the element."""
    x = Tensor[backend, 3].from_data(X)
    for _, view, _ in VIEWS:
        got = view(x)
        lay = layout_of(got)
        if len(lay.shape) != 3 or lay.storage != 24:
            continue
        flat = X.reshape(-1)
        np.testing.assert_array_equal(flat[lay.offsets()].reshape(lay.shape), got.to_numpy())


def test_int_and_bool_tensors(backend):
    x = Tensor[backend, 3].from_data(X)
    assert _layout(layout_of(x.int().swap_dims(0, 2))) == ((4, 3, 2), (1, 4, 12), 0, False, 24)
    assert _layout(layout_of(x.greater_elem(3)[:, 1:3])) == ((2, 2, 4), (12, 4, 1), 4, False, 24)


def test_reshape_of_a_non_contiguous_tensor_copies(backend):
    """PyTorch copies too: the result owns a new storage of just its elements."""
    x = Tensor[backend, 3].from_data(X)
    got = x.swap_dims(1, 2)[:, 0:2].reshape([2, 6])
    expected = torch.from_numpy(X.copy()).transpose(1, 2)[:, 0:2].reshape(2, 6)
    assert _layout(layout_of(got)) == ((2, 6), (6, 1), 0, True, 12) == _torch_layout(expected)
    np.testing.assert_array_equal(got.to_numpy(), expected.numpy())


def test_a_negative_step_is_a_view_with_a_negative_stride(backend):
    """burnbook differs from PyTorch here: `t[::-1]` views with stride -4 (NumPy
    and Taichi both allow negative strides); PyTorch refuses a negative step
    and its `flip` copies into a new storage with positive strides."""
    x = Tensor[backend, 2].from_data(X[0])
    got = x[::-1]
    assert _layout(layout_of(got)) == ((3, 4), (-4, 1), 8, False, 12)
    np.testing.assert_array_equal(got.to_numpy(), X[0][::-1])
    with pytest.raises(ValueError, match="step"):
        torch.from_numpy(X[0].copy())[::-1]
    flipped = torch.from_numpy(X[0].copy()).flip(0)
    assert _torch_layout(flipped) == ((3, 4), (4, 1), 0, True, 12)


@pytest.mark.parametrize("name, ours, theirs", [
    ("unsqueeze inside", lambda t: t.T.unsqueeze_dim(1), lambda t: t.T.unsqueeze(1)),
    ("unsqueeze first", lambda t: t.T.unsqueeze(), lambda t: t.T.unsqueeze(0)),
    ("unsqueeze last", lambda t: t.T.unsqueeze_dim(2), lambda t: t.T.unsqueeze(2)),
    ("squeeze back", lambda t: t.T.unsqueeze_dim(1).squeeze(1), lambda t: t.T.unsqueeze(1).squeeze(1)),
    ("squeeze a sliced dim", lambda t: t[:, 1:2].T.squeeze(0), lambda t: t[:, 1:2].T.squeeze(0)),
])
def test_unsqueeze_and_squeeze_of_a_strided_tensor_are_views(backend, name, ours, theirs):
    """PyTorch views, with the added dim's stride the extent of the dim to its
    right; every backend does the same (Taichi's reshape keeps a strided
    view when only size-1 dims come or go, instead of copying)."""
    x = Tensor[backend, 2].from_data(X[0])
    got = ours(x)
    expected = _torch_layout(theirs(torch.from_numpy(X[0].copy())))
    if name == "unsqueeze last" and backend.InnerBackend.name().endswith("ndarray"):
        # NumPy's reshape gives a trailing added dim the stride of the dim before
        # it; PyTorch gives 1. A size-1 dim's stride is never read.
        shape, strides, *rest = expected
        expected = (shape, strides[:-1] + (strides[-2],), *rest)
    assert _layout(layout_of(got)) == expected, name
    np.testing.assert_array_equal(got.to_numpy(), theirs(torch.from_numpy(X[0].copy())).numpy())


def test_a_lazy_fusion_tensor_runs_first(backend):
    x = Tensor[backend, 3].from_data(X)
    y = (x.exp() + 1.0).swap_dims(0, 1)
    assert _layout(layout_of(y)) == ((3, 2, 4), (4, 12, 1), 0, False, 24)
    assert _layout(layout_of(x.exp() * 2.0)) == ((2, 3, 4), (12, 4, 1), 0, True, 24)


def test_str():
    from burnbook.backend import NdArray

    lay = layout_of(Tensor[NdArray, 2].from_data(X[0]).T)
    assert str(lay) == "shape [4, 3], strides [1, 4], offset 0, not contiguous, storage of 12"
    with pytest.raises(IndexError, match="out of bounds"):
        lay.offset_of((4, 0))
