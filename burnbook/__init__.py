"""burnbook: Burn's design in Python, for learning deep learning in notebooks.

    import burnbook as bb
    from burnbook import Tensor
    from burnbook.backend import NdArray, Autodiff
"""

import warnings as _warnings

# NaN/inf follow IEEE rules silently, as in Burn: NumPy's floating-point
# warnings (log(0), 0/0...) raised from burnbook's own frames are muted.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"burnbook(\.|$)")

from .tensor import Bool, Distribution, DType, Float, Int, Shape, Tensor, TensorData, activation
from . import backend

__version__ = "0.1.0"

__all__ = [
    "Tensor", "TensorData", "Shape", "Distribution", "Float", "Int", "Bool", "DType",
    "activation", "backend",
]
