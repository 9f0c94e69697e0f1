"""Kernels that move data: host <-> device transfers, fill and arange.

Host arrays are passed as external (NumPy) arrays, which Taichi maps directly
on the CPU arch and stages through device memory on GPU archs.
"""

import numpy as np
import taichi as ti

from .context import CONTEXT, Kernel, serial


@ti.kernel
def _upload(dst: ti.types.ndarray(), src: ti.types.ndarray(), n: ti.i32, serial: ti.template()):
    ti.loop_config(serialize=serial)
    for i in range(n):
        dst[i] = src[i]


@ti.kernel
def _download(dst: ti.types.ndarray(), src: ti.types.ndarray(), offset: ti.i32, n: ti.i32, serial: ti.template()):
    ti.loop_config(serialize=serial)
    for i in range(n):
        dst[i] = src[offset + i]


def _make_fill_f(S):
    # one kernel per value type: the value travels in the tensor's precision
    # (f32 for f32 and f16 buffers), so an f32 fill holds no f64 (SPIR-V rules)
    @ti.kernel
    def fill_f(out: ti.types.ndarray(), n: ti.i32, value: S, dt: ti.template(), serial: ti.template()):
        ti.loop_config(serialize=serial)
        for i in range(n):
            out[i] = ti.cast(value, dt)

    return fill_f


@ti.kernel
def _fill_i(out: ti.types.ndarray(), n: ti.i32, value: ti.i64, dt: ti.template(), serial: ti.template()):
    ti.loop_config(serialize=serial)
    for i in range(n):
        out[i] = ti.cast(value, dt)


@ti.kernel
def _arange(out: ti.types.ndarray(), n: ti.i32, start: ti.i64, step: ti.i64, serial: ti.template()):
    ti.loop_config(serialize=serial)
    for i in range(n):
        out[i] = start + ti.cast(i, ti.i64) * step


_upload_k, _download_k = Kernel(_upload), Kernel(_download)
_fill_f_k = {id(ti.f64): Kernel(_make_fill_f(ti.f64)), id(ti.f32): Kernel(_make_fill_f(ti.f32))}
_fill_i_k, _arange_k = Kernel(_fill_i), Kernel(_arange)
_FLOATS = frozenset(id(t) for t in (ti.f16, ti.f32, ti.f64))


def upload(dst, src: np.ndarray) -> None:
    """Copy the 1-D contiguous host array `src` into `dst`."""
    _upload_k.launch(dst, src, src.size, serial(src.size))


def download(dst: np.ndarray, src, offset: int) -> None:
    """Copy src[offset : offset + dst.size] into the 1-D contiguous host array `dst`."""
    _download_k.launch(dst, src, offset, dst.size, serial(dst.size))


def fill(out, value) -> None:
    n = out.shape[0]
    if id(out.dtype) in _FLOATS:
        if out.dtype is ti.f64:
            _fill_f_k[id(ti.f64)].launch(out, n, float(value), out.dtype, serial(n))
        else:  # an f16 value is rounded once, here, and f32 holds it exactly
            v = float(np.float16(value)) if out.dtype is ti.f16 else float(value)
            _fill_f_k[id(ti.f32)].launch(out, n, v, out.dtype, serial(n))
    else:
        _fill_i_k.launch(out, n, int(value), out.dtype, serial(n))


def f64_works() -> bool:
    """Whether the running device computes in f64: a one-element f64 fill and
    read-back, which a Vulkan device without shaderFloat64 fails to compile."""
    try:
        buf = CONTEXT.buffer(ti.f64, 1)
        fill(buf, 1.5)
        out = np.zeros(1, np.float64)
        download(out, buf, 0)
        return out[0] == 1.5
    except Exception:  # noqa: BLE001 - any failure means "no f64 here"
        return False


def arange(out, start: int, step: int) -> None:
    """out[i] = start + i * step (i64)."""
    _arange_k.launch(out, out.shape[0], int(start), int(step), serial(out.shape[0]))
