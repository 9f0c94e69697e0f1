"""Pooling kernels over 2-D windows (1-D pools run with a height of 1): max
pooling with indices, average and adaptive average pooling, and the
backward passes of the average pools.

The average pools' backward passes *gather*: each input element sums the
gradients of the outputs whose windows cover it (found from the window
arithmetic, at most kh*kw of them), so they need no atomics and add in a
fixed order. Max pooling's backward is a scatter-add of each output's
gradient at its index (index.py's kernel). Geometry travels in the window
meta buffers of conv.py; each kernel compiles once per dtype and variant.
"""

import taichi as ti

from burnbook.backend.taichi.compat import Launcher
from burnbook.backend.taichi.settings import serial
from .conv import (BLK, C_, DH, DW, H_, HO, KH, KW, NBLK, PH, PW, SH, SW, W_, WO, XC, XH, XN, XOFF, XW, Window,
                   acc_type, window_meta)


@ti.func
def _row(meta: ti.template(), t, inner):
    """(row, first, end) of task t: a block of one row of `inner` elements."""
    nblk = meta[NBLK]
    row = ti.raw_div(t, nblk)
    first = (t - row * nblk) * meta[BLK]
    return row, first, ti.min(first + meta[BLK], inner)


@ti.func
def _plane_base(meta: ti.template(), plane):
    """Where plane `plane` = n * C + c of the strided view starts."""
    c = meta[C_]
    return meta[XOFF] + ti.raw_div(plane, c) * meta[XN] + ti.raw_mod(plane, c) * meta[XC]


@ti.kernel
def _max_pool(out: ti.types.ndarray(), idx: ti.types.ndarray(), x: ti.types.ndarray(), meta: ti.types.ndarray(),
              ntask: ti.i32, dt: ti.template(), acc_t: ti.template(), with_idx: ti.template(),
              serial: ti.template()):
    # PyTorch's rule: the first valid element starts the max; a later one wins
    # if larger or NaN. Indices are h * W + w in the input plane.
    ti.loop_config(serialize=serial)
    for t in range(ntask):
        row, ow0, ow1 = _row(meta, t, meta[WO])
        ho, kh, kw, h, w = meta[HO], meta[KH], meta[KW], meta[H_], meta[W_]
        oh = ti.raw_mod(row, ho)
        base = _plane_base(meta, ti.raw_div(row, ho))
        ih0 = oh * meta[SH] - meta[PH]
        for ow in range(ow0, ow1):
            iw0 = ow * meta[SW] - meta[PW]
            best = ti.cast(0, acc_t)
            at = -1
            for i in range(kh):
                ih = ih0 + i * meta[DH]
                if 0 <= ih < h:
                    for j in range(kw):
                        iw = iw0 + j * meta[DW]
                        if 0 <= iw < w:
                            v = ti.cast(x[base + ih * meta[XH] + iw * meta[XW]], acc_t)
                            if at < 0 or v > best or v != v:
                                best = v
                                at = ih * w + iw
            out[row * meta[WO] + ow] = ti.cast(best, dt)
            if ti.static(with_idx):
                idx[row * meta[WO] + ow] = ti.cast(at, ti.i64)


@ti.func
def _valid(start, k, size):
    """How many of the k positions from `start` lie in [0, size)."""
    return ti.max(ti.min(start + k, size) - ti.max(start, 0), 0)


@ti.kernel
def _avg_pool(out: ti.types.ndarray(), x: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32,
              dt: ti.template(), acc_t: ti.template(), include_pad: ti.template(), serial: ti.template()):
    ti.loop_config(serialize=serial)
    for t in range(ntask):
        row, ow0, ow1 = _row(meta, t, meta[WO])
        ho, kh, kw, h, w = meta[HO], meta[KH], meta[KW], meta[H_], meta[W_]
        oh = ti.raw_mod(row, ho)
        base = _plane_base(meta, ti.raw_div(row, ho))
        ih0 = oh * meta[SH] - meta[PH]
        rows_valid = _valid(ih0, kh, h)
        for ow in range(ow0, ow1):
            iw0 = ow * meta[SW] - meta[PW]
            acc = ti.cast(0, acc_t)
            for i in range(kh):
                ih = ih0 + i
                if 0 <= ih < h:
                    for j in range(kw):
                        iw = iw0 + j
                        if 0 <= iw < w:
                            acc += ti.cast(x[base + ih * meta[XH] + iw * meta[XW]], acc_t)
            count = kh * kw
            if ti.static(not include_pad):
                count = ti.max(rows_valid * _valid(iw0, kw, w), 1)
            out[row * meta[WO] + ow] = ti.cast(acc / ti.cast(count, acc_t), dt)


