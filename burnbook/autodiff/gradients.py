"""`Gradients`: what `backward()` returns, gradients keyed by node id (Burn's
`Gradients` container; nothing is stored on the tensors themselves)."""

from __future__ import annotations

from typing import Any, Iterator

from ..backend.base import np_dtype_name
from .graph import AutodiffTensor, Node


def _key(item: Any) -> int:
    if isinstance(item, AutodiffTensor):
        if item.node is None:
            return -1  # untracked: never present
        return item.node.id
    if isinstance(item, Node):
        return item.id
    if isinstance(item, int):
        return item
    # A Tensor of the tensor layer: look through to its primitive.
    into = getattr(item, "into_primitive", None)
    if into is not None and isinstance(into(), AutodiffTensor):
        return _key(into())
    raise TypeError(f"Gradients: expected a node, node id or autodiff tensor, got {type(item).__name__}")


class Gradients:
    """Gradients of a backward pass, one per node id.

    `register(node, grad)` adds (accumulates), `consume(node)` pops and fails
    when absent, `get`/`remove` return None when absent. Keys may be a `Node`,
    its integer id, an `AutodiffTensor` or a `Tensor` of an Autodiff backend. Values are primitives of `backend`:
    the inner backend normally, the Autodiff backend itself after
    `backward(create_graph=True)` (then `create_graph` is True and every
    gradient is a tracked tensor that can be differentiated again).
    """

    __slots__ = ("backend", "create_graph", "_grads", "_ops")

    def __init__(self, backend: type, create_graph: bool = False) -> None:
        self.backend = backend
        self.create_graph = create_graph
        self._grads: dict[int, Any] = {}
        self._ops: dict[int, str] = {}

    def register(self, node: Any, grad: Any) -> None:
        """Add `grad` to the gradient of `node` (accumulating when present)."""
        k = _key(node)
        old = self._grads.get(k)
        self._grads[k] = grad if old is None else self.backend.float_add(old, grad)
        if isinstance(node, Node):
            self._ops.setdefault(k, node.op)

    def consume(self, node: Any) -> Any:
        """Pop the gradient of `node`; a KeyError when there is none."""
        k = _key(node)
        try:
            g = self._grads.pop(k)
        except KeyError:
            raise KeyError(f"Gradients: no gradient for node #{k}") from None
        self._ops.pop(k, None)
        return g

    def get(self, node: Any) -> Any:
        """The gradient of `node`, or None."""
        return self._grads.get(_key(node))

    def remove(self, node: Any) -> Any:
        """Pop the gradient of `node`, or None when absent."""
        k = _key(node)
        self._ops.pop(k, None)
        return self._grads.pop(k, None)

    def replace(self, node: Any, grad: Any) -> None:
        """Set the gradient of `node`, dropping any previous one."""
        self._grads[_key(node)] = grad

    def ids(self) -> list[int]:
        return list(self._grads)

    def items(self) -> Iterator[tuple[int, Any]]:
        return iter(self._grads.items())

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, node: Any) -> bool:
        try:
            return _key(node) in self._grads
        except TypeError:
            return False

    def __iter__(self) -> Iterator[int]:
        return iter(self._grads)

    def __repr__(self) -> str:
        B = self.backend
        kind = " create_graph" if self.create_graph else ""
        lines = []
        for k, g in self._grads.items():
            try:
                desc = f"{list(B.float_shape(g))} {np_dtype_name(B.float_dtype(g))}"
            except Exception:  # a foreign value put there by hand
                desc = type(g).__name__
            op = self._ops.get(k, "leaf")
            lines.append(f"  #{k} ({op}): {desc},")
        body = ("\n" + "\n".join(lines) + "\n") if lines else ""
        return f"Gradients<{B.name()}>{kind} {{{body}}}"
