"""Module ops (Burn's `ModuleOps`): conv1d/2d (stride, padding, dilation,
groups, with and without bias), transposed convs, max pooling (with indices,
dilation, ceil_mode), avg pooling (count_include_pad either way), adaptive
avg pooling, embedding, attention, layer norm, GELU. Every backend inherits defaults written with the
primitive ops (`burnbook/backend/module_ops.py`), so a backend with those
primitives passes these before it writes a single module op of its own.
Arguments are what the protocol gets: options resolved to one tuple entry per
spatial dim. The `*_backward` module ops are the autodiff rules' helpers:
`check_autodiff` exercises them."""

from __future__ import annotations

import math

import numpy as np

from ...backend.module_options import ConvOptions, ConvTransposeOptions
from ..case import Case, uniform
from . import _module_reference as ref

F = "module"


def _t(v) -> str:
    """`(2, 3, 5)` -> `"2x3x5"`, for case names."""
    return "x".join(str(i) for i in v) if isinstance(v, tuple) else str(v)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _conv2d_case(x, w, bias, stride=1, padding=0, dilation=1, groups=1):
    s, p, d = _pair(stride), _pair(padding), _pair(dilation)
    name = f"conv2d[{_t(x)},{_t(w)},{'bias' if bias else 'no bias'},s{_t(s)},p{_t(p)},d{_t(d)},g{groups}]"
    o = ConvOptions(stride=s, padding=p, dilation=d, groups=groups).resolved(2)
    return Case(name, F, "conv2d",
                lambda rng: (uniform(rng, x), uniform(rng, w)) + ((uniform(rng, (w[0],)),) if bias else ()),
                lambda B, dev, xp, wp, bp=None: B.conv2d(xp, wp, bp, o),
                lambda xa, wa, ba=None: ref.conv2d(xa, wa, ba, s, p, d, groups), rtol=1e-4, atol=1e-5)


def _conv1d_case(x, w, bias, stride=1, padding=0, dilation=1, groups=1):
    name = f"conv1d[{_t(x)},{_t(w)},{'bias' if bias else 'no bias'},s{stride},p{padding},d{dilation},g{groups}]"
    o = ConvOptions(stride=(stride,), padding=(padding,), dilation=(dilation,), groups=groups).resolved(1)

    def reference(xa, wa, ba=None):
        out = ref.conv2d(xa[:, :, None, :], wa[:, :, None, :], ba, (1, stride), (0, padding),
                         (1, dilation), groups)
        return out[:, :, 0, :]
    return Case(name, F, "conv1d",
                lambda rng: (uniform(rng, x), uniform(rng, w)) + ((uniform(rng, (w[0],)),) if bias else ()),
                lambda B, dev, xp, wp, bp=None: B.conv1d(xp, wp, bp, o), reference, rtol=1e-4, atol=1e-5)


def _conv_transpose2d_case(x, w, bias, stride=1, padding=0, padding_out=0, dilation=1, groups=1):
    s, p, q, d = _pair(stride), _pair(padding), _pair(padding_out), _pair(dilation)
    name = f"conv_transpose2d[{_t(x)},{_t(w)},{'bias' if bias else 'no bias'},s{_t(s)},p{_t(p)},po{_t(q)},d{_t(d)},g{groups}]"
    o = ConvTransposeOptions(stride=s, padding=p, padding_out=q, dilation=d, groups=groups).resolved(2)
    return Case(name, F, "conv_transpose2d",
                lambda rng: (uniform(rng, x), uniform(rng, w))
                + ((uniform(rng, (w[1] * groups,)),) if bias else ()),
                lambda B, dev, xp, wp, bp=None: B.conv_transpose2d(xp, wp, bp, o),
                lambda xa, wa, ba=None: ref.conv_transpose2d(xa, wa, ba, s, p, q, d, groups),
                rtol=1e-4, atol=1e-5)


def _conv_transpose1d_case(x, w, stride, padding, padding_out):
    o = ConvTransposeOptions(stride=(stride,), padding=(padding,), padding_out=(padding_out,),
                             dilation=(1,), groups=1).resolved(1)

    def reference(xa, wa):
        out = ref.conv_transpose2d(xa[:, :, None, :], wa[:, :, None, :], None, (1, stride), (0, padding),
                                   (0, padding_out), (1, 1), 1)
        return out[:, :, 0, :]
    return Case(f"conv_transpose1d[{_t(x)},{_t(w)},s{stride},p{padding},po{padding_out}]", F, "conv_transpose1d",
                lambda rng: (uniform(rng, x), uniform(rng, w)),
                lambda B, dev, xp, wp: B.conv_transpose1d(xp, wp, None, o), reference, rtol=1e-4, atol=1e-5)


