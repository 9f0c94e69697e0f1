"""Padding, sliding windows and im2col on NumPy, for NdArray's convolutions.

A conv is one im2col copy, filled one kernel tap at a time, and one batched
matmul. At stride 1 `_row_taps` copies whole flattened rows (a few garbage
columns per row, cropped afterwards) instead of Wo-long strided runs; a conv
on a small plane is one GEMM over the whole batch (`_conv_batch_folded`).
Windows are strided *views* (`_strided`), read only, never written.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..module_options import conv_transpose_output_size


def _pad(x: np.ndarray, pads, value: float = 0.0) -> np.ndarray:
    """`x [N, C, H, W]` padded by ((top, bottom), (left, right))."""
    (t, b), (l, r) = pads
    if t == b == l == r == 0:
        return x
    n, c, h, w = x.shape
    # A filled buffer and one slice copy: np.pad's generic path costs ~10x
    # more on the small planes of a batch-1 forward pass.
    out = np.full((n, c, h + t + b, w + l + r), value, dtype=x.dtype)
    out[:, :, t : t + h, l : l + w] = x
    return out


def _strided(a: np.ndarray, shape, strides) -> np.ndarray:
    """A view of `a`'s memory with `shape` and `strides` (bytes), to be read
    only. NumPy's array constructor makes it without `as_strided`'s Python
    detour, and checks that it stays inside the buffer; it needs a
    contiguous `a`, anything else goes through `as_strided`."""
    if a.flags.c_contiguous:
        return np.ndarray(shape, a.dtype, a, 0, strides)
    return as_strided(a, shape, strides, writeable=False)


def _windows(xp: np.ndarray, kernel, stride, dilation, out) -> np.ndarray:
    """The kernel windows of the padded `xp [N, C, Hp, Wp]` as a read-only
    strided view `[N, C, kh, kw, Ho, Wo]` (no copy)."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, stride, dilation, out
    s_n, s_c, s_h, s_w = xp.strides
    return _strided(xp, (xp.shape[0], xp.shape[1], kh, kw, ho, wo),
                    (s_n, s_c, dh * s_h, dw * s_w, sh * s_h, sw * s_w))


def _taps(xp: np.ndarray, kernel, stride, dilation, out) -> np.ndarray:
    """im2col of the padded `xp [N, C, Hp, Wp]`: `[N, C, kh, kw, Ho, Wo]`,
    one copy of its windows."""
    return _windows(xp, kernel, stride, dilation, out).copy()


def _row_taps(x: np.ndarray, pads, kernel, dilation, ho: int) -> tuple[np.ndarray, int]:
    """Stride-1 im2col on whole rows of x zero-padded by `pads`:
    `[N, C, kh, kw, Ho * Wp]`, and Wp.

    Each padded plane is laid out as one flat run; tap (i, j) is then the
    contiguous run starting at i*dh*Wp + j*dw, i.e. the windows of *every*
    column 0..Wp-1 of Ho output rows. Columns Wo..Wp-1 wrap into the next
    row: they are garbage that the caller crops (or multiplies by zero), a
    few percent of extra work for a copy made of long contiguous runs
    instead of Wo-long strided ones. The planes get zeros past their end
    for the last runs, so every tap is one window of a strided view and
    all of them are copied in one call."""
    (kh, kw), (dh, dw), ((top, bottom), (left, right)) = kernel, dilation, pads
    n, c, h, w = x.shape
    hp, wp = h + top + bottom, w + left + right
    length = ho * wp
    size = max(hp * wp, (kh - 1) * dh * wp + (kw - 1) * dw + length)
    flat = np.zeros((n, c, size), dtype=x.dtype)
    flat[:, :, :hp * wp].reshape(n, c, hp, wp)[:, :, top:top + h, left:left + w] = x
    s0, s1, s2 = flat.strides
    windows = _strided(flat, (n, c, kh, kw, length), (s0, s1, dh * wp * s2, dw * s2, s2))
    return windows.copy(), wp


def _pads(x: np.ndarray, kernel, options, out) -> tuple:
    """((top, bottom), (left, right)): the zero padding, plus rows/cols past
    it that a longer output grad asks for (conv_transpose's weight gradient can)."""
    h, w = x.shape[2:]
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, options.stride, options.padding, options.dilation
    eh = max(0, (out[0] - 1) * sh + dh * (kh - 1) + 1 - (h + 2 * ph))
    ew = max(0, (out[1] - 1) * sw + dw * (kw - 1) + 1 - (w + 2 * pw))
    return (ph, ph + eh), (pw, pw + ew)


def _padded(x: np.ndarray, kernel, options, out) -> np.ndarray:
    """x zero-padded by `_pads`."""
    return _pad(x, _pads(x, kernel, options, out))


def _crop_transpose(full: np.ndarray, bias, kernel, options, size) -> np.ndarray:
    """conv_transpose2d's output: the uncropped `full` less the padding, plus bias."""
    ho, wo = (conv_transpose_output_size(s, k, st, p, po, d) for s, k, st, p, po, d in
              zip(size, kernel, options.stride, options.padding, options.padding_out, options.dilation))
    ph, pw = options.padding
    out = full[:, :, ph : ph + ho, pw : pw + wo]
    if bias is not None:
        return out + bias.reshape(1, -1, 1, 1)
    return out


# Below this many output pixels a batch's convs are one GEMM over the whole
# batch instead of one per image: a small plane makes each image's GEMM a
# matrix-vector product that rereads the whole weight.
_SMALL_PLANE = 256


def _conv_batch_folded(x: np.ndarray, weight: np.ndarray, bias, options, out) -> np.ndarray:
    """An ungrouped conv2d as one `[O, C*kk] @ [C*kk, N*Ho*Wo]` GEMM, the
    im2col built batch-inner (`[C, kh, kw, N, Ho, Wo]`) with exact columns."""
    n, c = x.shape[:2]
    o, _, kh, kw = weight.shape
    (ho, wo), (sh, sw), (dh, dw) = out, options.stride, options.dilation
    windows = _windows(_padded(x, (kh, kw), options, out), (kh, kw), (sh, sw), (dh, dw), (ho, wo))
    cols = np.empty((c, kh, kw, n, ho, wo), dtype=np.result_type(x, weight))
    cols[...] = windows.transpose(1, 2, 3, 0, 4, 5)   # batch-inner, in one copy
    y = (weight.reshape(o, c * kh * kw) @ cols.reshape(c * kh * kw, n * ho * wo)).reshape(o, n, ho, wo)
    if bias is not None:
        y += bias.reshape(o, 1, 1, 1)
    return np.ascontiguousarray(y.transpose(1, 0, 2, 3))


def _unit_stride(options) -> bool:
    return tuple(options.stride) == (1, 1)
