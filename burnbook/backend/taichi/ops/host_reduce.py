"""Sums along a strided dim on the CPU arch through NumPy, on the device
buffers themselves (like ops/blas.py's matmul).

Taichi's reduction kernels give each kept element its own task, which walks
the reduced dim. Along the last dim of a contiguous tensor that walk reads
one contiguous run, but along any other dim (a bias gradient: `[batch *
seq, d]` summed over dim 0) every step jumps a whole row, so each cache
line is loaded once per kept element it holds: a `[2048, 512]` f32 sum over
dim 0 took ~5.5 ms as a kernel. NumPy adds whole rows at a time there
(vector loads over the kept dims): ~0.4 ms, in the same f64 accumulator.

Only sums of f32/f64 take this path (`SETTINGS.reduce == "host"`, the CPU
default; `BURNBOOK_TAICHI_REDUCE=kernel` keeps every reduction in Taichi):
max and min need no accumulator and keep Taichi's NaN rules, and an arg
reduction returns indices.
"""

from __future__ import annotations

import numpy as np

from burnbook.kernels.reduce import Reduce

from ..launcher import host_array, host_view, host_writable
from ..settings import SETTINGS

__all__ = ["applies", "strided_dim", "sum_dim"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def strided_dim(shape: tuple, strides: tuple, dim: int) -> bool:
    """Whether reducing `dim` of a view (`strides` in elements) walks memory
    with a step: the dim has more than one element and a stride other than 1."""
    return shape[dim] > 1 and strides[dim] != 1


def applies(op: Reduce, dtype: np.dtype, shape: tuple, strides: tuple, dim: int) -> bool:
    """Whether `op` along `dim` of a view of `shape`/`strides` runs on the
    host: a float sum over a strided dim, on the CPU arch's fast path with
    `SETTINGS.reduce == "host"`."""
    return (op is Reduce.SUM and SETTINGS.reduce == "host" and host_writable()
            and np.dtype(dtype) in _FLOATS and strided_dim(shape, strides, dim))


def sum_dim(x: tuple, shape: tuple, dim: int, out, np_dtype: np.dtype, acc: np.dtype, scale: float) -> None:
    """out (contiguous, `shape` with `dim` set to 1) = the sum of the view
    `x` = (buffer, strides, offset) of `shape` along `dim`, accumulated in
    `acc` (the runtime's accumulator, as the kernel's), times `scale` (1/n
    for a mean) in that precision, then rounded to `np_dtype` once."""
    buf, strides, offset = x
    a = host_view(buf, np_dtype, shape, strides, offset)
    total = np.add.reduce(a, axis=dim, dtype=acc, keepdims=True)
    if scale != 1.0:
        total *= acc.type(scale)
    o = host_array(out, np_dtype)
    o[:total.size] = total.reshape(-1)
