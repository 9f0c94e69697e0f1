"""The dynamic graph: `AutodiffTensor` (an inner primitive plus a node) and `Node`.

A node records one tracked operation, micrograd style: its op label, its
parent nodes, its output shape, and the backward rule with the state that
rule needs. Untracked tensors carry `node=None` and cost nothing more than the
inner primitive (Burn's `Requirement::None`): an op whose inputs are all
untracked builds no node and keeps no state.

Lifetime: the graph is owned by the tensors built on it (Python reference
counting frees it when they are dropped), and `backward()` releases the saved
state of every node that nothing can reach again (see `engine.py`). Op label,
parents and shape survive the release, so a widget can still draw the graph.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager
from typing import Any, Callable, Iterator
from weakref import ref

_ids = itertools.count(1)
_keep_values = False


class AutodiffTensor:
    """The Float primitive of `Autodiff[B]`: B's primitive plus a graph node.

    `node` is None for an untracked tensor (no graph, no state kept).
    """

    __slots__ = ("primitive", "node", "__weakref__")

    def __init__(self, primitive: Any, node: "Node | None" = None) -> None:
        self.primitive = primitive
        self.node = node

    def __repr__(self) -> str:
        n = self.node
        where = "untracked" if n is None else f"node #{n.id} {n.op}"
        return f"AutodiffTensor({where}, primitive={self.primitive!r})"


class Node:
    """One recorded op: `op` label, `parents` (Node or None per tensor input),
    output `shape`, and the backward `rule` with its `saved` state.

    Leaves (`op == "leaf"`) have no parents and no rule; their `id` stays the
    same for the life of the tensor, so `Gradients` can be keyed by it.
    `requires_grad` marks the nodes whose gradient `backward()` returns.
    """

    __slots__ = ("id", "op", "parents", "shape", "rule", "saved", "args",
                 "requires_grad", "live", "owner", "value")

    def __init__(self, op: str, parents: tuple, shape: tuple, rule: Callable | None,
                 saved: tuple = (), args: tuple = (), requires_grad: bool = False) -> None:
        self.id = next(_ids)
        self.op = op
        self.parents = parents
        self.shape = shape
        self.rule = rule
        self.saved = saved        # inputs aligned with parents (+ the output last)
        self.args = args          # the op's static arguments (dims, shapes, masks...)
        self.requires_grad = requires_grad
        self.live = 0             # child nodes, alive and not released, that refer to this one
        self.owner = None         # weakref to the tensor this op produced
        self.value = None         # the output primitive, inside `keep_values()` only

    def __del__(self) -> None:
        # A child dropped unreleased no longer needs its parents' state.
        if self.rule is not _released:
            for p in self.parents:
                if p is not None:
                    p.live -= 1

    @property
    def is_leaf(self) -> bool:
        return not self.parents and self.rule is None

    @property
    def released(self) -> bool:
        """True once `backward()` has freed this node's saved state."""
        return self.rule is _released

    def __repr__(self) -> str:
        ps = ", ".join("const" if p is None else f"#{p.id}" for p in self.parents)
        grad = " requires_grad" if self.requires_grad else ""
        return f"Node(#{self.id} {self.op} {list(self.shape)}{grad}" + (f" <- {ps})" if ps else ")")


def _released(B, g, n, *saved):
    raise RuntimeError(
        f"backward: the state of op '{n.op}' (node #{n.id}) was freed by an earlier "
        "backward(). Pass retain_graph=True to that first backward() to "
        "differentiate through this part of the graph again, or recompute it."
    )


def track(op: str, parents: tuple, out: Any, shape: tuple, rule: Callable,
          saved: tuple = (), args: tuple = ()) -> AutodiffTensor:
    """Wrap `out` with a new node; the hot path of every tracked op."""
    n = Node(op, parents, shape, rule, saved, args)
    for p in parents:
        if p is not None:
            p.live += 1
    t = AutodiffTensor(out, n)
    n.owner = ref(t)
    if _keep_values:
        n.value = out
    return t


@contextmanager
def keep_values(enabled: bool = True) -> Iterator[None]:
    """Inside this block every node also keeps its output primitive as
    `node.value` (leaves made here too), so a graph view can show values.
    Off by default: it holds every intermediate result in memory."""
    global _keep_values
    before, _keep_values = _keep_values, enabled
    try:
        yield
    finally:
        _keep_values = before


def leaf(shape: tuple, value: Any = None) -> Node:
    """A fresh leaf node that requires grad (Burn: `Requirement::Grad`)."""
    n = Node("leaf", (), shape, None, (), (), True)
    if _keep_values:
        n.value = value
    return n


def release(n: Node) -> None:
    """Free a node's saved state; keep op, parents and shape for drawing."""
    if n.rule is _released:
        return
    n.rule = _released
    n.saved = ()
    n.args = ()
    for p in n.parents:
        if p is not None:
            p.live -= 1


def nodes_of(t: "Tensor | AutodiffTensor | Node") -> list[Node]:
    """Every node `t` depends on, parents before children (`t`'s node last).

    Accepts a `Tensor` of an autodiff backend, an `AutodiffTensor` or a
    `Node`; an untracked tensor gives `[]`.
    """
    into = getattr(t, "into_primitive", None)
    if into is not None:
        t = into()
    if not isinstance(t, (AutodiffTensor, Node)):
        raise TypeError(f"nodes_of: expected a tensor of an Autodiff[...] backend or a Node, got {type(t).__name__}")
    root = t.node if isinstance(t, AutodiffTensor) else t
    if root is None:
        return []
    order: list[Node] = []
    seen = {root}
    stack: list[tuple[Node, Iterator]] = [(root, iter(root.parents))]
    while stack:  # iterative post-order DFS: deep chains do not hit the recursion limit
        n, it = stack[-1]
        for p in it:
            if p is not None and p not in seen:
                seen.add(p)
                stack.append((p, iter(p.parents)))
                break
        else:
            stack.pop()
            order.append(n)
    return order


def edges_of(t: "Tensor | AutodiffTensor | Node") -> list[tuple[Node, Node]]:
    """The (parent, child) pairs of the graph behind `t`, for drawing it."""
    return [(p, n) for n in nodes_of(t) for p in n.parents if p is not None]


def value_of(n: Node) -> Any:
    """The output primitive of node `n` when it can still be read, else None:
    the value kept by `keep_values()`, or the primitive of the tensor that the
    op produced while that tensor is alive. For drawing a graph; leaves made
    outside `keep_values()` have no owner, so their values come from the
    tensors themselves (e.g. a module's parameters)."""
    if n.value is not None:
        return n.value
    owner = n.owner() if n.owner is not None else None
    return None if owner is None else owner.primitive
