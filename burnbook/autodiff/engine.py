"""The backward pass: topological order, rule calls, gradient accumulation and
release of the graph.

Each node's rule is called as `rule(B, g, node, *saved)` and returns the
gradient of each parent (a tuple, or one value for a one-parent op; None for
a parent that gets nothing). `B` is the backend the rule computes with:

- the inner backend normally: `g` and `saved` are inner primitives;
- the Autodiff backend itself with `create_graph=True`: `g` and `saved` are
  `AutodiffTensor`s tied to the original graph (each saved input to its
  parent node, a saved output to the node itself), so the backward pass is
  recorded and can be differentiated again.

Rules call only protocol ops on `B`, so the same rule runs on NdArray, Taichi
or a user's backend, and doubles as its own second derivative.

`observe_backward(callback)` lets a tool watch the pass (the BackwardStepper
widget does): inside it, `backward` calls `callback(B, node, grad, grads)` at
every node it visits, in its own order: `grad` is the gradient that arrived
(None if none did), `grads` what the node's rule returned, one per parent
(None for a parent that gets nothing; `()` where no rule ran: a leaf, or a
node that no gradient reached),
before any of it is added into the parents, and while the node's saved state
and `args` are still there. Without an observer, a node costs one `is None`
check of a local more.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from .gradients import Gradients
from .graph import AutodiffTensor, Node, release, track

_observer: Callable | None = None


@contextmanager
def observe_backward(callback: Callable) -> Iterator[None]:
    """Inside this block every `backward` calls `callback(B, node, grad,
    grads)` at each node it visits (see the module's docstring)."""
    global _observer
    if not callable(callback):
        raise TypeError(f"observe_backward: callback must be callable, got {type(callback).__name__}")
    before, _observer = _observer, callback
    try:
        yield
    finally:
        _observer = before


def backward(autodiff: type, root: AutodiffTensor, create_graph: bool = False,
             retain_graph: bool | None = None, retain_grads: bool = False,
             grad: Any = None) -> Gradients:
    """Run backward from `root` (seeded with ones, or `grad`) on the backend
    `autodiff` (an `Autodiff[...]`); see `Autodiff.float_backward`."""
    inner = autodiff.InnerBackend
    B = autodiff if create_graph else inner   # the backend the rules compute with
    result = Gradients(B, create_graph)
    node = root.node
    if node is None:
        return result  # Burn: an untracked tensor has nothing to differentiate
    if create_graph:
        retain_graph = True  # the recorded backward refers to the original nodes' state
    if grad is None:
        p = root.primitive
        grad = inner.float_full(node.shape, 1.0, inner.float_device(p), inner.float_dtype(p))
    elif isinstance(grad, AutodiffTensor) and not create_graph:
        grad = grad.primitive
    if create_graph and not isinstance(grad, AutodiffTensor):
        grad = AutodiffTensor(grad, None)

    # Count each node's children inside this graph: a node runs once all of
    # them have handed it their gradient (Kahn's algorithm).
    pending = {node: 0}
    stack = [node]
    while stack:
        n = stack.pop()
        for p in n.parents:
            if p is not None:
                c = pending.get(p)
                if c is None:
                    pending[p] = 1
                    stack.append(p)
                else:
                    pending[p] = c + 1

    inflight = {node: grad}
    ready = [node]
    grad = None
    observe = _observer
    while ready:
        n = ready.pop()
        g = inflight.pop(n, None)
        if g is not None and (n.requires_grad or retain_grads):
            result.register(n, g)
        rule = n.rule
        parents = n.parents
        if rule is not None and g is not None:
            if create_graph:
                out = _graph_step(autodiff, g, n)
            else:
                out = rule(inner, g, n, *n.saved)
            if type(out) is not tuple:
                out = (out,)
            if observe is not None:
                observe(B, n, g, out)
            g = None  # free the node's gradient as soon as it is consumed
            for p, gp in zip(parents, out):
                if p is not None and gp is not None:
                    old = inflight.get(p)
                    inflight[p] = gp if old is None else B.float_add(old, gp)
            out = None
        elif observe is not None:
            observe(B, n, g, ())
        for p in parents:
            if p is not None:
                c = pending[p] - 1
                pending[p] = c
                if c == 0:
                    ready.append(p)
        if rule is not None and not retain_graph:
            _maybe_release(n, n is node, retain_graph)
    return result


def _maybe_release(n: Node, is_root: bool, retain_graph: bool | None) -> None:
    """Free `n`'s state unless something can still backprop through it.

    With `retain_graph=None` (the default) a node is kept while its tensor is
    alive or a child outside this pass still needs it, so several roots over a
    shared graph work; the root is always consumed, as in Burn. With
    `retain_graph=False` every visited node is freed (PyTorch's default).
    """
    if is_root or retain_graph is False or (n.live == 0 and (n.owner is None or n.owner() is None)):
        release(n)


def _graph_step(autodiff: type, g: AutodiffTensor, n: Node) -> Any:
    """Call `n`'s rule on the Autodiff backend so that it is recorded."""
    rule = n.rule
    if not getattr(rule, "double_backward", True):
        return _opaque_step(autodiff, g, n)
    ps = n.parents
    k = len(ps)
    saved = tuple(
        None if s is None else AutodiffTensor(s, ps[i] if i < k else n)
        for i, s in enumerate(n.saved)
    )
    return rule(autodiff, g, n, *saved)


def _opaque_step(autodiff: type, g: AutodiffTensor, n: Node) -> Any:
    """A rule without a second derivative (e.g. a custom kernel's backward):
    run it on the inner backend and record its results as nodes whose own
    backward raises an error naming the op."""
    inner = autodiff.InnerBackend
    out = n.rule(inner, g.primitive, n, *n.saved)
    if type(out) is not tuple:
        out = (out,)
    deps = (g.node,) + tuple(n.parents)
    tracked = any(d is not None for d in deps)
    wrapped = []
    for gp in out:
        if gp is None:
            wrapped.append(None)
        elif tracked:
            wrapped.append(track(f"{n.op}_backward", deps, gp, tuple(inner.float_shape(gp)),
                                 _no_second_derivative(n.op)))
        else:
            wrapped.append(AutodiffTensor(gp, None))
    return tuple(wrapped)


def _no_second_derivative(op: str):
    def rule(B, g, n, *saved):
        raise NotImplementedError(
            f"double backward: op '{op}' has no second derivative (its backward "
            "is not written with differentiable backend ops). Give its Backward "
            "`double_backward = True` with a backward written in `B` ops, or "
            "avoid create_graph through it."
        )
    return rule