@ti.kernel
def _avg_pool_backward(gx: ti.types.ndarray(), g: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32,
                       dt: ti.template(), acc_t: ti.template(), include_pad: ti.template(),
                       serial: ti.template()):
    # gx [N, C, H, W] contiguous; g the strided output-gradient view. Input
    # (ih, iw) is in window (oh, ow) when ih = oh * sh - ph + i for a tap i.
    ti.loop_config(serialize=serial)
    for t in range(ntask):
        row, iw0, iw1 = _row(meta, t, meta[W_])
        ho, wo, kh, kw, h, w = meta[HO], meta[WO], meta[KH], meta[KW], meta[H_], meta[W_]
        sh, sw, ph, pw = meta[SH], meta[SW], meta[PH], meta[PW]
        ih = ti.raw_mod(row, h)
        base = _plane_base(meta, ti.raw_div(row, h))
        for iw in range(iw0, iw1):
            acc = ti.cast(0, acc_t)
            for i in range(kh):
                th = ih + ph - i
                if th >= 0 and ti.raw_mod(th, sh) == 0 and ti.raw_div(th, sh) < ho:
                    oh = ti.raw_div(th, sh)
                    for j in range(kw):
                        tw = iw + pw - j
                        if tw >= 0 and ti.raw_mod(tw, sw) == 0 and ti.raw_div(tw, sw) < wo:
                            ow = ti.raw_div(tw, sw)
                            count = kh * kw
                            if ti.static(not include_pad):
                                count = ti.max(_valid(oh * sh - ph, kh, h) * _valid(ow * sw - pw, kw, w), 1)
                            acc += ti.cast(g[base + oh * meta[XH] + ow * meta[XW]], acc_t) / ti.cast(count, acc_t)
            gx[row * w + iw] = ti.cast(acc, dt)


@ti.func
def _bin(i, size, out):
    """Adaptive pooling's input range [start, end) of output i."""
    return ti.raw_div(i * size, out), ti.raw_div((i + 1) * size + out - 1, out)


@ti.kernel
def _adaptive(out: ti.types.ndarray(), x: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32,
              dt: ti.template(), acc_t: ti.template(), serial: ti.template()):
    ti.loop_config(serialize=serial)
    for t in range(ntask):
        row, ow0, ow1 = _row(meta, t, meta[WO])
        ho, wo, h, w = meta[HO], meta[WO], meta[H_], meta[W_]
        oh = ti.raw_mod(row, ho)
        base = _plane_base(meta, ti.raw_div(row, ho))
        hs, he = _bin(oh, h, ho)
        for ow in range(ow0, ow1):
            ws, we = _bin(ow, w, wo)
            acc = ti.cast(0, acc_t)
            for ih in range(hs, he):
                for iw in range(ws, we):
                    acc += ti.cast(x[base + ih * meta[XH] + iw * meta[XW]], acc_t)
            out[row * wo + ow] = ti.cast(acc / ti.cast((he - hs) * (we - ws), acc_t), dt)


