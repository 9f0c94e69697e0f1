"""burnbook: Burn's design in Python, for learning deep learning in notebooks.

    import burnbook as bb
    from burnbook import Tensor
    from burnbook.backend import NdArray, Autodiff
"""

import warnings as _warnings

# NaN/inf follow IEEE rules silently, as in Burn: NumPy's floating-point
# warnings (log(0), 0/0...) raised from burnbook's own frames are muted, but
# only for the ufuncs that float ops run. Integer division by zero
# (floor_divide), invalid casts (NaN -> int: "cast") and NumPy scalar
# arithmetic still warn. A message filter costs nothing until a warning
# fires; an np.errstate around each NdArray op would add about 4 us to an
# op of under 1 us.
_FLOAT_UFUNCS = ("add|subtract|multiply|divide|true_divide|power|exp|log|log1p|sqrt|reciprocal"
                 "|cos|sin|tanh|matmul|square|absolute|maximum|minimum|negative")
_warnings.filterwarnings(
    "ignore",
    message=rf"(divide by zero|overflow|underflow|invalid value) encountered in ({_FLOAT_UFUNCS})$",
    category=RuntimeWarning,
    module=r"burnbook(\.|$)",
)

from . import _malloc

# A process-wide setting, made once, here, before burnbook allocates an
# array (not as a side effect of importing a backend): glibc's malloc keeps
# freed memory for the next allocation, so NumPy's temporaries reuse warm
# pages instead of faulting in fresh ones on every forward pass. `_malloc.py` says why and how;
# BURNBOOK_MALLOC=system opts out, and any value but keep or system stops
# the import with a ValueError naming the variable.
_malloc.keep_freed_memory()

from .tensor import Bool, Distribution, DType, Float, Int, Shape, Tensor, TensorData, activation
from . import backend

__version__ = "0.1.0"

__all__ = [
    "Tensor", "TensorData", "Shape", "Distribution", "Float", "Int", "Bool", "DType",
    "activation", "backend",
]
