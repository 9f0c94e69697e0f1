"""The NdArray ops that take more than one NumPy call: assignment into a
copy, adding scatters, torch's gather, Burn's truncating integer division, a
clamp with optional bounds, sin and cos rounded from f64, full reductions.

Each takes and returns plain `np.ndarray` primitives; `backend.py` binds them
as `NdArray`'s static methods (`float_scatter = staticmethod(scatter)`).
"""

from __future__ import annotations

from typing import Callable

import numpy as np


def slice_assign(p: np.ndarray, ranges: tuple, values: np.ndarray) -> np.ndarray:
    """A copy of `p` with region `ranges` set to `values`."""
    out = p.copy()
    out[ranges] = values
    return out


def scatter(dim: int, p: np.ndarray, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A copy of `p` with `values` added at `indices` along `dim` (repeats accumulate)."""
    out = p.copy()
    idx = list(np.indices(indices.shape, sparse=True))
    idx[dim] = indices
    np.add.at(out, tuple(idx), values)
    return out


def select_assign(p: np.ndarray, dim: int, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A copy of `p` with `values` added to the slices at `indices` along `dim`.

    Many indices (an embedding's backward: one per token) are sorted
    (stably) and each run of equal ones summed by one `np.add.reduceat`
    segment, then added once: the sums of `np.add.at`, which adds one slice
    at a time (~6x slower on a GPT's ids), up to rounding, as reduceat may
    pair the slices otherwise. Few indices take `np.add.at` itself."""
    out = p.copy()
    if indices.size < _SORTED_FROM:
        index = [slice(None)] * p.ndim
        index[dim] = indices
        np.add.at(out, tuple(index), values)
        return out
    order = np.argsort(indices, kind="stable")
    ids = indices[order]
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
    sums = np.add.reduceat(np.take(values, order, axis=dim), starts, axis=dim)
    index = [slice(None)] * p.ndim
    index[dim] = ids[starts]
    out[tuple(index)] += sums   # the ids in `starts` are distinct: no slice is added twice
    return out


_SORTED_FROM = 64   # indices from which select_assign sorts and sums runs


def mask_where(p: np.ndarray, mask: np.ndarray, values: np.ndarray) -> np.ndarray:
    return np.where(mask, values, p)


def mask_fill(p: np.ndarray, mask: np.ndarray, value: float) -> np.ndarray:
    return np.where(mask, np.asarray(value, dtype=p.dtype), p)


def clamp(p: np.ndarray, lo: float | None, hi: float | None) -> np.ndarray:
    # np.clip is one pass and several times faster than maximum + minimum
    # with a scalar (mobilenet's ReLU6 on a 112x112 plane: 0.7 ms against 3);
    # it keeps NaN as they do.
    if lo is None and hi is None:
        return p
    return np.clip(p, None if lo is None else np.asarray(lo, dtype=p.dtype),
                   None if hi is None else np.asarray(hi, dtype=p.dtype))


def int_div(a: np.ndarray, b: np.ndarray | np.integer) -> np.ndarray:
    # Truncate toward zero as Burn (and C, Rust) do; NumPy floors. The tensor
    # layer refuses zero divisors; INT64_MIN / -1 wraps, like every i64
    # overflow, so only NumPy's overflow warning is silenced.
    with np.errstate(over="ignore"):
        q = np.floor_divide(a, b)
    fix = (q < 0) & (q * b != a)
    return q + fix


def gather(dim: int, p: np.ndarray, indices: np.ndarray) -> np.ndarray:
    # torch.gather reads by the index's shape: where the index is smaller
    # than `p` outside `dim`, only the leading part of `p` is read
    # (take_along_axis alone would broadcast the index over all of `p`).
    if any(n != m for d, (n, m) in enumerate(zip(indices.shape, p.shape)) if d != dim):
        p = p[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(indices.shape))]
    return np.take_along_axis(p, indices, axis=dim)


def via_f64(fn: Callable) -> Callable:
    """`fn` evaluated in f64 and rounded back for f32/f16 arrays: NumPy's SIMD
    f32 sin and cos are often 1 ulp off the correctly rounded value that
    Rust's libm, and so Burn's printed output, gives (the reference notebook's
    sin(x^2) digits depend on it). exp, log, log1p and tanh keep NumPy's f32
    loops: also within 1 ulp, and several times faster on small tensors."""
    def op(p):
        if p.dtype == np.float64:
            return fn(p)
        return fn(p, dtype=np.float64).astype(p.dtype)

    return op


def full_reduce(name: str) -> Callable:
    """`p.<name>()` of every element as shape (1,), in `p`'s dtype."""
    # The ndarray methods skip np.sum's Python wrapper (a few µs per call).
    return lambda p: np.asarray(getattr(p, name)()).reshape(1).astype(p.dtype, copy=False)
