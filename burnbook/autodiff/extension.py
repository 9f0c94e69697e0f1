"""Backend extension: add your own differentiable op (the book's Advanced
chapter, Burn's `Backward` / `prepare` / `OpsKind`).

An op has a forward per backend (on inner primitives) and, for `Autodiff[B]`,
an implementation that runs the forward and records a backward node. That
implementation follows Burn's structure: `prepare` the node from the inputs'
nodes; when any input is tracked you get `Tracked` and keep the state the
backward needs; otherwise `Untracked`, and nothing is kept.

    fused = CustomOp("fused_matmul_add_relu")

    @fused.forward(NdArray)
    def _(lhs, rhs, bias):                       # NumPy arrays in, out
        return np.maximum(lhs @ rhs + bias, 0)

    class FusedBackward(Backward):
        def backward(self, ops, grads):
            B = ops.backend                       # the inner backend
            node_lhs, node_rhs, node_bias = ops.parents
            grad = grads.consume(ops.node)
            lhs, rhs, output, bias_shape = ops.state
            ...
            if node_bias is not None:
                grads.register(node_bias, grad_bias)

    @fused.autodiff
    def _(B, lhs, rhs, bias):                    # AutodiffTensors in, out
        match FusedBackward().prepare([lhs.node, rhs.node, bias.node], B).stateful():
            case Tracked() as prep:
                out = fused.forward_of(B.InnerBackend)(lhs.primitive, rhs.primitive, bias.primitive)
                return prep.finish((lhs.primitive, rhs.primitive, out, ...), out)
            case Untracked() as prep:
                return prep.finish(fused.forward_of(B.InnerBackend)(lhs.primitive, ...))

    out = fused(B, lhs_p, rhs_p, bias_p)         # primitives, any backend with a forward
    y = fused.apply(lhs, rhs, bias)              # Tensors
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .graph import AutodiffTensor, Node, track


class Ops:
    """What a `Backward.backward` receives: the node, its parents (Node or
    None per input, in `prepare` order), the state kept at forward time and
    the backend to compute with (Burn's `Ops<State, N>`)."""

    __slots__ = ("node", "parents", "state", "backend")

    def __init__(self, node: Node, parents: tuple, state: Any, backend: type) -> None:
        self.node, self.parents, self.state, self.backend = node, parents, state, backend


class StepGradients:
    """The gradients one backward step sees: `consume(ops.node)` gives the
    output's gradient, `register(parent, grad)` hands a parent its share."""

    __slots__ = ("_node", "_grad", "_out", "_backend")

    def __init__(self, node: Node, grad: Any, backend: type) -> None:
        self._node, self._grad, self._out, self._backend = node, grad, {}, backend

    def consume(self, node: Node) -> Any:
        if node is not self._node or self._grad is None:
            raise KeyError(f"backward of '{self._node.op}': only its own node's "
                           "gradient can be consumed, once")
        g, self._grad = self._grad, None
        return g

    def register(self, node: Node | None, grad: Any) -> None:
        if node is None:
            return
        if all(node is not p for p in self._node.parents):
            raise ValueError(f"backward of '{self._node.op}': node #{node.id} is not a parent of this op")
        old = self._out.get(node)
        self._out[node] = grad if old is None else self._backend.float_add(old, grad)

    def result(self) -> tuple:
        out, seen = [], set()
        for p in self._node.parents:
            if p is None or p in seen:
                out.append(None)
            else:
                seen.add(p)
                out.append(self._out.get(p))
        return tuple(out)


class Backward:
    """Base class of a custom op's backward node (Burn's `Backward` trait).

    Override `backward(ops, grads)`. Set `op` for the label drawn in the
    graph (default: the class name). `double_backward = True` declares that
    `backward` uses only protocol ops of `ops.backend` (no custom kernels) and
    keeps its state's input tensors as the `AutodiffTensor`s themselves
    (not `.primitive`), so that it can be recorded for a second derivative;
    otherwise differentiating through it twice raises an error naming `op`.
    """

    op: str | None = None
    double_backward: bool = False

    def backward(self, ops: Ops, grads: StepGradients) -> None:
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def prepare(self, parents: Sequence[Node | None], backend: type) -> "Prepared":
        """Start an op on `backend` (the Autodiff backend or its inner one)
        whose inputs have these nodes (Burn's `prepare([nodes], [graphs])`)."""
        parents = tuple(p.node if isinstance(p, AutodiffTensor) else p for p in parents)
        inner = getattr(backend, "InnerBackend", backend)
        return Prepared(self, parents, inner)

    # The engine calls the Backward itself as the node's rule.
    def __call__(self, B: type, g: Any, n: Node, *saved: Any) -> tuple:
        state = n.args[0]
        if not getattr(B, "is_autodiff", False):
            state = _unwrap(state)  # first order: inner primitives only
        grads = StepGradients(n, g, B)
        self.backward(Ops(n, n.parents, state, B), grads)
        return grads.result()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _unwrap(state: Any) -> Any:
    """Inner primitives for a first-order backward (tuples/lists looked into)."""
    if isinstance(state, AutodiffTensor):
        return state.primitive
    if isinstance(state, (tuple, list)):
        return type(state)(_unwrap(s) for s in state)
    return state


class Prepared:
    """A prepared op; `stateful()`/`stateless()` say whether it is tracked."""

    __slots__ = ("backward", "parents", "inner")

    def __init__(self, backward: Backward, parents: tuple, inner: type) -> None:
        self.backward, self.parents, self.inner = backward, parents, inner

    def stateful(self) -> "Tracked | Untracked":
        """`Tracked` when any input is tracked, else `Untracked` (Burn's `OpsKind`)."""
        if any(p is not None for p in self.parents):
            return Tracked(self)
        return Untracked(self)

    stateless = stateful


class Tracked:
    """An input is tracked: compute the output and the state, then `finish`."""

    __slots__ = ("_prep",)
    __match_args__ = ()

    def __init__(self, prep: Prepared) -> None:
        self._prep = prep

    def finish(self, state: Any, output: Any = None) -> AutodiffTensor:
        """Record the node; `finish(output)` alone keeps no state."""
        if output is None:
            state, output = None, state
        p = self._prep
        bw = p.backward
        shape = tuple(p.inner.float_shape(output))
        label = bw.op or type(bw).__name__
        return track(label, p.parents, output, shape, bw, (), (state,))


class Untracked:
    """No input is tracked: compute the output only; nothing is kept."""

    __slots__ = ("_prep",)
    __match_args__ = ()

    def __init__(self, prep: Prepared) -> None:
        self._prep = prep

    def finish(self, output: Any) -> AutodiffTensor:
        return AutodiffTensor(output, None)


class CustomOp:
    """A user-defined op: a forward per backend plus an Autodiff implementation.

    `op(B, *primitives, **kwargs)` runs it on backend `B`: the Autodiff
    implementation when `B.is_autodiff`, else the forward registered for `B`
    (or for the closest base class of `B`).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._forwards: dict[type, Callable] = {}
        self._autodiff: Callable | None = None

    def forward(self, backend: type) -> Callable:
        """Decorator: the forward of this op on `backend` (inner primitives)."""
        def deco(fn: Callable) -> Callable:
            self._forwards[backend] = fn
            return fn
        return deco

    def autodiff(self, fn: Callable) -> Callable:
        """Decorator: `fn(B, *autodiff_primitives)` for every `Autodiff[...]`."""
        self._autodiff = fn
        return fn

    def forward_of(self, backend: type) -> Callable:
        """The forward registered for `backend` or its closest base class."""
        for cls in backend.__mro__:
            fn = self._forwards.get(cls)
            if fn is not None:
                return fn
        known = ", ".join(b.__name__ for b in self._forwards) or "none"
        raise NotImplementedError(
            f"custom op '{self.name}' has no forward for backend {backend.__name__} (it has: {known})")

    def __call__(self, backend: type, *args: Any, **kwargs: Any) -> Any:
        if getattr(backend, "is_autodiff", False):
            if self._autodiff is None:
                raise NotImplementedError(
                    f"custom op '{self.name}' has no autodiff implementation; "
                    "declare one with @op.autodiff")
            return self._autodiff(backend, *args, **kwargs)
        return self.forward_of(backend)(*args, **kwargs)

    def apply(self, *tensors: Any, out_type: type | None = None, **kwargs: Any) -> Any:
        """Run the op on `Tensor`s (all of one backend): the result has the
        type of the first tensor unless `out_type` (e.g. `Tensor[B, 2]`) says."""
        first = tensors[0]
        backend = type(first)._B
        out = self(backend, *[t.into_primitive() for t in tensors], **kwargs)
        return (out_type or type(first)).from_primitive(out)

    def __repr__(self) -> str:
        return f"CustomOp({self.name!r})"
