"""Convolution kernels: im2col, col2im and a direct convolution, for 2-D
windows (the 1-D ops run as 2-D with a height of 1).

A conv is `im2col` (the column matrix, read from the strided input view with
zeros where a window covers padding) and one batched matmul. A transposed
conv (also the input gradient of a conv) is one matmul into per-tap planes
and `col2im`. `direct` computes the conv from the input and weight without
a column matrix: cheaper when the column matrix would be most of the work
(few input channels, tiny outputs). The backend puts these together
(burnbook/backend/taichi/ops/module_ops.py).

Geometry travels in window meta buffers (window.py), so each kernel
compiles once per dtype; a task does its index arithmetic per plane.
`direct` and `col2im` add tap by tap into the task's own output block with
plain loads and stores (no atomics, a fixed order), in the output's dtype;
inner loops walk the sub-range that falls inside the input (`span`), with no
bounds test per element.

On the CPU arch, Taichi's LLVM code reloads each buffer's address after
every store to a buffer (it cannot tell them apart) and so never vectorises
such loops: a store costs several loads. `col2im` therefore gathers 16 (or
8) outputs of a row at a time instead, their sums held in registers over
every tap and each output stored once (the `lanes` variants, chosen on the
host), in the same order as adding tap by tap. For the same reason the
backend builds columns with NumPy on the CPU arch by default
(burnbook/backend/taichi/ops/columns.py), in the kernels' order, so with
the same results.
"""

import taichi as ti

from .context import CONTEXT, Kernel, serial
from .layout import loop_shift
from .window import (C_, DH, DW, E1, E2, E3, H_, HO, KH, KW, PH, PW, SH, SW, W_, WO, XC, XH, XN, XOFF, XW, Window,
                     ceil_div, exact_div, span, window_meta, window_task)


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
        runs, row0, row1, ow0, ow1 = window_task(meta, u, tshift, WO)
        if not runs:
            continue
        wo = meta[WO]
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
        runs, row0, row1, ow0, ow1 = window_task(meta, u, tshift, WO)
        if not runs:
            continue
        wo = meta[WO]
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
        runs, row0, row1, ow0, ow1 = window_task(meta, u, tshift, WO)
        if not runs:
            continue
        wo = meta[WO]
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


im2col_k = Kernel(_im2col)
direct_k = Kernel(_direct)
col2im_k = Kernel(_col2im)


def im2col(cols, x: tuple, dims: tuple, window: tuple, image_stride: int, row_stride: int,
           ones_every: int = 0) -> None:
    """Fill `cols` with the windows of the view `x` = (buffer, strides [4],
    offset) of shape dims[:4], one row (c, i, j) per input channel and kernel
    tap with the Ho*Wo window values; row (c, i, j) of image n starts at
    `n * image_stride + ((c*kh + i)*kw + j) * row_stride`. With `ones_every`
    = C/g, each group's rows are followed by a row of ones (rows shift down
    by one per group before them)."""
    n, c, _, _, ho, wo = dims
    kh, kw = window[:2]
    rows = n * c * kh * kw * ho
    meta, ntask = window_meta(Window.IM2COL, dims, window, (x[1], x[2]), rows, wo,
                              (image_stride, row_stride, ones_every))
    ser = serial(rows * wo)
    im2col_k.launch(cols, x[0], meta, ntask, loop_shift(ntask, ser), cols.dtype, ones_every > 0, ser)


def direct(out, x: tuple, weight, bias, dims: tuple, window: tuple, o: int, groups: int) -> None:
    """`out [N, O, Ho, Wo]` = conv of the view `x` with the contiguous `weight
    [O, C/g, kh, kw]` buffer (plus the `bias [O]` buffer unless None)."""
    n, c, _, _, ho, wo = dims
    rows = n * o * ho
    meta, ntask = window_meta(Window.DIRECT, dims, window, (x[1], x[2]), rows, wo, (o, c // groups, o // groups))
    work = rows * wo * (c // groups) * window[0] * window[1]
    ser = serial(work)
    direct_k.launch(out, x[0], weight, out if bias is None else bias, meta, ntask, loop_shift(ntask, ser), out.dtype,
             bias is not None, ser)


COL2IM_LANES = (0, 8, 16)
"""`_col2im`'s variants: 0 adds tap by tap into the output; 8 or 16 gather
that many outputs at a time (CPU arch, unit width stride)."""


def col2im_lanes(wo: int, sw: int) -> int:
    """The `_col2im` variant for output rows of `wo` with width stride `sw`.
    Gathering 16 outputs at a time measured about twice as fast as adding tap
    by tap on the CPU where rows hold 16 or more (8: a little faster from 8),
    and twice as slow on shorter rows; a GPU thread owns one output."""
    if CONTEXT.settings.gpu or sw != 1:
        return 0
    return 16 if wo >= 16 else 8 if wo >= 8 else 0


def col2im(out, cols, bias, dims: tuple, window: tuple, lanes: int | None = None) -> None:
    """`out [N, C, Ho, Wo]` = the sum of the tap planes `cols [N, C, kh, kw,
    H, W]` placed on the output grid (a transposed conv), plus `bias [C]`
    unless None; dims = (N, C, H, W, Ho, Wo). `lanes` forces a kernel variant
    (COL2IM_LANES; a test compares them), else `col2im_lanes` picks one."""
    n, c, _, _, ho, wo = dims
    rows = n * c * ho
    if lanes is None:
        lanes = col2im_lanes(wo, window[3])
    elif lanes not in COL2IM_LANES or (lanes and window[3] != 1):
        raise ValueError(f"col2im: lanes={lanes} for a width stride of {window[3]}; expected one of "
                         f"{COL2IM_LANES} (0 unless the stride is 1)")
    meta, ntask = window_meta(Window.COL2IM, dims, window, ((0, 0, 0, 0), 0), rows, wo)
    ser = serial(rows * wo * window[0] * window[1])
    col2im_k.launch(out, cols, out if bias is None else bias, meta, ntask, loop_shift(ntask, ser), out.dtype,
             bias is not None, lanes, ser)
