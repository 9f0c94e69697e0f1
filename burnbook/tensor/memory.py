"""`layout_of(t)`: how a tensor's elements lie in the storage it views.

A tensor is a view: a flat *storage* (a buffer of elements), an *offset*
into it, and one *stride* per dim, the number of storage cells to step to
reach the next index along that dim. Element `[i, j, k]` lives at
`offset + i*strides[0] + j*strides[1] + k*strides[2]`. Layout ops
(transpose, permute, slicing, expand) make a new view of the same storage
by changing only these numbers; a stride of 0 repeats one cell (broadcasting).

Each backend reads its own primitive (`Backend.primitive_layout`): NdArray
from the NumPy array, Taichi from its `TaichiTensor`, `Autodiff[B]` and
`Fusion[B]` from the inner primitive (a lazy Fusion tensor runs first).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


def contiguous_strides(shape: tuple) -> tuple:
    """Row-major strides of `shape`: the last dim 1, each earlier dim the
    product of the sizes after it."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


@dataclass(frozen=True)
class Layout:
    """A tensor's view of its storage, strides and offset in elements.

    `contiguous`: the elements lie in row-major order with no gaps, as
    PyTorch's `is_contiguous()` says (a size-1 dim's stride is ignored: it
    is never stepped); `storage`: how many elements the viewed buffer holds."""

    shape: tuple
    strides: tuple
    offset: int
    contiguous: bool
    storage: int

    def offset_of(self, index: tuple) -> int:
        """The storage cell of the element at `index` (one int per dim)."""
        index = tuple(index)
        if len(index) != len(self.shape):
            raise IndexError(f"offset_of: {len(index)} indices for a tensor of rank {len(self.shape)}")
        for d, (i, n) in enumerate(zip(index, self.shape)):
            if not 0 <= i < n:
                raise IndexError(f"offset_of: index {i} is out of bounds for dim {d} of size {n}")
        return self.offset + sum(i * s for i, s in zip(index, self.strides))

    def offsets(self) -> list:
        """The storage cell of every element, in row-major order of the tensor."""
        return [self.offset_of(ix) for ix in _indices(self.shape)]

    def __str__(self) -> str:
        return (f"shape {list(self.shape)}, strides {list(self.strides)}, offset {self.offset}, "
                f"{'contiguous' if self.contiguous else 'not contiguous'}, storage of {self.storage}")


def _indices(shape: tuple) -> list:
    out = [()]
    for n in shape:
        out = [ix + (i,) for ix in out for i in range(n)]
    return out if math.prod(shape) else []


def is_contiguous(shape: tuple, strides: tuple) -> bool:
    """Row-major without gaps, ignoring the strides of size-1 dims (PyTorch's rule)."""
    if math.prod(shape) == 0:
        return True
    return all(s == c for s, c, n in zip(strides, contiguous_strides(shape), shape) if n != 1)


def layout_of(t: Any) -> Layout:
    """Shape, strides, offset, contiguity and storage size of tensor `t`
    on any backend (`burnbook.tensor.layout_of(x.transpose())`)."""
    shape, strides, offset, storage = t._B.primitive_layout(t._p)
    shape, strides = tuple(int(n) for n in shape), tuple(int(s) for s in strides)
    return Layout(shape, strides, int(offset), is_contiguous(shape, strides), int(storage))
