"""Pooling kernels over 2-D windows (1-D pools run with a height of 1): max
pooling with indices, average and adaptive average pooling, and the
backward passes of the average pools.

A task owns blocks of output rows (forward) or of input rows (the average
pools' backward passes, which add each covering window's share into them),
so no kernel needs atomics, and sums run in a fixed order. Window bounds are
worked out per row or per window, not tested per element. Max pooling's
backward is a scatter-add of each output's gradient at its index (index.py's
kernel). Geometry travels in the window meta buffers of window.py; each kernel
compiles once per dtype and variant. On the CPU arch the adaptive kernels
handle 8 (or 4) even bins of a row at a time (`lanes`, as conv.py's col2im:
sums in registers, each element stored once).
"""

import taichi as ti

from .context import CONTEXT, Kernel, serial
from .layout import loop_shift
from .window import (C_, DH, DW, E1, E2, H_, HO, KH, KW, PH, PW, SH, SW, W_, WO, XC, XH, XN, XOFF, XW, Window,
                     acc_type, ceil_div, exact_div, window_meta, window_task)


@ti.func
def _plane_base(meta: ti.template(), plane):
    """Where plane `plane` = n * C + c of the strided view starts."""
    c = meta[C_]
    return meta[XOFF] + ti.raw_div(plane, c) * meta[XN] + ti.raw_mod(plane, c) * meta[XC]


@ti.kernel
def _max_pool(out: ti.types.ndarray(), idx: ti.types.ndarray(), x: ti.types.ndarray(), meta: ti.types.ndarray(),
              ntask: ti.i32, tshift: ti.i32, dt: ti.template(), acc_t: ti.template(), with_idx: ti.template(),
              serial: ti.template()):
    # PyTorch's rule: the first valid element starts the max; a later one wins
    # if larger or NaN. Indices are h * W + w in the input plane.
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        runs, row0, row1, ow0, ow1 = window_task(meta, u, tshift, WO)
        if not runs:
            continue
        wo = meta[WO]
        ho, kh, kw, h, w = meta[HO], meta[KH], meta[KW], meta[H_], meta[W_]
        sw, pw, dh, dw, xh, xw = meta[SW], meta[PW], meta[DH], meta[DW], meta[XH], meta[XW]
        for plane in range(ti.raw_div(row0, ho), ti.raw_div(row1 - 1, ho) + 1):
            base = _plane_base(meta, plane)
            for oh in range(ti.max(row0 - plane * ho, 0), ti.min(row1 - plane * ho, ho)):
                row = plane * ho + oh
                ih0 = oh * meta[SH] - meta[PH]
                for ow in range(ow0, ow1):
                    iw0 = ow * sw - pw
                    best = ti.cast(0, acc_t)
                    at = -1
                    for i in range(kh):
                        ih = ih0 + i * dh
                        if 0 <= ih < h:
                            for j in range(kw):
                                iw = iw0 + j * dw
                                if 0 <= iw < w:
                                    v = ti.cast(x[base + ih * xh + iw * xw], acc_t)
                                    if at < 0 or v > best or ti.math.isnan(v):
                                        best = v
                                        at = ih * w + iw
                    out[row * wo + ow] = ti.cast(best, dt)
                    if ti.static(with_idx):
                        idx[row * wo + ow] = ti.cast(at, ti.i64)


@ti.func
def _valid(start, k, size):
    """How many of the k positions from `start` lie in [0, size)."""
    return ti.max(ti.min(start + k, size) - ti.max(start, 0), 0)


@ti.kernel
def _avg_pool(out: ti.types.ndarray(), x: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32, tshift: ti.i32,
              dt: ti.template(), acc_t: ti.template(), include_pad: ti.template(), serial: ti.template()):
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        runs, row0, row1, ow0, ow1 = window_task(meta, u, tshift, WO)
        if not runs:
            continue
        wo = meta[WO]
        ho, kh, kw, h, w = meta[HO], meta[KH], meta[KW], meta[H_], meta[W_]
        sw, pw, xh, xw = meta[SW], meta[PW], meta[XH], meta[XW]
        for plane in range(ti.raw_div(row0, ho), ti.raw_div(row1 - 1, ho) + 1):
            base = _plane_base(meta, plane)
            for oh in range(ti.max(row0 - plane * ho, 0), ti.min(row1 - plane * ho, ho)):
                row = plane * ho + oh
                ih0 = oh * meta[SH] - meta[PH]
                i0, i1 = ti.max(0, -ih0), ti.min(kh, h - ih0)  # the window's rows inside the input
                for ow in range(ow0, ow1):
                    iw0 = ow * sw - pw
                    j0, j1 = ti.max(0, -iw0), ti.min(kw, w - iw0)
                    acc = ti.cast(0, acc_t)
                    for i in range(i0, i1):
                        src = base + (ih0 + i) * xh + iw0 * xw
                        for j in range(j0, j1):
                            acc += ti.cast(x[src + j * xw], acc_t)
                    count = kh * kw
                    if ti.static(not include_pad):
                        count = ti.max(ti.max(i1 - i0, 0) * ti.max(j1 - j0, 0), 1)
                    out[row * wo + ow] = ti.cast(acc / ti.cast(count, acc_t), dt)


