"""burnbook: Burn's design in Python, for learning deep learning in notebooks.

    import burnbook as bb
    from burnbook import Tensor
    from burnbook.backend import NdArray, Autodiff
"""

from .tensor import Bool, Distribution, DType, Float, Int, Shape, Tensor, TensorData, activation
from . import backend

__version__ = "0.1.0"

__all__ = [
    "Tensor", "TensorData", "Shape", "Distribution", "Float", "Int", "Bool", "DType",
    "activation", "backend",
]
