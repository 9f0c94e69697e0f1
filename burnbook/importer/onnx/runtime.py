"""Helpers that generated models call for ONNX semantics the Tensor API does
not spell out in one call (asymmetric padding, ONNX's gather and reshape
rules, shape values, rounding casts).

Each helper is written with Tensor operations, so it runs on every backend and
autodiff differentiates through it. The importer emits a plain Tensor call
whenever one exists; these cover the rest. Scalars (ONNX rank 0) are
represented as tensors of shape `[1]`, since burnbook has no rank-0 tensors.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from burnbook.tensor import Bool, Int, Tensor
from burnbook.tensor import module as F

__all__ = [
    "ints", "floats", "tensor_like", "host_equal", "host_where", "shape", "align", "reshape", "flatten", "gather",
    "slice_", "squeeze", "unsqueeze", "pad", "pool", "max_pool_with_indices", "clip", "layer_norm", "round_float",
    "wrap_int", "batch_norm_train", "dropout", "dropout_mask", "reduce",
]

_LOWEST = -3.4028234663852886e38


def ints(value: Any) -> list[int]:
    """An ONNX int input (a shape, axes, pads) as a Python list; a tensor is
    read back to the host, which is fine for these few values."""
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value]
    return [int(v) for v in np.asarray(value.to_numpy()).reshape(-1)]


def floats(value: Any) -> list[float]:
    """An ONNX float input (a ratio, a clip bound) as a Python list."""
    return [float(v) for v in np.asarray(value.to_numpy()).reshape(-1)]


def tensor_like(like: Any, values: Any, kind: type = Int) -> Any:
    """A tensor of `values` (nested lists or an array) on the backend and
    device of `like`."""
    array = np.asarray(values)
    if array.ndim == 0:
        array = array.reshape(1)
    return Tensor[like.backend, array.ndim, kind].from_data(array, like.device())


def _at(values: Sequence, i: int) -> Any:
    """Item `i` of a host list, a one-item list broadcasting."""
    return values[i if len(values) > 1 else 0]


def _host_broadcast(name: str, *lists: Sequence) -> int:
    """The common length of flat host lists, a one-element list standing for any."""
    sizes = {len(v) for v in lists if len(v) != 1}
    if len(sizes) > 1:
        raise ValueError(f"{name}: host values of lengths {[len(v) for v in lists]} do not broadcast")
    return sizes.pop() if sizes else 1


def host_equal(a: Sequence[int], b: Sequence[int]) -> list[bool]:
    """ONNX `Equal` of two flat int lists kept on the host (shape arithmetic):
    no tensor is built for values the model only uses to pick a shape."""
    n = _host_broadcast("Equal", a, b)
    return [int(_at(a, i)) == int(_at(b, i)) for i in range(n)]


def host_where(cond: Sequence[bool], x: Sequence[int], y: Sequence[int]) -> list[int]:
    """ONNX `Where` of flat host lists: `x[i]` where `cond[i]`, else `y[i]`."""
    n = _host_broadcast("Where", cond, x, y)
    return [int(_at(x, i)) if _at(cond, i) else int(_at(y, i)) for i in range(n)]


def shape(x: Any, start: int = 0, end: int | None = None, rank: int | None = None) -> Any:
    """ONNX `Shape`: the dims of `x` (of ONNX rank `rank`) from `start` to
    `end` as an Int tensor `[n]`."""
    dims = x.dims() if rank != 0 else []
    return tensor_like(x, np.asarray(dims[start:end], dtype=np.int64).reshape(-1))


def align(x: Any, rank: int) -> Any:
    """`x` with leading size-1 dims added up to `rank`, so it broadcasts
    against a tensor of that rank as NumPy would."""
    while x.ndim < rank:
        x = x.unsqueeze()
    return x


def reshape(x: Any, target: Sequence[int], allowzero: bool = False) -> Any:
    """ONNX `Reshape`: 0 copies the input's size at that position unless
    `allowzero`; -1 infers one size."""
    dims = x.dims()
    out = [dims[i] if (s == 0 and not allowzero) else int(s) for i, s in enumerate(target)]
    if -1 in out:
        known = math.prod(s for s in out if s != -1)
        out[out.index(-1)] = x.num_elements() // known if known else 0
    if out == dims:
        return x
    return x.reshape(out) if out else x.reshape([1])


def flatten(x: Any, axis: int) -> Any:
    """ONNX `Flatten`: `[d0 .. d(axis-1)]` and the rest folded into a matrix."""
    dims = x.dims()
    axis = axis + len(dims) if axis < 0 else axis
    return x.reshape([math.prod(dims[:axis]), math.prod(dims[axis:])])


def gather(x: Any, axis: int, indices: Any, indices_rank: int) -> Any:
    """ONNX `Gather`: rows of `x` along `axis` at `indices` (negative counts
    from the end); the result's rank is rank(x) + rank(indices) - 1."""
    if type(indices) is int and indices_rank == 0:
        # one in-range constant index (a dim picked from a `Shape`): a slice,
        # not a gather, so the exporters' per-forward shape arithmetic stays cheap
        dims = x.dims()
        axis = axis + len(dims) if axis < 0 else axis
        i = indices + dims[axis] if indices < 0 else indices
        if 0 <= i < dims[axis]:
            out = dims[:axis] + dims[axis + 1:]
            picked = x.narrow(axis, i, 1)
            return picked if len(dims) == 1 else picked.reshape(out)
    if isinstance(indices, (list, tuple, int)):
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        shape_i = list(np.shape(indices))
        index = tensor_like(x, idx)
    else:
        shape_i = indices.dims() if indices_rank > 0 else []
        index = indices.reshape([-1])
    axis = axis + x.ndim if axis < 0 else axis
    size = x.dims()[axis]
    # wrap negative indices: i + size where i < 0
    index = index.mask_where(index.lower_elem(0), index.add_scalar(size))
    picked = x.select(axis, index)
    dims = x.dims()
    out = dims[:axis] + shape_i + dims[axis + 1:]
    return picked.reshape(out) if out else picked.reshape([1])


