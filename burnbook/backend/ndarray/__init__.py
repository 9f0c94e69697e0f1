"""`NdArray`: the reference backend, NumPy on the CPU (Burn's `NdArray<f32>`).

    from burnbook.backend.ndarray import Cpu, NdArray

- backend.py     the `NdArray` class: identity, Float, Int and Bool ops
- device.py      `Cpu`, its one device
- numpy_ops.py   the ops that take more than one NumPy call (scatter, gather, clamp...)
- erf.py         the error function (NumPy has none): SciPy, libm or a table by size
- module_ops.py  `NdArrayModuleOps`: conv and max pooling overrides of `ModuleOps`
- im2col.py      padding, strided windows and im2col for the convs
- depthwise.py   depthwise convs without im2col
- layers.py      whole layers in NumPy: LSTM, GRU, layer norm, GELU, hard sigmoid
- cache.py       what is derived once from a layer's weight arrays, by identity
"""

from .backend import NdArray
from .device import Cpu

__all__ = ["Cpu", "NdArray"]
