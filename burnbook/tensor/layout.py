"""Layout ops on every kind: reshape, slicing, concatenation, dim moves."""

from __future__ import annotations

import math
import operator
from typing import Sequence

from .core import TensorBase, Writes
from .data import as_dim, as_dims
from .kind import Float, Int

# The most elements `expand` and `repeat` may give a tensor: 2**28, 1 GiB as
# f32. NdArray makes both a zero-stride view that costs nothing, so without
# a bound `repeat(0, 2**40)` succeeds at once and the `sum()` after it runs
# for hours inside one NumPy call, where Ctrl-C is not seen. Bounded, every
# reduction over such a view is one call that returns within seconds (a sum
# over 2**28 elements, measured on 2 busy CPU cores: 0.2 s on NdArray, 1.7 s on
# Taichi), and Python then raises a pending KeyboardInterrupt.
MAX_VIEW_ELEMENTS = 2 ** 28


def _check_view_size(op: str, dims: list, shape: Sequence[int]) -> None:
    n = math.prod(shape)
    if n > MAX_VIEW_ELEMENTS:
        raise ValueError(f"{op}: {list(dims)} -> {list(shape)} would hold {n} elements, more than "
                         f"MAX_VIEW_ELEMENTS ({MAX_VIEW_ELEMENTS}, burnbook.tensor.layout); a reduction "
                         "over it would run for minutes without answering Ctrl-C")


def _resolved(r: slice, size: int) -> slice:
    # `slice.indices` gives stop -1 for a negative step that runs past index
    # 0; as an index that -1 would mean the last element, so it becomes None.
    start, stop, step = r.indices(size)
    if start < 0:
        # Only a negative step whose start lies before index 0 gets start -1;
        # it selects nothing (NumPy would read -1 as the last element).
        return slice(0, 0, 1)
    return slice(start, None if stop < 0 else stop, step)


def _resolve_range(r, size: int, dim: int, op: str) -> slice:
    """One slice range as a resolved `slice`: Python slices clamp like NumPy;
    Burn-style `(start, end)` pairs, `range`s and ints must lie in bounds."""
    if isinstance(r, slice):
        return _resolved(r, size)
    if isinstance(r, range):
        r = (r.start, r.stop) if r.step == 1 else slice(r.start, r.stop, r.step)
        if isinstance(r, slice):
            return _resolved(r, size)
    if isinstance(r, tuple) and len(r) == 2:
        start, end = (size if v is None else operator.index(v) for v in r)
        start = start + size if start < 0 else start
        end = end + size if end < 0 else end
        if not 0 <= start <= end <= size:
            raise IndexError(f"{op}: range {r[0]}..{r[1]} is out of bounds for dim {dim} of size {size}")
        return slice(start, end, 1)
    try:
        i = operator.index(r)
    except TypeError:
        raise TypeError(f"{op}: dim {dim} takes a slice, a (start, end) pair or an int, got {r!r}") from None
    j = i + size if i < 0 else i
    if not 0 <= j < size:
        raise IndexError(f"{op}: index {i} is out of bounds for dim {dim} of size {size}")
    return slice(j, j + 1, 1)


def _slice_len(s: slice) -> int:
    return len(range(s.start, -1 if s.stop is None else s.stop, s.step))


