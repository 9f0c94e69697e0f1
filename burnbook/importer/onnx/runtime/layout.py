"""Runtime helpers for the layout family (`ops/layout`): ONNX `Shape`,
`Reshape`, `Flatten`, `Gather`, `Slice`, `Squeeze` and `Unsqueeze` where
the Tensor API's call differs from ONNX's rule (0 and -1 in a reshape
target, negative indices, run-time bounds), and `align` for NumPy-style
broadcasting between ranks.

Scalars (ONNX rank 0) are tensors of shape `[1]`: burnbook has no rank-0
tensors.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .host import tensor_like


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
