"""Module operations as functions (Burn's `burn::tensor::module`).

    from burnbook.tensor.module import conv2d, max_pool2d
    from burnbook.tensor.ops import ConvOptions
    y = conv2d(x, weight, bias, ConvOptions(stride=1, padding=1, dilation=1, groups=1))
    y = max_pool2d(y, kernel_size=2, stride=2, padding=0, dilation=1)

Layouts are Burn's and PyTorch's: `x [batch, channels, (height,) width]`,
conv weights `[out, in/groups, (kh,) kw]`, conv_transpose weights
`[in, out/groups, (kh,) kw]`. Sizes, strides, paddings and dilations are an
int or one value per spatial dim. Every function checks its arguments and
names the shapes when they do not fit, then calls the backend's op, so
autodiff (and its backward) comes with the backend.
"""

from __future__ import annotations

import functools

from typing import Any

from burnbook.backend.module_ops import (
    ConvOptions, ConvTransposeOptions, _tuple, conv_output_size, conv_transpose_output_size,
    pool_output_size,
)
from .core import TensorBase
from .kind import Bool, Float, Int

__all__ = [
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "avg_pool1d", "avg_pool2d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "embedding", "lstm", "gru",
    "layer_norm", "attention",
]

_LAYOUT = {3: "[batch, channels, length]", 4: "[batch, channels, height, width]"}


def _check(op: str, t: Any, rank: int, name: str = "x", kind: type = Float) -> None:
    if isinstance(t, TensorBase) and t._K is kind and t._D == rank:
        return   # the common case, read from the class attributes the properties below return
    if not isinstance(t, TensorBase):
        raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    if t.kind is not kind:
        raise TypeError(f"{op}: {name} must be a {kind.name} tensor, got {t.kind.name}")
    if t.ndim != rank:
        layout = f" {_LAYOUT[rank]}" if name == "x" and rank in _LAYOUT else ""
        raise ValueError(f"{op}: {name} must have rank {rank}{layout}, got rank {t.ndim} (shape {t.dims()})")


def _same_backend(op: str, x: Any, *others: Any) -> None:
    for o in others:
        if o is not None and o.backend is not x.backend:
            raise TypeError(f"{op}: tensors from different backends ({x.backend.name()} and {o.backend.name()})")


def _check_kernel_fits(op: str, x: Any, kernel, padding, dilation, x_dims: list | None = None) -> None:
    """The (dilated) kernel must fit in the padded input, per spatial dim
    (`x_dims`: x's shape when the caller has it already)."""
    size = (x.dims() if x_dims is None else x_dims)[2:]
    span = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(s > n + 2 * p for s, n, p in zip(span, size, padding)):
        dil = f", dilation {list(dilation)}: spans {span}" if any(d > 1 for d in dilation) else ""
        raise ValueError(
            f"{op}: the kernel {list(kernel)}{dil} is larger than the padded input "
            f"{[n + 2 * p for n, p in zip(size, padding)]} (x {x.dims()}, padding {list(padding)})")


# -- convolution ------------------------------------------------------------------------

@functools.lru_cache(maxsize=1024)
def _cached_resolved(options: Any, n: int) -> Any:
    return options.resolved(n)


def _resolved(options: Any, n: int) -> Any:
    """`options.resolved(n)`, memoised (a model's convs repeat a few
    settings): options are frozen, hold only Python ints (their constructor
    refuses bools, which would equal ints as keys) and `resolved` is a pure
    function of their values; a setting that fails its checks is never
    cached and raises on every call."""
    try:
        return _cached_resolved(options, n)
    except TypeError:   # an unhashable value in a subclass's fields: resolve uncached
        return options.resolved(n)


def _conv_options(op: str, rank: int, x, weight, bias, options):
    """Check a convolution's tensors against each other and return its
    options resolved for `rank - 2` spatial dims."""
    _check(op, x, rank)
    _check(op, weight, rank, "weight")
    if bias is not None:
        _check(op, bias, 1, "bias")
    _same_backend(op, x, weight, bias)
    o = _resolved(options if options is not None else ConvOptions(), rank - 2)
    x_dims, w_dims = x.dims(), weight.dims()
    c = x_dims[1]
    out_ch, cg = w_dims[:2]
    kernel = w_dims[2:]
    if out_ch % o.groups:
        raise ValueError(f"{op}: weight {w_dims} has {out_ch} output channels, "
                         f"not divisible by groups={o.groups}")
    if c != cg * o.groups:
        raise ValueError(f"{op}: x {x_dims} has {c} channels, but weight {w_dims} "
                         f"[out, in/groups, ...] with groups={o.groups} expects {cg} x {o.groups} = {cg * o.groups}")
    if bias is not None and bias.dims() != [out_ch]:
        raise ValueError(f"{op}: bias {bias.dims()} must have shape [{out_ch}] (the weight's output channels)")
    _check_kernel_fits(op, x, kernel, o.padding, o.dilation, x_dims)
    return o