class LayoutOps(TensorBase):
    """Ops that move elements without looking at them, on every kind (each
    calls the backend's `float_*`, `int_*` or `bool_*` version)."""

    __slots__ = ()

    def _ranges(self, ranges, op: str) -> tuple:
        # A bare (start, end) tuple is one range for dim 0; a list holds one
        # range per leading dim.
        if not isinstance(ranges, (list, tuple)) or (
            isinstance(ranges, tuple) and len(ranges) == 2 and all(isinstance(v, int) for v in ranges)
        ):
            ranges = [ranges]
        dims = self.dims()
        if len(ranges) > self._D:
            raise IndexError(f"{op}: {len(ranges)} ranges given for a tensor of rank {self._D}")
        return tuple(_resolve_range(r, dims[d], d, op) for d, r in enumerate(ranges))

    def slice(self, ranges):
        """The sub-tensor at `ranges` (one per leading dim); the rank never
        changes: an int `i` keeps size 1 at its dim."""
        B, K = self._B, self._K
        fn = B.float_slice if K is Float else B.int_slice if K is Int else B.bool_slice
        return self._like(fn(self._p, self._ranges(ranges, "slice")))

    def slice_assign(self, ranges, values):
        """A copy of this tensor with `values` written at `ranges`."""
        res = self._ranges(ranges, "slice_assign")
        self._check_other("slice_assign", values)
        dims = self.dims()
        expect = [_slice_len(s) for s in res] + dims[len(res):]
        if values.dims() != expect:
            raise ValueError(f"slice_assign: values have shape {values.dims()}, the ranges select shape {expect}")
        B, K = self._B, self._K
        fn = B.float_slice_assign if K is Float else B.int_slice_assign if K is Int else B.bool_slice_assign
        return self._like(fn(self._p, res, values._p))

    def __getitem__(self, index):
        if not isinstance(index, tuple):
            index = (index,)
        return self.slice(list(index))

    def __setitem__(self, index, values) -> None:
        if not isinstance(index, tuple):
            index = (index,)
        res = self._ranges(list(index), "__setitem__")
        if not isinstance(values, TensorBase):
            shape = [_slice_len(s) for s in res] + self.dims()[len(res):]
            values = type(self).full(shape, values, self.device())
        self._p = self.slice_assign(list(res), values)._p
        Writes.count += 1

    def narrow(self, dim: int, start: int, length: int):
        d = self._dim(dim, "narrow")
        start, length = as_dim(start, "narrow", "start"), as_dim(length, "narrow", "length")
        dims = self._shape()
        if start + length > dims[d]:
            raise IndexError(f"narrow: range {start}..{start + length} is out of bounds for dim {d} "
                             f"of size {dims[d]}")
        ranges = tuple(slice(0, dims[i], 1) for i in range(d)) + (slice(start, start + length, 1),)
        B, K = self._B, self._K
        fn = B.float_slice if K is Float else B.int_slice if K is Int else B.bool_slice
        return self._like(fn(self._p, ranges))

    def chunk(self, num_chunks: int, dim: int = 0) -> list:
        """Split into at most `num_chunks` pieces along `dim` (PyTorch sizes)."""
        d = self._dim(dim, "chunk")
        size = self.dims()[d]
        num_chunks = as_dim(num_chunks, "chunk", "num_chunks")
        if num_chunks < 1:
            raise ValueError(f"chunk: num_chunks must be >= 1, got {num_chunks}")
        if size == 0:  # torch: as many (empty) chunks as asked for
            return [self.narrow(d, 0, 0) for _ in range(num_chunks)]
        step = -(-size // num_chunks)
        return [self.narrow(d, s, min(step, size - s)) for s in range(0, size, step)]

    def reshape(self, shape: Sequence[int]):
        """The same values in `shape`; -1 infers one size, 0 keeps the size
        at that position (Burn), except in a tensor with no elements, where
        0 is a zero-size dim (so [0, 3] reshapes to [3, 0])."""
        B, K = self._B, self._K
        dims = (B.float_shape if K is Float else B.int_shape if K is Int else B.bool_shape)(self._p)
        total = math.prod(dims)
        shape = as_dims(shape, "reshape", allow=(-1,))
        if total > 0 and 0 in shape:
            shape = [dims[i] if s == 0 and i < len(dims) else s for i, s in enumerate(shape)]
        if -1 in shape:
            if shape.count(-1) > 1:
                raise ValueError(f"reshape: only one -1 allowed in {shape}")
            known = -math.prod(shape)
            if known == 0 or total % known:
                raise ValueError(f"reshape: cannot reshape {list(dims)} into {shape}")
            shape[shape.index(-1)] = total // known
        n = math.prod(shape)
        if n != total:
            raise ValueError(f"reshape: cannot reshape {list(dims)} ({total} elements) into {shape} ({n} elements)")
        reshape = B.float_reshape if K is Float else B.int_reshape if K is Int else B.bool_reshape
        return self._as(reshape(self._p, tuple(shape)), rank=len(shape))

    def _reshaped(self, shape: list):
        """`reshape` to a shape the caller derived from this tensor's own
        dims (same element count by construction): no checks to repeat."""
        B, K = self._B, self._K
        reshape = B.float_reshape if K is Float else B.int_reshape if K is Int else B.bool_reshape
        return self._as(reshape(self._p, tuple(shape)), rank=len(shape))

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        s, e = self._dim(start_dim, "flatten"), self._dim(end_dim, "flatten")
        if s > e:
            raise ValueError(f"flatten: start_dim {start_dim} is after end_dim {end_dim}")
        dims = self.dims()
        n = 1
        for v in dims[s:e + 1]:
            n *= v
        return self._reshaped(dims[:s] + [n] + dims[e + 1:])

    def squeeze(self, dim: int):
        """Remove `dim`, which must have size 1."""
        d = self._dim(dim, "squeeze")
        dims = self.dims()
        if dims[d] != 1:
            raise ValueError(f"squeeze: dim {dim} has size {dims[d]}, not 1 (shape {dims})")
        if self._D == 1:
            raise ValueError("squeeze: a rank-1 tensor cannot lose its only dim")
        return self._reshaped(dims[:d] + dims[d + 1:])

    def unsqueeze(self):
        """Add a leading dim of size 1."""
        return self._reshaped([1] + self.dims())

    def unsqueeze_dim(self, dim: int):
        """Insert a dim of size 1 at `dim` (negative counts from the new end)."""
        d = dim + self._D + 1 if dim < 0 else dim
        if not 0 <= d <= self._D:
            raise IndexError(f"unsqueeze_dim: dim {dim} is out of range for a new rank of {self._D + 1}")
        dims = self.dims()
        return self._reshaped(dims[:d] + [1] + dims[d:])

    def swap_dims(self, dim1: int, dim2: int):
        d1, d2 = self._dim(dim1, "swap_dims"), self._dim(dim2, "swap_dims")
        if d1 == d2:
            return self
        B, K = self._B, self._K
        fn = B.float_swap_dims if K is Float else B.int_swap_dims if K is Int else B.bool_swap_dims
        return self._like(fn(self._p, d1, d2))

    def transpose(self):
        """Swap the last two dims (PyTorch's `t.T` for matrices)."""
        if self._D < 2:
            return self
        return self.swap_dims(-2, -1)

    @property
    def T(self):  # noqa: N802 - PyTorch's spelling
        return self.transpose()

    def permute(self, axes: Sequence[int]):
        axes = [self._dim(a, "permute") for a in axes]
        if sorted(axes) != list(range(self._D)):
            raise ValueError(f"permute: {list(axes)} is not a permutation of the {self._D} dims")
        B, K = self._B, self._K
        fn = B.float_permute if K is Float else B.int_permute if K is Int else B.bool_permute
        return self._like(fn(self._p, tuple(axes)))

    def expand(self, shape: Sequence[int]):
        """Broadcast size-1 dims to `shape` (-1 keeps a size), same rank."""
        dims = self.dims()
        shape = as_dims(shape, "expand", allow=(-1,))
        if len(shape) != self._D:
            raise ValueError(f"expand: shape {list(shape)} must have rank {self._D}")
        shape = tuple(d if s == -1 else s for d, s in zip(dims, shape))
        for d, s in zip(dims, shape):
            if d != s and d != 1:
                raise ValueError(f"expand: cannot expand {dims} to {list(shape)}")
        if tuple(dims) == shape:
            return self
        _check_view_size("expand", dims, shape)
        B, K = self._B, self._K
        fn = B.float_expand if K is Float else B.int_expand if K is Int else B.bool_expand
        return self._like(fn(self._p, shape))

    def repeat(self, dim: int, times: int):
        """Tile the tensor `times` times along `dim` (Burn's `repeat(dim, times)`)."""
        d = self._dim(dim, "repeat")
        times = as_dim(times, "repeat", "times")
        dims = self.dims()
        _check_view_size(f"repeat(dim={d}, times={times})", dims, dims[:d] + [times * dims[d]] + dims[d + 1:])
        tiled = self.unsqueeze_dim(d).expand(dims[:d] + [times] + dims[d:])
        return tiled.reshape(dims[:d] + [times * dims[d]] + dims[d + 1:])

    @staticmethod
    def cat(tensors: Sequence, dim: int):
        """Concatenate same-rank tensors along `dim`."""
        tensors = list(tensors)
        if not tensors:
            raise ValueError("cat: needs at least one tensor")
        first = tensors[0]
        d = first._dim(dim, "cat")
        base = first.dims()
        for i, t in enumerate(tensors[1:], 1):
            first._check_other("cat", t)
            other = t.dims()
            if other[:d] + other[d + 1:] != base[:d] + base[d + 1:]:
                raise ValueError(f"cat: tensor {i} has shape {other}, incompatible with {base} outside dim {d}")
        B, K = first._B, first._K
        fn = B.float_cat if K is Float else B.int_cat if K is Int else B.bool_cat
        return first._like(fn([t._p for t in tensors], d))

    @staticmethod
    def stack(tensors: Sequence, dim: int):
        """Stack same-shape tensors along a new `dim`."""
        tensors = list(tensors)
        if not tensors:
            raise ValueError("stack: needs at least one tensor")
        shape = tensors[0].dims()
        for i, t in enumerate(tensors[1:], 1):
            if t.dims() != shape:
                raise ValueError(f"stack: tensor {i} has shape {t.dims()}, tensor 0 has {shape}")
        return LayoutOps.cat([t.unsqueeze_dim(dim) for t in tensors], dim)