def _max_pool2d_cases(x, k, s, p, d, ceil):
    args = (_pair(k), _pair(s), _pair(p), _pair(d), ceil)
    tag = f"{_t(x)},k{_t(args[0])},s{_t(args[1])},p{_t(args[2])},d{_t(args[3])}{',ceil' if ceil else ''}"
    make = (lambda rng: (uniform(rng, x),))
    return [Case(f"max_pool2d[{tag}]", F, "max_pool2d", make,
                 lambda B, dev, xp: B.max_pool2d(xp, *args),
                 lambda xa: ref.max_pool2d_with_indices(xa, *args)[0]),
            Case(f"max_pool2d_with_indices[{tag}]", F, "max_pool2d_with_indices", make,
                 lambda B, dev, xp: tuple(B.max_pool2d_with_indices(xp, *args)),
                 lambda xa: ref.max_pool2d_with_indices(xa, *args),
                 note="indices are flat positions h * W + w in the input plane")]


def _max_pool1d_cases(x, k, s, p, d, ceil):
    args = ((k,), (s,), (p,), (d,), ceil)
    args2 = ((1, k), (1, s), (0, p), (1, d), ceil)

    def reference(xa):
        out, idx = ref.max_pool2d_with_indices(xa[:, :, None, :], *args2)
        return out[:, :, 0, :], idx[:, :, 0, :]
    tag = f"{_t(x)},k{k},s{_t(s)},p{_t(p)},d{_t(d)}{',ceil' if ceil else ''}"
    make = (lambda rng: (uniform(rng, x),))
    return [Case(f"max_pool1d[{tag}]", F, "max_pool1d", make,
                 lambda B, dev, xp: B.max_pool1d(xp, *args), lambda xa: reference(xa)[0]),
            Case(f"max_pool1d_with_indices[{tag}]", F, "max_pool1d_with_indices", make,
                 lambda B, dev, xp: tuple(B.max_pool1d_with_indices(xp, *args)), reference)]


def _avg_pool_cases(x2, x1, k, s, p, count_include_pad):
    a2 = (_pair(k), _pair(s), _pair(p), count_include_pad)
    tag = f"k{k},s{_t(s)},p{_t(p)}{',count pad' if count_include_pad else ''}"
    return [Case(f"avg_pool2d[{_t(x2)},{tag}]", F, "avg_pool2d", lambda rng: (uniform(rng, x2),),
                 lambda B, dev, xp: B.avg_pool2d(xp, *a2), lambda xa: ref.avg_pool2d(xa, *a2)),
            Case(f"avg_pool1d[{_t(x1)},{tag}]", F, "avg_pool1d", lambda rng: (uniform(rng, x1),),
                 lambda B, dev, xp: B.avg_pool1d(xp, (k,), (s,), (p,), count_include_pad),
                 lambda xa: ref.avg_pool2d(xa[:, :, None, :], (1, k), (1, s), (0, p),
                                           count_include_pad)[:, :, 0, :])]


def _adaptive_cases(x2, out2, x1, out1):
    return [Case(f"adaptive_avg_pool2d[{_t(x2)},{_t(out2)}]", F, "adaptive_avg_pool2d",
                 lambda rng: (uniform(rng, x2),), lambda B, dev, xp: B.adaptive_avg_pool2d(xp, out2),
                 lambda xa: ref.adaptive_avg_pool2d(xa, out2)),
            Case(f"adaptive_avg_pool1d[{_t(x1)},{out1}]", F, "adaptive_avg_pool1d",
                 lambda rng: (uniform(rng, x1),), lambda B, dev, xp: B.adaptive_avg_pool1d(xp, (out1,)),
                 lambda xa: ref.adaptive_avg_pool2d(xa[:, :, None, :], (1, out1))[:, :, 0, :])]


def _embedding_case(n, d, idx_shape):
    return Case(f"embedding[{n}x{_t(d)},{_t(idx_shape)}]", F, "embedding",
                lambda rng: (uniform(rng, (n, d)), rng.integers(0, n, size=idx_shape).astype(np.int64)),
                lambda B, dev, w, i: B.embedding(w, i), lambda w, i: w[i])


def _attention_reference(q, k, v, mask, scale):
    s = np.where(mask, -1.0e4, q.astype(np.float64) @ np.swapaxes(k, -1, -2) * scale)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    return w @ v


