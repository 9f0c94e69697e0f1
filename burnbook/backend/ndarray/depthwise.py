"""Depthwise convolution on NumPy (one input channel per group), without im2col.

With one input channel per group, im2col + a batched matmul is C tiny GEMMs
of one row each (slow in BLAS) on a copy kh*kw times x's size. Instead each
kernel tap is a broadcast multiply-add of one shifted *view* of x: the
stride phases of x are split once (`_phases`) so that every tap is a
contiguous run of a flat plane, as in `im2col._row_taps`. The same layout
serves the forward pass, the weight gradient and the matching
conv_transpose; a small output plane runs channels-last instead
(`_depthwise_conv_channels_last`).
"""

from __future__ import annotations

import numpy as np

from .cache import cached


def _phase_blocks(h: int, w: int, pads, stride):
    """How an `[H, W]` plane zero-padded by `pads` splits by stride phase:
    (Hq, Wq), each phase's size, and per phase (a, b) (the padded rows a::sh
    and columns b::sw) the block of it that x fills and x's rows and columns
    that fill it, as ((a, b), (phase rows, phase cols), (x rows, x cols))."""
    (top, bottom), (left, right), (sh, sw) = *pads, stride
    hq, wq = -(-(h + top + bottom) // sh), -(-(w + left + right) // sw)
    blocks = []
    for a in range(sh):
        y0 = (a - top) % sh                  # x's first row in phase a
        r0, rows = (y0 + top) // sh, len(range(y0, h, sh))
        for b in range(sw):
            x0 = (b - left) % sw
            q0, cols = (x0 + left) // sw, len(range(x0, w, sw))
            blocks.append(((a, b), (slice(r0, r0 + rows), slice(q0, q0 + cols)),
                           (slice(y0, None, sh), slice(x0, None, sw))))
    return (hq, wq), blocks


def _phases(x: np.ndarray, pads, stride) -> tuple[np.ndarray, int, int]:
    """`x [N, C, H, W]` zero-padded by `pads` and split by stride phase into
    `[N, C, sh*sw, Lq]` (phase (a, b) holds the padded rows a::sh and columns
    b::sw as a flat `[Hq, Wq]` plane, one zero row after it), and (Hq, Wq).
    Tap (i, j) of output row r, column q reads phase (i*dh % sh, j*dw % sw)
    at row i*dh // sh + r, column j*dw // sw + q. One copy of x in all."""
    n, c, h, w = x.shape
    (hq, wq), blocks = _phase_blocks(h, w, pads, stride)
    buf = np.zeros((n, c, *stride, hq + 1, wq), dtype=x.dtype)
    for (a, b), (rows, cols), (x_rows, x_cols) in blocks:
        buf[:, :, a, b, rows, cols] = x[:, :, x_rows, x_cols]
    return buf.reshape(n, c, stride[0] * stride[1], (hq + 1) * wq), hq, wq


def _tap_phases(kernel, stride, dilation):
    """(i, j, phase, row, column) of each kernel tap: the stride phase it
    reads and its offset there, in `_phase_blocks`' layout."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    for i in range(kh):
        for j in range(kw):
            r, s = i * dh, j * dw
            yield i, j, (r % sh) * sw + s % sw, r // sh, s // sw


def _tap_runs(kernel, stride, dilation, wq: int):
    """(i, j, phase, offset) of each kernel tap in `_phases`' flat planes."""
    for i, j, phase, row, col in _tap_phases(kernel, stride, dilation):
        yield i, j, phase, row * wq + col


def _depthwise_conv(x: np.ndarray, weight: np.ndarray, pads, stride, dilation, out) -> np.ndarray:
    """conv2d of x padded by `pads` when every group has one input channel:
    `[N, O, Ho, Wq]`, the columns past Wo garbage (the caller crops)."""
    n, g = x.shape[:2]
    o, _, kh, kw = weight.shape
    m, (ho, _) = o // g, out
    flat, _, wq = _phases(x, pads, stride)
    length = ho * wq
    w = weight.reshape(g, m, kh, kw).astype(np.result_type(x, weight), copy=False)
    # Channel multiplier 1 gets 3-D operands: NumPy's broadcasting over a
    # 4-D [N, g, 1, L] x [g, m, 1] pair runs several times slower.
    acc = np.empty((n, g, length) if m == 1 else (n, g, m, length), dtype=w.dtype)
    tmp = np.empty_like(acc)
    for t, (i, j, ph, off) in enumerate(_tap_runs((kh, kw), stride, dilation, wq)):
        if m == 1:
            view, wt = flat[:, :, ph, off : off + length], w[:, 0, i, j, None]
        else:
            view, wt = flat[:, :, ph, None, off : off + length], w[:, :, i, j, None]
        np.multiply(view, wt, out=acc if t == 0 else tmp)
        if t:
            acc += tmp
    return acc.reshape(n, o, ho, wq)


# Output planes up to this many pixels run channels-last instead
# (`_depthwise_conv_channels_last`): there each tap is a multiply-add over
# Ho runs of Wo*C contiguous values, where the planar form does C runs of
# Ho*Wq (garbage columns included): far fewer, longer runs on the small
# planes of mobilenet's later blocks; on a 112x112 plane the planar form wins.
_CHANNELS_LAST_PLANE = 1024


def _depthwise_conv_channels_last(x: np.ndarray, weight: np.ndarray, pads, stride, dilation,
                                  out) -> np.ndarray:
    """conv2d of x padded by `pads` with one input and one output channel
    per group, computed in `[N, Ho, Wo*C]` order: `[N, C, Ho, Wo]`, contiguous.

    x is copied once, channels-last and split by stride phase (as `_phases`
    does planes), so that every tap reads, for each output row, one
    contiguous run of Wo*C values; the taps' weights are tiled Wo times to
    match (cached per weight array)."""
    n, c, h, w = x.shape
    kh, kw = weight.shape[2:]
    (sh, sw), (ho, wo) = stride, out
    dt = np.result_type(x, weight)
    (hq, wq), blocks = _phase_blocks(h, w, pads, stride)
    phases = np.zeros((sh * sw, n, hq, wq, c), dtype=dt)
    xt = x.transpose(0, 2, 3, 1)
    for (a, b), (rows, cols), (x_rows, x_cols) in blocks:
        phases[a * sw + b, :, rows, cols] = xt[:, x_rows, x_cols]
    flat = phases.reshape(sh * sw, n, hq, wq * c)
    taps = cached(
        f"depthwise {wo} {dt.str}", (weight,),
        lambda: (np.tile(np.ascontiguousarray(weight.reshape(c, kh * kw).T, dtype=dt), (1, wo)),))[0]
    acc = np.empty((n, ho, wo * c), dtype=dt)
    tmp = np.empty_like(acc)
    for i, j, phase, row, col in _tap_phases((kh, kw), stride, dilation):
        view = flat[phase, :, row: row + ho, col * c: (col + wo) * c]
        if i == j == 0:
            np.multiply(view, taps[0], out=acc)
        else:
            np.multiply(view, taps[i * kw + j], out=tmp)
            acc += tmp
    return np.ascontiguousarray(acc.reshape(n, ho, wo, c).transpose(0, 3, 1, 2))


def _depthwise_weight_grad(x: np.ndarray, output_grad: np.ndarray, pads, kernel, stride,
                           dilation) -> np.ndarray:
    """conv2d's weight gradient `[O, 1, kh, kw]` when every group has one
    input channel (x padded by `pads`): per tap, a batched dot product of
    the output grad with the tap's view of x (no im2col)."""
    n, o, ho, wo = output_grad.shape
    g = x.shape[1]
    m, (kh, kw) = o // g, kernel
    flat, _, wq = _phases(x, pads, stride)
    length = ho * wq
    gy = np.zeros((n, g, m, ho, wq), dtype=output_grad.dtype)  # zero where the runs hold garbage
    gy[..., :wo] = output_grad.reshape(n, g, m, ho, wo)
    gy = gy.reshape(n, g, m, length)
    gw = np.empty((g, m, kh, kw), dtype=np.result_type(x, output_grad))
    for i, j, ph, off in _tap_runs(kernel, stride, dilation, wq):
        view = flat[:, :, ph, off : off + length, None]              # [N, g, L, 1]
        gw[:, :, i, j] = np.matmul(gy, view)[..., 0].sum(axis=0)
    return gw.reshape(o, 1, kh, kw)


def _depthwise_transpose(x: np.ndarray, weight: np.ndarray, groups: int, stride, dilation, full) -> np.ndarray:
    """conv_transpose2d's uncropped `[N, G, Hf, Wf]` output when every group
    has one output channel: each tap adds x, times the tap's weights (summed
    over the group's inputs), as one contiguous run onto the output's stride
    phases (`_phases`' layout), which are interleaved once at the end."""
    n, ci, h, w = x.shape
    kh, kw = weight.shape[2:]
    (sh, sw), (hf, wf), cig = stride, full, ci // groups
    hq, wq = -(-hf // sh), -(-wf // sw)
    length = h * wq
    dtype = np.result_type(x, weight)
    # x's rows widened with zeros to Wq: a run's wrapped tail then adds zeros.
    xw = np.zeros((n, groups, cig, h, wq), dtype=dtype)
    xw[..., :w] = x.reshape(n, groups, cig, h, w)
    xw = xw.reshape(n, groups, cig, length)
    wt = weight.reshape(groups, cig, kh, kw).astype(dtype, copy=False)
    flat = np.zeros((n, groups, sh * sw, (hq + 1) * wq), dtype=dtype)
    tmp = np.empty((n, groups, length), dtype=dtype)
    for i, j, ph, off in _tap_runs((kh, kw), stride, dilation, wq):
        if cig == 1:
            np.multiply(xw[:, :, 0], wt[:, 0, i, j, None], out=tmp)
        else:
            np.matmul(wt[:, None, :, i, j], xw, out=tmp[:, :, None])
        flat[:, :, ph, off : off + length] += tmp
    if (sh, sw) == (1, 1):
        return flat.reshape(n, groups, hq + 1, wq)[:, :, :hf, :wf]
    grid = flat.reshape(n, groups, sh, sw, hq + 1, wq)[..., :hq, :].transpose(0, 1, 4, 2, 5, 3)
    return grid.reshape(n, groups, hq * sh, wq * sw)[:, :, :hf, :wf]
