"""The Taichi backend's module ops: convolution and pooling on dedicated
kernels (kernels/conv.py, kernels/pool.py; a conv's columns on the host on
the CPU arch, columns.py) instead of `ModuleOps`' defaults.

- conv2d: im2col into a column matrix, then one batched matmul (NumPy's BLAS
  on the CPU arch's device buffers, the Taichi kernel on GPUs); or a direct
  kernel with no column matrix. The autotuner (autotune.py) times both once
  per shape class and keeps the faster; `SETTINGS.conv` forces one.
- conv_transpose2d (also conv2d's input gradient): one matmul into a plane per
  kernel tap, then col2im, which adds the planes onto the output grid.
- conv2d_weight_backward: im2col, one matmul per image with the output
  gradient, and a sum over the batch.
- max, average and adaptive average pooling and their backward passes.

The 1-D ops are `ModuleOps`' defaults, which call these 2-D ones on
`[N, C, 1, L]` views; embedding stays the default (a gather and a scatter).
A zero-size operand falls back to the defaults too.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from burnbook.kernels import conv as conv_k, index as index_k, pool as pool_k

from ...module_ops import ModuleOps, conv_output_size, conv_transpose_output_size, pool_output_size
from .. import autotune
from .. import runtime as _rt
from ..primitive import TaichiTensor, alloc, contiguous, full, materialize, reshaped
from ..runtime import F16, F32, I64
from ..settings import SETTINGS
from . import columns, launch

__all__ = ["TaichiModuleOps"]


def _empty(*ps: Any) -> bool:
    return any(p is not None and p.buf is None for p in ps)


def _as(p: TaichiTensor, dtype: np.dtype) -> TaichiTensor:
    return p if p.dtype == dtype else materialize(p, dtype)


def _packed(p: TaichiTensor) -> TaichiTensor:
    """`p` contiguous and starting at its buffer's first element (kernels
    that take a bare buffer index it from 0)."""
    q = contiguous(p)
    return materialize(q) if q.offset else q


def _conv_out(x: TaichiTensor, weight: TaichiTensor, options: Any) -> tuple:
    """conv2d's output height and width."""
    (h, w), (kh, kw) = x.shape[2:], weight.shape[2:]
    return (conv_output_size(h, kh, options.stride[0], options.padding[0], options.dilation[0]),
            conv_output_size(w, kw, options.stride[1], options.padding[1], options.dilation[1]))


def _view(buf: Any, shape: tuple, strides: tuple, like: TaichiTensor, offset: int = 0) -> TaichiTensor:
    return TaichiTensor(buf, shape, strides, offset, like.dtype, like.device)


def _window(kernel: tuple, stride: tuple, padding: tuple, dilation: tuple = (1, 1)) -> tuple:
    return (kernel[0], kernel[1], stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1])


# -- convolution ------------------------------------------------------------------------

