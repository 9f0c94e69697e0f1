"""Precision settings: the float type a recorder writes tensors in.

As in Burn, the precision a record is saved with is independent of the one a
model trains in: `HalfPrecisionSettings` halves a checkpoint's size, and
loading converts back automatically. In burnbook a saved tensor remembers its
original element type, so `load` gives back f32 data for an f32 tensor saved
in half precision (rounded to f16), and f64 data for an f64 tensor.

Only float tensors change type. The Burn book's table also narrows integers
(i32 for full, i16 for half precision); burnbook keeps every integer tensor in
its own type (i64 by default) and bools as bools, because narrowing token ids
or counters would silently wrap them.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

__all__ = [
    "PrecisionSettings", "FullPrecisionSettings", "HalfPrecisionSettings",
    "DoublePrecisionSettings", "precision_settings",
]


class PrecisionSettings:
    """Base of the settings classes; use the classes themselves, not instances."""

    name: ClassVar[str]
    float_dtype: ClassVar[np.dtype]

    def __init_subclass__(cls) -> None:
        _BY_NAME[cls.name] = cls


_BY_NAME: dict[str, type[PrecisionSettings]] = {}


class FullPrecisionSettings(PrecisionSettings):
    """Floats saved as f32 (bit-identical for the default f32 tensors)."""

    name = "full"
    float_dtype = np.dtype(np.float32)


class HalfPrecisionSettings(PrecisionSettings):
    """Floats saved as f16: half the size, about 3 significant digits."""

    name = "half"
    float_dtype = np.dtype(np.float16)


class DoublePrecisionSettings(PrecisionSettings):
    """Floats saved as f64."""

    name = "double"
    float_dtype = np.dtype(np.float64)


def precision_settings(settings: object) -> type[PrecisionSettings]:
    """The settings class from a class, an instance or a name (`"half"`)."""
    if isinstance(settings, str) and settings in _BY_NAME:
        return _BY_NAME[settings]
    if isinstance(settings, PrecisionSettings):
        return type(settings)
    if isinstance(settings, type) and issubclass(settings, PrecisionSettings) and settings is not PrecisionSettings:
        return settings
    raise TypeError(
        f"expected a precision settings class ({', '.join(c.__name__ for c in _BY_NAME.values())}), "
        f"got {settings!r}"
    )
