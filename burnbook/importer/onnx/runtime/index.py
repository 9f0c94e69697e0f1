"""Runtime helpers for the index family (`ops/index`): arg-max/min, top-k, cumulative sums, the
gather/scatter family, NonZero, Compress and OneHot.

Values always flow through Tensor operations (`gather`, `select`,
`scatter`, `mask_where`, `cat`), so these helpers run on every backend and
autodiff differentiates through them. Three helpers read index data back to
the host, where the Tensor API has no operation for the job: `topk` (there is
no sort; the order is found with NumPy and the values are then gathered from
the tensor), and `nonzero`/`compress` (their output shapes depend on the
data). `scatter_elements` and `scatter_nd` (other than "add") read their
indices back to split repeated targets into rounds applied one after the
other, as ONNX's reference does.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from burnbook.tensor import Bool, Int, Tensor

from .host import axis_index

def _int_tensor(like: Any, values: Any) -> Any:
    """An Int tensor of `values` on the backend and device of `like`."""
    array = np.asarray(values, dtype=np.int64)
    array = array.reshape(1) if array.ndim == 0 else array
    return Tensor[like.backend, array.ndim, Int].from_data(array, like.device())


def _first_int(value: Any) -> int:
    """A scalar int input (an axis, a count), given as an int, a list or a tensor."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (list, tuple)):
        return int(value[0])
    return int(np.asarray(value.to_numpy()).reshape(-1)[0])


def _wrap(index: Any, size: int) -> Any:
    """Negative indices count from the end: i + size where i < 0."""
    return index.mask_where(index.lower_elem(0), index.add_scalar(size))


# -- arg-max/min, top-k, hardmax, cumsum -------------------------------------------------
def _flip(x: Any, dim: int) -> Any:
    """`x` in reverse order along `dim`."""
    n = x.dims()[dim]
    return x.select(dim, _int_tensor(x, np.arange(n - 1, -1, -1)))


def arg_extreme(x: Any, axis: int, op: str, keepdims: bool, rank: int, select_last_index: bool = False) -> Any:
    """ONNX `ArgMax`/`ArgMin` (`op` "max"/"min"): the first (or, with
    `select_last_index`, the last) position of the extreme along `axis`."""
    axis = axis_index(axis, max(rank, 1), f"Arg{op.capitalize()}")
    src = x.int() if x.kind is Bool else x
    if select_last_index:  # the first position in the flipped tensor is the last one
        n = src.dims()[axis]
        index = getattr(_flip(src, axis), f"arg{op}")(axis).mul_scalar(-1).add_scalar(n - 1)
    else:
        index = getattr(src, f"arg{op}")(axis)
    if keepdims or rank <= 1:
        return index
    return index.squeeze(axis)


def topk(x: Any, k: Any, axis: int, largest: bool, rank: int) -> tuple:
    """ONNX `TopK`: the `k` largest (or smallest) values along `axis`, in
    order, and their Int positions; equal values keep their input order.

    The Tensor API has no sort, so the order is found on the host with a
    stable NumPy argsort; the values are then gathered from `x` itself, so
    autodiff reaches them."""
    axis = axis_index(axis, max(rank, 1), "TopK")
    k = _first_int(k)
    dims = x.dims()
    if not 0 <= k <= dims[axis]:
        raise ValueError(f"TopK: k={k} is outside 0..{dims[axis]}, the size of axis {axis} of shape {dims}")
    values = np.asarray(x.to_numpy())
    if largest:  # negated keys in a stable sort put ties in input order; ~v negates ints without overflow
        keys = ~values if values.dtype.kind in "iu" else -values.astype(np.float64)
    else:
        keys = values
    order = np.argsort(keys, axis=axis, kind="stable")
    index = _int_tensor(x, np.take(order, np.arange(k), axis=axis))
    return x.gather(axis, index), index


