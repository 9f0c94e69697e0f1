"""Convolution kernels: im2col, col2im and a direct convolution, for 2-D
windows (the 1-D ops run as 2-D with a height of 1).

A conv is `im2col` (the column matrix, read from the strided input view with
zeros where a window covers padding) and one batched matmul (matmul.py: NumPy's
BLAS on the CPU arch, the Taichi kernel on GPUs). A transposed conv (also the
input gradient of a conv) is one matmul into per-tap planes and `col2im`.
`direct` computes the conv from the input and weight without a column
matrix: cheaper when the column matrix would be most of the work (few input
channels, tiny outputs).

Every geometry is a run-time meta buffer (`window_meta`), so each kernel
compiles once per dtype. A task covers `SETTINGS.block` elements of the
output's rows (`row` = every index but the last): a block of one row, or
several whole rows (one element per GPU thread); it does its index
arithmetic per plane (every index but the last two), and strides of 1 cost
no division. `direct` and `col2im` add tap by tap into the task's own
output block with plain loads and stores (no atomics, a fixed order), in the
output's dtype; inner loops walk the sub-range that falls inside the input
(`span`), with no bounds test per element.

On the CPU arch, Taichi's LLVM code reloads each buffer's address after
every store to a buffer (it cannot tell them apart) and so never vectorises
such loops: a store costs several loads. `col2im` therefore gathers 16 (or
8) outputs of a row at a time instead, their sums held in registers over
every tap and each output stored once (the `lanes` variants, chosen on the
host), in the same order as adding tap by tap.

On the CPU arch `im2col` and `col2im` run on the host by default
(`SETTINGS.columns`): NumPy copies and adds, one kernel tap at a time, on
views of the device buffers, which NumPy walks with vector loads and
stores. They add in the kernels' order, so they give the same results.
"""

from enum import IntEnum

import numpy as np
import taichi as ti
from taichi.lang.util import to_numpy_type

