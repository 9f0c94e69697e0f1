"""Window geometry shared by the conv and pool kernels (conv.py, pool.py):
the window meta buffer, the per-task prologue, and index helpers.

A window kernel walks 2-D windows (a 1-D op runs with a height of 1) over
`[N, C, H, W]` planes. Every geometry is a run-time meta buffer
(`window_meta`: sizes, window, the strided input view, the task split), so
each kernel compiles once per dtype and variant. A task covers
`settings.block` elements of the rows it walks (`row` = every index but the
last): a block of one row, or several whole rows (one element per GPU
thread); kernels do their index arithmetic per plane (every index but the
last two), and strides of 1 cost no division. Kernel modules must not use
`from __future__ import annotations` (see kernels/__init__.py).
"""

from enum import IntEnum

import numpy as np
import taichi as ti

from . import layout
from .context import CONTEXT

# Slots of a window meta buffer.
N_, C_, H_, W_, KH, KW, HO, WO, SH, SW, PH, PW, DH, DW = range(14)
XN, XC, XH, XW, XOFF = range(14, 19)  # the input view's strides and offset
BLK, NBLK = 19, 20
E1, E2, E3, E4 = 21, 22, 23, 24       # per-kernel extras
RPT, NROWS = 25, 26                   # rows per task (whole rows only), rows in all
META_LEN = 27


class Window(IntEnum):
    """The kernels that read a window meta buffer (they key the cache apart)."""

    IM2COL = 0
    DIRECT = 1
    COL2IM = 2
    MAX_POOL = 3
    AVG_POOL = 4
    AVG_POOL_BACKWARD = 5
    ADAPTIVE = 6
    ADAPTIVE_BACKWARD = 7


def window_meta(kind: Window, dims: tuple, window: tuple, x_view: tuple, rows: int, inner: int,
                extras: tuple = ()):
    """The cached meta buffer of one geometry and its task count: `dims` =
    (N, C, H, W, Ho, Wo), `window` = (kh, kw, sh, sw, ph, pw, dh, dw),
    `x_view` = (strides, offset) of the strided input, and `rows` rows of
    `inner` elements to cover. A task takes `settings.block` elements: a
    block of one row, or as many whole rows as fit (short rows would make
    the per-task cost dominate on the CPU)."""
    block = CONTEXT.settings.block
    key = ("window", kind, dims, window, x_view, rows, inner, extras, block)

    def build():
        meta = np.zeros(META_LEN, dtype=np.int32)
        n, c, h, w, ho, wo = dims
        meta[[N_, C_, H_, W_, HO, WO]] = n, c, h, w, ho, wo
        meta[[KH, KW, SH, SW, PH, PW, DH, DW]] = window
        meta[[XN, XC, XH, XW]] = x_view[0]
        meta[XOFF] = x_view[1]
        blk = max(1, min(inner, block))
        rpt = max(1, block // inner) if blk == inner else 1
        meta[BLK], meta[NBLK], meta[RPT], meta[NROWS] = blk, -(-inner // blk), rpt, rows
        meta[E1:E1 + len(extras)] = extras
        return meta, -(-rows // rpt) * int(meta[NBLK])

    return layout._cached(key, build)


def acc_type(dt):
    """The accumulator of a dtype's sums: f64 for f64, else f32 (SPIR-V rule 1)."""
    return ti.f64 if dt == ti.f64 else ti.f32


@ti.func
def window_task(meta: ti.template(), u, tshift, inner: ti.template()):
    """The prologue of every window kernel: what iteration `u` of its task
    loop `for u in range(ntask << tshift)` works on, as (runs, first row, end
    row, first column, end column). The loop is stretched on the CPU
    (layout.loop_shift): task u >> tshift runs at the iterations whose low
    `tshift` bits are zero, and at the others `runs` is False, at the cost
    of one test, and the kernel goes on to the next iteration. A task covers
    a block of one row, or whole rows (`window_meta`); rows are `meta[inner]`
    long (`inner` is the slot: WO for output rows, W_ for input rows)."""
    runs = u & ((1 << tshift) - 1) == 0
    row0, row1, c0, c1 = 0, 0, 0, 0
    if runs:
        t = u >> tshift
        nblk = meta[NBLK]
        chunk = ti.raw_div(t, nblk)
        c0 = (t - chunk * nblk) * meta[BLK]
        c1 = ti.min(c0 + meta[BLK], meta[inner])
        row0 = chunk * meta[RPT]
        row1 = ti.min(row0 + meta[RPT], meta[NROWS])
    return runs, row0, row1, c0, c1


@ti.func
def ceil_div(a, b):
    """ceil(a / b) for any int a and b > 0 (raw_div truncates toward zero).
    Unit strides skip the division: it would cost more than the loop it bounds."""
    q = a
    if b == 1:
        pass
    elif a >= 0:
        q = ti.raw_div(a + b - 1, b)
    else:
        q = -ti.raw_div(-a, b)
    return q


@ti.func
def exact_div(a, b, size):
    """(whether a = q * b for some 0 <= q < size, q), for b > 0."""
    q = a
    ok = a >= 0
    if b != 1:
        ok = ok and ti.raw_mod(a, b) == 0
        q = ti.raw_div(a, b)
    return ok and q < size, q


@ti.func
def span(first, end, off, step, size):
    """The sub-range [lo, hi) of [first, end) whose k give 0 <= k*step + off
    < size: the positions of a strided walk that fall inside the input, so
    inner loops run without a bounds test per element."""
    lo = ti.min(ti.max(first, ceil_div(-off, step)), end)
    hi = ti.max(ti.min(end, ceil_div(size - off, step)), lo)
    return lo, hi
