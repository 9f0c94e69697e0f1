"""Runtime helpers for ONNX `Loop` and `If` (`ops/loop`, `ops/control`).

A Loop becomes a Python `while` in the generated forward, whose test is
`loop_continues`: the trip count and the condition are read on the host
each iteration, as ONNX decides whether to run the body again. The rest
build the body's iteration-number input and join the per-iteration scan
outputs once the loop is done. An If whose condition is known only at run
time becomes a Python `if` whose test is `if_taken`, so only the branch
taken runs.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from burnbook.tensor import Bool, Float, Int, Tensor

from ..graph import OnnxImportError

_KINDS = {"Float": Float, "Int": Int, "Bool": Bool}


def loop_trip_count(m: Any) -> int:
    """The trip count input `M` (an Int scalar tensor) as a Python int."""
    return int(np.asarray(m.to_numpy()).reshape(-1)[0])


def loop_continues(i: int, trip_count: int | None, cond: Any) -> bool:
    """Whether iteration `i` runs: below the trip count (None: no bound) and
    the condition (a Bool scalar tensor, None: absent) true."""
    if trip_count is not None and i >= trip_count:
        return False
    return cond is None or bool(np.asarray(cond.to_numpy()).reshape(-1)[0])


def loop_iteration(i: int, like: Any) -> Any:
    """The body's iteration-number input: an Int `[1]` holding `i`, on `like`'s device."""
    return Tensor[like.backend, 1, Int].from_data(np.asarray([i], dtype=np.int64), like.device())


def loop_true(like: Any) -> Any:
    """The condition a Loop without a `cond` input hands its body: Bool `[1]` true."""
    return Tensor[like.backend, 1, Bool].from_data(np.asarray([True]), like.device())


def loop_stack(items: list, scalar: bool, empty: Sequence[int] | None, like: Any, kind: str, node: str) -> Any:
    """A scan output of a Loop: the iterations' values stacked on a new axis 0
    (`scalar`: ONNX scalars, held as `[1]`, joined into `[n]`). No iteration
    gives a `[0, *empty]` tensor; where the body's output shape is not known
    (`empty` None) that is an error naming `node`."""
    if items:
        return Tensor.cat(items, 0) if scalar else Tensor.stack(items, 0)
    if empty is None:
        raise OnnxImportError(f"Loop node {node!r} ran no iteration, and the shape of its scan output is not "
                              "known, so the empty result cannot be built")
    dims = [0] + list(empty)
    return Tensor[like.backend, len(dims), _KINDS[kind]].zeros(dims, like.device())


def if_taken(cond: Any) -> bool:
    """An If's condition (a Bool scalar tensor, held as `[1]`) read on the
    host: True runs the then branch."""
    return bool(np.asarray(cond.to_numpy()).reshape(-1)[0])
