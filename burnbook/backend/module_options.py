"""Options and output sizes of the module ops: `ConvOptions`,
`ConvTransposeOptions`, and the arithmetic that sizes a conv's, a
conv_transpose's, a pool's and an adaptive pool's output.

Options check their settings when built (ints only, bools and floats
refused, positive strides...), so the ops and the memos keyed by them see
resolved tuples of Python ints. `module_ops.py` re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ConvOptions", "ConvTransposeOptions", "adaptive_bins", "conv_output_size",
    "conv_transpose_output_size", "is_int", "pool_output_size",
]


def is_int(value: Any) -> bool:
    """An int or NumPy integer, not a bool (`True` is an int to Python, but
    no size or count) and not a float (PyTorch refuses `stride=1.0` too)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _tuple(value: Any, n: int | None, name: str, owner: str = "") -> Any:
    """`value` as a tuple of `n` Python ints (an int is repeated); anything
    but ints is a TypeError naming `owner`, the setting and the value."""
    if type(value) is tuple and all(type(v) is int for v in value) and (n is None or len(value) == n):
        return value   # already resolved: every conv call of a model passes here twice
    if is_int(value):
        return int(value) if n is None else (int(value),) * n
    items = list(value) if isinstance(value, (tuple, list, range)) or np.ndim(value) == 1 else None
    if items is None or not all(is_int(v) for v in items):
        where = f"{owner}: " if owner else ""
        raise TypeError(f"{where}{name} must be an int or a list/tuple of ints (bool and float are "
                        f"refused), got {value!r} ({type(value).__name__})")
    out = tuple(int(v) for v in items)
    if n is not None and len(out) != n:
        raise ValueError(f"{name}: expected {n} value(s), one per spatial dim, got {list(out)}")
    return out


@dataclass(frozen=True)
class ConvOptions:
    """Options of `conv1d`/`conv2d` (Burn's `ConvOptions<N>`): `stride`,
    `padding` (zeros on both sides), `dilation` (an int or one per spatial
    dim) and `groups`."""

    stride: Any = 1
    padding: Any = 0
    dilation: Any = 1
    groups: int = 1

    def __post_init__(self) -> None:
        for name in ("stride", "padding", "dilation"):
            object.__setattr__(self, name, _tuple(getattr(self, name), None, name, "ConvOptions"))
        object.__setattr__(self, "groups", _groups(self.groups, "ConvOptions"))

    def resolved(self, n: int) -> "ConvOptions":
        """The same options with a tuple of `n` ints per setting, checked."""
        settings = (self.stride, self.padding, self.dilation)
        if all(type(v) is tuple and len(v) == n for v in settings) and type(self.groups) is int:
            _check_positive(self.stride, self.dilation, self.padding, self.groups)
            return self   # __post_init__ made each a tuple of ints: nothing to convert
        out = ConvOptions(_tuple(self.stride, n, "stride"), _tuple(self.padding, n, "padding"),
                          _tuple(self.dilation, n, "dilation"), int(self.groups))
        _check_positive(out.stride, out.dilation, out.padding, out.groups)
        return out


@dataclass(frozen=True)
class ConvTransposeOptions:
    """Options of `conv_transpose1d/2d` (Burn's `ConvTransposeOptions<N>`):
    `stride`, `padding`, `padding_out` (extra rows/cols added on the bottom/
    right of the output), `dilation` and `groups`."""

    stride: Any = 1
    padding: Any = 0
    padding_out: Any = 0
    dilation: Any = 1
    groups: int = 1

    def __post_init__(self) -> None:
        for name in ("stride", "padding", "padding_out", "dilation"):
            object.__setattr__(self, name, _tuple(getattr(self, name), None, name, "ConvTransposeOptions"))
        object.__setattr__(self, "groups", _groups(self.groups, "ConvTransposeOptions"))

    def resolved(self, n: int) -> "ConvTransposeOptions":
        out = ConvTransposeOptions(
            _tuple(self.stride, n, "stride"), _tuple(self.padding, n, "padding"),
            _tuple(self.padding_out, n, "padding_out"), _tuple(self.dilation, n, "dilation"),
            int(self.groups))
        _check_positive(out.stride, out.dilation, out.padding + out.padding_out, out.groups)
        return out


def _groups(value: Any, owner: str) -> int:
    """`groups` as a Python int: options are checked when built, so a memo
    keyed by them never holds `groups=True` (equal to 1 as a key)."""
    if not is_int(value):
        raise TypeError(f"{owner}: groups must be an int (bool and float are refused), "
                        f"got {value!r} ({type(value).__name__})")
    return int(value)


def _check_positive(stride, dilation, padding, groups) -> None:
    if any(s < 1 for s in stride):
        raise ValueError(f"stride must be >= 1, got {list(stride)}")
    if any(d < 1 for d in dilation):
        raise ValueError(f"dilation must be >= 1, got {list(dilation)}")
    if any(p < 0 for p in padding):
        raise ValueError(f"padding must be >= 0, got {list(padding)}")
    if groups < 1:
        raise ValueError(f"groups must be >= 1, got {groups}")


# -- output sizes -----------------------------------------------------------------

def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """floor((size + 2p - d(k - 1) - 1) / s) + 1 (may be <= 0: the caller checks)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def conv_transpose_output_size(size: int, kernel: int, stride: int, padding: int,
                               padding_out: int, dilation: int) -> int:
    """(size - 1) s - 2p + d(k - 1) + padding_out + 1."""
    return (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + padding_out + 1


def pool_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int,
                     ceil_mode: bool) -> int:
    """A pooling output size; with `ceil_mode` a last partial window counts,
    unless it would start in the right padding (PyTorch's rule)."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + padding:
        out -= 1
    return out


def adaptive_bins(size: int, out: int) -> list[tuple[int, int]]:
    """The input range [start, end) averaged into each of `out` outputs:
    start = floor(i * size / out), end = ceil((i + 1) * size / out)."""
    return [((i * size) // out, -(-((i + 1) * size) // out)) for i in range(out)]
