"""Tensors: `Tensor[B, D, K]`, its data, kinds, distributions and activations."""

from .data import Shape, TensorData, ValueRangeError
from .distribution import Distribution
from .kind import Bool, DType, Float, Int
from .memory import Layout, layout_of
from .tensor import Tensor
from . import activation

__all__ = ["Tensor", "TensorData", "Shape", "Distribution", "Float", "Int", "Bool", "DType", "ValueRangeError",
           "Layout", "layout_of", "activation"]