def conv1d(x, weight, bias=None, options: ConvOptions | None = None):
    """1-D convolution: `x [N, C, L]`, `weight [O, C/groups, K]`, `bias [O]`
    or None -> `[N, O, Lo]`, Lo = floor((L + 2p - d(K - 1) - 1) / s) + 1."""
    o = _conv_options("conv1d", 3, x, weight, bias, options)
    return x._as(x._B.conv1d(x._p, weight._p, None if bias is None else bias._p, o))


def conv2d(x, weight, bias=None, options: ConvOptions | None = None):
    """2-D convolution: `x [N, C, H, W]`, `weight [O, C/groups, kh, kw]`,
    `bias [O]` or None -> `[N, O, Ho, Wo]` (PyTorch's `F.conv2d`)."""
    o = _conv_options("conv2d", 4, x, weight, bias, options)
    return x._as(x._B.conv2d(x._p, weight._p, None if bias is None else bias._p, o))


def _conv_transpose_options(op: str, rank: int, x, weight, bias, options):
    """Check a transposed convolution's tensors against each other and
    return its options resolved for `rank - 2` spatial dims."""
    _check(op, x, rank)
    _check(op, weight, rank, "weight")
    if bias is not None:
        _check(op, bias, 1, "bias")
    _same_backend(op, x, weight, bias)
    o = _resolved(options if options is not None else ConvTransposeOptions(), rank - 2)
    c = x.dims()[1]
    in_ch, og = weight.dims()[:2]
    kernel = weight.dims()[2:]
    if c != in_ch:
        raise ValueError(f"{op}: x {x.dims()} has {c} channels, but weight {weight.dims()} "
                         f"[in, out/groups, ...] expects {in_ch}")
    if in_ch % o.groups:
        raise ValueError(f"{op}: weight {weight.dims()} has {in_ch} input channels, "
                         f"not divisible by groups={o.groups}")
    if bias is not None and bias.dims() != [og * o.groups]:
        raise ValueError(f"{op}: bias {bias.dims()} must have shape [{og * o.groups}] "
                         f"(out/groups {og} x groups {o.groups})")
    for po, s, d in zip(o.padding_out, o.stride, o.dilation):
        if po >= max(s, d):
            raise ValueError(f"{op}: padding_out {list(o.padding_out)} must be smaller than the stride "
                             f"{list(o.stride)} or the dilation {list(o.dilation)}")
    size = [conv_transpose_output_size(n, k, s, p, po, d) for n, k, s, p, po, d in
            zip(x.dims()[2:], kernel, o.stride, o.padding, o.padding_out, o.dilation)]
    if any(n < 1 for n in size):
        raise ValueError(f"{op}: the output would have size {size} (x {x.dims()}, kernel {kernel}, "
                         f"padding {list(o.padding)} too large)")
    return o


def conv_transpose1d(x, weight, bias=None, options: ConvTransposeOptions | None = None):
    """1-D transposed convolution: `x [N, C, L]`, `weight [C, O/groups, K]`
    -> `[N, O, Lo]`, Lo = (L - 1) s - 2p + d(K - 1) + padding_out + 1."""
    o = _conv_transpose_options("conv_transpose1d", 3, x, weight, bias, options)
    return x._as(x._B.conv_transpose1d(x._p, weight._p, None if bias is None else bias._p, o))


def conv_transpose2d(x, weight, bias=None, options: ConvTransposeOptions | None = None):
    """2-D transposed convolution: `x [N, C, H, W]`, `weight [C, O/groups,
    kh, kw]`, `bias [O]` or None -> `[N, O, Ho, Wo]` (`F.conv_transpose2d`)."""
    o = _conv_transpose_options("conv_transpose2d", 4, x, weight, bias, options)
    return x._as(x._B.conv_transpose2d(x._p, weight._p, None if bias is None else bias._p, o))


