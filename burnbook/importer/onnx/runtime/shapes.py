"""Runtime helpers for the shape family (`ops/shape`): operators that make or
re-arrange shapes (Expand, Tile, Pad, Split, Range, ConstantOfShape, EyeLike,
Trilu, DepthToSpace, SpaceToDepth, ReverseSequence) and the random generators.

They take the shapes, pads and sizes the importer could not fix at import
time as lists or Int tensors read back at run time, so dynamic dims stay
dynamic. Everything is written with Tensor operations (autodiff follows),
and random values come from the backend's own generator (`B.seed(s)`), not
from the ONNX `seed` attribute.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from burnbook.tensor import Bool, Distribution, Float, Int, Tensor

_KINDS = {"Float": Float, "Int": Int, "Bool": Bool}


def _ints(value: Any) -> list[int]:
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value]
    return [int(v) for v in np.asarray(value.to_numpy()).reshape(-1)]


def _number(value: Any) -> Any:
    """A Python number from a number or a one-element tensor."""
    if isinstance(value, (int, float, bool, np.number)):
        return value
    array = np.asarray(value.to_numpy()).reshape(-1)
    if array.size != 1:
        raise ValueError(f"expected a single value, got a tensor of shape {value.dims()}")
    return array[0].item()


def _as_kind(t: Any, kind: str) -> Any:
    return t.float() if kind == "Float" else (t.int() if kind == "Int" else t.bool())


def _new(like: Any, rank: int, kind: str) -> type:
    """The tensor type of `like`'s backend with `rank` (at least 1) and `kind`."""
    return Tensor[like.backend, max(1, rank), _KINDS[kind]]


def expand(x: Any, shape: Any) -> Any:
    """ONNX `Expand`: broadcast `x` against `shape` both ways (a 1 in `shape`
    keeps `x`'s size; the rank is the larger of the two)."""
    target = _ints(shape)
    dims = x.dims()
    rank = max(len(target), x.ndim)
    x = x.reshape([1] * (rank - x.ndim) + dims) if rank > x.ndim else x
    target = [-1] * (rank - len(target)) + [-1 if t == 1 else t for t in target]
    return x.expand(target)


def constant_of_shape(shape: Any, value: Any, kind: str, like: Any = None) -> Any:
    """ONNX `ConstantOfShape`: a `kind` tensor of `shape` filled with `value`.
    `shape` is an Int tensor read now, or a list, and then `like` is a tensor
    whose backend and device the result takes."""
    dims = _ints(shape)
    like = shape if like is None else like
    return _new(like, len(dims), kind).full(dims or [1], value, like.device())


def tile(x: Any, repeats: Any) -> Any:
    """ONNX `Tile`: `x` repeated `repeats[d]` times along each dim."""
    reps = _ints(repeats)
    if len(reps) != x.ndim:
        raise ValueError(f"Tile: {len(reps)} repeats {reps} for a tensor of rank {x.ndim} (shape {x.dims()})")
    for d, r in enumerate(reps):
        if r < 0:
            raise ValueError(f"Tile: repeats must be >= 0, got {reps}")
        if r != 1:
            x = x.repeat(d, r)
    return x


def pad_nd(x: Any, pads: Any, mode: str = "constant", value: Any = 0.0, axes: Any = None) -> Any:
    """ONNX `Pad` (opset 11+) over any dims: `pads` holds all begins then all
    ends for `axes` (every dim when None); negative pads crop. Modes:
    constant (`value`), reflect (mirror without the edge), edge (repeat the
    edge) and wrap (continue from the other side)."""
    pads = _ints(pads)
    rank = x.ndim
    axes = list(range(rank)) if axes is None else [a + rank if a < 0 else a for a in _ints(axes)]
    if len(pads) != 2 * len(axes):
        raise ValueError(f"Pad: {len(pads)} pads {pads} for {len(axes)} axes {axes}; expected 2 per axis")
    fill = _number(value) if value is not None else 0
    for i, axis in enumerate(axes):
        begin, end = pads[i], pads[i + len(axes)]
        if begin < 0 or end < 0:  # crop first
            size = x.dims()[axis]
            x = x.narrow(axis, max(0, -begin), size - max(0, -begin) - max(0, -end))
        x = _pad_axis(x, axis, max(0, begin), max(0, end), mode, fill)
    return x


