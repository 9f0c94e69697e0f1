"""NdArray's matmul: NumPy's BLAS on one thread per call, a large product as
two halves on two Python threads.

Where NumPy's OpenBLAS has several threads, a multi-threaded call leaves its
workers spinning on the other core for a while afterwards (OpenBLAS's
thread timeout), and whatever NdArray runs next on two threads (GELU's
blocks, attention's batch halves) then shares that core with a spinning
worker: measured on the 2-core box after a `[2048, 256] @ [256, 1024]`
product, a 2M-element GELU took 11.6 ms on two threads against 10.7 ms on
one. So every product runs on one BLAS thread (`_blas.one_thread`), and one
of `SPLIT_FROM` multiply-adds or more is cut in two along its batch (or its
rows) for the calling thread and burnbook's helper thread, as the Taichi CPU
path does (`taichi/ops/blas.py`). Each output element is the same dot
product either way, so the values are those of one `np.matmul`.
"""

from __future__ import annotations

import numpy as np

from burnbook._blas import blas_threads, one_thread, product_halves
from burnbook._helper_thread import TWO_CORES, both

__all__ = ["SPLIT_FROM", "matmul"]

SPLIT_FROM = 1 << 22   # multiply-adds from which a product runs as two halves on two threads
# OpenBLAS runs a GEMM of fewer multiply-adds than this on the calling thread
# whatever its thread count (65536 x its GEMM_MULTITHREAD_THRESHOLD, 4), so
# such a product wakes no worker and needs no switch.
_OPENBLAS_SERIAL_BELOW = 1 << 18


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a [..., m, k] @ b [..., k, n]` as `np.matmul` (batch dims broadcast)."""
    if a.size * b.shape[-1] < _OPENBLAS_SERIAL_BELOW or blas_threads() < 2 or not TWO_CORES:
        return np.matmul(a, b)   # small products: no thread set-up cost (a 2x2 product is ~1 us)
    if a.ndim != b.ndim or a.ndim < 2:
        with one_thread():
            return np.matmul(a, b)
    oshape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    halves = product_halves(oshape, a.shape, b.shape, SPLIT_FROM)
    with one_thread():
        if halves is None:
            return np.matmul(a, b)
        out = np.empty(oshape, np.result_type(a, b))
        (la, lb, lo), (ha, hb, ho) = halves
        both(lambda: np.matmul(a[la], b[lb], out=out[lo]), lambda: np.matmul(a[ha], b[hb], out=out[ho]))
        return out