@ti.kernel
def _avg_pool_backward(gx: ti.types.ndarray(), g: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32, tshift: ti.i32,
                       dt: ti.template(), acc_t: ti.template(), include_pad: ti.template(),
                       serial: ti.template()):
    # gx [N, C, H, W] contiguous; g the strided output-gradient view. Output
    # (oh, ow) spreads over inputs (oh*sh - ph + i, ow*sw - pw + j). Rows are
    # (n, c, ih); each task adds into its own input block, window by window.
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        runs, row0, row1, iw0, iw1 = window_task(meta, u, tshift, W_)
        if not runs:
            continue
        w = meta[W_]
        ho, wo, kh, kw, h = meta[HO], meta[WO], meta[KH], meta[KW], meta[H_]
        sh, sw, ph, pw, gh, gw = meta[SH], meta[SW], meta[PH], meta[PW], meta[XH], meta[XW]
        for plane in range(ti.raw_div(row0, h), ti.raw_div(row1 - 1, h) + 1):
            base = _plane_base(meta, plane)
            for ih in range(ti.max(row0 - plane * h, 0), ti.min(row1 - plane * h, h)):
                row = plane * h + ih
                dst = row * w
                for iw in range(iw0, iw1):
                    gx[dst + iw] = ti.cast(0, dt)
                for i in range(kh):
                    ok, oh = exact_div(ih + ph - i, sh, ho)
                    if ok:
                        rows = _valid(oh * sh - ph, kh, h)
                        for j in range(kw):
                            off = j - pw
                            lo = ti.max(0, ceil_div(iw0 - off, sw))
                            hi = ti.min(wo, ceil_div(iw1 - off, sw))
                            for ow in range(lo, hi):
                                count = kh * kw
                                if ti.static(not include_pad):
                                    count = ti.max(rows * _valid(ow * sw - pw, kw, w), 1)
                                v = ti.cast(g[base + oh * gh + ow * gw], acc_t) / ti.cast(count, acc_t)
                                k = dst + ow * sw + off
                                gx[k] = ti.cast(ti.cast(gx[k], acc_t) + v, dt)


@ti.func
def _bin(i, size, out):
    """Adaptive pooling's input range [start, end) of output i."""
    return ti.raw_div(i * size, out), ti.raw_div((i + 1) * size + out - 1, out)


@ti.func
def _bin_k(i, size, out, k):
    """`_bin`, without a division when every bin is `k` long (k = 0: uneven)."""
    start, end = i * k, i * k + k
    if k == 0:
        start, end = _bin(i, size, out)
    return start, end


@ti.kernel
def _adaptive(out: ti.types.ndarray(), x: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32, tshift: ti.i32,
              dt: ti.template(), acc_t: ti.template(), lanes: ti.template(), serial: ti.template()):
    # With `lanes` and even bins, `lanes` outputs of a row are summed at a
    # time, in registers (the same order, so the same sums): far fewer
    # trips through the short window loops.
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        runs, row0, row1, ow0, ow1 = window_task(meta, u, tshift, WO)
        if not runs:
            continue
        wo = meta[WO]
        ho, h, w, xh, xw = meta[HO], meta[H_], meta[W_], meta[XH], meta[XW]
        kh, kw = meta[E1], meta[E2]
        for plane in range(ti.raw_div(row0, ho), ti.raw_div(row1 - 1, ho) + 1):
            base = _plane_base(meta, plane)
            for oh in range(ti.max(row0 - plane * ho, 0), ti.min(row1 - plane * ho, ho)):
                row = plane * ho + oh
                hs, he = _bin_k(oh, h, ho, kh)
                chunked = False
                if ti.static(lanes > 0):
                    chunked = kh > 0 and kw > 0 and ow1 - ow0 >= lanes
                    if chunked:
                        count = ti.cast(kh * kw, acc_t)
                        for chunk in range(ti.raw_div(ow1 - ow0 + lanes - 1, lanes)):
                            c = ti.min(ow0 + chunk * lanes, ow1 - lanes)  # the last chunk ends at ow1
                            acc = ti.Vector([ti.cast(0, acc_t)] * lanes)
                            for ih in range(hs, he):
                                src = base + ih * xh + c * kw * xw
                                for j in range(kw):
                                    for lane in ti.static(range(lanes)):
                                        acc[lane] += ti.cast(x[src + (lane * kw + j) * xw], acc_t)
                            for lane in ti.static(range(lanes)):
                                out[row * wo + c + lane] = ti.cast(acc[lane] / count, dt)
                if not chunked:
                    for ow in range(ow0, ow1):
                        ws, we = _bin_k(ow, w, wo, kw)
                        acc = ti.cast(0, acc_t)
                        for ih in range(hs, he):
                            for iw in range(ws, we):
                                acc += ti.cast(x[base + ih * xh + iw * xw], acc_t)
                        out[row * wo + ow] = ti.cast(acc / ti.cast((he - hs) * (we - ws), acc_t), dt)


