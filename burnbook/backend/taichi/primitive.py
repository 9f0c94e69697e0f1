"""`TaichiTensor`, the Taichi backend's primitive: a strided view of a flat buffer.

Layout ops (reshape of a contiguous tensor, permute, swap_dims, expand, slice
with any step) make new views of the same buffer; kernels read views through
their strides, with zero strides for broadcast dims, so no op copies its
inputs. A buffer is never written after the op that made it returns, which
makes the sharing safe.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from burnbook.kernels import data, elementwise
from burnbook.kernels.elementwise import UnaryOp
from burnbook.kernels.layout import contiguous_strides

from ..base import broadcast_shape, check_devices
from . import runtime as _rt
from .launcher import buffer, host_view, host_writable
from .runtime import F64, FLOATS, DeviceDtypeError, TaichiDevice
from .settings import SETTINGS


class TaichiTensor:
    """A strided view (shape, strides in elements, offset) of a flat Taichi
    buffer; `buf` is None for zero-size tensors. Never modified after creation."""

    __slots__ = ("buf", "shape", "strides", "offset", "dtype", "device")

    def __init__(self, buf, shape: tuple, strides: tuple, offset: int, dtype: np.dtype, device: TaichiDevice):
        self.buf, self.shape, self.strides, self.offset = buf, shape, strides, offset
        self.dtype, self.device = dtype, device

    @property
    def contiguous(self) -> bool:
        return all(st == c for st, c, n in zip(self.strides, contiguous_strides(self.shape), self.shape) if n != 1)

    def view(self, shape: tuple | None = None) -> tuple:
        """(buffer, strides, offset), strides zeroed where broadcast to `shape`."""
        if shape is None or shape == self.shape:
            return self.buf, self.strides, self.offset
        lead = len(shape) - len(self.shape)
        st = (0,) * lead + tuple(0 if n == 1 and m != 1 else s
                                 for s, n, m in zip(self.strides, self.shape, shape[lead:]))
        return self.buf, st, self.offset

    def out(self) -> tuple:
        """(buffer, strides, offset) to write through."""
        return self.buf, self.strides, self.offset

    def __repr__(self) -> str:
        return f"TaichiTensor(shape={list(self.shape)}, dtype={self.dtype}, device={self.device})"


def alloc(shape: tuple, dtype: np.dtype, device: TaichiDevice) -> TaichiTensor:
    """A new contiguous tensor, its elements not initialised."""
    rt = _rt.current
    if dtype == F64 and not rt.has_f64:
        raise DeviceDtypeError(
            f"Taichi on {device!r}: this device has no f64 (Taichi's Metal backend never has; a Vulkan "
            "device without shaderFloat64 neither); keep f64 data on the CPU device, or use f32")
    n = math.prod(shape)
    buf = buffer(rt.ti_dtype[dtype], n) if n else None
    return TaichiTensor(buf, shape, contiguous_strides(shape), 0, dtype, device)


def copy(shape: tuple, out: tuple, src: tuple, out_dtype: np.dtype, src_dtype: np.dtype) -> None:
    """Copy the view `src` into the view `out` (each (buffer, strides,
    offset) aligned to `shape`; `src` may broadcast), casting from
    `src_dtype` to `out_dtype`. A copy of one dtype on the CPU arch
    (`SETTINGS.copy == "host"`) is NumPy's strided copy on the device buffers
    themselves: a permuted `[32, 64, 4, 32]` f32 copy takes ~60 us there and
    ~390 us in Taichi's copy kernel, which works out each element's address
    from the strides. Casts, and every copy elsewhere, take that kernel. Both
    copy the bits, so the same result."""
    if out_dtype == src_dtype and SETTINGS.copy == "host" and host_writable():
        dst = host_view(out[0], out_dtype, shape, out[1], out[2], write=True)
        np.copyto(dst, host_view(src[0], src_dtype, shape, src[1], src[2]))
        return
    elementwise.run(UnaryOp.COPY, shape, out, (src,))


def materialize(p: TaichiTensor, dtype: np.dtype | None = None) -> TaichiTensor:
    """A contiguous copy (also a cast when `dtype` differs)."""
    out = alloc(p.shape, dtype or p.dtype, p.device)
    if out.buf is not None:
        copy(p.shape, out.out(), p.view(), out.dtype, p.dtype)
    return out


def contiguous(p: TaichiTensor) -> TaichiTensor:
    return p if p.contiguous else materialize(p)


def reshaped(p: TaichiTensor, shape: tuple) -> TaichiTensor:
    """A contiguous view of `p` in `shape` (same element count), copying
    first only when `p` is strided."""
    q = contiguous(p)
    return TaichiTensor(q.buf, shape, contiguous_strides(shape), q.offset, q.dtype, q.device)


def unit_dims_view(p: TaichiTensor, shape: tuple) -> TaichiTensor | None:
    """`p` viewed in `shape` when `shape` only adds or drops size-1 dims
    (unsqueeze, squeeze), else None. Kept dims keep their strides; an added
    dim gets the stride PyTorch gives it, the extent of the dim to its right
    (size times stride), or 1 as the last dim. A size-1 dim's stride is never
    read (its index is always 0), so any stride is safe for the kernels; this
    one makes `layout_of` agree with PyTorch's `stride()` for strided views."""
    old, new = p.shape, tuple(shape)
    strides: list = [None] * len(new)
    i = j = 0
    while i < len(old) or j < len(new):
        if i < len(old) and j < len(new) and old[i] == new[j]:
            strides[j] = p.strides[i]
            i, j = i + 1, j + 1
        elif j < len(new) and new[j] == 1:
            j += 1          # an added dim: its stride below
        elif i < len(old) and old[i] == 1:
            i += 1          # a dropped dim
        else:
            return None
    for d in range(len(new) - 1, -1, -1):
        if strides[d] is None:
            strides[d] = new[d + 1] * strides[d + 1] if d + 1 < len(new) else 1
    return TaichiTensor(p.buf, new, tuple(strides), p.offset, p.dtype, p.device)


def full(shape: tuple, value: Any, dtype: np.dtype, device: TaichiDevice) -> TaichiTensor:
    out = alloc(tuple(shape), dtype, device)
    if out.buf is not None:
        data.fill(out.buf, float(value) if dtype in FLOATS else int(value))
    return out


def same_device(op: str, ps: Sequence[TaichiTensor]) -> TaichiDevice:
    d = ps[0].device
    for p in ps[1:]:
        if p.device is not d:
            check_devices(op, d, p.device)
    return d


def broadcast(op: str, ps: Sequence[TaichiTensor]) -> tuple:
    """The shape the operands of `op` broadcast to (a clear error if they do not)."""
    shape = ps[0].shape
    for p in ps[1:]:
        if p.shape != shape:
            shape = broadcast_shape(op, shape, p.shape)
    return shape