def slice_(x: Any, starts: Sequence[int], ends: Sequence[int], axes: Sequence[int] | None = None,
           steps: Sequence[int] | None = None) -> Any:
    """ONNX `Slice` with runtime bounds: Python slice semantics per axis
    (out-of-range bounds clamp, negative steps walk backwards)."""
    rank = x.ndim
    axes = list(range(len(starts))) if axes is None else [a + rank if a < 0 else a for a in axes]
    steps = [1] * len(starts) if steps is None else list(steps)
    ranges: list = [slice(None)] * rank
    for a, s, e, st in zip(axes, starts, ends, steps):
        ranges[a] = slice(int(s), int(e), int(st))
    return x.slice(ranges)


def squeeze(x: Any, axes: Sequence[int] | None) -> Any:
    """ONNX `Squeeze`: drop `axes` (all size-1 dims when None); a result of
    ONNX rank 0 stays `[1]`."""
    dims = x.dims()
    rank = len(dims)
    drop = [i for i, d in enumerate(dims) if d == 1] if axes is None else sorted(a + rank if a < 0 else a for a in axes)
    keep = [d for i, d in enumerate(dims) if i not in drop]
    return x.reshape(keep or [1])


def unsqueeze(x: Any, axes: Sequence[int], rank: int) -> Any:
    """ONNX `Unsqueeze` of a tensor of ONNX rank `rank`: size-1 dims at
    `axes` of the output."""
    dims = x.dims() if rank > 0 else []
    out_rank = len(dims) + len(axes)
    axes = sorted(a + out_rank if a < 0 else a for a in axes)
    out = list(dims)
    for a in axes:
        out.insert(a, 1)
    return x if out == x.dims() else x.reshape(out)   # ONNX rank 0 -> [1]: already [1]


def pad(x: Any, pads: Sequence[int], value: float = 0.0) -> Any:
    """Pad the spatial dims of `[batch, channels, ...]` with ONNX's `pads`
    (all begins, then all ends); the values are copied into a filled tensor
    with `slice_assign`, which autodiff differentiates."""
    n = len(pads) // 2
    dims = x.dims()
    begins, ends = list(pads[:n]), list(pads[n:])
    if not any(begins) and not any(ends):
        return x
    out = dims[:2] + [d + b + e for d, b, e in zip(dims[2:], begins, ends)]
    ranges = [(0, dims[0]), (0, dims[1])] + [(b, b + d) for d, b in zip(dims[2:], begins)]
    return type(x).full(out, value, x.device()).slice_assign(ranges, x)


