"""The printed form of a tensor, exactly as Burn's `Display` writes it.

Floats use the shortest text that reads back to the same value (Rust's
`{:?}`): `0.84147096`, `20.0`, `1e-7`, `NaN`, `inf`. Rows of a matrix go on
separate lines, indented by their depth. Tensors over `threshold` elements
show `edge_items` values at each end of every dim with `...` between.
"""

from __future__ import annotations

import numpy as np

threshold = 1000
edge_items = 3


def format_float(x) -> str:
    """One float as Rust's Debug formatting writes it."""
    x_f = float(x)
    if x_f != x_f:
        return "NaN"
    if x_f in (float("inf"), float("-inf")):
        return "inf" if x_f > 0 else "-inf"
    a = abs(x)
    # Compare in the value's own precision: f32 0.0001 is positional in Rust.
    lo, hi = (type(x)(1e-4), type(x)(1e16)) if isinstance(x, np.floating) else (1e-4, 1e16)
    if a != 0.0 and (a < lo or a >= hi):
        text = np.format_float_scientific(x, unique=True, trim="-")
        mantissa, exp = text.split("e")
        return f"{mantissa}e{int(exp)}"
    text = np.format_float_positional(x, unique=True, trim="-")
    return text if ("." in text) else text + ".0"


def _formatter(dtype: np.dtype):
    if dtype.kind == "f":
        return format_float
    if dtype.kind == "b":
        return lambda v: "true" if v else "false"
    return lambda v: str(int(v))


def format_array(array: np.ndarray) -> str:
    """The `data:` block of a tensor's printed form."""
    fmt = _formatter(array.dtype)
    summarise = array.size > threshold

    def rec(a: np.ndarray, depth: int) -> str:
        n = a.shape[0]
        if summarise and n > 2 * edge_items:
            idx = list(range(edge_items)) + [None] + list(range(n - edge_items, n))
        else:
            idx = list(range(n))
        if a.ndim == 1:
            parts = ["..." if i is None else fmt(a[i]) for i in idx]
            return "[" + ", ".join(parts) + "]"
        sep = ",\n" + " " * (depth + 1)
        parts = ["..." if i is None else rec(a[i], depth + 1) for i in idx]
        return "[" + sep.join(parts) + "]"

    if array.ndim == 0:
        return fmt(array[()])
    return rec(array, 0)


def format_tensor(array: np.ndarray, shape, device, backend: str, kind: str, dtype: str) -> str:
    """The whole `Tensor { ... }` block."""
    return (
        "Tensor {\n"
        "  data:\n"
        f"{format_array(array)},\n"
        f"  shape:  {list(shape)},\n"
        f"  device:  {device!r},\n"
        f'  backend:  "{backend}",\n'
        f'  kind:  "{kind}",\n'
        f'  dtype:  "{dtype}",\n'
        "}"
    )
