"""A conv's column matrix (im2col) and the fold of tap planes back onto the
output grid (col2im): NumPy on the CPU arch's device buffers, or the
kernels of burnbook.kernels.conv (`SETTINGS.columns`).

On the CPU arch these copies and adds are memory-bound, and NumPy's run as
vector loads and stores where Taichi's scalar loops do not (Taichi's LLVM
code reloads a buffer's address after every store): so by default
(`columns="host"`, CPU arch only, where device memory is host memory) they
run here, as NumPy copies and adds, one kernel tap at a time, on views of
the device buffers. They add in the kernels' order, so they give the same
results. GPU archs (and `BURNBOOK_TAICHI_COLUMNS=kernel`) run the kernels.
Argument conventions are the kernels' (burnbook/kernels/conv.py).
"""

from __future__ import annotations

import numpy as np

from burnbook._helper_thread import halves
from burnbook.kernels import conv

from ..launcher import host_view, host_writable, numpy_dtype
from ..settings import SETTINGS

__all__ = ["HALVES_FROM", "col2im", "col2im_host", "grid", "im2col", "on_host", "widen_host"]


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
    return host_view(buf, numpy_dtype(buf), shape, strides, offset, write)


def _taps_from(xp: np.ndarray, i: int, j: int, window: tuple, ho: int, wo: int) -> np.ndarray:
    """The values tap (i, j) reads from the padded input `xp [..., Hp, Wp]`: `[..., Ho, Wo]`."""
    _, _, sh, sw, _, _, dh, dw = window
    return xp[..., i * dh : i * dh + (ho - 1) * sh + 1 : sh, j * dw : j * dw + (wo - 1) * sw + 1 : sw]


def _padded(x: np.ndarray, ph: int, pw: int, hp: int, wp: int) -> np.ndarray:
    """`x [N, C, H, W]` inside a zero frame `[N, C, hp, wp]`, at (ph, pw);
    `x` itself where no frame is needed. A zero-filled array and one slice
    copy: np.pad's generic path costs ~10x more on the small planes of a
    batch-1 forward pass (the NdArray backend pads the same way)."""
    n, c, h, w = x.shape
    if (ph, pw, hp, wp) == (0, 0, h, w):
        return x
    out = np.zeros((n, c, hp, wp), dtype=x.dtype)
    out[:, :, ph : ph + h, pw : pw + w] = x
    return out


def _im2col_host(cols, x: tuple, dims: tuple, window: tuple, image_stride: int, row_stride: int,
                 ones_every: int) -> None:
    n, c, h, w, ho, wo = dims
    kh, kw, sh, sw, ph, pw, dh, dw = window
    hp, wp = max(h + ph, (ho - 1) * sh + (kh - 1) * dh + 1), max(w + pw, (wo - 1) * sw + (kw - 1) * dw + 1)
    xp = _padded(_host(x[0], (n, c, h, w), x[1], x[2]), ph, pw, hp, wp)
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
    """`burnbook.kernels.conv.im2col` (its docstring gives the layout of
    `cols`): NumPy copies where `on_host()`, else the kernel, with the same
    values."""
    if on_host():
        return _im2col_host(cols, x, dims, window, image_stride, row_stride, ones_every)
    conv.im2col(cols, x, dims, window, image_stride, row_stride, ones_every)


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
    (burnbook.kernels.conv.COL2IM_LANES; a test compares them), else NumPy
    adds where `on_host()`, or the kernels' `col2im_lanes` picks a variant."""
    if lanes is None and on_host():
        return col2im_host(out, cols, bias, dims, window)
    conv.col2im(out, cols, bias, dims, window, lanes)
