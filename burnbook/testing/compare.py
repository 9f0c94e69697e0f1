"""Compare what a backend returned with the NumPy reference, and say in words
what differs: the shape, the element type, or the worst element.

Descriptions stay short enough for one line of a report: small arrays are
written out, larger ones are named by dtype and shape and the worst element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend.base import np_dtype_name

_WRITTEN_OUT = 8   # arrays up to this many elements are printed whole


def describe(a: Any) -> str:
    """`"f32[3, 4]"` for an array, `repr` for anything else."""
    if isinstance(a, np.ndarray):
        return f"{np_dtype_name(a.dtype)}{list(a.shape)}"
    return repr(a)


def values(a: np.ndarray) -> str:
    """An array's values when small (`[1.0, 2.5]`), else its dtype and shape."""
    if a.size <= _WRITTEN_OUT:
        text = np.array2string(a, separator=", ", formatter={
            "float_kind": lambda v: f"{v:.7g}", "int": str, "bool": str})
        return text.replace("\n", "")
    return describe(a)


def compare(expected: Any, got: Any, out_dtype: Any, rtol: float, atol: float) -> tuple | None:
    """None when `got` matches `expected`, else `(message, expected, got)`
    as three short strings. `expected` is a NumPy array (float, int64 or bool)
    or a plain value; `got` is the backend's answer read back to the host."""
    if not isinstance(expected, np.ndarray):
        if _plain_equal(expected, got):
            return None
        return f"expected {expected!r}, got {got!r}", repr(expected), repr(got)
    if not isinstance(got, np.ndarray):
        return (f"expected an array, got {type(got).__name__}", describe(expected), repr(got)[:80])
    kind = expected.dtype.kind
    want_dtype = np.dtype(out_dtype) if kind == "f" else np.dtype(np.int64) if kind in "iu" else np.dtype(bool)
    want = f"{np_dtype_name(want_dtype)}{list(expected.shape)}"
    if got.shape != expected.shape:
        return f"shape {list(got.shape)}, expected {list(expected.shape)}", want, describe(got)
    if got.dtype != want_dtype:
        return (f"element type {np_dtype_name(got.dtype)}, expected {np_dtype_name(want_dtype)}",
                want, describe(got))
    if kind == "f":
        return _compare_floats(expected, got, rtol, atol)
    if np.array_equal(expected, got):
        return None
    i = _first(expected != got)
    return (f"at {list(i)}: expected {expected[i].item()!r}, got {got[i].item()!r}"
            f" ({int(np.sum(expected != got))} of {expected.size} elements differ)",
            values(expected), values(got))


def _compare_floats(expected: np.ndarray, got: np.ndarray, rtol: float, atol: float) -> tuple | None:
    # the exact value rounded to the output's precision (exp(100) is inf in f32)
    with np.errstate(over="ignore"):
        want = expected.astype(got.dtype).astype(np.float64)
    have = got.astype(np.float64)
    both_nan = np.isnan(want) & np.isnan(have)
    same_inf = np.isinf(want) & (want == have)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(have - want)
        close = np.isfinite(want) & (err <= atol + rtol * np.abs(want))
        bad = ~(both_nan | same_inf | close)
    if not bad.any():
        return None
    i = _first(bad)
    return (f"at {list(i)}: expected {want[i]:.7g}, got {have[i]:.7g}"
            f" ({int(bad.sum())} of {want.size} elements off; rtol {rtol:g}, atol {atol:g})",
            values(want.astype(got.dtype)), values(got))


def _first(mask: np.ndarray) -> tuple:
    return tuple(int(v) for v in np.argwhere(mask)[0]) if mask.ndim else ()


def _plain_equal(expected: Any, got: Any) -> bool:
    if isinstance(expected, tuple):
        try:
            return tuple(int(v) for v in got) == expected
        except (TypeError, ValueError):
            return False
    if isinstance(expected, np.dtype):
        try:
            return np.dtype(got) == expected
        except TypeError:
            return False
    return bool(expected == got)
