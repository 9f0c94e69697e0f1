"""Module operations (Burn's `ModuleOps`): convolution, pooling, embedding.

`ModuleOps` is a base class of `Backend` whose methods are *defaults* written
only with the primitive ops of the protocol (slices, `slice_assign` on a zero
tensor, reshape/permute, `matmul`, `max_dim`/`argmax`, `scatter`,
`select_assign`). So every backend, Taichi or a user's, gets correct module
ops for free; a backend overrides them where it has something faster (NdArray
does, with NumPy sliding windows, in `ndarray/module_ops.py`).

Layouts are Burn's and PyTorch's: activations `[batch, channels, (height,)
width]`, conv weights `[out, in/groups, (kh,) kw]`, conv_transpose weights
`[in, out/groups, (kh,) kw]`. Ops receive *resolved* arguments (the tensor
layer checks them): options carry tuples with one entry per spatial dim
(`stride=(sh, sw)` for 2-D, `(s,)` for 1-D), every size is a Python int,
shapes are consistent and every output size is positive.

The 1-D ops default to their 2-D twins on a `[.., 1, L]` view, as Burn's
`conv1d_from_conv2d` does; the backward helpers (`conv2d_weight_backward`,
`*_backward`) are protocol ops too, so a backend can speed up training by
overriding them, and the autodiff rules call only these.

Max-pool indices are flat positions in each input plane (`h * W + w`), as
PyTorch's `return_indices=True` and Burn give them.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Sequence

import numpy as np

from . import attention_ops, module_layers
from .module_options import (  # re-exported: `burnbook.backend.module_ops.ConvOptions` is the old path
    ConvOptions, ConvTransposeOptions, _tuple, adaptive_bins, conv_output_size, conv_transpose_output_size,
    is_int, pool_output_size,
)

__all__ = [
    "ConvOptions", "ConvTransposeOptions", "ModuleOps", "conv_output_size",
    "conv_transpose_output_size", "pool_output_size", "adaptive_bins",
]


def _avg_matrix(size: int, kernel: int, stride: int, padding: int, count_include_pad: bool,
                out: int) -> np.ndarray:
    """The `[out, size]` matrix that averages windows along one dim. Average
    pooling is separable (a window is a rectangle, its divisor kh*kw or the
    product of the valid rows and columns), so 2-D pooling is `A_h x A_w^T`."""
    m = np.zeros((out, size))
    for o in range(out):
        lo = o * stride - padding
        start, end = max(lo, 0), min(lo + kernel, size)
        m[o, start:end] = 1.0 / (kernel if count_include_pad else max(end - start, 1))
    return m


def _adaptive_matrix(size: int, out: int) -> np.ndarray:
    m = np.zeros((out, size))
    for o, (start, end) in enumerate(adaptive_bins(size, out)):
        m[o, start:end] = 1.0 / (end - start)
    return m


def _full(n: int) -> slice:
    return slice(0, n, 1)


class ModuleOps:
    """The module ops with default implementations from primitive ops.

    Signatures (P: Float primitive, I: Int primitive; 2-D shown, 1-D the same
    without the height):

    - `conv2d(x [N, C, H, W], weight [O, C/g, kh, kw], bias [O] | None,
      options: ConvOptions) -> [N, O, Ho, Wo]`
    - `conv_transpose2d(x [N, C, H, W], weight [C, O/g, kh, kw], bias | None,
      options: ConvTransposeOptions) -> [N, O, Ho, Wo]`
    - `conv2d_weight_backward(x, output_grad [N, O, Ho, Wo], weight_shape,
      options) -> [O, C/g, kh, kw]`: the weight gradient of conv2d, with the
      output size taken from `output_grad`
    - `avg_pool2d(x, kernel_size, stride, padding, count_include_pad)`,
      `avg_pool2d_backward(x, output_grad, kernel_size, stride, padding,
      count_include_pad) -> [N, C, H, W]`
    - `adaptive_avg_pool2d(x, output_size)`,
      `adaptive_avg_pool2d_backward(x, output_grad)`
    - `max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)`,
      `max_pool2d_with_indices(...) -> (P, I)`,
      `max_pool2d_with_indices_backward(x, kernel_size, stride, padding,
      dilation, ceil_mode, output_grad, indices) -> [N, C, H, W]`
    - `embedding(weights [n, d], indices I [b, s]) -> [b, s, d]`,
      `embedding_backward(weights, output_grad [b, s, d], indices) -> [n, d]`
    - whole layers, composites of the primitives (`module_layers.py`, where
      their signatures and shapes are): `lstm`, `gru`, `layer_norm`, `gelu`,
      `hard_sigmoid`, and the helpers the autodiff rules of layer norm and
      GELU call (`layer_norm_with_stats`, `layer_norm_backward`,
      `gelu_with_derivative`, `gelu_backward`). NdArray overrides them. On
      `Autodiff[B]` layer norm and GELU (in `MODULE_OPS`) are one tracked op
      each; the LSTM, GRU and hard sigmoid are tracked as their primitives.
    """

    # -- helpers (primitive ops only) ---------------------------------------------------
    @classmethod
    def _pad2d(cls, x: Any, pads: Sequence[tuple[int, int]], value: float) -> Any:
        """`x [N, C, H, W]` inside a `value`-filled tensor, `pads` = ((top,
        bottom), (left, right)): a `slice_assign` into a fresh tensor."""
        if all(lo == 0 and hi == 0 for lo, hi in pads):
            return x
        n, c, h, w = cls.float_shape(x)
        (t, b), (l, r) = pads
        base = cls.float_full((n, c, h + t + b, w + l + r), value, cls.float_device(x), cls.float_dtype(x))
        return cls.float_slice_assign(base, (_full(n), _full(c), slice(t, t + h, 1), slice(l, l + w, 1)), x)

    @classmethod
    def _window_slices(cls, kernel, stride, dilation, out) -> list[tuple]:
        """The (row, col) strided slices of every kernel position, in order."""
        (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, stride, dilation, out
        return [(slice(i * dh, i * dh + (ho - 1) * sh + 1, sh), slice(j * dw, j * dw + (wo - 1) * sw + 1, sw))
                for i in range(kh) for j in range(kw)]

    @classmethod
    def _unfold(cls, xp: Any, kernel, stride, dilation, out) -> Any:
        """im2col: `xp [N, C, Hp, Wp]` (padded) -> `[N, C, kh*kw, Ho*Wo]`,
        one strided slice per kernel position."""
        n, c = cls.float_shape(xp)[:2]
        length = out[0] * out[1]
        cols = [cls.float_reshape(cls.float_slice(xp, (_full(n), _full(c)) + rs), (n, c, 1, length))
                for rs in cls._window_slices(kernel, stride, dilation, out)]
        return cols[0] if len(cols) == 1 else cls.float_cat(cols, 2)

    @classmethod
    def _const(cls, array: np.ndarray, like: Any) -> Any:
        """A host constant on `like`'s device, in its dtype."""
        return cls.float_from_data(np.ascontiguousarray(array, dtype=cls.float_dtype(like)), cls.float_device(like))

    @classmethod
    def _separable(cls, x: Any, mh: np.ndarray, mw: np.ndarray) -> Any:
        """`mh [Ho, H] @ x [N, C, H, W] @ mw^T [W, Wo]`: a separable linear pooling."""
        left = cls._const(mh.reshape((1, 1) + mh.shape), x)
        right = cls._const(mw.T.reshape((1, 1) + mw.T.shape), x)
        return cls.float_matmul(cls.float_matmul(left, x), right)

    @classmethod
    def _add_bias(cls, out: Any, bias: Any) -> Any:
        if bias is None:
            return out
        shape = (1, cls.float_shape(bias)[0]) + (1,) * (len(cls.float_shape(out)) - 2)
        return cls.float_add(out, cls.float_reshape(bias, shape))

    # -- convolution -------------------------------------------------------------------
    @classmethod
    def conv2d(cls, x: Any, weight: Any, bias: Any, options: ConvOptions) -> Any:
        """2-D convolution (cross-correlation, as in every framework)."""
        n, c, h, w = cls.float_shape(x)
        o, cg, kh, kw = cls.float_shape(weight)
        (sh, sw), (ph, pw), (dh, dw), g = options.stride, options.padding, options.dilation, options.groups
        ho, wo = conv_output_size(h, kh, sh, ph, dh), conv_output_size(w, kw, sw, pw, dw)
        xp = cls._pad2d(x, ((ph, ph), (pw, pw)), 0.0)
        cols = cls._unfold(xp, (kh, kw), (sh, sw), (dh, dw), (ho, wo))        # [N, C, kk, L]
        cols = cls.float_reshape(cols, (n, g, cg * kh * kw, ho * wo))       # C = g * cg, channel-major
        wm = cls.float_reshape(weight, (1, g, o // g, cg * kh * kw))
        out = cls.float_reshape(cls.float_matmul(wm, cols), (n, o, ho, wo))  # [N, g, O/g, L]
        return cls._add_bias(out, bias)

    @classmethod
    def conv_transpose2d(cls, x: Any, weight: Any, bias: Any, options: ConvTransposeOptions) -> Any:
        """2-D transposed convolution (the input-gradient of conv2d): each
        input value scatters `value * weight` into the output, col2im style."""
        n, ci, h, w = cls.float_shape(x)
        _, og, kh, kw = cls.float_shape(weight)
        (sh, sw), (ph, pw), (poh, pow_), (dh, dw), g = (options.stride, options.padding, options.padding_out,
                                                        options.dilation, options.groups)
        cig, co = ci // g, og * g
        xm = cls.float_reshape(x, (n, g, cig, h * w))
        wm = cls.float_swap_dims(cls.float_reshape(weight, (1, g, cig, og * kh * kw)), 2, 3)
        cols = cls.float_reshape(cls.float_matmul(wm, xm), (n, co, kh * kw, h, w))
        # The full (uncropped) output: every kernel tap lands on a strided grid.
        hf, wf = (h - 1) * sh + dh * (kh - 1) + 1 + poh, (w - 1) * sw + dw * (kw - 1) + 1 + pow_
        out = cls.float_full((n, co, hf, wf), 0.0, cls.float_device(x), cls.float_dtype(x))
        lead = (_full(n), _full(co))
        for k, rs in enumerate(cls._window_slices((kh, kw), (sh, sw), (dh, dw), (h, w))):
            tap = cls.float_reshape(cls.float_slice(cols, lead + (slice(k, k + 1, 1), _full(h), _full(w))),
                                    (n, co, h, w))
            region = lead + rs
            out = cls.float_slice_assign(out, region, cls.float_add(cls.float_slice(out, region), tap))
        ho = conv_transpose_output_size(h, kh, sh, ph, poh, dh)
        wo = conv_transpose_output_size(w, kw, sw, pw, pow_, dw)
        if (ph, pw) != (0, 0) or (ho, wo) != (hf, wf):
            out = cls.float_slice(out, lead + (slice(ph, ph + ho, 1), slice(pw, pw + wo, 1)))
        return cls._add_bias(out, bias)

    @classmethod
    def conv2d_weight_backward(cls, x: Any, output_grad: Any, weight_shape: tuple,
                               options: ConvOptions) -> Any:
        """d loss / d weight of `conv2d(x, weight)`: sum over the batch of
        `output_grad @ im2col(x)^T`, per group."""
        n, c, h, w = cls.float_shape(x)
        _, o, ho, wo = cls.float_shape(output_grad)
        _, cg, kh, kw = weight_shape
        (sh, sw), (ph, pw), (dh, dw), g = options.stride, options.padding, options.dilation, options.groups
        # Pad past the bottom/right when output_grad has more rows than x's
        # own conv output (conv_transpose's weight gradient can ask for that).
        eh = max(0, (ho - 1) * sh + dh * (kh - 1) + 1 - (h + 2 * ph))
        ew = max(0, (wo - 1) * sw + dw * (kw - 1) + 1 - (w + 2 * pw))
        xp = cls._pad2d(x, ((ph, ph + eh), (pw, pw + ew)), 0.0)
        cols = cls._unfold(xp, (kh, kw), (sh, sw), (dh, dw), (ho, wo))
        cols = cls.float_swap_dims(cls.float_reshape(cols, (n, g, cg * kh * kw, ho * wo)), 2, 3)
        gm = cls.float_reshape(output_grad, (n, g, o // g, ho * wo))
        gw = cls.float_sum_dim(cls.float_matmul(gm, cols), 0)           # [1, g, O/g, cg*kk]
        return cls.float_reshape(gw, (o, cg, kh, kw))

    @classmethod
    def conv1d(cls, x: Any, weight: Any, bias: Any, options: ConvOptions) -> Any:
        """`[N, C, L]` conv as conv2d over a `[N, C, 1, L]` view."""
        opts = _as_2d(options)
        out = cls.conv2d(_unsqueeze2(cls, x), _unsqueeze2(cls, weight), bias, opts)
        return _squeeze2(cls, out)

    @classmethod
    def conv_transpose1d(cls, x: Any, weight: Any, bias: Any, options: ConvTransposeOptions) -> Any:
        opts = ConvTransposeOptions((1,) + options.stride, (0,) + options.padding, (0,) + options.padding_out,
                                    (1,) + options.dilation, options.groups)
        out = cls.conv_transpose2d(_unsqueeze2(cls, x), _unsqueeze2(cls, weight), bias, opts)
        return _squeeze2(cls, out)

    # -- average pooling -----------------------------------------------------------------
    @classmethod
    def _avg_matrices(cls, x, kernel_size, stride, padding, count_include_pad):
        h, w = cls.float_shape(x)[2:]
        ho = pool_output_size(h, kernel_size[0], stride[0], padding[0], 1, False)
        wo = pool_output_size(w, kernel_size[1], stride[1], padding[1], 1, False)
        return (_avg_matrix(h, kernel_size[0], stride[0], padding[0], count_include_pad, ho),
                _avg_matrix(w, kernel_size[1], stride[1], padding[1], count_include_pad, wo))

    @classmethod
    def avg_pool2d(cls, x: Any, kernel_size: tuple, stride: tuple, padding: tuple,
                   count_include_pad: bool) -> Any:
        """Mean of each window; `count_include_pad` divides by kh*kw even where
        the window covers zero padding, else by the valid values only."""
        mh, mw = cls._avg_matrices(x, kernel_size, stride, padding, count_include_pad)
        return cls._separable(x, mh, mw)

    @classmethod
    def avg_pool2d_backward(cls, x: Any, output_grad: Any, kernel_size: tuple, stride: tuple,
                            padding: tuple, count_include_pad: bool) -> Any:
        mh, mw = cls._avg_matrices(x, kernel_size, stride, padding, count_include_pad)
        return cls._separable(output_grad, mh.T, mw.T)

    @classmethod
    def avg_pool1d(cls, x: Any, kernel_size: tuple, stride: tuple, padding: tuple,
                   count_include_pad: bool) -> Any:
        out = cls.avg_pool2d(_unsqueeze2(cls, x), (1,) + tuple(kernel_size), (1,) + tuple(stride),
                             (0,) + tuple(padding), count_include_pad)
        return _squeeze2(cls, out)

    @classmethod
    def adaptive_avg_pool2d(cls, x: Any, output_size: tuple) -> Any:
        """Mean over bins [floor(i H / Ho), ceil((i + 1) H / Ho)) per output."""
        h, w = cls.float_shape(x)[2:]
        return cls._separable(x, _adaptive_matrix(h, output_size[0]), _adaptive_matrix(w, output_size[1]))

    @classmethod
    def adaptive_avg_pool2d_backward(cls, x: Any, output_grad: Any) -> Any:
        h, w = cls.float_shape(x)[2:]
        ho, wo = cls.float_shape(output_grad)[2:]
        return cls._separable(output_grad, _adaptive_matrix(h, ho).T, _adaptive_matrix(w, wo).T)

    @classmethod
    def adaptive_avg_pool1d(cls, x: Any, output_size: tuple) -> Any:
        return _squeeze2(cls, cls.adaptive_avg_pool2d(_unsqueeze2(cls, x), (1,) + tuple(output_size)))

    # -- max pooling -----------------------------------------------------------------------
    @classmethod
    def _max_windows(cls, x, kernel_size, stride, padding, dilation, ceil_mode):
        """`[N, C, kh*kw, Ho*Wo]` windows of x padded with -inf, and (Ho, Wo)."""
        n, c, h, w = cls.float_shape(x)
        out = tuple(pool_output_size(s, k, st, p, d, ceil_mode)
                    for s, k, st, p, d in zip((h, w), kernel_size, stride, padding, dilation))
        # ceil_mode's last window may run past the padding: pad further there.
        extra = [max(p, (o - 1) * st + d * (k - 1) + 1 - s - p)
                 for s, k, st, p, d, o in zip((h, w), kernel_size, stride, padding, dilation, out)]
        xp = cls._pad2d(x, ((padding[0], extra[0]), (padding[1], extra[1])), -math.inf)
        return cls._unfold(xp, kernel_size, stride, dilation, out), out

    @classmethod
    def max_pool2d(cls, x: Any, kernel_size: tuple, stride: tuple, padding: tuple, dilation: tuple,
                   ceil_mode: bool = False) -> Any:
        """Max of each window (padding never wins: it is -inf)."""
        n, c = cls.float_shape(x)[:2]
        cols, (ho, wo) = cls._max_windows(x, kernel_size, stride, padding, dilation, ceil_mode)
        return cls.float_reshape(cls.float_max_dim(cols, 2), (n, c, ho, wo))

    @classmethod
    def max_pool2d_with_indices(cls, x: Any, kernel_size: tuple, stride: tuple, padding: tuple,
                                dilation: tuple, ceil_mode: bool = False) -> tuple:
        """`max_pool2d` and, for each output, the flat index `h * W + w` of
        the (first) maximum in its input plane."""
        n, c, h, w = cls.float_shape(x)
        cols, (ho, wo) = cls._max_windows(x, kernel_size, stride, padding, dilation, ceil_mode)
        out = cls.float_reshape(cls.float_max_dim(cols, 2), (n, c, ho, wo))
        tap = cls.float_argmax(cols, 2)                                     # [N, C, 1, L], kernel position
        kw = kernel_size[1]
        ti = cls.int_div_scalar(tap, kw)
        tj = cls.int_sub(tap, cls.int_mul_scalar(ti, kw))
        # Where each window starts in the unpadded input, per output position.
        dev = cls.float_device(x)
        row0 = np.repeat(np.arange(ho) * stride[0] - padding[0], wo).reshape(1, 1, 1, ho * wo)
        col0 = np.tile(np.arange(wo) * stride[1] - padding[1], ho).reshape(1, 1, 1, ho * wo)
        rows = cls.int_add(cls.int_mul_scalar(ti, dilation[0]), cls.int_from_data(row0.astype(np.int64), dev))
        cols_ = cls.int_add(cls.int_mul_scalar(tj, dilation[1]), cls.int_from_data(col0.astype(np.int64), dev))
        index = cls.int_add(cls.int_mul_scalar(rows, w), cols_)
        return out, cls.int_reshape(index, (n, c, ho, wo))

    @classmethod
    def max_pool2d_with_indices_backward(cls, x: Any, kernel_size: tuple, stride: tuple, padding: tuple,
                                         dilation: tuple, ceil_mode: bool, output_grad: Any,
                                         indices: Any) -> Any:
        """Each output's gradient added at its max's position (scatter adds,
        so overlapping windows that share a max accumulate)."""
        n, c, h, w = cls.float_shape(x)
        ho, wo = cls.float_shape(output_grad)[2:]
        zeros = cls.float_full((n, c, h * w), 0.0, cls.float_device(x), cls.float_dtype(output_grad))
        g = cls.float_reshape(output_grad, (n, c, ho * wo))
        out = cls.float_scatter(2, zeros, cls.int_reshape(indices, (n, c, ho * wo)), g)
        return cls.float_reshape(out, (n, c, h, w))

    @classmethod
    def max_pool1d(cls, x: Any, kernel_size: tuple, stride: tuple, padding: tuple, dilation: tuple,
                   ceil_mode: bool = False) -> Any:
        args = _pool1d_as_2d(kernel_size, stride, padding, dilation)
        return _squeeze2(cls, cls.max_pool2d(_unsqueeze2(cls, x), *args, ceil_mode))

    @classmethod
    def max_pool1d_with_indices(cls, x: Any, kernel_size: tuple, stride: tuple, padding: tuple,
                                dilation: tuple, ceil_mode: bool = False) -> tuple:
        """Indices are positions along L (the 2-D flat index with H = 1)."""
        args = _pool1d_as_2d(kernel_size, stride, padding, dilation)
        out, index = cls.max_pool2d_with_indices(_unsqueeze2(cls, x), *args, ceil_mode)
        n, c, _, lo = cls.int_shape(index)
        return _squeeze2(cls, out), cls.int_reshape(index, (n, c, lo))

    # -- embedding --------------------------------------------------------------------------
    @classmethod
    def embedding(cls, weights: Any, indices: Any) -> Any:
        """Rows of `weights [n, d]` picked by Int `indices [b, s]` -> `[b, s, d]`."""
        b, s = cls.int_shape(indices)
        d = cls.float_shape(weights)[1]
        rows = cls.float_select(weights, 0, cls.int_reshape(indices, (b * s,)))
        return cls.float_reshape(rows, (b, s, d))

    @classmethod
    def embedding_backward(cls, weights: Any, output_grad: Any, indices: Any) -> Any:
        """Each row's gradient added into the table row it came from."""
        n, d = cls.float_shape(weights)
        b, s = cls.int_shape(indices)
        zeros = cls.float_full((n, d), 0.0, cls.float_device(weights), cls.float_dtype(output_grad))
        return cls.float_select_assign(zeros, 0, cls.int_reshape(indices, (b * s,)),
                                       cls.float_reshape(output_grad, (b * s, d)))

    # -- whole layers, composites of the primitives above (`module_layers.py`) --------------
    lstm = classmethod(module_layers.lstm)
    gru = classmethod(module_layers.gru)
    layer_norm = classmethod(module_layers.layer_norm)
    layer_norm_with_stats = classmethod(module_layers.layer_norm_with_stats)
    layer_norm_backward = classmethod(module_layers.layer_norm_backward)
    gelu = classmethod(module_layers.gelu)
    gelu_backward = classmethod(module_layers.gelu_backward)
    gelu_with_derivative = classmethod(module_layers.gelu_with_derivative)
    hard_sigmoid = classmethod(module_layers.hard_sigmoid)

    # -- scaled dot-product attention (`attention_ops.py`): `attention(q [b, h, sq, dk],
    # k [b, h, sk, dk], v [b, h, sk, dv], mask Bool [b, 1|h, sq, sk] | None, scale, fill)
    # -> [b, h, sq, dv]`; `attention_with_weights` also returns the softmax weights, and
    # `attention_backward(q, k, v, weights, grad, mask, scale) -> (dq, dk, dv)`, the helper
    # its autodiff rule calls.
    attention = classmethod(attention_ops.attention)
    attention_with_weights = classmethod(attention_ops.attention_with_weights)
    attention_backward = classmethod(attention_ops.attention_backward)


@functools.lru_cache(maxsize=1024)
def _as_2d(options: ConvOptions) -> ConvOptions:
    """The 2-D twin of resolved 1-D options (height 1), built once per setting."""
    return ConvOptions((1,) + options.stride, (0,) + options.padding, (1,) + options.dilation, options.groups)


def _unsqueeze2(B: Any, p: Any) -> Any:
    """`[N, C, L]` -> `[N, C, 1, L]` (weights `[O, C, K]` -> `[O, C, 1, K]`)."""
    shape = B.float_shape(p)
    return B.float_reshape(p, tuple(shape[:2]) + (1,) + tuple(shape[2:]))


def _squeeze2(B: Any, p: Any) -> Any:
    n, c, _, length = B.float_shape(p)
    return B.float_reshape(p, (n, c, length))


def _pool1d_as_2d(kernel_size, stride, padding, dilation) -> tuple:
    return ((1,) + tuple(kernel_size), (1,) + tuple(stride), (0,) + tuple(padding), (1,) + tuple(dilation))
