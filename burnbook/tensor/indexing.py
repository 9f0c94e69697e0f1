"""Masks, indices and triangles: `mask_where`, `mask_fill`, `gather`,
`scatter`, `select`, `select_assign`, `triu`/`tril` and one-hot rows.

Masks are Bool tensors and indices Int tensors of the same backend; each op
checks them (shapes, bounds) and calls the backend's op of the tensor's kind.
"""

from __future__ import annotations

import numpy as np

from burnbook.backend.base import broadcast_shape
from .core import TensorBase
from .kind import Bool, Float, Int, unavailable


class IndexOps(TensorBase):
    """Masked writes, gathers and scatters along a dim, triangles, one-hot."""

    __slots__ = ()

    # -- masks -----------------------------------------------------------------------
    def _check_mask(self, op: str, mask) -> None:
        if not isinstance(mask, TensorBase) or mask._K is not Bool:
            raise TypeError(f"{op}: the mask must be a Bool tensor, got {type(mask).__name__}")
        if mask._B is not self._B or mask._D != self._D:
            raise ValueError(f"{op}: mask {mask.dims()} must have this tensor's backend and rank ({self.dims()})")

    def mask_where(self, mask, value):
        """`value` where `mask` is true, this tensor elsewhere (torch.where(mask, value, self))."""
        self._check_mask("mask_where", mask)
        if type(value) is not type(self):
            self._check_other("mask_where", value)
        B, K = self._B, self._K
        fn = B.float_mask_where if K is Float else B.int_mask_where if K is Int else B.bool_mask_where
        try:
            return self._like(fn(self._p, mask._p, value._p))
        except ValueError:
            broadcast_shape("mask_where", broadcast_shape("mask_where", self.dims(), mask.dims()), value.dims())
            raise

    def mask_fill(self, mask, value):
        """The number `value` where `mask` is true, this tensor elsewhere."""
        self._check_mask("mask_fill", mask)
        B, K = self._B, self._K
        try:
            fn = B.float_mask_fill if K is Float else B.int_mask_fill if K is Int else unavailable("mask_fill", K)
            return self._like(fn(self._p, mask._p, self._scalar(value, "mask_fill")))
        except ValueError:
            self._broadcast_error("mask_fill", mask)
            raise

    # -- indices -----------------------------------------------------------------------
    def _check_indices(self, op: str, indices, rank: int | None = None) -> None:
        if not isinstance(indices, TensorBase) or indices._K is not Int:
            raise TypeError(f"{op}: indices must be an Int tensor, got {type(indices).__name__}")
        if indices._B is not self._B:
            raise TypeError(f"{op}: indices are on backend {indices._B.name()}, the tensor on {self._B.name()}")
        if rank is not None and indices._D != rank:
            raise ValueError(f"{op}: indices must have rank {rank}, got rank {indices._D}")

    def _check_bounds(self, op: str, indices, size: int, dim: int) -> None:
        if indices.num_elements() == 0:
            return
        idx = indices.to_numpy()
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= size:
            raise IndexError(f"{op}: index {lo if lo < 0 else hi} is out of bounds for dim {dim} of size {size}")

    def gather(self, dim: int, indices):
        """Values at `indices` along `dim` (torch.gather); output has indices' shape."""
        d = self._dim(dim, "gather")
        self._check_indices("gather", indices, self._D)
        dims, idims = self.dims(), indices.dims()
        if any(i > s for k, (i, s) in enumerate(zip(idims, dims)) if k != d):
            raise ValueError(f"gather: indices {idims} exceed the tensor {dims} outside dim {d}")
        self._check_bounds("gather", indices, dims[d], d)
        B, K = self._B, self._K
        fn = B.float_gather if K is Float else B.int_gather if K is Int else unavailable("gather", K)
        return self._like(fn(d, self._p, indices._p))

    def scatter(self, dim: int, indices, values):
        """Add `values` into this tensor at `indices` along `dim` (torch.scatter_add)."""
        d = self._dim(dim, "scatter")
        self._check_indices("scatter", indices, self._D)
        self._check_other("scatter", values)
        if values.dims() != indices.dims():
            raise ValueError(f"scatter: values {values.dims()} and indices {indices.dims()} must have the same shape")
        self._check_bounds("scatter", indices, self.dims()[d], d)
        B, K = self._B, self._K
        fn = B.float_scatter if K is Float else B.int_scatter if K is Int else unavailable("scatter", K)
        return self._like(fn(d, self._p, indices._p, values._p))

    def select(self, dim: int, indices):
        """The slices at `indices` (a 1-D Int tensor) along `dim` (torch.index_select)."""
        d = self._dim(dim, "select")
        self._check_indices("select", indices, 1)
        self._check_bounds("select", indices, self.dims()[d], d)
        B, K = self._B, self._K
        fn = B.float_select if K is Float else B.int_select if K is Int else B.bool_select
        return self._like(fn(self._p, d, indices._p))

    def select_assign(self, dim: int, indices, values):
        """Add `values` into the slices at `indices` along `dim`."""
        d = self._dim(dim, "select_assign")
        self._check_indices("select_assign", indices, 1)
        self._check_other("select_assign", values)
        expect = self.dims()
        expect[d] = indices.dims()[0]
        if values.dims() != expect:
            raise ValueError(f"select_assign: values have shape {values.dims()}, expected {expect}")
        self._check_bounds("select_assign", indices, self.dims()[d], d)
        B, K = self._B, self._K
        fn = (B.float_select_assign if K is Float else B.int_select_assign if K is Int
              else unavailable("select_assign", K))
        return self._like(fn(self._p, d, indices._p, values._p))

    # -- triangles ---------------------------------------------------------------
    def _triangle_mask(self, diagonal: int, upper: bool):
        if self._D < 2:
            raise ValueError(f"{'triu' if upper else 'tril'}: needs rank >= 2, got rank {self._D}")
        dims = self.dims()
        rows, cols = np.indices(dims[-2:])
        keep = (cols - rows >= diagonal) if upper else (cols - rows <= diagonal)
        mask = np.broadcast_to(~keep, dims).copy()
        return type(self)._specialise(self._B, self._D, Bool).from_data(mask, self.device())

    def triu(self, diagonal: int = 0):
        """Keep the upper triangle of the last two dims (from `diagonal` up)."""
        return self.mask_fill(self._triangle_mask(diagonal, True), 0)

    def tril(self, diagonal: int = 0):
        return self.mask_fill(self._triangle_mask(diagonal, False), 0)

    def one_hot_indices(self, num_classes: int):
        """[n] indices -> [n, num_classes] one-hot rows, of this tensor's kind."""
        if self._D != 1:
            raise ValueError(f"one_hot: expects a rank-1 tensor of indices, got rank {self._D}")
        idx = self.to_numpy().astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= num_classes):
            raise IndexError(f"one_hot: index {int(idx.max() if idx.max() >= num_classes else idx.min())} "
                             f"is out of range for {num_classes} classes")
        out = np.zeros((idx.size, num_classes), dtype=self._K.default_dtype)
        out[np.arange(idx.size), idx] = 1
        return type(self)._specialise(self._B, 2, self._K).from_data(out, self.device())


def one_hot_constructor(cls, index: int, num_classes: int, device=None):
    """Burn's `Tensor::one_hot(index, num_classes, device)`: a [num_classes]
    Float tensor with a single 1 at `index`."""
    if not 0 <= index < num_classes:
        raise IndexError(f"one_hot: index {index} is out of range for {num_classes} classes")
    out = np.zeros(num_classes, dtype=np.float32)
    out[index] = 1
    return cls._specialise(cls._B, 1, Float).from_data(out, device)

