"""NumPy's bundled OpenBLAS thread count, read and set through its C API:
the Taichi matmul path drops to one thread for small products, and the
benchmarks pin and report the count."""

from __future__ import annotations

import ctypes
import functools
import glob
import os
from typing import Callable

import numpy as np

__all__ = ["openblas_threads"]


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