@ti.kernel
def _adaptive_backward(gx: ti.types.ndarray(), g: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32,
                       dt: ti.template(), acc_t: ti.template(), serial: ti.template()):
    # Output bin o covers input i exactly when floor(i*Ho/H) <= o < ceil((i+1)*Ho/H).
    ti.loop_config(serialize=serial)
    for t in range(ntask):
        row, iw0, iw1 = _row(meta, t, meta[W_])
        ho, wo, h, w = meta[HO], meta[WO], meta[H_], meta[W_]
        ih = ti.raw_mod(row, h)
        base = _plane_base(meta, ti.raw_div(row, h))
        ohs, ohe = _bin(ih, ho, h)
        for iw in range(iw0, iw1):
            ows, owe = _bin(iw, wo, w)
            acc = ti.cast(0, acc_t)
            for oh in range(ohs, ohe):
                hs, he = _bin(oh, h, ho)
                for ow in range(ows, owe):
                    ws, we = _bin(ow, w, wo)
                    acc += ti.cast(g[base + oh * meta[XH] + ow * meta[XW]], acc_t) / ti.cast(
                        (he - hs) * (we - ws), acc_t)
            gx[row * w + iw] = ti.cast(acc, dt)


max_pool_k = Launcher(_max_pool)
avg_pool_k = Launcher(_avg_pool)
avg_pool_backward_k = Launcher(_avg_pool_backward)
adaptive_k = Launcher(_adaptive)
adaptive_backward_k = Launcher(_adaptive_backward)


def max_pool(out, idx, x: tuple, dims: tuple, window: tuple) -> None:
    """`out [N, C, Ho, Wo]` = window maxima of the view `x` = (buffer, strides,
    offset); `idx` (i64, same shape) gets their flat positions unless None."""
    n, c, _, _, ho, wo = dims
    meta, nblk = window_meta(Window.MAX_POOL, dims, window, (x[1], x[2]), wo)
    rows = n * c * ho
    dt = out.dtype
    max_pool_k(out, out if idx is None else idx, x[0], meta, rows * nblk, dt, acc_type(dt), idx is not None,
               serial(rows * wo * window[0] * window[1]))


def avg_pool(out, x: tuple, dims: tuple, window: tuple, include_pad: bool) -> None:
    """`out [N, C, Ho, Wo]` = window means of the view `x`."""
    n, c, _, _, ho, wo = dims
    meta, nblk = window_meta(Window.AVG_POOL, dims, window, (x[1], x[2]), wo)
    rows = n * c * ho
    dt = out.dtype
    avg_pool_k(out, x[0], meta, rows * nblk, dt, acc_type(dt), bool(include_pad),
               serial(rows * wo * window[0] * window[1]))


def avg_pool_backward(gx, g: tuple, dims: tuple, window: tuple, include_pad: bool) -> None:
    """`gx [N, C, H, W]` = avg_pool's input gradient from the view `g` of the
    output gradient [N, C, Ho, Wo]."""
    n, c, h, w = dims[:4]
    meta, nblk = window_meta(Window.AVG_POOL_BACKWARD, dims, window, (g[1], g[2]), w)
    rows = n * c * h
    dt = gx.dtype
    avg_pool_backward_k(gx, g[0], meta, rows * nblk, dt, acc_type(dt), bool(include_pad),
                        serial(rows * w * window[0] * window[1]))


_NO_WINDOW = (1, 1, 1, 1, 0, 0, 1, 1)


def adaptive(out, x: tuple, dims: tuple) -> None:
    """`out [N, C, Ho, Wo]` = adaptive average pooling of the view `x`."""
    n, c, h, w, ho, wo = dims
    meta, nblk = window_meta(Window.ADAPTIVE, dims, _NO_WINDOW, (x[1], x[2]), wo)
    rows = n * c * ho
    dt = out.dtype
    adaptive_k(out, x[0], meta, rows * nblk, dt, acc_type(dt), serial(n * c * h * w))


def adaptive_backward(gx, g: tuple, dims: tuple) -> None:
    """`gx [N, C, H, W]` = adaptive pooling's input gradient from the view `g`."""
    n, c, h, w = dims[:4]
    meta, nblk = window_meta(Window.ADAPTIVE_BACKWARD, dims, _NO_WINDOW, (g[1], g[2]), w)
    rows = n * c * h
    dt = gx.dtype
    adaptive_backward_k(gx, g[0], meta, rows * nblk, dt, acc_type(dt), serial(n * c * h * w))