def hardmax(x: Any, axis: int, rank: int) -> Any:
    """ONNX `Hardmax` (opset 13): 1 at the first maximum along `axis`, 0 elsewhere."""
    axis = axis_index(axis, max(rank, 1), "Hardmax")
    if x.num_elements() == 0:
        return x.zeros_like()
    index = x.argmax(axis)
    return x.zeros_like().scatter(axis, index, type(x).ones(index.dims(), x.device()))


def _shift(x: Any, dim: int, step: int, backwards: bool) -> Any:
    """`x` moved `step` places along `dim` (towards the end, or towards the
    start when `backwards`), zeros filling the places left behind."""
    dims = x.dims()
    n = dims[dim]
    step = min(step, n)
    zeros = type(x).zeros(dims[:dim] + [step] + dims[dim + 1:], x.device())
    if backwards:
        return Tensor.cat([x.narrow(dim, step, n - step), zeros], dim)
    return Tensor.cat([zeros, x.narrow(dim, 0, n - step)], dim)


def cumsum(x: Any, axis: Any, exclusive: bool, reverse: bool, rank: int) -> Any:
    """ONNX `CumSum` along `axis` (an int or a one-element tensor): running
    sums by doubling shifts (Hillis-Steele, about log2(n) additions), from the
    end with `reverse`, each sum leaving out its own element with `exclusive`."""
    dim = axis_index(_first_int(axis), max(rank, 1), "CumSum")
    n = x.dims()[dim]
    if n == 0:
        return x
    src = x.int() if x.kind is Bool else x
    if exclusive:
        src = _shift(src, dim, 1, reverse)
    step = 1
    while step < n:
        src = src + _shift(src, dim, step, reverse)
        step *= 2
    return src


# -- gather and scatter ------------------------------------------------------------------
def gather_elements(x: Any, axis: int, indices: Any, rank: int) -> Any:
    """ONNX `GatherElements`: `out[i][j][k] = x[i][indices[i][j][k]][k]` for
    `axis` 1 (torch.gather); negative indices count from the end."""
    axis = axis_index(axis, max(rank, 1), "GatherElements")
    return x.gather(axis, _wrap(indices, x.dims()[axis]))


def _linear_index(indices: Any, dims: Sequence[int], op: str) -> Any:
    """The row-major position in `dims` of each index tuple in the last dim
    of `indices` (`[m, len(dims)]` -> `[m]`); negatives count from the end."""
    m, k = indices.dims()
    if k > len(dims):
        raise ValueError(f"{op}: index tuples of length {k} for data of rank {len(dims)}")
    linear = None
    for j in range(k):
        part = _wrap(indices.narrow(1, j, 1), dims[j]).mul_scalar(math.prod(dims[j + 1:k]))
        linear = part if linear is None else linear + part
    return linear.reshape([m]) if linear is not None else _int_tensor(indices, np.zeros(m, np.int64))


def gather_nd(x: Any, indices: Any, batch_dims: int, rank: int, indices_rank: int) -> Any:
    """ONNX `GatherND`: slices of `x` at the index tuples in the last dim of
    `indices`, the first `batch_dims` dims of both being matched batches."""
    dims = x.dims() if rank else []
    idims = indices.dims() if indices_rank else []
    b, k = batch_dims, idims[-1]
    batch = math.prod(dims[:b])
    inner = dims[b:b + k]
    rest = dims[b + k:]
    per_batch = math.prod(idims[b:-1])
    flat_index = _linear_index(indices.reshape([batch * per_batch, k]), inner, "GatherND")
    if b:  # each batch looks only at its own block of rows
        offset = Tensor[x.backend, 1, Int].arange(0, batch, x.device()).mul_scalar(math.prod(inner))
        flat_index = (flat_index.reshape([batch, per_batch]) + offset.reshape([batch, 1]).expand(
            [batch, per_batch])).reshape([batch * per_batch])
    rows = x.reshape([batch * math.prod(inner)] + rest + ([] if rest else [1]))
    out = rows.select(0, flat_index)
    shape = idims[:-1] + rest
    return out.reshape(shape or [1])


