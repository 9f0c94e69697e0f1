"""Matmul on the CPU arch through NumPy's BLAS, on the device buffers themselves.

CPU device memory is host memory, so the operands are zero-copy views of the
device buffers and the result is written straight into the output buffer,
with no transfer (measured 55-62 GFLOP/s through the backend at 1024x1024
f32, against 3-6 for the Taichi kernel of burnbook/kernels/matmul.py, which
GPU archs run). `SETTINGS.matmul` chooses ("blas" on the CPU by default);
ops/launch.py's `matmul` calls `run` here or the kernel.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from burnbook._blas import openblas_threads
from burnbook._helper_thread import both

from ..launcher import host_array, host_view, write_host
from ..settings import SETTINGS

__all__ = ["SMALL_GEMM", "SPLIT_GEMM", "run"]


SMALL_GEMM = 1 << 26  # m*n*k below which a matrix product runs on one BLAS thread (see `run`)


@contextlib.contextmanager
def _one_blas_thread(active: bool):
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


SPLIT_GEMM = 1 << 23  # m*n*k (summed over the batch) from which two threads share a product


def _halves(oshape: tuple, lshape: tuple, rshape: tuple) -> tuple | None:
    """Index tuples splitting a product in two halves along its first batch
    dim (rows where it has none), or None where it stays whole: too small,
    or BLAS limited to one thread (then this process asked for one thread).
    Two BLAS calls on two Python threads, each on one BLAS thread, use both
    cores without OpenBLAS's own workers, which spin on a core after each
    call (see `run`); each output element is still one dot product, so the
    result is the same."""
    found = openblas_threads()
    if found is None or int(found[0]()) < 2 or math.prod(oshape) * lshape[-1] < SPLIT_GEMM:
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


def _np_view(view: tuple, shape: tuple, np_dtype) -> np.ndarray:
    buf, strides, offset = view
    return host_view(buf, np_dtype, shape, strides, offset)


def run(out, lhs: tuple, rhs: tuple, lshape: tuple, rshape: tuple, oshape: tuple, np_dtype: np.dtype) -> None:
    """out (contiguous, `oshape`) = lhs @ rhs by NumPy (CPU arch only); lhs/rhs
    are (buffer, strides, offset) views of the same rank, batch dims
    broadcasting; K >= 1."""
    a = _np_view(lhs, lshape, np_dtype)
    b = _np_view(rhs, rshape, np_dtype)
    # Matrix products below SMALL_GEMM run on one BLAS thread (NumPy runs
    # a batched matmul as one BLAS call per matrix). Waking OpenBLAS's
    # workers costs more than they save there, and after the call they
    # spin on a core that Taichi's next parallel kernel needs. Measured on
    # the busy 2-core box, guide CNN step: a conv's 64 GEMMs took 1.3 s on
    # 2 threads (each hand-off can wait a scheduler tick), 8 ms on one.
    # From SPLIT_GEMM on, two halves run on two Python threads instead
    # (`_halves`): one hand-off per product, no spinning workers after it
    # (the guide CNN step's products: 8.0 -> 5.6 ms a step).
    small = oshape[-2] * oshape[-1] * lshape[-1] < SMALL_GEMM
    if SETTINGS.launch == "public":
        with _one_blas_thread(small):
            write_host(out, np.matmul(a, b))
        return
    o = host_array(out, np_dtype).reshape(oshape)
    halves = _halves(oshape, lshape, rshape) if small else None
    if halves is None:
        with _one_blas_thread(small):
            np.matmul(a, b, out=o)
        return
    (la, lb, lo), (ha, hb, ho) = halves
    with _one_blas_thread(True):
        both(lambda: np.matmul(a[la], b[lb], out=o[lo]), lambda: np.matmul(a[ha], b[hb], out=o[ho]))
