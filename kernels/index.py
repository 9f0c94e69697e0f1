"""Indexed reads and writes: gather (also select) and scatter-add (also select_assign).

Both walk a strided layout (layout.py) where the indexed dim's stride of the
data operand is zeroed; the index value times that dim's stride (extra E0+1)
is added per element. Negative indices count from the end; out-of-range ones
are counted and the count returned, so the caller can raise IndexError
(reads give 0, writes are skipped). The return value makes the launch
synchronous on GPU archs.
"""

from enum import IntEnum
from math import prod

import taichi as ti

from .context import Kernel, serial
from .layout import BLK, E0, INNER, NBLK, inner_strides, map_meta, row_offsets, loop_shift


class Index(IntEnum):
    """The two indexed walks (they key layout meta buffers apart)."""

    GATHER = 0
    SCATTER = 1


@ti.kernel
def _gather(out: ti.types.ndarray(), p: ti.types.ndarray(), idx: ti.types.ndarray(), meta: ti.types.ndarray(),
            ntask: ti.i32, tshift: ti.i32, dt: ti.template(), serial: ti.template()) -> ti.i32:
    bad = 0
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        if u & ((1 << tshift) - 1) != 0:
            continue
        t = u >> tshift
        nblk = meta[NBLK]
        row = ti.raw_div(t, nblk)
        j0 = (t - row * nblk) * meta[BLK]
        j1 = ti.min(j0 + meta[BLK], meta[INNER])
        o = row_offsets(meta, row, 3)
        st = inner_strides(meta, 3)
        n = ti.cast(meta[E0], ti.i64)
        ds = meta[E0 + 1]
        for j in range(j0, j1):
            k = ti.cast(idx[o[2] + j * st[2]], ti.i64)
            if k < 0:
                k += n
            v = ti.cast(0, dt)
            if 0 <= k < n:
                v = p[o[1] + j * st[1] + ti.cast(k, ti.i32) * ds]
            else:
                bad += 1
            out[o[0] + j * st[0]] = v
    return bad


@ti.kernel
def _scatter(out: ti.types.ndarray(), idx: ti.types.ndarray(), val: ti.types.ndarray(), meta: ti.types.ndarray(),
             ntask: ti.i32, tshift: ti.i32, dt: ti.template(), serial: ti.template()) -> ti.i32:
    bad = 0
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        if u & ((1 << tshift) - 1) != 0:
            continue
        t = u >> tshift
        nblk = meta[NBLK]
        row = ti.raw_div(t, nblk)
        j0 = (t - row * nblk) * meta[BLK]
        j1 = ti.min(j0 + meta[BLK], meta[INNER])
        o = row_offsets(meta, row, 3)
        st = inner_strides(meta, 3)
        n = ti.cast(meta[E0], ti.i64)
        ds = meta[E0 + 1]
        for j in range(j0, j1):
            k = ti.cast(idx[o[1] + j * st[1]], ti.i64)
            if k < 0:
                k += n
            if 0 <= k < n:
                ti.atomic_add(out[o[0] + j * st[0] + ti.cast(k, ti.i32) * ds], ti.cast(val[o[2] + j * st[2]], dt))
            else:
                bad += 1
    return bad


gather_k = Kernel(_gather)
scatter_k = Kernel(_scatter)


def gather(shape: tuple, out: tuple, p: tuple, idx: tuple, n: int, dim_stride: int) -> int:
    """out[i] = p[i with dim -> idx[i]] over `shape`; returns the out-of-range count.
    Views are (buffer, strides, offset) aligned to `shape`; p's dim stride is 0."""
    meta, ntask = map_meta(Index.GATHER, shape, ((out[1], out[2]), (p[1], p[2]), (idx[1], idx[2])), (n, dim_stride))
    ser = serial(prod(shape))
    return gather_k.launch(out[0], p[0], idx[0], meta, ntask, loop_shift(ntask, ser), out[0].dtype, ser)


def scatter_add(shape: tuple, out: tuple, idx: tuple, val: tuple, n: int, dim_stride: int) -> int:
    """out[i with dim -> idx[i]] += val[i] over `shape` (atomically); returns the
    out-of-range count. out's dim stride is 0 in its view."""
    meta, ntask = map_meta(Index.SCATTER, shape, ((out[1], out[2]), (idx[1], idx[2]), (val[1], val[2])), (n, dim_stride))
    ser = serial(prod(shape))
    return scatter_k.launch(out[0], idx[0], val[0], meta, ntask, loop_shift(ntask, ser), out[0].dtype, ser)
