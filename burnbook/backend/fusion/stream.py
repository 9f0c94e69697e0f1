"""The recorded stream: lazy `FusionTensor`s and the element-wise `Node`s that
will compute them.

A `FusionTensor` is either *ready* (it holds the inner backend's primitive in
`value`) or *lazy* (it holds the `Node` that computes it from other
FusionTensors). Recording an op checks shapes and dtypes at once, as the
inner backend would, and builds a node; nothing runs until a value is needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burnbook.kernels.elementwise import BinaryOp, TernaryOp, UnaryOp

MAX_NODES = 48
"""A chain longer than this is executed before it grows further: it bounds a
fused kernel's size (and compile time) and the memory a chain holds on to."""

_next_id = [0]


class Node:
    """One element-wise op of the stream: `code` (a UnaryOp/BinaryOp/TernaryOp member)
    over `inputs` (FusionTensors, broadcast to the output's shape) and
    `scalars` (Python floats, in the first input's precision). `spared`:
    a reduction over it left it lazy (see executor.run_reduce)."""

    __slots__ = ("code", "inputs", "scalars", "size", "id", "spared")

    def __init__(self, code: UnaryOp | BinaryOp | TernaryOp, inputs: tuple, scalars: tuple) -> None:
        self.code, self.inputs, self.scalars = code, inputs, scalars
        self.size = 1 + sum(t.node.size for t in inputs if t.node is not None)
        _next_id[0] += 1
        self.id = _next_id[0]
        self.spared = False

    @property
    def name(self) -> str:
        return self.code.name.lower()


class FusionTensor:
    """The primitive of `Fusion[B]`: a ready inner primitive, or a lazy node."""

    __slots__ = ("shape", "dtype", "device", "value", "node", "__weakref__")

    def __init__(self, shape: tuple, dtype: np.dtype, device: Any, value: Any = None,
                 node: "Node | None" = None) -> None:
        self.shape, self.dtype, self.device = shape, dtype, device
        self.value, self.node = value, node

    @property
    def ready(self) -> bool:
        return self.node is None

    def __repr__(self) -> str:
        state = "ready" if self.node is None else f"lazy: {self.node.name}, {self.node.size} op(s)"
        return f"FusionTensor(shape={list(self.shape)}, dtype={self.dtype}, {state})"


def ready(value: Any) -> FusionTensor:
    """Wrap an inner primitive (it has `shape`, `dtype` and `device`)."""
    return FusionTensor(tuple(value.shape), value.dtype, value.device, value=value)


def lazy(code: UnaryOp | BinaryOp | TernaryOp, inputs: tuple, shape: tuple, dtype: np.dtype,
         scalars: tuple = ()) -> FusionTensor:
    return FusionTensor(shape, dtype, inputs[0].device, node=Node(code, inputs, scalars))


def graph(roots: list) -> tuple[list, list]:
    """The lazy tensors that `roots` need, inputs before users, and the ready
    leaves they read, each once."""
    order: list = []
    leaves: list = []
    seen: set = set()
    stack = [(t, False) for t in reversed(roots)]
    while stack:
        t, expanded = stack.pop()
        if id(t) in seen and not expanded:
            continue
        if t.node is None:
            seen.add(id(t))
            leaves.append(t)
        elif expanded:
            order.append(t)
        else:
            seen.add(id(t))
            stack.append((t, True))
            stack.extend((i, False) for i in reversed(t.node.inputs) if id(i) not in seen)
    return order, leaves
