"""NumPy's bundled OpenBLAS thread count, read and set through its C API,
and the split of a matrix product into two halves for two Python threads.

OpenBLAS's worker threads spin on a core for a while after each
multi-threaded call (its thread timeout), so a product on OpenBLAS's own
threads leaves the second core busy for whatever runs next in parallel (a
Taichi kernel, NdArray's two-thread GELU or attention). The matmuls of the
Taichi CPU path and of NdArray therefore run on one BLAS thread (`one_thread`),
a large one as two halves on two Python threads (`product_halves`, run with
`_helper_thread.both`), and the benchmarks pin and report the count."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import math
import glob
import os
from typing import Callable

import numpy as np

__all__ = ["blas_threads", "one_thread", "openblas_threads", "product_halves"]


@functools.cache
def openblas_threads() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """(get, set) of the thread count of NumPy's bundled OpenBLAS, or None
    (another BLAS, or not found: then nothing can be changed)."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "*openblas*"))
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get, put in (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                         ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
                         ("openblas_get_num_threads", "openblas_set_num_threads")):
            if hasattr(lib, get) and hasattr(lib, put):
                setter = getattr(lib, put)
                setter.argtypes = [ctypes.c_int]
                return getattr(lib, get), setter
    return None


def blas_threads() -> int:
    """NumPy's OpenBLAS thread count (1 when it cannot be read)."""
    found = openblas_threads()
    return int(found[0]()) if found else 1


@contextlib.contextmanager
def one_thread(active: bool = True):
    """NumPy's OpenBLAS on one thread for the block, when `active`."""
    found = openblas_threads() if active else None
    before = int(found[0]()) if found else 1
    if before > 1:
        found[1](1)
    try:
        yield
    finally:
        if before > 1:
            found[1](before)


def product_halves(oshape: tuple, lshape: tuple, rshape: tuple, split_from: int) -> tuple | None:
    """Index tuples `((lhs, rhs, out), (lhs, rhs, out))` splitting a product
    `[..., m, k] @ [..., k, n]` (same rank) in two halves along its first
    batch dim (rows where it has none), or None where it stays whole: below
    `split_from` multiply-adds (m n k over the batch), or BLAS limited to one
    thread (this process asked for one). Each output element is still one dot
    product of the same length, so the result is the one-call result."""
    found = openblas_threads()
    if found is None or int(found[0]()) < 2 or math.prod(oshape) * lshape[-1] < split_from:
        return None
    whole = slice(None)
    if len(oshape) > 2 and oshape[0] > 1:
        cut = oshape[0] // 2
        # (lhs, rhs, out) indices; an operand broadcast along the batch dim is read whole.
        return tuple(tuple(h if shape[0] > 1 else whole for shape in (lshape, rshape)) + (h,)
                     for h in (slice(0, cut), slice(cut, None)))
    if oshape[-2] < 2:
        return None
    cut = oshape[-2] // 2
    top, bottom = (Ellipsis, slice(0, cut), whole), (Ellipsis, slice(cut, None), whole)
    return (top, (Ellipsis,), top), (bottom, (Ellipsis,), bottom)
