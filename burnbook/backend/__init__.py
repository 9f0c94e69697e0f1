"""Backends: the protocol, `NdArray` (NumPy), `Taichi`, and the decorators
`Autodiff[B]` and `Fusion[B]`.

- base.py        `Backend`, the op tables (`FLOAT_OPS`...), `share_layout_ops`
- protocol/      every op written out as a stub with its signature (`FloatOps`...)
- module_ops.py  `ModuleOps`: conv, pooling, embedding defaults from primitives;
                 module_options.py their options and output sizes;
                 module_layers.py whole-layer defaults (LSTM, GRU, layer norm...)
- decorator.py   the base `Autodiff` and `Fusion` share (cache, repr, delegation)
- ndarray/       `NdArray`, `Cpu`
- taichi/        `Taichi`, `TaichiDevice` (launches `burnbook.kernels`)
- fusion/        `Fusion`

`Taichi`, `Fusion` and `Autodiff` (which lives in `burnbook.autodiff`, Burn's
`burn-autodiff`; re-exported here for Burn's spelling) load on first use, so
`import burnbook` stays light.
"""

from .base import Backend
from .ndarray import Cpu, NdArray

__all__ = ["Backend", "NdArray", "Cpu", "Taichi", "TaichiDevice", "Autodiff", "Fusion"]


def __getattr__(name: str):
    if name in ("Taichi", "TaichiDevice"):
        from . import taichi

        return getattr(taichi, name)
    if name == "Fusion":
        from .fusion import Fusion

        return Fusion
    if name == "Autodiff":
        from burnbook.autodiff import Autodiff

        return Autodiff
    raise AttributeError(f"module 'burnbook.backend' has no attribute {name!r}")
