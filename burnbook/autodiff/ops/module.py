"""Module ops (Burn's `ModuleOps`): convolution, pooling, embedding.

Each op is declared with `@module_op(...)` (which arguments are tensors,
which to save) and its backward rule sits right below, written with protocol
ops only, as Burn's autodiff does:

- conv: input grad = `conv_transpose` of the output grad, weight grad =
  `conv2d_weight_backward`, bias grad = the output grad summed; conv_transpose
  is the mirror image (input grad = `conv2d`).
- pooling: the backend's `*_backward` op; max pooling keeps the indices of
  the maxima from the forward (it runs `max_pool2d_with_indices` when tracked).
- embedding: `embedding_backward` adds each row's grad into its table row.
- 1-D ops reshape to the 2-D helpers on a `[N, C, 1, L]` view.

The backward helpers are differentiable too (they are linear in the output
grad), so `backward(create_graph=True)` through a conv or a pool works.

Static arguments land in `n.args` in call order (options, kernel sizes...),
followed by what a tracked forward adds (the max-pool indices).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ...backend.module_ops import ConvOptions, ConvTransposeOptions
from ..graph import AutodiffTensor, track
from .table import OpSpec, register

_TRACKED: dict[str, Callable] = {}   # op -> forward on the tracked path: (inner, fn, args) -> (out, extra args)
_WITH_INDICES: set[str] = set()      # ops returning (Float output, Int indices)


def module_op(label: str, tensors: tuple, save: tuple | None = None,
              tracked: Callable | None = None, with_indices: bool = False):
    """Declare module op `label`: tensor arguments at positions `tensors`
    (any may be None, e.g. a missing bias), `save` per tensor position;
    `tracked(inner, fn, args) -> (out, extra_static)` replaces the forward
    when an input is tracked. Rule: `(B, g, n, *saved_tensors)`."""
    def deco(rule):
        register(OpSpec(label, label, "module", rule, save or (False,) * len(tensors), False, tensors))
        if tracked is not None:
            _TRACKED[label] = tracked
        if with_indices:
            _WITH_INDICES.add(label)
        return rule
    return deco


def module_forward(inner: type, fn: Callable, spec: OpSpec) -> Callable:
    """The Autodiff method of a module op (the table's "module" kind)."""
    label, rule, pos, save = spec.label, spec.rule, spec.tensors, spec.save
    tracked, with_indices = _TRACKED.get(label), label in _WITH_INDICES

    def op(*args):
        args = list(args)
        parents, saved = [], []
        for i, s in zip(pos, save):
            t = args[i]
            if t is None:
                parents.append(None)
                saved.append(None)
                continue
            args[i] = t.primitive
            parents.append(t.node)
            saved.append(t.primitive if s else None)
        if all(p is None for p in parents):
            out = fn(*args)
            return (AutodiffTensor(out[0], None), out[1]) if with_indices else AutodiffTensor(out, None)
        out, extra = tracked(inner, fn, args) if tracked is not None else (fn(*args), ())
        indices = None
        if with_indices:
            out, indices = out
            extra = (indices,)
        static = tuple(a for i, a in enumerate(args) if i not in pos) + tuple(extra)
        t = track(label, tuple(parents), out, tuple(inner.float_shape(out)), rule, tuple(saved), static)
        return (t, indices) if with_indices else t
    return op


# -- shared pieces -------------------------------------------------------------------

def _shape(B: Any, p: Any) -> tuple:
    return tuple(B.float_shape(p))


def _fit(B: Any, p: Any, spatial: tuple) -> Any:
    """`p [N, C, *sp]` cropped, or zero-extended at the end, to `spatial`."""
    shape = _shape(B, p)
    if shape[2:] == tuple(spatial):
        return p
    lead = (slice(0, shape[0], 1), slice(0, shape[1], 1))
    crop = tuple(slice(0, min(a, b), 1) for a, b in zip(shape[2:], spatial))
    p = B.float_slice(p, lead + crop)
    if all(a >= b for a, b in zip(shape[2:], spatial)):
        return p
    base = B.float_full(shape[:2] + tuple(spatial), 0.0, B.float_device(p), B.float_dtype(p))
    return B.float_slice_assign(base, lead + crop, p)


def _bias_grad(B: Any, g: Any) -> Any:
    """The output grad summed over every dim but the channels -> `[O]`.

    The spatial dims are merged and summed first (contiguous rows), so the
    batch sum that follows runs over `[N, O, 1]` only."""
    shape = _shape(B, g)
    n, o = shape[0], shape[1]
    g = B.float_sum_dim(B.float_reshape(g, (n, o, math.prod(shape[2:]))), 2)
    return B.float_reshape(B.float_sum_dim(g, 0), (o,))


def _conv_input_grad(B: Any, g: Any, weight: Any, x_shape: tuple, options: ConvOptions) -> Any:
    """conv2d's input gradient: conv_transpose2d of `g` with the same weight,
    `padding_out` chosen so the result has x's size (the rows conv2d's
    stride skipped at the end get zeros)."""
    k = _shape(B, weight)[2:]
    out = _shape(B, g)[2:]
    pad_out = tuple(size + 2 * p - d * (kk - 1) - 1 - (o - 1) * s
                    for size, kk, o, s, p, d in zip(x_shape[2:], k, out, options.stride,
                                                     options.padding, options.dilation))
    opts = ConvTransposeOptions(options.stride, options.padding, tuple(max(p, 0) for p in pad_out),
                                options.dilation, options.groups)
    return _fit(B, B.conv_transpose2d(g, weight, None, opts), x_shape[2:])


def _as_conv(o: Any) -> ConvOptions:
    return ConvOptions(o.stride, o.padding, o.dilation, o.groups)


def _to2d(B: Any, p: Any) -> Any:
    s = _shape(B, p)
    return B.float_reshape(p, s[:2] + (1,) + s[2:])


def _to1d(B: Any, p: Any) -> Any:
    s = _shape(B, p)
    return B.float_reshape(p, s[:2] + s[3:])


def _conv1d_as_2d(o: Any) -> Any:
    if isinstance(o, ConvTransposeOptions):
        return ConvTransposeOptions((1,) + o.stride, (0,) + o.padding, (0,) + o.padding_out,
                                    (1,) + o.dilation, o.groups)
    return ConvOptions((1,) + o.stride, (0,) + o.padding, (1,) + o.dilation, o.groups)


def _shape2d(shape: tuple) -> tuple:
    return shape[:2] + (1,) + shape[2:]


# -- convolution -----------------------------------------------------------------------

def _conv_grads(B, g, n, x, weight, options):
    px, pw, pb = n.parents
    gx = None if px is None else _conv_input_grad(B, g, weight, _shape(B, x), options)
    gw = None if pw is None else B.conv2d_weight_backward(x, g, _shape(B, weight), options)
    return gx, gw, None if pb is None else _bias_grad(B, g)


def _conv_transpose_grads(B, g, n, x, weight, options):
    # The output of conv_transpose2d(x, w) is the input grad of a conv2d with
    # weight w, so its backward is that conv2d's forward and weight grad.
    px, pw, pb = n.parents
    opts = _as_conv(options)
    gx = None if px is None else _fit(B, B.conv2d(g, weight, None, opts), _shape(B, x)[2:])
    gw = None if pw is None else B.conv2d_weight_backward(g, x, _shape(B, weight), opts)
    return gx, gw, None if pb is None else _bias_grad(B, g)


@module_op("conv2d", tensors=(0, 1, 2), save=(True, True, False))
def conv2d(B, g, n, x, weight, bias):
    return _conv_grads(B, g, n, x, weight, n.args[0])


@module_op("conv_transpose2d", tensors=(0, 1, 2), save=(True, True, False))
def conv_transpose2d(B, g, n, x, weight, bias):
    return _conv_transpose_grads(B, g, n, x, weight, n.args[0])


def _in_2d(grads_fn):
    """A 1-D conv rule: the 2-D rule on `[N, C, 1, L]` views, grads reshaped back."""
    def rule(B, g, n, x, weight, bias):
        gx, gw, gb = grads_fn(B, _to2d(B, g), n, _to2d(B, x), _to2d(B, weight), _conv1d_as_2d(n.args[0]))
        return (None if gx is None else _to1d(B, gx), None if gw is None else _to1d(B, gw), gb)
    return rule


conv1d = module_op("conv1d", tensors=(0, 1, 2), save=(True, True, False))(_in_2d(_conv_grads))
conv_transpose1d = module_op("conv_transpose1d", tensors=(0, 1, 2),
                             save=(True, True, False))(_in_2d(_conv_transpose_grads))


@module_op("conv2d_weight_backward", tensors=(0, 1), save=(True, True))
def conv2d_weight_backward(B, gg, n, x, output_grad):
    # gw = sum over windows of output_grad * x, bilinear: each input's grad is
    # the conv (or conv_transpose) of the other with `gg` as the weight.
    _weight_shape, options = n.args
    px, pg = n.parents
    gx = None if px is None else _conv_input_grad(B, output_grad, gg, _shape(B, x), options)
    gg_out = None
    if pg is not None:
        gg_out = _fit(B, B.conv2d(x, gg, None, options), _shape(B, output_grad)[2:])
    return gx, gg_out


# -- average pooling ------------------------------------------------------------------------

@module_op("avg_pool2d", tensors=(0,), save=(True,))
def avg_pool2d(B, g, n, x):
    return B.avg_pool2d_backward(x, g, *n.args)


@module_op("avg_pool1d", tensors=(0,), save=(True,))
def avg_pool1d(B, g, n, x):
    k, s, p, cip = n.args
    gx = B.avg_pool2d_backward(_to2d(B, x), _to2d(B, g), (1,) + tuple(k), (1,) + tuple(s), (0,) + tuple(p), cip)
    return _to1d(B, gx)


@module_op("avg_pool2d_backward", tensors=(0, 1))
def avg_pool2d_backward(B, gg, n, x, output_grad):
    return None, None if n.parents[1] is None else B.avg_pool2d(gg, *n.args)


@module_op("adaptive_avg_pool2d", tensors=(0,), save=(True,))
def adaptive_avg_pool2d(B, g, n, x):
    return B.adaptive_avg_pool2d_backward(x, g)


@module_op("adaptive_avg_pool1d", tensors=(0,), save=(True,))
def adaptive_avg_pool1d(B, g, n, x):
    return _to1d(B, B.adaptive_avg_pool2d_backward(_to2d(B, x), _to2d(B, g)))


@module_op("adaptive_avg_pool2d_backward", tensors=(0, 1))
def adaptive_avg_pool2d_backward(B, gg, n, x, output_grad):
    pg = n.parents[1]
    return None, None if pg is None else B.adaptive_avg_pool2d(gg, tuple(pg.shape[2:]))


# -- max pooling -------------------------------------------------------------------------------

def _with_indices(name: str) -> Callable:
    """Tracked forward of a max pool: run the `_with_indices` op, keep the indices."""
    def forward(inner, fn, args):
        out, indices = getattr(inner, name)(*args)
        return out, (indices,)
    return forward


def _max_pool2d_grad(B, g, n, x):
    k, s, p, d, ceil, indices = n.args
    return B.max_pool2d_with_indices_backward(x, k, s, p, d, ceil, g, indices)


def _max_pool1d_grad(B, g, n, x):
    k, s, p, d, ceil, indices = n.args
    nb, c, length = B.int_shape(indices)
    gx = B.max_pool2d_with_indices_backward(
        _to2d(B, x), (1,) + tuple(k), (1,) + tuple(s), (0,) + tuple(p), (1,) + tuple(d), ceil,
        _to2d(B, g), B.int_reshape(indices, (nb, c, 1, length)))
    return _to1d(B, gx)


# Each max pool has one rule for both forms: with indices or not (the tracked
# forward of the plain form runs the `_with_indices` op to keep them).
max_pool2d = module_op("max_pool2d", tensors=(0,), save=(True,),
                       tracked=_with_indices("max_pool2d_with_indices"))(_max_pool2d_grad)
max_pool2d_with_indices = module_op("max_pool2d_with_indices", tensors=(0,), save=(True,),
                                    with_indices=True)(_max_pool2d_grad)
max_pool1d = module_op("max_pool1d", tensors=(0,), save=(True,),
                       tracked=_with_indices("max_pool1d_with_indices"))(_max_pool1d_grad)
max_pool1d_with_indices = module_op("max_pool1d_with_indices", tensors=(0,), save=(True,),
                                    with_indices=True)(_max_pool1d_grad)


@module_op("max_pool2d_with_indices_backward", tensors=(0, 6))
def max_pool2d_with_indices_backward(B, gg, n, x, output_grad):
    # Linear in output_grad: its grad reads gg back at each max's position.
    pg = n.parents[1]
    if pg is None:
        return None, None
    indices = n.args[-1]
    nb, c, ho, wo = pg.shape
    h, w = _shape(B, gg)[2:]
    flat = B.float_reshape(gg, (nb, c, h * w))
    picked = B.float_gather(2, flat, B.int_reshape(indices, (nb, c, ho * wo)))
    return None, B.float_reshape(picked, (nb, c, ho, wo))


# -- embedding ---------------------------------------------------------------------------------

@module_op("embedding", tensors=(0,), save=(True,))
def embedding(B, g, n, weights):
    return B.embedding_backward(weights, g, n.args[0])


@module_op("embedding_backward", tensors=(0, 1))
def embedding_backward(B, gg, n, weights, output_grad):
    return None, None if n.parents[1] is None else B.embedding(gg, n.args[0])
