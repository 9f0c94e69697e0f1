"""Backends: the protocol (`base`), `NdArray` (NumPy), `Taichi`, and the
decorators `Autodiff[B]` and `Fusion[B]`.

`Taichi`, `Fusion` and `Autodiff` load on first use, so `import burnbook` stays light.
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