@ti.kernel
def _adaptive_backward(gx: ti.types.ndarray(), g: ti.types.ndarray(), meta: ti.types.ndarray(), ntask: ti.i32, tshift: ti.i32,
                       dt: ti.template(), acc_t: ti.template(), lanes: ti.template(), serial: ti.template()):
    # Output bin o covers input i exactly when floor(i*Ho/H) <= o < ceil((i+1)*Ho/H).
    # Rows are (n, c, ih); each task adds every covering bin into its own block.
    # With `lanes`, even bins and whole rows, one bin covers each input: the
    # shares of `lanes` bins are stored at a time, each element once.
    ti.loop_config(serialize=serial)
    for u in range(ntask << tshift):
        runs, row0, row1, iw0, iw1 = window_task(meta, u, tshift, W_)
        if not runs:
            continue
        w = meta[W_]
        ho, wo, h, gh, gw = meta[HO], meta[WO], meta[H_], meta[XH], meta[XW]
        kh, kw = meta[E1], meta[E2]
        for plane in range(ti.raw_div(row0, h), ti.raw_div(row1 - 1, h) + 1):
            base = _plane_base(meta, plane)
            for ih in range(ti.max(row0 - plane * h, 0), ti.min(row1 - plane * h, h)):
                row = plane * h + ih
                dst = row * w
                if ti.static(lanes > 0):
                    if kh > 0 and kw > 0 and iw0 == 0 and iw1 == w and wo >= lanes:
                        src = base + ti.raw_div(ih, kh) * gh
                        count = ti.cast(kh * kw, acc_t)
                        for chunk in range(ti.raw_div(wo + lanes - 1, lanes)):
                            c = ti.min(chunk * lanes, wo - lanes)  # the last chunk ends at wo
                            v = ti.Vector([ti.cast(ti.cast(g[src + (c + lane) * gw], acc_t) / count, dt)
                                           for lane in ti.static(range(lanes))])
                            at = dst + c * kw
                            for j in range(kw):
                                for lane in ti.static(range(lanes)):
                                    gx[at + lane * kw + j] = v[lane]
                        continue
                for iw in range(iw0, iw1):
                    gx[dst + iw] = ti.cast(0, dt)
                ohs, ohe = _bin(ih, ho, h)
                ow_first = ti.raw_div(iw0 * wo, w)
                ow_end = ti.raw_div(iw1 * wo + w - 1, w)
                for oh in range(ohs, ohe):
                    hs, he = _bin_k(oh, h, ho, meta[E1])
                    for ow in range(ow_first, ow_end):
                        ws, we = _bin_k(ow, w, wo, meta[E2])
                        v = ti.cast(g[base + oh * gh + ow * gw], acc_t) / ti.cast((he - hs) * (we - ws), acc_t)
                        for iw in range(ti.max(ws, iw0), ti.min(we, iw1)):
                            gx[dst + iw] = ti.cast(ti.cast(gx[dst + iw], acc_t) + v, dt)


max_pool_k = Kernel(_max_pool)
avg_pool_k = Kernel(_avg_pool)
avg_pool_backward_k = Kernel(_avg_pool_backward)
adaptive_k = Kernel(_adaptive)
adaptive_backward_k = Kernel(_adaptive_backward)