_COMBINE = {
    "none": lambda old, new: new,
    "add": lambda old, new: old + new,
    "mul": lambda old, new: old * new,
    "max": lambda old, new: old.mask_where(new.greater(old), new),
    "min": lambda old, new: old.mask_where(new.lower(old), new),
}


def _check_reduction(reduction: str, op: str) -> None:
    if reduction not in _COMBINE:
        raise ValueError(f"{op}: reduction {reduction!r} (ONNX defines {', '.join(_COMBINE)})")


def _rounds(targets: np.ndarray) -> np.ndarray:
    """For each write (in ONNX's row-major order) to a flat position in
    `targets`, how many earlier writes went to the same position: the writes
    of one round all have distinct targets."""
    n = targets.size
    order = np.argsort(targets, kind="stable")
    ordered = targets[order]
    first = np.ones(n, dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    rounds = np.empty(n, dtype=np.int64)
    rounds[order] = np.arange(n) - group_start
    return rounds


def scatter_elements(x: Any, axis: int, indices: Any, updates: Any, reduction: str, rank: int) -> Any:
    """ONNX `ScatterElements` (and the older `Scatter`): `updates` written
    into a copy of `x` at `indices` along `axis`, replacing or combined with
    `reduction` ("add", "mul", "max", "min").

    "add" is one `scatter` (which adds). The others are masked writes of
    scattered values, in rounds: the indices are read back to the host to put
    each repeat of a target in a later round, so a round's targets are
    distinct and repeats combine in order (the last one wins for "none"), as
    in ONNX's reference. Without repeats there is one round."""
    _check_reduction(reduction, "ScatterElements")
    axis = axis_index(axis, max(rank, 1), "ScatterElements")
    if x.kind is Bool:
        return scatter_elements(x.int(), axis, indices, updates.int(), reduction, rank).bool()
    indices = _wrap(indices, x.dims()[axis])
    if reduction == "add":
        return x.scatter(axis, indices, updates)
    where = np.asarray(indices.to_numpy()).astype(np.int64)
    grid = list(np.indices(where.shape, sparse=True))
    grid[axis] = where
    rounds = _rounds(np.ravel_multi_index(tuple(grid), x.dims()).reshape(-1)).reshape(where.shape)
    hits = Tensor[x.backend, x.ndim, Int].zeros(x.dims(), x.device())
    out = x
    for r in range(int(rounds.max()) + 1 if rounds.size else 0):
        upd, count = updates, indices.ones_like()
        if rounds.max() > 0:  # only this round's writes count
            now = Tensor[x.backend, x.ndim, Bool].from_data(rounds == r, x.device())
            upd, count = upd.zeros_like().mask_where(now, upd), count.zeros_like().mask_where(now, count)
        hit = hits.scatter(axis, indices, count).greater_elem(0)
        new = x.zeros_like().scatter(axis, indices, upd)
        out = out.mask_where(hit, _COMBINE[reduction](out, new))
    return out


def scatter_nd(x: Any, indices: Any, updates: Any, reduction: str, rank: int, indices_rank: int) -> Any:
    """ONNX `ScatterND`: `updates` written into a copy of `x` at the index
    tuples in the last dim of `indices`, replacing or combined with
    `reduction` ("add", "mul", "max", "min").

    The tuples become rows of `x` flattened to `[rows, rest]`. Rows are
    written with `select_assign` in rounds: the indices are read back to the
    host to put each repeat of a row in a later round, so a round's rows are
    distinct and repeats combine in order (or the last one wins, for "none")."""
    _check_reduction(reduction, "ScatterND")
    if x.kind is Bool:
        return scatter_nd(x.int(), indices, updates.int(), reduction, rank, indices_rank).bool()
    dims = x.dims() if rank else [1]
    idims = indices.dims() if indices_rank else [1]
    k = idims[-1]
    m = math.prod(idims[:-1])
    rest = dims[k:]
    width = math.prod(rest)
    linear = _linear_index(indices.reshape([m, k]), dims[:k], "ScatterND")
    rows = x.reshape([math.prod(dims[:k]), width])
    values = updates.reshape([m, width])
    if reduction == "add":
        return rows.select_assign(0, linear, values).reshape(dims)
    rounds = _rounds(np.asarray(linear.to_numpy()).reshape(-1))
    ones = Tensor[x.backend, 2, Int].ones([1, width], x.device())
    hit_base = Tensor[x.backend, 2, Int].zeros(rows.dims(), x.device())
    out = rows
    for r in range(int(rounds.max()) + 1 if m else 0):
        chosen = np.flatnonzero(rounds == r)
        picked = _int_tensor(x, chosen)
        where = linear.select(0, picked)
        hit = hit_base.select_assign(0, where, ones.expand([chosen.size, width])).greater_elem(0)
        new = rows.zeros_like().select_assign(0, where, values.select(0, picked))
        out = out.mask_where(hit, _COMBINE[reduction](out, new))
    return out.reshape(dims)


# -- data-dependent shapes ---------------------------------------------------------------
def nonzero(x: Any, rank: int) -> Any:
    """ONNX `NonZero`: the positions of the non-zero values, `[rank, count]`
    in row-major order. The count depends on the data, so it is found on the host."""
    values = np.asarray(x.to_numpy())
    values = values.reshape(values.shape if rank else (1,))
    positions = np.stack(np.nonzero(values)).astype(np.int64)
    return Tensor[x.backend, 2, Int].from_data(positions, x.device())


def compress(x: Any, condition: Any, axis: int | None, rank: int) -> Any:
    """ONNX `Compress`: the slices along `axis` (of the flattened input when
    `axis` is None) whose `condition` is true; a condition shorter than the
    axis leaves the rest out. The kept positions are found on the host (the
    output's size depends on them) and taken with `select`."""
    if axis is None:
        x, axis = x.reshape([-1]), 0
    else:
        axis = axis_index(axis, max(rank, 1), "Compress")
    size = x.dims()[axis]
    keep = np.asarray(condition.to_numpy()).reshape(-1).astype(bool)
    if keep.size > size:
        raise ValueError(f"Compress: condition has {keep.size} values, axis {axis} of shape {x.dims()} has {size}")
    return x.select(axis, _int_tensor(x, np.flatnonzero(keep)))


def one_hot(indices: Any, depth: Any, values: Any, axis: int, rank: int) -> Any:
    """ONNX `OneHot`: a new dim of size `depth` at `axis`, holding `values[1]`
    where it equals the index (negatives count from the end) and `values[0]`
    elsewhere; an index out of range gives a row of `values[0]`."""
    depth_value = depth if isinstance(depth, (int, float)) else float(np.asarray(depth.to_numpy()).reshape(-1)[0])
    n = int(depth_value)
    if n < 1:
        raise ValueError(f"OneHot: depth {depth_value} must be at least 1")
    index = indices.int() if indices.kind is not Int else indices
    axis = axis_index(axis, rank + 1, "OneHot")
    if rank == 0:  # burnbook's [1] for the scalar: one-hot along a second dim, then [depth]
        index, axis = index.reshape([1]), 1
    index = _wrap(index, n).unsqueeze_dim(axis)
    dims = index.dims()
    dims[axis] = n
    positions = Tensor[indices.backend, 1, Int].arange(0, n, indices.device())
    positions = positions.reshape([n if i == axis else 1 for i in range(len(dims))])
    mask = index.expand(dims).equal(positions.expand(dims))
    off, on = values.narrow(0, 0, 1), values.narrow(0, 1, 1)
    shape = [1] * len(dims)
    out = off.reshape(shape).expand(dims).mask_where(mask, on.reshape(shape).expand(dims))
    return out if rank else out.reshape([n])
