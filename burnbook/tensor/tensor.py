"""`Tensor`: the tensor type assembled from its op families."""

from __future__ import annotations

from .arithmetic import ArithmeticOps
from .boolops import BoolOps
from .core import TensorBase, hybridmethod, type_params
from .floatops import FloatOps
from .gradops import GradOps
from .indexing import IndexOps, one_hot_constructor
from .layout import LayoutOps
from .numeric import NumericOps


class Tensor(LayoutOps, ArithmeticOps, NumericOps, IndexOps, FloatOps, BoolOps, GradOps, TensorBase):
    """A tensor of backend `B`, rank `D` and kind `K` (Float by default).

    `Tensor[NdArray, 2]` names the type and builds tensors:
    `Tensor[NdArray, 2].from_floats([[1.0, 2.0]], device)` or
    `Tensor[NdArray, 2]([[1.0, 2.0]])`. See the chapter "Tensor" of the book.
    """

    __slots__ = ()

    def __class_getitem__(cls, params) -> type[Tensor]:
        """`Tensor[B, D]` or `Tensor[B, D, K]`: the subclass of Tensor for
        backend B, rank D and kind K (Float by default), made once and cached."""
        return cls._specialise(*type_params(params))

    one_hot = hybridmethod(one_hot_constructor, IndexOps.one_hot_indices)
