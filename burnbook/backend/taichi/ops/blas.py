"""Matmul on the CPU arch through NumPy's BLAS, on the device buffers themselves.

CPU device memory is host memory, so the operands are zero-copy views of the
device buffers and the result is written straight into the output buffer,
with no transfer (measured 55-62 GFLOP/s through the backend at 1024x1024
f32, against 3-6 for the Taichi kernel of burnbook/kernels/matmul.py, which
GPU archs run). `SETTINGS.matmul` chooses ("blas" on the CPU by default);
ops/launch.py's `matmul` calls `run` here or the kernel.
"""

from __future__ import annotations

import numpy as np

from burnbook._blas import one_thread, product_halves
from burnbook._helper_thread import both

from ..launcher import host_array, host_view, write_host
from ..settings import SETTINGS

__all__ = ["SPLIT_GEMM", "run"]


SPLIT_GEMM = 1 << 23  # m*n*k (summed over the batch) from which two threads share a product


def _halves(oshape: tuple, lshape: tuple, rshape: tuple) -> tuple | None:
    """`product_halves` from SPLIT_GEMM on. Two BLAS calls on two Python
    threads, each on one BLAS thread, use both cores without OpenBLAS's own
    workers, which spin on a core after each call (see `run`)."""
    return product_halves(oshape, lshape, rshape, SPLIT_GEMM)


def _np_view(view: tuple, shape: tuple, np_dtype) -> np.ndarray:
    buf, strides, offset = view
    return host_view(buf, np_dtype, shape, strides, offset)


def run(out, lhs: tuple, rhs: tuple, lshape: tuple, rshape: tuple, oshape: tuple, np_dtype: np.dtype) -> None:
    """out (contiguous, `oshape`) = lhs @ rhs by NumPy (CPU arch only); lhs/rhs
    are (buffer, strides, offset) views of the same rank, batch dims
    broadcasting; K >= 1."""
    a = _np_view(lhs, lshape, np_dtype)
    b = _np_view(rhs, rshape, np_dtype)
    # Every product runs on one BLAS thread. Waking OpenBLAS's workers
    # costs more than they save on small products (NumPy runs a batched
    # matmul as one BLAS call per matrix), and after any multi-threaded call
    # they spin on a core that Taichi's next parallel kernel needs. Measured
    # on the busy 2-core box, guide CNN step: a conv's 64 GEMMs took 1.3 s on
    # 2 threads (each hand-off can wait a scheduler tick), 8 ms on one.
    # From SPLIT_GEMM on, two halves run on two Python threads instead
    # (`_halves`): one hand-off per product, no spinning workers after it
    # (the guide CNN step's products: 8.0 -> 5.6 ms a step). Products of 2^26
    # multiply-adds or more were left to OpenBLAS's threads until issue 34:
    # a GPT step's feed-forward products are that big, and the workers they
    # woke took the second core from the fused kernels that followed.
    if SETTINGS.launch == "public":
        with one_thread():
            write_host(out, np.matmul(a, b))
        return
    o = host_array(out, np_dtype).reshape(oshape)
    halves = _halves(oshape, lshape, rshape)
    if halves is None:
        with one_thread():
            np.matmul(a, b, out=o)
        return
    (la, lb, lo), (ha, hb, ho) = halves
    with one_thread():
        both(lambda: np.matmul(a[la], b[lb], out=o[lo]), lambda: np.matmul(a[ha], b[hb], out=o[ho]))
