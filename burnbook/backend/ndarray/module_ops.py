"""NdArray's fast module ops: convolution and max pooling in NumPy.

A conv is one im2col copy (`im2col.py`), filled one kernel tap at a time
(a stride-1 conv copies whole flattened rows, see `_row_taps`), and one
batched matmul whose result is already in `[N, O, Ho, Wo]` order. Its weight gradient at stride 1
needs no im2col: one matmul per tap against a view of x's rows. Its input
gradient, conv_transpose, is one matmul followed by a tap-by-tap col2im.
A conv on a small plane (`_SMALL_PLANE` output pixels) is one GEMM over
the whole batch instead (`_conv_batch_folded`). Depthwise convs (one input
channel per group, `depthwise.py`) skip im2col: each tap is a broadcast multiply-add of a
contiguous run of x's stride-phase planes (`_phases`), in the forward pass,
the weight gradient and the matching conv_transpose; the forward pass of
a small output plane runs channels-last instead (`_depthwise_conv_channels_last`).
Max pools reduce the kh*kw strided tap views elementwise. No Python loop
runs over the batch, the groups or the pixels, only over the kh*kw kernel
taps (and the stride phases).

LSTM and GRU layers are one NumPy loop each, layer norm and its backward a
few in-place NumPy calls (`layers.py`), GELU and its backward a table of
Phi (`gelu.py`), attention scores, mask and softmax in place
(`attention.py`).
Everything else (1-D ops, average and adaptive pooling, the embedding
itself) uses the defaults of `ModuleOps`, which on NdArray are already a
few NumPy matmuls.
"""

from __future__ import annotations

import numpy as np

from ..module_ops import ModuleOps
from ..module_options import conv_output_size, pool_output_size
from . import attention as sdpa, layers
from .depthwise import (
    _CHANNELS_LAST_PLANE, _depthwise_conv, _depthwise_conv_channels_last, _depthwise_transpose,
    _depthwise_weight_grad,
)
from .im2col import (
    _SMALL_PLANE, _conv_batch_folded, _crop_transpose, _pad, _padded, _pads, _row_taps, _strided, _taps,
    _unit_stride,
)


class NdArrayModuleOps(ModuleOps):
    """The overrides NdArray mixes in before `Backend`'s defaults."""

    lstm = staticmethod(layers.lstm)   # a recurrent layer as one NumPy loop
    gru = staticmethod(layers.gru)
    layer_norm = classmethod(layers.layer_norm)
    layer_norm_with_stats = classmethod(layers.layer_norm_with_stats)
    layer_norm_backward = classmethod(layers.layer_norm_backward)
    gelu = classmethod(layers.gelu)    # x * Phi(x): SciPy's ndtr, or a table of Phi (gelu.py)
    gelu_backward = classmethod(layers.gelu_backward)
    gelu_with_derivative = classmethod(layers.gelu_with_derivative)
    hard_sigmoid = classmethod(layers.hard_sigmoid)
    attention = classmethod(sdpa.attention)   # scores, mask, softmax in place on one array (attention.py)
    attention_with_weights = classmethod(sdpa.attention_with_weights)
    attention_backward = classmethod(sdpa.attention_backward)

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