def conv2d_im2col(x: TaichiTensor, weight: TaichiTensor, bias: TaichiTensor | None, options: Any) -> TaichiTensor:
    """conv2d as im2col and one matmul `[g, O/g, C/g*kk] @ [N, g, C/g*kk, L]`,
    whose result is already `[N, O, Ho, Wo]`. A bias rides in the matmul: a
    row of ones under each group's columns and the bias beside its weights,
    so it costs no pass over the output."""
    n, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    g = options.groups
    ho, wo = _conv_out(x, weight, options)
    length, rows = ho * wo, cg * kh * kw
    wm = reshaped(weight, (1, g, o // g, rows))
    if bias is not None:
        wm = launch.cat((wm, reshaped(bias, (1, g, o // g, 1))), 3)
        rows += 1
    cols = alloc((n, g, rows, length), x.dtype, x.device)
    window = _window((kh, kw), options.stride, options.padding, options.dilation)
    columns.im2col(cols.buf, x.view(), (n, c, h, w, ho, wo), window, g * rows * length, length,
                  cg if bias is not None else 0)
    _COLS[x.buf] = (x.strides, x.offset, x.shape, window, g, (ho, wo), cols.buf, rows * length)
    out = launch.matmul(wm, cols)
    return _view(out.buf, (n, o, ho, wo), (o * length, length, wo, 1), out)


# The column matrix of a forward conv2d, by its input's buffer: the weight
# gradient needs the same matrix (training calls conv2d_weight_backward with
# the forward's own input), so it is built once. An entry lives as long as the
# input's buffer does (buffers are never written after their op returns), so
# inference frees it with the activation, and training after the backward pass.
_COLS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _forward_cols(x: TaichiTensor, window: tuple, groups: int, out: tuple) -> tuple | None:
    """(buffer, group stride) of the column matrix conv2d built from exactly
    this view of x with this window and groups, for an output of spatial size
    `out`, or None. The size matters: conv_transpose2d's backward crops the
    conv2d of its output grad to the input's size (output_padding), and a
    matrix built for the larger output has other columns."""
    hit = _COLS.get(x.buf)
    if hit is None or hit[:6] != (x.strides, x.offset, x.shape, window, groups, tuple(out)):
        return None
    return hit[6], hit[7]


def conv2d_direct(x: TaichiTensor, weight: TaichiTensor, bias: TaichiTensor | None, options: Any) -> TaichiTensor:
    """conv2d as one kernel that reads each window straight from x."""
    n, c, h, w = x.shape
    o, _, kh, kw = weight.shape
    ho, wo = _conv_out(x, weight, options)
    out = alloc((n, o, ho, wo), x.dtype, x.device)
    weight = _packed(weight)
    b = None if bias is None else _packed(bias)
    conv_k.direct(out.buf, x.view(), weight.buf, None if b is None else b.buf, (n, c, h, w, ho, wo),
                  _window((kh, kw), options.stride, options.padding, options.dilation), o, options.groups)
    return out


CONV2D_VARIANTS = {"im2col": conv2d_im2col, "direct": conv2d_direct}


def _conv2d_class(x: TaichiTensor, weight: TaichiTensor, options: Any) -> tuple:
    """The shape class a conv2d's timing stands for: everything but the batch
    and spatial sizes, which count as the power of two of the output's
    elements per output channel."""
    n = x.shape[0]
    o, cg, kh, kw = weight.shape
    ho, wo = _conv_out(x, weight, options)
    return (str(x.dtype), cg, o // options.groups, options.groups, kh, kw, *options.stride, *options.dilation,
            max(n * ho * wo, 1).bit_length(), SETTINGS.matmul, SETTINGS.columns)


class TaichiModuleOps(ModuleOps):
    """The module ops `Taichi` mixes in before `Backend`'s defaults."""

    @classmethod
    def conv2d(cls, x, weight, bias, options):
        if _empty(x, weight, bias):
            return ModuleOps.conv2d.__func__(cls, x, weight, bias, options)
        weight = _as(weight, x.dtype)
        bias = None if bias is None else _as(bias, x.dtype)
        choice = SETTINGS.conv
        if choice == "auto" and x.dtype == F16:
            choice = "im2col"  # the direct kernel adds tap by tap in the output's dtype
        if choice == "auto":
            choice = autotune.choose("conv2d", _conv2d_class(x, weight, options), CONV2D_VARIANTS,
                                     (x, weight, bias, options))
        return CONV2D_VARIANTS[choice](x, weight, bias, options)

    @classmethod
    def conv_transpose2d(cls, x, weight, bias, options):
        if _empty(x, weight, bias):
            return ModuleOps.conv_transpose2d.__func__(cls, x, weight, bias, options)
        weight = _as(weight, x.dtype)
        n, ci, h, w = x.shape
        _, og, kh, kw = weight.shape
        g = options.groups
        cig, co, taps = ci // g, og * g, kh * kw
        # cols [N, g, og*kk, H*W] = weight^T @ x per group: already [N, Co, kh, kw, H, W].
        wt = reshaped(weight, (1, g, cig, og * taps))
        wt = _view(wt.buf, (1, g, og * taps, cig), (0, cig * og * taps, 1, og * taps), wt, wt.offset)
        ho = conv_transpose_output_size(h, kh, options.stride[0], options.padding[0], options.padding_out[0],
                                        options.dilation[0])
        wo = conv_transpose_output_size(w, kw, options.stride[1], options.padding[1], options.padding_out[1],
                                        options.dilation[1])
        dims, window = (n, co, h, w, ho, wo), _window((kh, kw), options.stride, options.padding, options.dilation)
        out = alloc((n, co, ho, wo), x.dtype, x.device)
        b = None if bias is None else _packed(_as(bias, x.dtype)).buf
        if columns.on_host() and tuple(options.stride) == (1, 1):
            # x widened to the grid's rows by zero columns: each tap's plane
            # then adds onto the output grid as one contiguous run.
            wf = columns.grid(dims, window)[1]
            xw = alloc((n, ci, h, wf), x.dtype, x.device)
            columns.widen_host(xw.buf, x.view(), (n, ci, h, w), wf)
            cols = launch.matmul(wt, reshaped(xw, (n, g, cig, h * wf)))
            columns.col2im_host(out.buf, cols.buf, b, dims, window, rows=True)
            return out
        cols = launch.matmul(wt, reshaped(x, (n, g, cig, h * w)))
        columns.col2im(out.buf, cols.buf, b, dims, window)
        return out

    @classmethod
    def conv2d_weight_backward(cls, x, output_grad, weight_shape, options):
        if _empty(x, output_grad):
            return ModuleOps.conv2d_weight_backward.__func__(cls, x, output_grad, weight_shape, options)
        dtype = np.result_type(x.dtype, output_grad.dtype)
        x, output_grad = _as(x, dtype), _as(output_grad, dtype)
        n, c, h, w = x.shape
        _, o, ho, wo = output_grad.shape
        _, cg, kh, kw = weight_shape
        g = options.groups
        og, length, rows = o // g, ho * wo, cg * kh * kw
        dims, window = (n, c, h, w, ho, wo), _window((kh, kw), options.stride, options.padding, options.dilation)
        # Per image, `[g, O/g, L] @ [g, L, cg*kk]`, then summed over the batch.
        # One GEMM over K = N*L would read the same data, but measured slower
        # at the median on the busy 2-core box (BLAS threads it across cores,
        # and its threads wait on each other); GPUs need the batch for
        # parallelism anyway.
        cached = _forward_cols(x, window, g, (ho, wo))
        if cached is None:
            cols = alloc((n, c * kh * kw, length), x.dtype, x.device)
            columns.im2col(cols.buf, x.view(), dims, window, c * kh * kw * length, length)
            cached = cols.buf, rows * length
        buf, group = cached  # a forward's matrix has a bias row of ones after each group's rows
        cols_t = _view(buf, (n, g, length, rows), (g * group, group, 1, length), x)
        gm = reshaped(output_grad, (n, g, og, length))
        gw = launch.reduce("conv2d_weight_backward", launch.matmul(gm, cols_t), 0, launch.Reduce.SUM)
        return reshaped(gw, (o, cg, kh, kw))

    # -- pooling ----------------------------------------------------------------------------
    @classmethod
    def max_pool2d(cls, x, kernel_size, stride, padding, dilation, ceil_mode=False):
        return cls._max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, False)[0]

    @classmethod
    def max_pool2d_with_indices(cls, x, kernel_size, stride, padding, dilation, ceil_mode=False):
        return cls._max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, True)

    @classmethod
    def _max_pool(cls, x, kernel_size, stride, padding, dilation, ceil_mode, with_indices):
        if _empty(x):
            if with_indices:
                return ModuleOps.max_pool2d_with_indices.__func__(cls, x, kernel_size, stride, padding, dilation,
                                                                  ceil_mode)
            return ModuleOps.max_pool2d.__func__(cls, x, kernel_size, stride, padding, dilation, ceil_mode), None
        n, c, h, w = x.shape
        ho, wo = (pool_output_size(s, k, st, p, d, ceil_mode)
                  for s, k, st, p, d in zip((h, w), kernel_size, stride, padding, dilation))
        out = alloc((n, c, ho, wo), x.dtype, x.device)
        idx = alloc((n, c, ho, wo), I64, x.device) if with_indices else None
        pool_k.max_pool(out.buf, None if idx is None else idx.buf, x.view(), (n, c, h, w, ho, wo),
                        _window(kernel_size, stride, padding, dilation))
        return out, idx

    @classmethod
    def max_pool2d_with_indices_backward(cls, x, kernel_size, stride, padding, dilation, ceil_mode, output_grad,
                                         indices):
        """Each output's gradient added at its max's position: the scatter-add
        kernel of index.py over a zeroed input gradient."""
        if _empty(x, output_grad):
            return ModuleOps.max_pool2d_with_indices_backward.__func__(
                cls, x, kernel_size, stride, padding, dilation, ceil_mode, output_grad, indices)
        n, c, h, w = x.shape
        ho, wo = output_grad.shape[2:]
        dtype = output_grad.dtype
        wide = dtype == F16 and _rt.current.spirv  # no f16 atomics on some SPIR-V devices: add in f32
        gx = full((n, c, h * w), 0, F32 if wide else dtype, x.device)
        g = reshaped(_as(output_grad, F32) if wide else output_grad, (n, c, ho * wo))
        idx = reshaped(indices, (n, c, ho * wo))
        bad = index_k.scatter_add((n, c, ho * wo), (gx.buf, (gx.strides[0], gx.strides[1], 0), 0),
                                  idx.view(), g.view(), h * w, 1)
        if bad:
            raise IndexError(f"max_pool2d_with_indices_backward: {bad} index value(s) outside the {h}x{w} "
                             "input plane")
        gx = reshaped(gx, (n, c, h, w))
        return materialize(gx, dtype) if wide else gx

    @classmethod
    def avg_pool2d(cls, x, kernel_size, stride, padding, count_include_pad):
        if _empty(x):
            return ModuleOps.avg_pool2d.__func__(cls, x, kernel_size, stride, padding, count_include_pad)
        n, c, h, w = x.shape
        ho, wo = (pool_output_size(s, k, st, p, 1, False) for s, k, st, p in zip((h, w), kernel_size, stride, padding))
        out = alloc((n, c, ho, wo), x.dtype, x.device)
        pool_k.avg_pool(out.buf, x.view(), (n, c, h, w, ho, wo), _window(kernel_size, stride, padding),
                        count_include_pad)
        return out

    @classmethod
    def avg_pool2d_backward(cls, x, output_grad, kernel_size, stride, padding, count_include_pad):
        if _empty(x, output_grad):
            return ModuleOps.avg_pool2d_backward.__func__(cls, x, output_grad, kernel_size, stride, padding,
                                                          count_include_pad)
        n, c, h, w = x.shape
        ho, wo = output_grad.shape[2:]
        gx = alloc((n, c, h, w), output_grad.dtype, x.device)
        pool_k.avg_pool_backward(gx.buf, output_grad.view(), (n, c, h, w, ho, wo),
                                 _window(kernel_size, stride, padding), count_include_pad)
        return gx

    @classmethod
    def adaptive_avg_pool2d(cls, x, output_size):
        if _empty(x):
            return ModuleOps.adaptive_avg_pool2d.__func__(cls, x, output_size)
        n, c, h, w = x.shape
        ho, wo = output_size
        out = alloc((n, c, ho, wo), x.dtype, x.device)
        pool_k.adaptive(out.buf, x.view(), (n, c, h, w, ho, wo))
        return out

    @classmethod
    def adaptive_avg_pool2d_backward(cls, x, output_grad):
        if _empty(x, output_grad):
            return ModuleOps.adaptive_avg_pool2d_backward.__func__(cls, x, output_grad)
        n, c, h, w = x.shape
        ho, wo = output_grad.shape[2:]
        gx = alloc((n, c, h, w), output_grad.dtype, x.device)
        pool_k.adaptive_backward(gx.buf, output_grad.view(), (n, c, h, w, ho, wo))
        return gx