def _pool_pads(dims: Sequence[int], kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
               ceil_mode: bool, dilations: Sequence[int]) -> tuple[list[int], list[int]]:
    """(output sizes, extra end padding) of an ONNX pool: in ceil mode a last
    window may hang over the end, provided it starts inside the input or its
    begin padding."""
    n = len(kernel)
    outs, extra = [], []
    for i in range(n):
        span = dilations[i] * (kernel[i] - 1) + 1
        total = dims[i] + pads[i] + pads[n + i]
        if ceil_mode:
            out = -(-(total - span) // strides[i]) + 1
            if (out - 1) * strides[i] >= dims[i] + pads[i]:
                out -= 1
        else:
            out = (total - span) // strides[i] + 1
        outs.append(out)
        extra.append(max(0, (out - 1) * strides[i] + span - total))
    return outs, extra


def pool(x: Any, mode: str, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
         dilations: Sequence[int] | None = None, ceil_mode: bool = False, count_include_pad: bool = False) -> Any:
    """ONNX `MaxPool` (`mode="max"`) or `AveragePool` (`"avg"`) over any
    number of spatial dims, with asymmetric pads, dilations and ceil mode.

    The window is walked offset by offset: each offset is one strided slice
    of the padded input, and the slices are combined with a running max or
    sum, so only Tensor ops are used and autodiff follows. An average divides
    by the matching sum over a mask of the positions that count (the input,
    plus the explicit pads when `count_include_pad`)."""
    import itertools

    n = len(kernel)
    dilations = list(dilations or [1] * n)
    spatial = x.dims()[2:]
    outs, extra = _pool_pads(spatial, kernel, strides, pads, ceil_mode, dilations)
    full = list(pads[:n]) + [e + x for e, x in zip(pads[n:], extra)]
    fill = _LOWEST if mode == "max" else 0.0
    xp = pad(x, full, fill)
    mask = None
    if mode == "avg":
        mask = type(x).ones([1, 1] + list(spatial), x.device())
        mask = pad(mask, list(pads), 1.0 if count_include_pad else 0.0)
        mask = pad(mask, [0] * n + list(extra), 0.0)
    acc = count = None
    for offset in itertools.product(*(range(k) for k in kernel)):
        ranges = [slice(None), slice(None)] + [
            slice(o * d, o * d + (m - 1) * s + 1, s) for o, d, m, s in zip(offset, dilations, outs, strides)]
        window = xp.slice(ranges)
        if mode == "max":
            acc = window if acc is None else acc.mask_where(window.greater(acc), window)
        else:
            acc = window if acc is None else acc + window
            w = mask.slice(ranges)
            count = w if count is None else count + w
    return acc if mode == "max" else acc / count


def max_pool_with_indices(x: Any, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                          dilations: Sequence[int], ceil_mode: bool = False, storage_order: int = 0) -> tuple:
    """2-D ONNX `MaxPool` with its `Indices` output: positions flattened over
    the whole `[N, C, H, W]` input (PyTorch's are per plane), row-major, or
    column-major within a plane when `storage_order` is 1."""
    out, idx = F.max_pool2d_with_indices(x, list(kernel), list(strides), list(pads[:2]), list(dilations), ceil_mode)
    n, c, h, w = x.dims()
    if storage_order:
        row = idx / w  # Int division truncates; positions are never negative
        idx = (idx - row * w) * h + row
    base = Tensor[x.backend, 1, Int].arange(0, n * c, x.device()).reshape([n, c, 1, 1]) * (h * w)
    return out, idx + base


def clip(x: Any, low: Any = None, high: Any = None) -> Any:
    """ONNX `Clip` with tensor bounds: min(max(x, low), high)."""
    if low is not None:
        lo = align(low, x.ndim)
        x = x.mask_where(x.lower(lo.expand(x.dims()) if lo.dims() != x.dims() else lo), lo.expand(x.dims()))
    if high is not None:
        hi = align(high, x.ndim)
        x = x.mask_where(x.greater(hi.expand(x.dims()) if hi.dims() != x.dims() else hi), hi.expand(x.dims()))
    return x


def layer_norm(x: Any, axis: int, epsilon: float, scale: Any = None, bias: Any = None) -> tuple:
    """ONNX `LayerNormalization` over dims `axis..`: returns (y, mean,
    1/std), the mean and inverse deviation kept with size-1 dims."""
    rank = x.ndim
    axis = axis + rank if axis < 0 else axis
    dims = x.dims()
    folded = x.reshape(dims[:axis] + [-1]) if axis < rank else x
    var, mean = folded.var_mean_bias(axis)
    inv = (var + epsilon).sqrt().recip()
    y = ((folded - mean) * inv).reshape(dims)
    if scale is not None:
        y = y * align(scale, rank)
    if bias is not None:
        y = y + align(bias, rank)
    stat = dims[:axis] + [1] * (rank - axis)
    return y, mean.reshape(stat), inv.reshape(stat)


def round_float(x: Any, dtype: str, saturate: bool = True, round_mode: str = "nearest") -> Any:
    """The values of `x` rounded to a narrower float type (`"float16"`,
    `"bfloat16"`, `"float8_e4m3fn"`, ...) but kept in f32, as ONNX `Cast`
    to that type then back would give (`saturate` and, for the
    exponent-only `float8_e8m0fnu`, `round_mode` as in `Cast`). Gradients
    pass straight through, as if the cast were the identity."""
    target = _np_dtype(dtype)
    values = x.to_numpy().astype(np.float32)
    if saturate and dtype.startswith(("float8", "float4")) and dtype != "float8_e8m0fnu":
        import ml_dtypes

        info = ml_dtypes.finfo(target)
        # saturation maps out-of-range values, infinities included, to the largest finite one
        values = np.clip(values, float(info.min), float(info.max))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if dtype == "float8_e8m0fnu":
            rounded = _e8m0(values, round_mode, saturate)
        else:
            rounded = values.astype(target).astype(np.float32)
        finite = np.isfinite(rounded) & np.isfinite(x.to_numpy())
        # straight through: the forward value is exactly `rounded` (x - x is
        # 0; NaN where x is not finite, replaced below), the gradient that of
        # the identity
        out = type(x).from_data(np.where(finite, rounded, 0.0), x.device()) + (x - x.detach())
    if not finite.all():  # overflow to inf, or NaN: those values are constants
        mask = Tensor[x.backend, x.ndim, Bool].from_data(~finite, x.device())
        out = out.mask_where(mask, type(x).from_data(np.where(finite, 0.0, rounded), x.device()))
    return out


def _e8m0(values: np.ndarray, round_mode: str, saturate: bool) -> np.ndarray:
    """float8_e8m0fnu, an exponent without sign or mantissa: 2**e for e in
    -127..127, NaN for negatives and NaN. Worked out on exponents rather than
    through ml_dtypes, whose conversion of 0 (to 2**-127, a float32
    denormal) goes wrong once a library turns on flush-to-zero (Taichi)."""
    mantissa, exponent = np.frexp(values)  # values = mantissa * 2**exponent, mantissa in [0.5, 1)
    exponent = exponent.astype(np.float64) - 1.0  # now values = (2 * mantissa) * 2**exponent, 2m in [1, 2)
    if round_mode == "up":
        exponent += (mantissa != 0.5)
    elif round_mode == "nearest":
        exponent += (mantissa >= 0.75)
    exponent = np.where(values == 0, -127.0, exponent)
    exponent = np.where(np.isposinf(values), np.inf, exponent)
    if saturate:  # out of range: the largest value, 2**127
        exponent = np.minimum(exponent, 127.0)
    out = np.ldexp(1.0, np.clip(np.nan_to_num(exponent), -127, 127).astype(np.int64))
    # e8m0 has no infinity and no sign: overflow, negatives and NaN are NaN
    out = np.where((exponent > 127) | np.isnan(values) | (values < 0), np.nan, out)
    return out.astype(np.float32)


def _np_dtype(name: str) -> np.dtype:
    """A NumPy dtype by name, looking in ml_dtypes for the narrow ones."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, name))


def wrap_int(x: Any, dtype: str) -> Any:
    """Int values converted to a narrower integer type the way ONNX `Cast`
    does (wrapping modulo 2**bits), kept in i64."""
    target = _np_dtype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return type(x).from_data(x.to_numpy().astype(target).astype(np.int64), x.device())


def batch_norm_train(x: Any, scale: Any, bias: Any, mean: Any, var: Any, epsilon: float,
                     momentum: float) -> tuple:
    """ONNX `BatchNormalization` with `training_mode=1`: normalise with the
    batch's mean and (population) variance per channel of `[N, C, ...]`, and
    return the updated running mean and variance,
    `running = running * momentum + batch * (1 - momentum)`."""
    dims = x.dims()
    c = dims[1]
    per_channel = x.swap_dims(0, 1).reshape([c, -1])
    batch_var, batch_mean = per_channel.var_mean_bias(1)
    shape = [1, c] + [1] * (len(dims) - 2)
    y = (x - batch_mean.reshape(shape)) / (batch_var.reshape(shape) + epsilon).sqrt()
    y = y * scale.reshape(shape) + bias.reshape(shape)
    new_mean = mean * momentum + batch_mean.reshape([c]) * (1.0 - momentum)
    new_var = var * momentum + batch_var.reshape([c]) * (1.0 - momentum)
    return y, new_mean, new_var


def dropout(x: Any, ratio: Any, training: Any = False) -> tuple:
    """ONNX `Dropout` whose ratio or training flag arrive as tensors: the
    output and the Bool keep-mask. Identity unless `training` is true."""
    from burnbook.tensor import Distribution

    p = float(floats(ratio)[0]) if not isinstance(ratio, (int, float)) else float(ratio)
    train = bool(training) if isinstance(training, bool) else bool(np.asarray(training.to_numpy()).reshape(-1)[0])
    if not train or p == 0.0:
        return x, dropout_mask(x)
    keep = Tensor[x.backend, x.ndim].random(x.dims(), Distribution.Bernoulli(1.0 - p), x.device()).bool()
    kept = x.zeros_like().mask_where(keep, x / (1.0 - p)) if p < 1.0 else x.zeros_like()
    return kept, keep


def dropout_mask(x: Any) -> Any:
    """The mask output of an inference-mode `Dropout`: every value kept."""
    return x.ones_like().bool() if x.kind is not Bool else x.ones_like()


def reduce(x: Any, op: str, axes: Sequence[int] | None, keepdims: bool, rank: int,
           noop_with_empty_axes: bool = False) -> Any:
    """ONNX `ReduceSum`/`ReduceMean` over `axes` of a tensor of ONNX rank
    `rank`: no (or empty) axes mean every dim, or nothing at all with
    `noop_with_empty_axes`; dims are kept with size 1 when `keepdims`."""
    if not axes:
        if noop_with_empty_axes:
            return x
        axes = list(range(rank))
    axes = sorted(a + rank if a < 0 else a for a in axes)
    dims = x.dims()
    if rank == 0:
        return x
    if op == "mean" and any(dims[a] == 0 for a in axes):
        raise ValueError(f"ReduceMean over an empty dim: shape {dims}, axes {axes}")
    if len(axes) > 1 and axes[-1] - axes[0] == len(axes) - 1 and 0 not in dims:
        # One run of adjacent dims: merged into one and reduced in one call
        # (a global average pool's [N, C, H, W] -> [N, C, 1, 1]: one reduction
        # over H*W contiguous values instead of two strided ones).
        first, last = axes[0], axes[-1] + 1
        merged = x.reshape(dims[:first] + [math.prod(dims[first:last])] + dims[last:])
        x = _reduce_dim(merged, op, first).reshape(dims[:first] + [1] * len(axes) + dims[last:])
    else:
        for a in axes:
            x = _reduce_dim(x, op, a)
    if keepdims:
        return x
    out = [d for i, d in enumerate(x.dims()) if i not in axes]
    return x.reshape(out or [1])


def _reduce_dim(x: Any, op: str, dim: int) -> Any:
    """`sum_dim`/`mean_dim`, with the sum over an empty dim being zeros."""
    dims = x.dims()
    if dims[dim] == 0:
        out = dims[:dim] + [1] + dims[dim + 1:]
        return type(x).zeros(out, x.device())
    return getattr(x, f"{op}_dim")(dim)


# the helpers of the later operator families, one module each
from .runtime_elementwise import *  # noqa: E402,F401,F403
from .runtime_elementwise import __all__ as _elementwise_all  # noqa: E402
from .runtime_index import *  # noqa: E402,F401,F403
from .runtime_index import __all__ as _index_all  # noqa: E402
from .runtime_shape import *  # noqa: E402,F401,F403
from .runtime_shape import __all__ as _shape_all  # noqa: E402
from .runtime_norm import *  # noqa: E402,F401,F403
from .runtime_norm import __all__ as _norm_all  # noqa: E402
from .runtime_recurrent import *  # noqa: E402,F401,F403
from .runtime_recurrent import __all__ as _recurrent_all  # noqa: E402
from .runtime_control import *  # noqa: E402,F401,F403
from .runtime_control import __all__ as _control_all  # noqa: E402
__all__ += _elementwise_all + _index_all + _shape_all + _norm_all + _recurrent_all + _control_all
