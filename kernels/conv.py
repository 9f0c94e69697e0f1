"""Convolution kernels: im2col, col2im and a direct convolution, for 2-D
windows (the 1-D ops run as 2-D with a height of 1).

A conv is `im2col` (the column matrix, read from the strided input view with
zeros where a window covers padding) and one batched matmul (matmul.py: NumPy's
BLAS on the CPU arch, the Taichi kernel on GPUs). A transposed conv (also the
input gradient of a conv) is one matmul into per-tap planes and `col2im`,
which *gathers* the taps that land on each output element, so it needs no
atomics and adds in a fixed order. `direct` computes each output from the
input and weight without a column matrix: cheaper when the column matrix
would be most of the work (few input channels, tiny outputs).

Every geometry is a run-time meta buffer (`window_meta`), so each kernel
compiles once per dtype. One task is one block of one output row (`row` =
every index but the last); blocks are `SETTINGS.block` long (one element per
GPU thread).
"""

from enum import IntEnum

import taichi as ti

from burnbook.backend.taichi.compat import Launcher
from burnbook.backend.taichi.settings import SETTINGS, serial
from . import layout

# Slots of a window meta buffer.
N_, C_, H_, W_, KH, KW, HO, WO, SH, SW, PH, PW, DH, DW = range(14)
XN, XC, XH, XW, XOFF = range(14, 19)  # the input view's strides and offset
BLK, NBLK = 19, 20
E1, E2, E3, E4 = 21, 22, 23, 24       # per-kernel extras
META_LEN = 25


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


