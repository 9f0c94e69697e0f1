"""Backends: the protocol (`base`), `NdArray` (NumPy), `Taichi`, and `Autodiff[B]`.

`Taichi` and `Autodiff` load on first use, so `import burnbook` stays light.
"""

from .base import Backend
from .ndarray import Cpu, NdArray

__all__ = ["Backend", "NdArray", "Cpu", "Taichi", "TaichiDevice", "Autodiff"]


def __getattr__(name: str):
    if name in ("Taichi", "TaichiDevice"):
        from . import taichi

        return getattr(taichi, name)
    if name == "Autodiff":
        from burnbook.autodiff import Autodiff

        return Autodiff
    raise AttributeError(f"module 'burnbook.backend' has no attribute {name!r}")
