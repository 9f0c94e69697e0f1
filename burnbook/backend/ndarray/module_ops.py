"""NdArray's fast module ops: convolution and max pooling in NumPy.

A conv is one im2col copy, filled one kernel tap at a time (a stride-1 conv
copies whole flattened rows, see `_row_taps`), and one batched matmul whose
result is already in `[N, O, Ho, Wo]` order. Its weight gradient at stride 1
needs no im2col: one matmul per tap against a view of x's rows. Its input
gradient, conv_transpose, is one matmul followed by a tap-by-tap col2im.
A conv on a small plane (`_SMALL_PLANE` output pixels) is one GEMM over
the whole batch instead (`_conv_batch_folded`). Depthwise convs (one input
channel per group) skip im2col: each tap is a broadcast multiply-add of a
contiguous run of x's stride-phase planes (`_phases`), in the forward pass,
the weight gradient and the matching conv_transpose; the forward pass of
a small output plane runs channels-last instead (`_depthwise_conv_channels_last`).
Max pools reduce the kh*kw strided tap views elementwise. No Python loop
runs over the batch, the groups or the pixels, only over the kh*kw kernel
taps (and the stride phases).

LSTM and GRU layers are one NumPy loop each, layer norm a few in-place
NumPy calls (`ndarray_layers.py`).
Everything else (1-D ops, average and adaptive pooling, embedding) uses the
defaults of `ModuleOps`, which on NdArray are already a few NumPy matmuls.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import ndarray_layers
from .module_ops import ModuleOps, conv_output_size, conv_transpose_output_size, pool_output_size


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


# -- one input channel per group (depthwise) ---------------------------------------------
# With one input channel per group, im2col + a batched matmul is C tiny GEMMs
# of one row each (slow in BLAS) on a copy kh*kw times x's size. Instead each
# kernel tap is a broadcast multiply-add of one shifted *view* of x: the
# stride phases of x are split once (see `_phases`) so that every tap is a
# contiguous run of a flat plane, as in `_row_taps`.

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
    taps = ndarray_layers.cached(
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


class NdArrayModuleOps(ModuleOps):
    """The overrides NdArray mixes in before `Backend`'s defaults."""

    lstm = staticmethod(ndarray_layers.lstm)   # a recurrent layer as one NumPy loop
    gru = staticmethod(ndarray_layers.gru)
    layer_norm = classmethod(ndarray_layers.layer_norm)
    gelu = classmethod(ndarray_layers.gelu)    # x * Phi(x) in two NumPy calls
    hard_sigmoid = classmethod(ndarray_layers.hard_sigmoid)

    @classmethod
    def conv1d(cls, x, weight, bias, options):
        """`[N, C, L]`: ungrouped, one GEMM over the whole batch on an im2col
        built in one copy (`[C*k, N*Lo]`, batch inner); grouped, the default's
        conv2d on a `[N, C, 1, L]` view."""
        if options.groups != 1:
            return super().conv1d(x, weight, bias, options)
        n, c, length = x.shape
        o, _, k = weight.shape
        (s,), (p,), (d,) = options.stride, options.padding, options.dilation
        lo = conv_output_size(length, k, s, p, d)
        dt = np.result_type(x, weight)
        xp = np.zeros((c, n, max(length + 2 * p, (lo - 1) * s + d * (k - 1) + 1)), dtype=dt)
        xp[:, :, p:p + length] = x.transpose(1, 0, 2)
        s_c, s_n, s_l = xp.strides
        cols = _strided(xp, (c, k, n, lo), (s_c, d * s_l, s_n, s * s_l)).reshape(c * k, n * lo)
        y = (weight.reshape(o, c * k) @ cols).reshape(o, n, lo)
        if bias is not None:
            y += bias.reshape(o, 1, 1)
        return y.reshape(1, o, lo) if n == 1 else np.ascontiguousarray(y.transpose(1, 0, 2))

    @staticmethod
    def conv2d(x, weight, bias, options):
        n, c, h, w = x.shape
        o, cg, kh, kw = weight.shape
        g = options.groups
        ho = conv_output_size(h, kh, options.stride[0], options.padding[0], options.dilation[0])
        wo = conv_output_size(w, kw, options.stride[1], options.padding[1], options.dilation[1])
        if g == 1 and ho * wo <= _SMALL_PLANE and (kh, kw) != (1, 1):
            return _conv_batch_folded(x, weight, bias, options, (ho, wo))
        if cg == 1 and g > 1 and o == g and ho * wo <= _CHANNELS_LAST_PLANE:
            pads = _pads(x, (kh, kw), options, (ho, wo))
            out = _depthwise_conv_channels_last(x, weight, pads, options.stride, options.dilation, (ho, wo))
            if bias is not None:
                out += bias.reshape(1, o, 1, 1).astype(out.dtype, copy=False)
            return out
        if cg == 1 and g > 1:
            pads = _pads(x, (kh, kw), options, (ho, wo))
            out = _depthwise_conv(x, weight, pads, options.stride, options.dilation, (ho, wo))
            width = out.shape[3]
        elif (kh, kw) == (1, 1) and _unit_stride(options) and not any(options.padding):
            cols, width = x, w   # a 1x1 conv is a matmul on x itself
        else:
            if _unit_stride(options):
                cols, width = _row_taps(x, _pads(x, (kh, kw), options, (ho, wo)), (kh, kw), options.dilation, ho)
            else:
                xp = _padded(x, (kh, kw), options, (ho, wo))
                cols, width = _taps(xp, (kh, kw), options.stride, options.dilation, (ho, wo)), wo
        if cg > 1 or g == 1:
            # [g, O/g, cg*kk] @ [N, g, cg*kk, L] -> [N, g, O/g, L]: already [N, O, Ho, width].
            out = np.matmul(weight.reshape(g, o // g, cg * kh * kw), cols.reshape(n, g, cg * kh * kw, ho * width))
            out = out.reshape(n, o, ho, width)
        if width != wo:  # crop the garbage columns into a contiguous result (later ops run faster)
            crop = out[:, :, :, :wo]
            return crop + bias.reshape(1, o, 1, 1) if bias is not None else np.ascontiguousarray(crop)
        if bias is not None:
            out += bias.reshape(1, o, 1, 1)
        return out

    @staticmethod
    def conv2d_weight_backward(x, output_grad, weight_shape, options):
        n, o, ho, wo = output_grad.shape
        _, cg, kh, kw = weight_shape
        g, (dh, dw) = options.groups, options.dilation
        if cg == 1 and g > 1:
            pads = _pads(x, (kh, kw), options, (ho, wo))
            return _depthwise_weight_grad(x, output_grad, pads, (kh, kw), options.stride, options.dilation)
        xp = _padded(x, (kh, kw), options, (ho, wo))
        if not _unit_stride(options):
            cols = _taps(xp, (kh, kw), options.stride, options.dilation, (ho, wo))
            gm = output_grad.reshape(n, g, o // g, ho * wo)
            cm = cols.reshape(n, g, cg * kh * kw, ho * wo)
            return np.matmul(gm, cm.transpose(0, 1, 3, 2)).sum(axis=0).reshape(o, cg, kh, kw)
        # Stride 1: no im2col at all. Per tap, one batched matmul of the output
        # grad (zero in the garbage columns) against a *view* of x's flattened
        # rows (see `_row_taps`), which BLAS reads in place.
        hp, wp = xp.shape[2:]
        length = ho * wp
        flat = np.zeros((n, g, cg, hp * wp + dw * (kw - 1)), dtype=xp.dtype)
        flat[..., : hp * wp] = xp.reshape(n, g, cg, hp * wp)
        gm = np.zeros((n, g, o // g, ho, wp), dtype=output_grad.dtype)
        gm[..., :wo] = output_grad.reshape(n, g, o // g, ho, wo)
        gm = gm.reshape(n, g, o // g, length)
        gw = np.empty((g, o // g, cg, kh, kw), dtype=np.result_type(x, output_grad))
        for i in range(kh):
            for j in range(kw):
                off = i * dh * wp + j * dw
                gw[..., i, j] = np.matmul(gm, flat[..., off : off + length].transpose(0, 1, 3, 2)).sum(axis=0)
        return gw.reshape(o, cg, kh, kw)

    @staticmethod
    def conv_transpose2d(x, weight, bias, options):
        n, ci, h, w = x.shape
        _, og, kh, kw = weight.shape
        (sh, sw), (ph, pw), (poh, pow_), (dh, dw), g = (options.stride, options.padding, options.padding_out,
                                                        options.dilation, options.groups)
        cig, co = ci // g, og * g
        hf, wf = (h - 1) * sh + dh * (kh - 1) + 1 + poh, (w - 1) * sw + dw * (kw - 1) + 1 + pow_
        if og == 1 and g > 1:
            out = _depthwise_transpose(x, weight, g, (sh, sw), (dh, dw), (hf, wf))
            return _crop_transpose(out, bias, (kh, kw), options, (h, w))
        # cols[n, g, tap, og, :] = weight_tap^T @ x: one batched matmul with
        # tap-major rows, so each tap's plane is one slice.
        wt = np.ascontiguousarray(weight.reshape(g, cig, og, kh * kw).transpose(0, 3, 2, 1))
        wt = wt.reshape(g, kh * kw * og, cig)
        if (sh, sw) == (1, 1):
            # col2im on whole rows (see `_row_taps`): x gets zero columns up to
            # the output's width, so each tap adds one contiguous run.
            xw = np.zeros((n, ci, h, wf), dtype=x.dtype)
            xw[..., :w] = x
            cols = np.matmul(wt, xw.reshape(n, g, cig, h * wf)).reshape(n, g, kh * kw, og, h * wf)
            flat = np.zeros((n, g, og, hf * wf + dw * (kw - 1)), dtype=cols.dtype)
            for i in range(kh):
                for j in range(kw):
                    off = i * dh * wf + j * dw
                    flat[..., off : off + h * wf] += cols[:, :, i * kw + j]
            out = flat[..., : hf * wf].reshape(n, co, hf, wf)
        else:
            # Each tap adds its plane onto a strided grid of the output.
            cols = np.matmul(wt, x.reshape(n, g, cig, h * w)).reshape(n, g, kh, kw, og, h, w)
            out = np.zeros((n, g, og, hf, wf), dtype=cols.dtype)
            for i in range(kh):
                for j in range(kw):
                    out[..., i * dh : i * dh + (h - 1) * sh + 1 : sh,
                        j * dw : j * dw + (w - 1) * sw + 1 : sw] += cols[:, :, i, j]
            out = out.reshape(n, co, hf, wf)
        return _crop_transpose(out, bias, (kh, kw), options, (h, w))

    # -- max pooling -------------------------------------------------------------------
    @staticmethod
    def _pool_padded(x, kernel_size, stride, padding, dilation, ceil_mode):
        """x padded with -inf for pooling, and (Ho, Wo)."""
        h, w = x.shape[2:]
        out = tuple(pool_output_size(s, k, st, p, d, ceil_mode)
                    for s, k, st, p, d in zip((h, w), kernel_size, stride, padding, dilation))
        # ceil_mode's last window may run past the padding: pad further there.
        extra = [max(p, (o - 1) * st + d * (k - 1) + 1 - s - p)
                 for s, k, st, p, d, o in zip((h, w), kernel_size, stride, padding, dilation, out)]
        return _pad(x, ((padding[0], extra[0]), (padding[1], extra[1])), -np.inf), out

    @classmethod
    def _pool_taps(cls, x, kernel_size, stride, padding, dilation, ceil_mode):
        """The kh*kw strided views (one per kernel tap, each `[N, C, Ho, Wo]`)
        of x padded with -inf, and (Ho, Wo). Reducing taps elementwise beats a
        reduction over a short last axis of windows by far."""
        xp, out = cls._pool_padded(x, kernel_size, stride, padding, dilation, ceil_mode)
        (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel_size, stride, dilation, out
        taps = [xp[:, :, i * dh : i * dh + (ho - 1) * sh + 1 : sh, j * dw : j * dw + (wo - 1) * sw + 1 : sw]
                for i in range(kh) for j in range(kw)]
        return taps, out

    @classmethod
    def max_pool2d(cls, x, kernel_size, stride, padding, dilation, ceil_mode=False):
        # Separable: the max of each row's kw taps, then of kh such rows, so
        # kh + kw - 2 maxima instead of kh*kw - 1. A window's max is the
        # same either way (a NaN wins in both).
        xp, (ho, wo) = cls._pool_padded(x, kernel_size, stride, padding, dilation, ceil_mode)
        (kh, kw), (sh, sw), (dh, dw) = kernel_size, stride, dilation
        rows = xp[:, :, : (ho - 1) * sh + (kh - 1) * dh + 1]
        across = [rows[..., j * dw : j * dw + (wo - 1) * sw + 1 : sw] for j in range(kw)]
        row_max = np.maximum(across[0], across[1]) if kw > 1 else across[0].copy()
        for t in across[2:]:
            np.maximum(row_max, t, out=row_max)
        down = [row_max[:, :, i * dh : i * dh + (ho - 1) * sh + 1 : sh] for i in range(kh)]
        if kh == 1:
            return np.ascontiguousarray(down[0])
        out = np.maximum(down[0], down[1])
        for t in down[2:]:
            np.maximum(out, t, out=out)
        return out

    @classmethod
    def max_pool2d_with_indices(cls, x, kernel_size, stride, padding, dilation, ceil_mode=False):
        w = x.shape[3]
        taps, (ho, wo) = cls._pool_taps(x, kernel_size, stride, padding, dilation, ceil_mode)
        kw, (dh, dw) = kernel_size[1], dilation
        out, offset = taps[0], np.zeros(taps[0].shape, dtype=np.int64)
        for k, t in enumerate(taps[1:], 1):
            # PyTorch's rule: a later value wins if larger, or if it is NaN.
            win = (t > out) | np.isnan(t)
            out = np.where(win, t, out)
            offset = np.where(win, (k // kw) * dh * w + (k % kw) * dw, offset)
        # Flat index h * W + w = where the window starts + the winning tap's offset.
        start = ((np.arange(ho) * stride[0] - padding[0]) * w)[:, None] + (np.arange(wo) * stride[1] - padding[1])
        return np.array(out, copy=len(taps) == 1), offset + start

    @staticmethod
    def max_pool2d_with_indices_backward(x, kernel_size, stride, padding, dilation, ceil_mode,
                                         output_grad, indices):
        # One bincount over global positions adds the gradients of windows
        # that share a max (np.add.at does the same, many times slower).
        n, c, h, w = x.shape
        plane = (np.arange(n * c, dtype=np.int64) * (h * w)).reshape(n, c, 1, 1)
        flat = np.bincount((indices + plane).ravel(), weights=output_grad.ravel(), minlength=n * c * h * w)
        return flat.astype(output_grad.dtype, copy=False).reshape(n, c, h, w)