def _pad_axis(x: Any, axis: int, begin: int, end: int, mode: str, fill: Any) -> Any:
    if not begin and not end:
        return x
    dims = x.dims()
    n = dims[axis]
    lead = [slice(None)] * axis
    if mode == "constant":
        parts = [type(x).full(dims[:axis] + [p] + dims[axis + 1:], fill, x.device()) for p in (begin, end)]
        return type(x).cat([parts[0], x, parts[1]], axis)
    if n == 0:
        raise ValueError(f"Pad: mode {mode!r} cannot pad dim {axis} of size 0 (shape {dims})")
    if mode == "edge":
        first, last = x.slice(lead + [slice(0, 1)]), x.slice(lead + [slice(n - 1, n)])
        return type(x).cat([first.repeat(axis, begin), x, last.repeat(axis, end)], axis)
    if mode == "reflect":
        if begin >= n or end >= n:
            raise ValueError(f"Pad: reflect pads {begin}, {end} must be smaller than dim {axis}'s size {n}")
        before = x.slice(lead + [slice(begin, 0, -1)])
        after = x.slice(lead + [slice(n - 2, n - 2 - end if n - 2 - end >= 0 else None, -1)])
        return type(x).cat([before, x, after], axis)
    if mode == "wrap":
        copies_before, copies_after = -(-begin // n), -(-end // n)
        tiled = x.repeat(axis, 1 + copies_before + copies_after)
        start = copies_before * n - begin
        return tiled.narrow(axis, start, n + begin + end)
    raise ValueError(f"Pad: unknown mode {mode!r} (constant, reflect, edge, wrap)")


def split(x: Any, axis: int, sizes: Any, count: int) -> tuple:
    """ONNX `Split` along `axis` into `count` parts of `sizes`, or, when
    `sizes` is None, of equal size with a smaller last part (opset 18's
    `num_outputs`: every part ceil(n / count) long but the last)."""
    n = x.dims()[axis]
    if sizes is None:
        step = -(-n // count)
        sizes = [step] * (count - 1) + [n - step * (count - 1)]
        if sizes[-1] < 0:
            raise ValueError(f"Split: dim {axis} of size {n} cannot be cut into {count} parts of {step}")
    else:
        sizes = _ints(sizes)
        if len(sizes) != count or sum(sizes) != n or min(sizes, default=0) < 0:
            raise ValueError(f"Split: sizes {sizes} for {count} outputs do not add up to dim {axis}'s size {n}")
    parts, start = [], 0
    for s in sizes:
        parts.append(x.narrow(axis, start, s))
        start += s
    return tuple(parts)


def range_(start: Any, limit: Any, delta: Any, kind: str) -> Any:
    """ONNX `Range`: start, start + delta, ... short of limit, as `kind`
    (`max(ceil((limit - start) / delta), 0)` values)."""
    like = next(v for v in (start, limit, delta) if not isinstance(v, (int, float, np.number)))
    s, lim, d = (_number(v) for v in (start, limit, delta))
    if d == 0:
        raise ValueError("Range: delta must not be 0")
    count = max(int(math.ceil((lim - s) / d)), 0)
    steps = Tensor[like.backend, 1, Int].arange(0, count, like.device())
    if kind == "Int":
        return steps.mul_scalar(int(d)).add_scalar(int(s))
    return steps.float().mul_scalar(float(d)).add_scalar(float(s))


def size(x: Any) -> Any:
    """ONNX `Size`: the number of elements, as an Int `[1]` (an ONNX scalar,
    held as `[1]`, has one element either way)."""
    return Tensor[x.backend, 1, Int].from_data(np.asarray([x.num_elements()], dtype=np.int64), x.device())


def eye_like(x: Any, k: int, kind: str) -> Any:
    """ONNX `EyeLike`: ones on diagonal `k` of a matrix shaped like `x`."""
    rows, cols = x.dims()
    if not rows or not cols:
        return _new(x, 2, kind).zeros([rows, cols], x.device())
    I1 = Tensor[x.backend, 1, Int]
    r = I1.arange(0, rows, x.device()).reshape([rows, 1]).expand([rows, cols])
    c = I1.arange(0, cols, x.device()).reshape([1, cols]).expand([rows, cols])
    return _as_kind((c - r).equal_elem(k), kind)


def trilu(x: Any, k: Any, upper: bool) -> Any:
    """ONNX `Trilu` with a diagonal `k` known only at run time."""
    k = int(_number(k))
    return x.triu(k) if upper else x.tril(k)


def depth_to_space(x: Any, block: int, mode: str = "DCR") -> Any:
    """ONNX `DepthToSpace` of `[N, C, H, W]`: channels move into `block`x`block`
    spatial tiles; DCR takes depth-column-row order, CRD column-row-depth."""
    n, c, h, w = x.dims()
    if c % (block * block):
        raise ValueError(f"DepthToSpace: {c} channels (shape {[n, c, h, w]}) do not divide by blocksize^2 "
                         f"= {block * block}")
    out = c // (block * block)
    if mode == "DCR":
        y = x.reshape([n, block, block, out, h, w]).permute([0, 3, 4, 1, 5, 2])
    else:
        y = x.reshape([n, out, block, block, h, w]).permute([0, 1, 4, 2, 5, 3])
    return y.reshape([n, out, h * block, w * block])


def space_to_depth(x: Any, block: int, mode: str = "DCR") -> Any:
    """ONNX `SpaceToDepth`, the inverse of `depth_to_space` in the same mode."""
    n, c, h, w = x.dims()
    if h % block or w % block:
        raise ValueError(f"SpaceToDepth: spatial size {h}x{w} (shape {[n, c, h, w]}) does not divide by "
                         f"blocksize {block}")
    y = x.reshape([n, c, h // block, block, w // block, block])
    y = y.permute([0, 3, 5, 1, 2, 4]) if mode == "DCR" else y.permute([0, 1, 3, 5, 2, 4])
    return y.reshape([n, c * block * block, h // block, w // block])


def reverse_sequence(x: Any, lengths: Any, time_axis: int, batch_axis: int) -> Any:
    """ONNX `ReverseSequence`: for each batch entry b, the first `lengths[b]`
    steps along `time_axis` in reverse order, the rest unchanged. Done as one
    gather along the time axis with index `L - 1 - t` where `t < L`."""
    dims = x.dims()
    steps, batch = dims[time_axis], dims[batch_axis]
    lens = _ints(lengths)
    if len(lens) != batch or any(not 0 <= v <= steps for v in lens):
        raise ValueError(f"ReverseSequence: sequence_lens {lens} for batch size {batch} and {steps} time steps")
    I1 = Tensor[x.backend, 1, Int]
    plane = [1] * x.ndim  # the (time, batch) plane, size 1 elsewhere
    plane[time_axis], plane[batch_axis] = steps, batch
    at = [1] * x.ndim
    at[time_axis] = steps
    t = I1.arange(0, steps, x.device()).reshape(at).expand(plane)
    at = [1] * x.ndim
    at[batch_axis] = batch
    length = I1.from_data(np.asarray(lens, dtype=np.int64), x.device()).reshape(at).expand(plane)
    index = t.mask_where(t.lower(length), length - t - 1)
    return x.gather(time_axis, index.expand(dims))


def random_normal(like: Any, shape: Sequence[int] | None, mean: float, scale: float) -> Any:
    """ONNX `RandomNormal` (a fixed `shape`) or `RandomNormalLike` (`shape`
    None: `like`'s), drawn from the backend's generator."""
    dims = like.dims() if shape is None else list(shape)
    return Tensor[like.backend, max(1, len(dims)), Float].random(
        dims or [1], Distribution.Normal(mean, scale), like.device())


def random_uniform(like: Any, shape: Sequence[int] | None, low: float, high: float) -> Any:
    """ONNX `RandomUniform` / `RandomUniformLike`: values in [low, high)."""
    dims = like.dims() if shape is None else list(shape)
    return Tensor[like.backend, max(1, len(dims)), Float].random(
        dims or [1], Distribution.Uniform(low, high), like.device())


def bernoulli(p: Any, kind: str) -> Any:
    """ONNX `Bernoulli`: 1 with probability `p` (element-wise), else 0."""
    draw = Tensor[p.backend, p.ndim, Float].random(p.dims(), Distribution.Default, p.device())
    return _as_kind(draw.lower(p.float()), kind)