def window_meta(kind: Window, dims: tuple, window: tuple, x_view: tuple, inner: int, extras: tuple = ()):
    """The cached meta buffer of one geometry: `dims` = (N, C, H, W, Ho, Wo),
    `window` = (kh, kw, sh, sw, ph, pw, dh, dw), `x_view` = (strides, offset)
    of the strided input, blocks along an `inner` dim of that length; returns
    (meta buffer, blocks per row)."""
    block = SETTINGS.block
    key = ("window", kind, dims, window, x_view, inner, extras, block)

    def build():
        import numpy as np

        meta = np.zeros(META_LEN, dtype=np.int32)
        n, c, h, w, ho, wo = dims
        meta[[N_, C_, H_, W_, HO, WO]] = n, c, h, w, ho, wo
        meta[[KH, KW, SH, SW, PH, PW, DH, DW]] = window
        meta[[XN, XC, XH, XW]] = x_view[0]
        meta[XOFF] = x_view[1]
        blk = max(1, min(inner, block))
        meta[BLK], meta[NBLK] = blk, -(-inner // blk)
        meta[E1:E1 + len(extras)] = extras
        return meta, int(meta[NBLK])

    return layout._cached(key, build)


def acc_type(dt):
    """The accumulator of a dtype's sums: f64 for f64, else f32 (SPIR-V rule 1)."""
    return ti.f64 if dt == ti.f64 else ti.f32


@ti.kernel
def _im2col(cols: ti.types.ndarray(), x: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32,
            dt: ti.template(), serial: ti.template()):
    # Rows are (n, c, i, j, oh); the row (c, i, j) of image n starts at
    # n * E1 + ((c * KH + i) * KW + j) * E2, then oh * Wo + ow.
    ti.loop_config(serialize=serial)
    for t in range(ntask):
        nblk = meta[NBLK]
        row = ti.raw_div(t, nblk)
        ow0 = (t - row * nblk) * meta[BLK]
        ow1 = ti.min(ow0 + meta[BLK], meta[WO])
        ho, kh, kw, c = meta[HO], meta[KH], meta[KW], meta[C_]
        oh = ti.raw_mod(row, ho)
        r = ti.raw_div(row, ho)
        j = ti.raw_mod(r, kw)
        r = ti.raw_div(r, kw)
        i = ti.raw_mod(r, kh)
        r = ti.raw_div(r, kh)
        ch = ti.raw_mod(r, c)
        n = ti.raw_div(r, c)
        dst = n * meta[E1] + ((ch * kh + i) * kw + j) * meta[E2] + oh * meta[WO]
        ih = oh * meta[SH] - meta[PH] + i * meta[DH]
        zero = ti.cast(0, dt)
        if 0 <= ih < meta[H_]:
            src = meta[XOFF] + n * meta[XN] + ch * meta[XC] + ih * meta[XH]
            sw, w, xw = meta[SW], meta[W_], meta[XW]
            iw0 = j * meta[DW] - meta[PW]
            for ow in range(ow0, ow1):
                iw = ow * sw + iw0
                v = zero
                if 0 <= iw < w:
                    v = x[src + iw * xw]
                cols[dst + ow] = v
        else:
            for ow in range(ow0, ow1):
                cols[dst + ow] = zero


@ti.kernel
def _direct(out: ti.types.ndarray(), x: ti.types.ndarray(), weight: ti.types.ndarray(), bias: ti.types.ndarray(),
            meta: ti.types.ndarray(), ntask: ti.i32, dt: ti.template(), acc_t: ti.template(),
            has_bias: ti.template(), serial: ti.template()):
    # out [N, O, Ho, Wo] contiguous; weight [O, C/g, kh, kw] contiguous;
    # E1 = O, E2 = C/g, E3 = O/g. Rows are (n, o, oh).
    ti.loop_config(serialize=serial)
    for t in range(ntask):
        nblk = meta[NBLK]
        row = ti.raw_div(t, nblk)
        ow0 = (t - row * nblk) * meta[BLK]
        ow1 = ti.min(ow0 + meta[BLK], meta[WO])
        ho, kh, kw, o_all, cg = meta[HO], meta[KH], meta[KW], meta[E1], meta[E2]
        oh = ti.raw_mod(row, ho)
        r = ti.raw_div(row, ho)
        o = ti.raw_mod(r, o_all)
        n = ti.raw_div(r, o_all)
        c0 = ti.raw_div(o, meta[E3]) * cg
        h, w = meta[H_], meta[W_]
        sw, pw, dw, xw = meta[SW], meta[PW], meta[DW], meta[XW]
        ih0 = oh * meta[SH] - meta[PH]
        base = meta[XOFF] + n * meta[XN]
        wbase = o * cg * kh * kw
        b = ti.cast(0, acc_t)
        if ti.static(has_bias):
            b = ti.cast(bias[o], acc_t)
        for ow in range(ow0, ow1):
            acc = b
            iw0 = ow * sw - pw
            for ci in range(cg):
                xc = base + (c0 + ci) * meta[XC]
                wc = wbase + ci * kh * kw
                for i in range(kh):
                    ih = ih0 + i * meta[DH]
                    if 0 <= ih < h:
                        xr = xc + ih * meta[XH]
                        for j in range(kw):
                            iw = iw0 + j * dw
                            if 0 <= iw < w:
                                acc += ti.cast(x[xr + iw * xw], acc_t) * ti.cast(weight[wc + i * kw + j], acc_t)
            out[row * meta[WO] + ow] = ti.cast(acc, dt)


@ti.kernel
def _col2im(out: ti.types.ndarray(), cols: ti.types.ndarray(), bias: ti.types.ndarray(), meta: ti.types.ndarray(),
            ntask: ti.i32, dt: ti.template(), acc_t: ti.template(), has_bias: ti.template(),
            serial: ti.template()):
    # cols [N, C, kh, kw, H, W] (one plane per tap) -> out [N, C, Ho, Wo]:
    # out[oh, ow] sums the taps (i, j) whose input (ih, iw) lands there, i.e.
    # ih * sh + i * dh - ph == oh. Rows are (n, c, oh).
    ti.loop_config(serialize=serial)
    for t in range(ntask):
        nblk = meta[NBLK]
        row = ti.raw_div(t, nblk)
        ow0 = (t - row * nblk) * meta[BLK]
        ow1 = ti.min(ow0 + meta[BLK], meta[WO])
        ho, kh, kw, h, w = meta[HO], meta[KH], meta[KW], meta[H_], meta[W_]
        sh, sw, dw = meta[SH], meta[SW], meta[DW]
        oh = ti.raw_mod(row, ho)
        plane = ti.raw_div(row, ho)  # n * C + c
        b = ti.cast(0, acc_t)
        if ti.static(has_bias):
            b = ti.cast(bias[ti.raw_mod(plane, meta[C_])], acc_t)
        hw = h * w
        for ow in range(ow0, ow1):
            acc = b
            for i in range(kh):
                th = oh + meta[PH] - i * meta[DH]
                if th >= 0 and ti.raw_mod(th, sh) == 0 and ti.raw_div(th, sh) < h:
                    src = (plane * kh + i) * kw * hw + ti.raw_div(th, sh) * w
                    for j in range(kw):
                        tw = ow + meta[PW] - j * dw
                        if tw >= 0 and ti.raw_mod(tw, sw) == 0 and ti.raw_div(tw, sw) < w:
                            acc += ti.cast(cols[src + j * hw + ti.raw_div(tw, sw)], acc_t)
            out[row * meta[WO] + ow] = ti.cast(acc, dt)


im2col_k = Launcher(_im2col)
direct_k = Launcher(_direct)
col2im_k = Launcher(_col2im)

_WINDOW = ("kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw")


def im2col(cols, x: tuple, dims: tuple, window: tuple, image_stride: int, row_stride: int) -> None:
    """Fill `cols` with the windows of the view `x` = (buffer, strides [4],
    offset) of shape dims[:4], one row (c, i, j) per input channel and kernel
    tap with the Ho*Wo window values; row (c, i, j) of image n starts at
    `n * image_stride + ((c*kh + i)*kw + j) * row_stride`."""
    n, c, _, _, ho, wo = dims
    kh, kw = window[:2]
    meta, nblk = window_meta(Window.IM2COL, dims, window, (x[1], x[2]), wo, (image_stride, row_stride))
    rows = n * c * kh * kw * ho
    im2col_k(cols, x[0], meta, rows * nblk, cols.dtype, serial(rows * wo))


def direct(out, x: tuple, weight, bias, dims: tuple, window: tuple, o: int, groups: int) -> None:
    """`out [N, O, Ho, Wo]` = conv of the view `x` with the contiguous `weight
    [O, C/g, kh, kw]` buffer (plus the `bias [O]` buffer unless None)."""
    n, c, _, _, ho, wo = dims
    meta, nblk = window_meta(Window.DIRECT, dims, window, (x[1], x[2]), wo, (o, c // groups, o // groups))
    rows = n * o * ho
    work = rows * wo * (c // groups) * window[0] * window[1]
    dt = out.dtype
    direct_k(out, x[0], weight, out if bias is None else bias, meta, rows * nblk, dt, acc_type(dt),
             bias is not None, serial(work))


def col2im(out, cols, bias, dims: tuple, window: tuple) -> None:
    """`out [N, C, Ho, Wo]` = the sum of the tap planes `cols [N, C, kh, kw,
    H, W]` placed on the output grid (a transposed conv), plus `bias [C]`
    unless None; dims = (N, C, H, W, Ho, Wo)."""
    n, c, _, _, ho, wo = dims
    meta, nblk = window_meta(Window.COL2IM, dims, window, ((0, 0, 0, 0), 0), wo)
    rows = n * c * ho
    dt = out.dtype
    col2im_k(out, cols, out if bias is None else bias, meta, rows * nblk, dt, acc_type(dt), bias is not None,
             serial(rows * wo * window[0] * window[1]))