def _attention_case(b, h, sq, sk, dk, dv):
    shapes = ((b, h, sq, dk), (b, h, sk, dk), (b, h, sk, dv))
    scale = 1.0 / float(np.sqrt(dk))   # a Python float, as the Tensor layer passes scalars
    return Case(f"attention[{_t(shapes[0])},{sk},{dv},masked]", F, "attention",
                lambda rng: tuple(uniform(rng, s) for s in shapes) + (rng.random((b, 1, sq, sk)) < 0.3,),
                lambda B, dev, q, k, v, m: B.attention(q, k, v, m, scale, -1.0e4),
                lambda q, k, v, m: _attention_reference(q, k, v, m, scale), rtol=1e-4, atol=1e-5)


def _layer_norm_reference(x, gamma, beta):
    x = x.astype(np.float64)
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(-1, keepdims=True) + 1e-5) * gamma + beta


def _layer_norm_case(shape):
    d = shape[-1]
    return Case(f"layer_norm[{_t(shape)}]", F, "layer_norm",
                lambda rng: (uniform(rng, shape, -3.0, 5.0), uniform(rng, (d,)), uniform(rng, (d,))),
                lambda B, dev, x, g, b: B.layer_norm(x, g, b, 1e-5), _layer_norm_reference, rtol=1e-4, atol=1e-5)


def _gelu_reference(x):
    x = x.astype(np.float64)
    return x * 0.5 * np.array([math.erfc(-v / math.sqrt(2.0)) for v in x.reshape(-1)]).reshape(x.shape)


def _gelu_case(shape):
    return Case(f"gelu[{_t(shape)}]", F, "gelu", lambda rng: (uniform(rng, shape, -6.0, 6.0),),
                lambda B, dev, x: B.gelu(x), _gelu_reference, rtol=1e-5, atol=1e-6)


CASES: list[Case] = [
    _conv2d_case((2, 3, 5, 5), (4, 3, 3, 3), True),
    _conv2d_case((1, 2, 6, 5), (3, 2, 3, 2), False, stride=2, padding=1),
    _conv2d_case((1, 4, 7, 7), (4, 2, 3, 3), True, stride=(1, 2), padding=(2, 1), dilation=2, groups=2),
    _conv2d_case((2, 3, 4, 4), (3, 1, 3, 3), False, padding=1, groups=3),   # depthwise
    _conv2d_case((1, 3, 1, 1), (5, 3, 1, 1), True),                          # 1x1 on one pixel
    _conv1d_case((2, 3, 8), (4, 3, 3), True, stride=2, padding=1),
    _conv1d_case((1, 4, 9), (2, 2, 2), False, dilation=3, groups=2),
    _conv_transpose2d_case((1, 2, 3, 3), (2, 3, 3, 3), True),
    _conv_transpose2d_case((2, 4, 3, 2), (4, 1, 2, 3), False, stride=2, padding=1, padding_out=1, groups=2),
    _conv_transpose2d_case((1, 2, 2, 3), (2, 2, 3, 2), True, stride=(2, 1), dilation=2),
    _conv_transpose1d_case((2, 3, 4), (3, 2, 3), 2, 1, 1),
    *_max_pool2d_cases((2, 2, 5, 5), 2, 2, 0, 1, False),
    *_max_pool2d_cases((1, 3, 6, 5), 3, 2, 1, 1, True),
    *_max_pool2d_cases((1, 1, 7, 7), 2, 1, 1, 2, False),
    *_max_pool1d_cases((2, 3, 9), 3, 2, 1, 1, False),
    *_max_pool1d_cases((1, 2, 8), 2, 3, 0, 2, True),
    *_avg_pool_cases((2, 2, 5, 5), (2, 3, 7), 3, 2, 1, True),
    *_avg_pool_cases((1, 3, 6, 4), (1, 2, 6), 2, 2, 1, False),
    *_adaptive_cases((2, 3, 7, 5), (3, 2), (2, 2, 7), 3),
    *_adaptive_cases((1, 2, 4, 6), (4, 6), (1, 3, 5), 1),
    _embedding_case(10, 4, (2, 3)),
    _embedding_case(5, 3, (1, 6)),
    _attention_case(2, 3, 4, 5, 6, 2),
    _attention_case(1, 2, 3, 3, 4, 4),
    _layer_norm_case((2, 3, 8)),
    _layer_norm_case((5, 1)),
    _gelu_case((3, 5)),
    _gelu_case((64, 80)),   # past NdArray's 4096 elements: its table of Phi
]
