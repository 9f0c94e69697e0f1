"""`Tensor`: the tensor type assembled from its op families."""

from __future__ import annotations

from . import core
from .core import TensorBase, hybridmethod
from .floatops import FloatOps
from .layout import LayoutOps
from .numeric import NumericOps, one_hot_constructor


class Tensor(LayoutOps, NumericOps, FloatOps, TensorBase):
    """A tensor of backend `B`, rank `D` and kind `K` (Float by default).

    `Tensor[NdArray, 2]` names the type and builds tensors:
    `Tensor[NdArray, 2].from_floats([[1.0, 2.0]], device)` or
    `Tensor[NdArray, 2]([[1.0, 2.0]])`. See the chapter "Tensor" of the book.
    """

    __slots__ = ()

    one_hot = hybridmethod(one_hot_constructor, NumericOps.one_hot_indices)


core._tensor_class = lambda: Tensor
