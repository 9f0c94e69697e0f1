"""Host-side helpers of the runtime: ONNX int and float inputs (shapes,
axes, pads, ratios) read back to Python lists, tensors built from host
values on another tensor's device, shape arithmetic on flat host lists
(`host_equal`, `host_where`: no tensor for values the model only uses to
pick a shape), and the axis check the index and reduce helpers share.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from burnbook.tensor import Int, Tensor


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


def axis_index(axis: int, rank: int, op: str) -> int:
    """`axis` of a tensor of rank `rank` counted from 0; a ValueError naming
    `op` when it is out of range."""
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is out of range for a tensor of rank {rank}")
    return axis + rank if axis < 0 else axis