def max_pool(out, idx, x: tuple, dims: tuple, window: tuple) -> None:
    """`out [N, C, Ho, Wo]` = window maxima of the view `x` = (buffer, strides,
    offset); `idx` (i64, same shape) gets their flat positions unless None."""
    n, c, _, _, ho, wo = dims
    rows = n * c * ho
    meta, ntask = window_meta(Window.MAX_POOL, dims, window, (x[1], x[2]), rows, wo)
    dt = out.dtype
    ser = serial(rows * wo * window[0] * window[1])
    max_pool_k.launch(out, out if idx is None else idx, x[0], meta, ntask, loop_shift(ntask, ser), dt, acc_type(dt),
               idx is not None, ser)


def avg_pool(out, x: tuple, dims: tuple, window: tuple, include_pad: bool) -> None:
    """`out [N, C, Ho, Wo]` = window means of the view `x`."""
    n, c, _, _, ho, wo = dims
    rows = n * c * ho
    meta, ntask = window_meta(Window.AVG_POOL, dims, window, (x[1], x[2]), rows, wo)
    dt = out.dtype
    ser = serial(rows * wo * window[0] * window[1])
    avg_pool_k.launch(out, x[0], meta, ntask, loop_shift(ntask, ser), dt, acc_type(dt), bool(include_pad), ser)


def avg_pool_backward(gx, g: tuple, dims: tuple, window: tuple, include_pad: bool) -> None:
    """`gx [N, C, H, W]` = avg_pool's input gradient from the view `g` of the
    output gradient [N, C, Ho, Wo]."""
    n, c, h, w = dims[:4]
    rows = n * c * h
    meta, ntask = window_meta(Window.AVG_POOL_BACKWARD, dims, window, (g[1], g[2]), rows, w)
    dt = gx.dtype
    ser = serial(rows * w * window[0] * window[1])
    avg_pool_backward_k.launch(gx, g[0], meta, ntask, loop_shift(ntask, ser), dt, acc_type(dt), bool(include_pad), ser)


_NO_WINDOW = (1, 1, 1, 1, 0, 0, 1, 1)
ADAPTIVE_LANES = (0, 4, 8)
"""The adaptive kernels' variants: 0 walks each output's window; 4 or 8 sum
(or spread) that many even bins of a row at a time (CPU arch)."""


def adaptive_lanes(wo: int) -> int:
    """The adaptive kernels' variant for `wo` outputs a row: on the CPU, 8
    bins at a time measured about twice as fast (forward and backward) as
    one window at a time; a GPU thread owns one element."""
    if CONTEXT.settings.gpu:
        return 0
    return 8 if wo >= 8 else 4 if wo >= 4 else 0


def _lanes(lanes: int | None, wo: int) -> int:
    if lanes is None:
        return adaptive_lanes(wo)
    if lanes not in ADAPTIVE_LANES:
        raise ValueError(f"adaptive pooling: lanes={lanes}, expected one of {ADAPTIVE_LANES}")
    return lanes


def _even_bins(dims: tuple) -> tuple:
    """Adaptive pooling's bin length along H and W where the output divides
    the input (0 where bins are uneven): the kernels' extras E1, E2."""
    _, _, h, w, ho, wo = dims
    return (h // ho if h % ho == 0 else 0, w // wo if w % wo == 0 else 0)


def adaptive(out, x: tuple, dims: tuple, lanes: int | None = None) -> None:
    """`out [N, C, Ho, Wo]` = adaptive average pooling of the view `x`;
    `lanes` forces a variant (ADAPTIVE_LANES), else `adaptive_lanes` picks."""
    n, c, h, w, ho, wo = dims
    lanes = _lanes(lanes, wo)
    rows = n * c * ho
    meta, ntask = window_meta(Window.ADAPTIVE, dims, _NO_WINDOW, (x[1], x[2]), rows, wo, _even_bins(dims))
    dt = out.dtype
    ser = serial(n * c * h * w)
    adaptive_k.launch(out, x[0], meta, ntask, loop_shift(ntask, ser), dt, acc_type(dt), lanes, ser)


def adaptive_backward(gx, g: tuple, dims: tuple, lanes: int | None = None) -> None:
    """`gx [N, C, H, W]` = adaptive pooling's input gradient from the view `g`
    (`lanes` as in `adaptive`)."""
    n, c, h, w, _, wo = dims
    lanes = _lanes(lanes, wo)
    rows = n * c * h
    meta, ntask = window_meta(Window.ADAPTIVE_BACKWARD, dims, _NO_WINDOW, (g[1], g[2]), rows, w, _even_bins(dims))
    dt = gx.dtype
    ser = serial(n * c * h * w)
    adaptive_backward_k.launch(gx, g[0], meta, ntask, loop_shift(ntask, ser), dt, acc_type(dt), lanes, ser)