# -- pooling ------------------------------------------------------------------------------

def _pool_args(op: str, x, n: int, kernel_size, stride, padding, dilation=1, ceil_mode=False) -> tuple:
    k = _tuple(kernel_size, n, "kernel_size", op)
    s = k if stride is None else _tuple(stride, n, "stride", op)
    p, d = _tuple(padding, n, "padding", op), _tuple(dilation, n, "dilation", op)
    if any(v < 1 for v in k + s + d):
        raise ValueError(f"{op}: kernel_size {list(k)}, stride {list(s)} and dilation {list(d)} must be >= 1")
    half = [kk // 2 for kk in k]  # PyTorch's rule, dilation or not
    if any(pp < 0 or pp > h for pp, h in zip(p, half)):
        raise ValueError(f"{op}: padding {list(p)} must be between 0 and half the kernel {half} "
                         f"(kernel_size {list(k)})")
    _check_kernel_fits(op, x, k, p, d)
    size = [pool_output_size(m, kk, ss, pp, dd, ceil_mode)
            for m, kk, ss, pp, dd in zip(x.dims()[2:], k, s, p, d)]
    if any(m < 1 for m in size):
        raise ValueError(f"{op}: the output would be empty ({size}) for x {x.dims()}")
    return k, s, p, d




def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Max over windows of `x [N, C, L]` (stride defaults to kernel_size)."""
    _check("max_pool1d", x, 3)
    k, s, p, d = _pool_args("max_pool1d", x, 1, kernel_size, stride, padding, dilation, ceil_mode)
    return x._as(x._B.max_pool1d(x._p, k, s, p, d, bool(ceil_mode)))


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Max over windows of `x [N, C, H, W]` -> `[N, C, Ho, Wo]`; padding
    never wins, `ceil_mode` keeps a last partial window (PyTorch's rules)."""
    _check("max_pool2d", x, 4)
    k, s, p, d = _pool_args("max_pool2d", x, 2, kernel_size, stride, padding, dilation, ceil_mode)
    return x._as(x._B.max_pool2d(x._p, k, s, p, d, bool(ceil_mode)))


def max_pool1d_with_indices(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """`max_pool1d` and an Int tensor of each max's position along L."""
    _check("max_pool1d_with_indices", x, 3)
    k, s, p, d = _pool_args("max_pool1d_with_indices", x, 1, kernel_size, stride, padding, dilation, ceil_mode)
    out, idx = x._B.max_pool1d_with_indices(x._p, k, s, p, d, bool(ceil_mode))
    return x._as(out), x._as(idx, kind=Int)


def max_pool2d_with_indices(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """`max_pool2d` and an Int tensor `[N, C, Ho, Wo]` of each max's flat
    position `h * W + w` in its input plane (PyTorch's `return_indices`)."""
    _check("max_pool2d_with_indices", x, 4)
    k, s, p, d = _pool_args("max_pool2d_with_indices", x, 2, kernel_size, stride, padding, dilation, ceil_mode)
    out, idx = x._B.max_pool2d_with_indices(x._p, k, s, p, d, bool(ceil_mode))
    return x._as(out), x._as(idx, kind=Int)


def avg_pool1d(x, kernel_size, stride=None, padding=0, count_include_pad=True):
    """Mean over windows of `x [N, C, L]`; `count_include_pad` counts the
    zero padding in the divisor (PyTorch's default)."""
    _check("avg_pool1d", x, 3)
    k, s, p, _ = _pool_args("avg_pool1d", x, 1, kernel_size, stride, padding)
    return x._as(x._B.avg_pool1d(x._p, k, s, p, bool(count_include_pad)))


def avg_pool2d(x, kernel_size, stride=None, padding=0, count_include_pad=True):
    """Mean over windows of `x [N, C, H, W]` -> `[N, C, Ho, Wo]`."""
    _check("avg_pool2d", x, 4)
    k, s, p, _ = _pool_args("avg_pool2d", x, 2, kernel_size, stride, padding)
    return x._as(x._B.avg_pool2d(x._p, k, s, p, bool(count_include_pad)))


def _adaptive_size(op: str, rank: int, x, output_size) -> tuple:
    """Check `x` and return `output_size` as one size per spatial dim."""
    _check(op, x, rank)
    size = _tuple(output_size, rank - 2, "output_size", op)
    if any(v < 1 for v in size):
        raise ValueError(f"{op}: output_size {list(size)} must be >= 1")
    return size


def adaptive_avg_pool1d(x, output_size):
    """`x [N, C, L]` -> `[N, C, output_size]`, each output the mean of the
    bin [floor(i L / out), ceil((i + 1) L / out))."""
    return x._as(x._B.adaptive_avg_pool1d(x._p, _adaptive_size("adaptive_avg_pool1d", 3, x, output_size)))


def adaptive_avg_pool2d(x, output_size):
    """`x [N, C, H, W]` -> `[N, C, *output_size]` (PyTorch's bins)."""
    return x._as(x._B.adaptive_avg_pool2d(x._p, _adaptive_size("adaptive_avg_pool2d", 4, x, output_size)))


# -- embedding ----------------------------------------------------------------------------

def embedding(weights, indices):
    """Rows of `weights [n, d]` picked by Int `indices [batch, seq]` ->
    `[batch, seq, d]`; the backward adds into the picked rows."""
    _check("embedding", weights, 2, "weights")
    _check("embedding", indices, 2, "indices", Int)
    _same_backend("embedding", weights, indices)
    return weights._as(weights._B.embedding(weights._p, indices._p), rank=3)


# -- recurrent layers ---------------------------------------------------------------------

def _check_recurrent(op: str, x, gates: int, input_weights, input_biases, hidden_weights,
                     hidden_biases, states: dict) -> None:
    """Check a recurrent op's tensors against `x [batch, seq, d_input]` and
    the hidden size H of `hidden_weights[0] [H, H]`, naming the first that
    does not fit. `states` maps names to initial states (None: zeros)."""
    _check(op, x, 3)
    batch, seq, d_input = x.dims()
    if seq < 1:
        raise ValueError(f"{op}: x {x.dims()} [batch, seq, d_input] has no time step")
    if len(hidden_weights) != gates:
        raise ValueError(f"{op}: hidden_weights needs one entry per gate ({gates}), got {len(hidden_weights)}")
    first = hidden_weights[0]
    _check(op, first, 2, "hidden_weights[0]")
    _same_backend(op, x, first)
    h = first.dims()[1]
    # (what, tensors, their names, expected shape)
    groups = [(g, ts, [f"{g}[{k}]" for k in range(gates)], want)
              for g, ts, want in (("input_weights", input_weights, (d_input, h)),
                                  ("input_biases", input_biases, (h,)),
                                  ("hidden_weights", hidden_weights, (h, h)),
                                  ("hidden_biases", hidden_biases, (h,)))]
    groups.append(("states", list(states.values()), list(states), (batch, h)))
    # The fast path: Tensor[B, D] classes are cached per (backend, rank,
    # kind), so one `type(t) is` test checks all three; a tensor it rejects
    # gets the full checks, which name what is wrong.
    t1, t2 = type(x)._specialise(x._B, 1, x._K), type(first)
    shape = first._B.float_shape   # the tensors are Float (a `type(t) is` test below checks it)
    for what, ts, labels, want in groups:
        if len(ts) != len(labels):
            raise ValueError(f"{op}: {what} needs one entry per gate ({gates}), got {len(ts)}")
        cls = t1 if len(want) == 1 else t2
        for label, t in zip(labels, ts):
            # only a weight is required; a missing bias or state is zeros
            if (t is None and "weights" not in what) or (type(t) is cls and tuple(shape(t._p)) == want):
                continue
            _check(op, t, len(want), label)
            _same_backend(op, x, t)
            if tuple(t.dims()) != want:
                raise ValueError(f"{op}: {label} is {t.dims()}, expected {list(want)} "
                                 f"(x {x.dims()} [batch, seq, d_input], hidden_weights[0] {list(first.dims())} [H, H])")


def _prims(ts) -> list:
    return [None if t is None else t._p for t in ts]


def lstm(x, input_weights, input_biases, hidden_weights, hidden_biases, cell=None, hidden=None):
    """A whole LSTM layer: `x [batch, seq, d_input]`, per-gate weights in
    ONNX's gate order (input, output, forget, cell): `input_weights` `[d_input,
    H]`, `hidden_weights` `[H, H]`, biases `[H]` or None; the initial `cell`
    and `hidden` `[batch, H]` (None: zeros) -> every step's `(cells,
    hiddens)`, each `[batch, seq, H]`. One backend op (`ModuleOps.lstm`)."""
    _check_recurrent("lstm", x, 4, input_weights, input_biases, hidden_weights, hidden_biases,
                     {"cell": cell, "hidden": hidden})
    cs, hs = x._B.lstm(x._p, _prims(input_weights), _prims(input_biases), _prims(hidden_weights),
                            _prims(hidden_biases), None if cell is None else cell._p,
                            None if hidden is None else hidden._p)
    return x._as(cs), x._as(hs)


def gru(x, input_weights, input_biases, hidden_weights, hidden_biases, hidden=None, reset_after: bool = True):
    """A whole GRU layer: `x [batch, seq, d_input]`, per-gate weights and
    biases as for `lstm` in the order (update, reset, new), the initial
    `hidden [batch, H]` (None: zeros) -> every step's hidden state `[batch,
    seq, H]`. `reset_after` scales the new gate's hidden transform by the
    reset gate (PyTorch's GRU); False scales the hidden state before it."""
    _check_recurrent("gru", x, 3, input_weights, input_biases, hidden_weights, hidden_biases, {"hidden": hidden})
    return x._as(x._B.gru(x._p, _prims(input_weights), _prims(input_biases), _prims(hidden_weights),
                               _prims(hidden_biases), None if hidden is None else hidden._p, bool(reset_after)))


# -- normalisation --------------------------------------------------------------------------

def layer_norm(x, gamma, beta, epsilon: float = 1e-5):
    """(x - mean) / sqrt(var + epsilon) * gamma + beta over the last dim of
    `x [..., d]` (biased variance, as torch.nn.functional.layer_norm), with
    `gamma` and `beta` `[d]`. One backend op (`ModuleOps.layer_norm`)."""
    _check("layer_norm", x, getattr(x, "ndim", 1))
    d = x.dims()[-1]
    vector = type(x)._specialise(x._B, 1, x._K)
    for name, t in (("gamma", gamma), ("beta", beta)):
        if type(t) is not vector or t.dims() != [d]:
            _check("layer_norm", t, 1, name)
            _same_backend("layer_norm", x, t)
            raise ValueError(f"layer_norm: x {x.dims()} has {d} features in its last dim, but {name} "
                             f"is {t.dims()}")
    return x._like(x._B.layer_norm(x._p, gamma._p, beta._p, float(epsilon)))


def attention(q, k, v, mask=None, scale: float | None = None, fill: float = -1.0e4):
    """Scaled dot-product attention as one backend op (`ModuleOps.attention`,
    with its own backward): softmax(q k^T * scale, where `mask` is True set
    to `fill`) @ v over `q [batch, heads, seq_q, d_k]`, `k [batch, heads,
    seq_k, d_k]`, `v [batch, heads, seq_k, d_v]` -> `[batch, heads, seq_q,
    d_v]`. `mask`: Bool `[batch, 1 or heads, seq_q, seq_k]` or None; `scale`
    defaults to 1/sqrt(d_k); `fill` is Burn's `min_float` (finite, so a fully
    masked row gives uniform weights, not NaN)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        _check("attention", t, 4, name)
    _same_backend("attention", q, k, v)
    (b, h, sq, dk), (bk, hk, sk, dkk), (bv, hv, skv, _) = q.dims(), k.dims(), v.dims()
    if (bk, hk, dkk) != (b, h, dk) or (bv, hv, skv) != (b, h, sk):
        raise ValueError(f"attention: q {q.dims()}, k {k.dims()} and v {v.dims()} do not fit: k must be "
                         f"[{b}, {h}, seq_k, {dk}] and v [{b}, {h}, seq_k, d_v] with k's seq_k")
    mp = None
    if mask is not None:
        _check("attention", mask, 4, "mask", Bool)
        mb, mh, msq, msk = mask.dims()
        if (mb, msq, msk) != (b, sq, sk) or mh not in (1, h):
            raise ValueError(f"attention: mask {mask.dims()} must be [{b}, 1 or {h}, {sq}, {sk}]")
        mp = mask._p
    scale = 1.0 / dk ** 0.5 if scale is None else float(scale)
    return q._like(q._B.attention(q._p, k._p, v._p, mp, scale, float(fill)))