from burnbook._helper_thread import halves
from burnbook.backend.ndarray_module import _pad
from burnbook.backend.taichi.compat import Launcher, host_view, host_writable
from burnbook.backend.taichi.settings import SETTINGS, serial
from . import layout
from .layout import loop_shift

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
    `inner` elements to cover. A task takes `SETTINGS.block` elements: a
    block of one row, or as many whole rows as fit (short rows would make
    the per-task cost dominate on the CPU)."""
    block = SETTINGS.block
    key = ("window", kind, dims, window, x_view, rows, inner, extras, block)

    def build():
        import numpy as np

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
def task_rows(meta: ti.template(), t, inner):
    """(first row, end row, first column, end column) of task t."""
    nblk = meta[NBLK]
    chunk = ti.raw_div(t, nblk)
    c0 = (t - chunk * nblk) * meta[BLK]
    r0 = chunk * meta[RPT]
    return r0, ti.min(r0 + meta[RPT], meta[NROWS]), c0, ti.min(c0 + meta[BLK], inner)


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


@ti.kernel
def _im2col(cols: ti.types.ndarray(), x: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32, tshift: ti.i32,
            dt: ti.template(), ones: ti.template(), serial: ti.template()):
    # Rows are (n, c, i, j, oh); the row (c, i, j) of image n starts at
    # n * E1 + ((c * KH + i) * KW + j) * E2, then oh * Wo + ow. A task walks
    # its rows plane by plane (a plane = one (n, c, i, j)): the index
    # arithmetic runs per plane, not per row. With `ones`, each group of E3
    # channels is followed by a row of ones (the bias's row in the matmul),
    # written by the tasks of the group's first channel and tap.
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        if u & ((1 << tshift) - 1) != 0:
            continue
        t = u >> tshift
        wo = meta[WO]
        row0, row1, ow0, ow1 = task_rows(meta, t, wo)
        ho, kh, kw, c, h = meta[HO], meta[KH], meta[KW], meta[C_], meta[H_]
        sh, sw, xw, xh = meta[SH], meta[SW], meta[XW], meta[XH]
        zero = ti.cast(0, dt)
        for plane in range(ti.raw_div(row0, ho), ti.raw_div(row1 - 1, ho) + 1):
            j = ti.raw_mod(plane, kw)
            r = ti.raw_div(plane, kw)
            i = ti.raw_mod(r, kh)
            r = ti.raw_div(r, kh)
            ch = ti.raw_mod(r, c)
            n = ti.raw_div(r, c)
            dst0 = n * meta[E1] + ((ch * kh + i) * kw + j) * meta[E2]
            if ti.static(ones):
                cg = meta[E3]
                gi = ti.raw_div(ch, cg)
                dst0 += gi * meta[E2]
                if ch == gi * cg and i == 0 and j == 0:
                    at = n * meta[E1] + (gi * (cg * kh * kw + 1) + cg * kh * kw) * meta[E2]
                    for oh in range(ti.max(row0 - plane * ho, 0), ti.min(row1 - plane * ho, ho)):
                        for ow in range(ow0, ow1):
                            cols[at + oh * wo + ow] = ti.cast(1, dt)
            off = j * meta[DW] - meta[PW]
            lo, hi = span(ow0, ow1, off, sw, meta[W_])
            src0 = meta[XOFF] + n * meta[XN] + ch * meta[XC] + off * xw
            ih0 = i * meta[DH] - meta[PH]
            step = sw * xw
            for oh in range(ti.max(row0 - plane * ho, 0), ti.min(row1 - plane * ho, ho)):
                dst = dst0 + oh * wo
                ih = oh * sh + ih0
                a, b = ow1, ow1  # the copied run; zeros around it
                if 0 <= ih < h:
                    a, b = lo, hi
                    src = src0 + ih * xh
                    for ow in range(lo, hi):
                        cols[dst + ow] = x[src + ow * step]
                for ow in range(ow0, a):
                    cols[dst + ow] = zero
                for ow in range(b, ow1):
                    cols[dst + ow] = zero


@ti.kernel
def _direct(out: ti.types.ndarray(), x: ti.types.ndarray(), weight: ti.types.ndarray(), bias: ti.types.ndarray(),
            meta: ti.types.ndarray(), ntask: ti.i32, tshift: ti.i32, dt: ti.template(), has_bias: ti.template(),
            serial: ti.template()):
    # out [N, O, Ho, Wo] contiguous; weight [O, C/g, kh, kw] contiguous;
    # E1 = O, E2 = C/g, E3 = O/g. Rows are (n, o, oh), planes (n, o). Each tap adds
    # weight * (a strided run of an input row) into the task's output block,
    # which no other task touches (plain loads and stores, no atomics).
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        if u & ((1 << tshift) - 1) != 0:
            continue
        t = u >> tshift
        wo = meta[WO]
        row0, row1, ow0, ow1 = task_rows(meta, t, wo)
        ho, kh, kw, o_all, cg = meta[HO], meta[KH], meta[KW], meta[E1], meta[E2]
        h, w, sw, pw, dh, dw = meta[H_], meta[W_], meta[SW], meta[PW], meta[DH], meta[DW]
        xc_s, xh_s, xw_s = meta[XC], meta[XH], meta[XW]
        for plane in range(ti.raw_div(row0, ho), ti.raw_div(row1 - 1, ho) + 1):
            o = ti.raw_mod(plane, o_all)
            n = ti.raw_div(plane, o_all)
            c0 = ti.raw_div(o, meta[E3]) * cg
            base = meta[XOFF] + n * meta[XN]
            wbase = o * cg * kh * kw
            b = ti.cast(0, dt)
            if ti.static(has_bias):
                b = bias[o]
            for oh in range(ti.max(row0 - plane * ho, 0), ti.min(row1 - plane * ho, ho)):
                ih0 = oh * meta[SH] - meta[PH]
                dst = (plane * ho + oh) * wo
                for ow in range(ow0, ow1):
                    out[dst + ow] = b
                for ci in range(cg):
                    for i in range(kh):
                        ih = ih0 + i * dh
                        if 0 <= ih < h:
                            xr = base + (c0 + ci) * xc_s + ih * xh_s
                            for j in range(kw):
                                wv = weight[wbase + (ci * kh + i) * kw + j]
                                off = j * dw - pw
                                lo, hi = span(ow0, ow1, off, sw, w)
                                src = xr + off * xw_s
                                step = sw * xw_s
                                for ow in range(lo, hi):
                                    out[dst + ow] = out[dst + ow] + wv * x[src + ow * step]


@ti.kernel
def _col2im(out: ti.types.ndarray(), cols: ti.types.ndarray(), bias: ti.types.ndarray(), meta: ti.types.ndarray(),
            ntask: ti.i32, tshift: ti.i32, dt: ti.template(), has_bias: ti.template(), lanes: ti.template(),
            serial: ti.template()):
    # cols [N, C, kh, kw, H, W] (one plane per tap) -> out [N, C, Ho, Wo]:
    # input (ih, iw) of tap (i, j) lands on (ih*sh + i*dh - ph, iw*sw + j*dw - pw).
    # Rows are (n, c, oh), planes (n, c); each task adds, tap by tap, the input runs landing
    # in its own output block (a fixed order, no atomics). With `lanes` (a unit
    # width stride only), a task gathers `lanes` outputs at a time instead: their
    # sums stay in registers over every tap and each output is stored once (on
    # the CPU a store costs several loads), in the same order, so the same sums.
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        if u & ((1 << tshift) - 1) != 0:
            continue
        t = u >> tshift
        wo = meta[WO]
        row0, row1, ow0, ow1 = task_rows(meta, t, wo)
        ho, kh, kw, h, w = meta[HO], meta[KH], meta[KW], meta[H_], meta[W_]
        sh, sw, ph, pw, dh, dw = meta[SH], meta[SW], meta[PH], meta[PW], meta[DH], meta[DW]
        hw = h * w
        for plane in range(ti.raw_div(row0, ho), ti.raw_div(row1 - 1, ho) + 1):  # plane = n * C + c
            b = ti.cast(0, dt)
            if ti.static(has_bias):
                b = bias[ti.raw_mod(plane, meta[C_])]
            for oh in range(ti.max(row0 - plane * ho, 0), ti.min(row1 - plane * ho, ho)):
                dst = (plane * ho + oh) * wo
                if ti.static(lanes > 0):
                    if ow1 - ow0 >= lanes:
                        # Chunks of `lanes` outputs from ow0; the last one ends at ow1
                        # (it may overlap the one before: both store the same sums).
                        for chunk in range(ti.raw_div(ow1 - ow0 + lanes - 1, lanes)):
                            c = ti.min(ow0 + chunk * lanes, ow1 - lanes)
                            acc = ti.Vector([b] * lanes)
                            for i in range(kh):
                                ok, ih = exact_div(oh + ph - i * dh, sh, h)
                                if ok:
                                    src0 = (plane * kh + i) * kw * hw + ih * w
                                    for j in range(kw):
                                        iw0 = c + pw - j * dw  # the input column of lane 0
                                        src = src0 + j * hw + iw0
                                        if iw0 >= 0 and iw0 + lanes <= w:
                                            for lane in ti.static(range(lanes)):
                                                acc[lane] += cols[src + lane]
                                        else:
                                            for lane in ti.static(range(lanes)):
                                                if 0 <= iw0 + lane < w:
                                                    acc[lane] += cols[src + lane]
                            for lane in ti.static(range(lanes)):
                                out[dst + c + lane] = acc[lane]
                    else:
                        for ow in range(ow0, ow1):
                            v = b
                            for i in range(kh):
                                ok, ih = exact_div(oh + ph - i * dh, sh, h)
                                if ok:
                                    src0 = (plane * kh + i) * kw * hw + ih * w
                                    for j in range(kw):
                                        iw = ow + pw - j * dw
                                        if 0 <= iw < w:
                                            v += cols[src0 + j * hw + iw]
                            out[dst + ow] = v
                else:
                    for ow in range(ow0, ow1):
                        out[dst + ow] = b
                    for i in range(kh):
                        ok, ih = exact_div(oh + ph - i * dh, sh, h)
                        if ok:
                            src0 = (plane * kh + i) * kw * hw + ih * w
                            for j in range(kw):
                                off = j * dw - pw
                                lo = ti.max(0, ceil_div(ow0 - off, sw))
                                hi = ti.min(w, ceil_div(ow1 - off, sw))
                                src = src0 + j * hw
                                at = dst + off
                                for iw in range(lo, hi):
                                    k = at + iw * sw
                                    out[k] = out[k] + cols[src + iw]


im2col_k = Launcher(_im2col)
direct_k = Launcher(_direct)
col2im_k = Launcher(_col2im)


def on_host() -> bool:
    """Whether im2col and col2im run as NumPy copies on the device buffers
    (`SETTINGS.columns == "host"`, CPU arch) rather than as kernels."""
    return SETTINGS.columns == "host" and host_writable()


HALVES_FROM = 1 << 18
"""Host column copies and adds over this many elements run as two halves of
the batch on two threads (`_by_images`)."""


def _by_images(work, n: int, size: int) -> None:
    """`work(images)` over the batch: from HALVES_FROM elements as two halves
    at once on two threads (NumPy's copies and adds release the GIL), else
    whole. Each image's values are written by the same operations in the same
    order either way."""
    if size < HALVES_FROM:
        work(slice(None))
    else:
        halves(work, n)


def _host(buf, shape: tuple, strides: tuple, offset: int = 0, write: bool = False) -> np.ndarray:
    """A NumPy view (element `strides`) of the CPU arch's device buffer `buf`, in its dtype."""
    return host_view(buf, np.dtype(to_numpy_type(buf.dtype)), shape, strides, offset, write)


def _taps_from(xp: np.ndarray, i: int, j: int, window: tuple, ho: int, wo: int) -> np.ndarray:
    """The values tap (i, j) reads from the padded input `xp [..., Hp, Wp]`: `[..., Ho, Wo]`."""
    _, _, sh, sw, _, _, dh, dw = window
    return xp[..., i * dh : i * dh + (ho - 1) * sh + 1 : sh, j * dw : j * dw + (wo - 1) * sw + 1 : sw]


def _im2col_host(cols, x: tuple, dims: tuple, window: tuple, image_stride: int, row_stride: int,
                 ones_every: int) -> None:
    n, c, h, w, ho, wo = dims
    kh, kw, sh, sw, ph, pw, dh, dw = window
    hp, wp = max(h + ph, (ho - 1) * sh + (kh - 1) * dh + 1), max(w + pw, (wo - 1) * sw + (kw - 1) * dw + 1)
    xp = _pad(_host(x[0], (n, c, h, w), x[1], x[2]), ((ph, hp - h - ph), (pw, wp - w - pw)))
    g = c // ones_every if ones_every else 1
    cg, taps = c // g, kh * kw
    group = (cg * taps + (1 if ones_every else 0)) * row_stride
    out = _host(cols, (n, g, cg, kh, kw, ho, wo),
                (image_stride, group, taps * row_stride, kw * row_stride, row_stride, wo, 1), write=True)
    xg = xp.reshape(n, g, cg, hp, wp)

    def copy(images: slice) -> None:
        for i in range(kh):
            for j in range(kw):
                out[images, :, :, i, j] = _taps_from(xg[images], i, j, window, ho, wo)

    _by_images(copy, n, out.size)
    if ones_every:
        _host(cols, (n, g, ho * wo), (image_stride, group, 1), cg * taps * row_stride, write=True)[...] = 1


def im2col(cols, x: tuple, dims: tuple, window: tuple, image_stride: int, row_stride: int,
           ones_every: int = 0) -> None:
    """Fill `cols` with the windows of the view `x` = (buffer, strides [4],
    offset) of shape dims[:4], one row (c, i, j) per input channel and kernel
    tap with the Ho*Wo window values; row (c, i, j) of image n starts at
    `n * image_stride + ((c*kh + i)*kw + j) * row_stride`. With `ones_every`
    = C/g, each group's rows are followed by a row of ones (rows shift down
    by one per group before them)."""
    if on_host():
        return _im2col_host(cols, x, dims, window, image_stride, row_stride, ones_every)
    n, c, _, _, ho, wo = dims
    kh, kw = window[:2]
    rows = n * c * kh * kw * ho
    meta, ntask = window_meta(Window.IM2COL, dims, window, (x[1], x[2]), rows, wo,
                              (image_stride, row_stride, ones_every))
    ser = serial(rows * wo)
    im2col_k(cols, x[0], meta, ntask, loop_shift(ntask, ser), cols.dtype, ones_every > 0, ser)


def direct(out, x: tuple, weight, bias, dims: tuple, window: tuple, o: int, groups: int) -> None:
    """`out [N, O, Ho, Wo]` = conv of the view `x` with the contiguous `weight
    [O, C/g, kh, kw]` buffer (plus the `bias [O]` buffer unless None)."""
    n, c, _, _, ho, wo = dims
    rows = n * o * ho
    meta, ntask = window_meta(Window.DIRECT, dims, window, (x[1], x[2]), rows, wo, (o, c // groups, o // groups))
    work = rows * wo * (c // groups) * window[0] * window[1]
    ser = serial(work)
    direct_k(out, x[0], weight, out if bias is None else bias, meta, ntask, loop_shift(ntask, ser), out.dtype,
             bias is not None, ser)


COL2IM_LANES = (0, 8, 16)
"""`_col2im`'s variants: 0 adds tap by tap into the output; 8 or 16 gather
that many outputs at a time (CPU arch, unit width stride)."""


def col2im_lanes(wo: int, sw: int) -> int:
    """The `_col2im` variant for output rows of `wo` with width stride `sw`.
    Gathering 16 outputs at a time measured about twice as fast as adding tap
    by tap on the CPU where rows hold 16 or more (8: a little faster from 8),
    and twice as slow on shorter rows; a GPU thread owns one output."""
    if SETTINGS.gpu or sw != 1:
        return 0
    return 16 if wo >= 16 else 8 if wo >= 8 else 0


def grid(dims: tuple, window: tuple) -> tuple:
    """(Hf, Wf): the grid col2im adds the tap planes into, before cropping:
    every tap's plane whole, and the output [ph : ph+Ho, pw : pw+Wo] inside it."""
    _, _, h, w, ho, wo = dims
    kh, kw, sh, sw, ph, pw, dh, dw = window
    return max(ph + ho, (h - 1) * sh + (kh - 1) * dh + 1), max(pw + wo, (w - 1) * sw + (kw - 1) * dw + 1)


def col2im_host(out, cols, bias, dims: tuple, window: tuple, rows: bool = False) -> None:
    """`col2im` on the host (CPU arch only): each output starts at its bias
    and adds the taps in (i, j) order, as the kernels do. With `rows` (unit
    strides only), the tap planes `cols [N, C, kh, kw, H, Wf]` are as wide
    as the grid, with zeros in columns W..Wf-1 (from an input `widen_host`
    made), so each tap adds one contiguous run of its plane into the flat
    grid; the zeros land on other outputs and change no value."""
    n, c, h, w, ho, wo = dims
    kh, kw, _, _, ph, pw, dh, dw = window
    hf, wf = grid(dims, window)
    dst = _host(out, (n, c, ho, wo), (c * ho * wo, ho * wo, wo, 1), write=True)
    full = dst if (ph, pw, hf, wf) == (0, 0, ho, wo) else np.empty((n, c, hf, wf), dst.dtype)
    full[...] = 0 if bias is None else _host(bias, (c, 1, 1), (1, 0, 0))
    if rows:
        run = h * wf
        planes = _host(cols, (n, c, kh, kw, run), (c * kh * kw * run, kh * kw * run, kw * run, run, 1))
        flat = full.reshape(n, c, hf * wf)

        def add(images: slice) -> None:
            for i in range(kh):
                for j in range(kw):
                    off = i * dh * wf + j * dw
                    end = min(run, hf * wf - off)   # the last row's final j*dw columns pass the grid: zeros
                    flat[images, :, off : off + end] += planes[images, :, i, j, :end]
    else:
        planes = _host(cols, (n, c, kh, kw, h, w), (c * kh * kw * h * w, kh * kw * h * w, kw * h * w, h * w, w, 1))

        def add(images: slice) -> None:
            for i in range(kh):
                for j in range(kw):
                    _taps_from(full[images], i, j, window, h, w)[...] += planes[images, :, i, j]
    _by_images(add, n, planes.size)
    if full is not dst:
        dst[...] = full[:, :, ph : ph + ho, pw : pw + wo]


def widen_host(dst, x: tuple, dims: tuple, wf: int) -> None:
    """`dst [N, C, H, Wf]` = the view `x` = (buffer, strides, offset) of shape
    dims [N, C, H, W] with zero columns W..Wf-1 (host path only)."""
    n, c, h, w = dims
    out = _host(dst, (n, c, h, wf), (c * h * wf, h * wf, wf, 1), write=True)
    out[..., :w] = _host(x[0], dims, x[1], x[2])
    out[..., w:] = 0


def col2im(out, cols, bias, dims: tuple, window: tuple, lanes: int | None = None) -> None:
    """`out [N, C, Ho, Wo]` = the sum of the tap planes `cols [N, C, kh, kw,
    H, W]` placed on the output grid (a transposed conv), plus `bias [C]`
    unless None; dims = (N, C, H, W, Ho, Wo). `lanes` forces a kernel variant
    (COL2IM_LANES; a test compares them), else the host path runs where
    `on_host()`, or `col2im_lanes` picks a kernel variant."""
    if lanes is None and on_host():
        return col2im_host(out, cols, bias, dims, window)
    n, c, _, _, ho, wo = dims
    rows = n * c * ho
    if lanes is None:
        lanes = col2im_lanes(wo, window[3])
    elif lanes not in COL2IM_LANES or (lanes and window[3] != 1):
        raise ValueError(f"col2im: lanes={lanes} for a width stride of {window[3]}; expected one of "
                         f"{COL2IM_LANES} (0 unless the stride is 1)")
    meta, ntask = window_meta(Window.COL2IM, dims, window, ((0, 0, 0, 0), 0), rows, wo)
    ser = serial(rows * wo * window[0] * window[1])
    col2im_k(out, cols, out if bias is None else bias, meta, ntask, loop_shift(ntask, ser), out.dtype,
             bias is not None, lanes, ser)
