"""What chapter 27 ("Build your own autodiff") hands the reader: the node
type `Var`, the helpers `unbroadcast` and `ones_like`, and `make_engine`,
which turns the reader's four parts into a backend decorator over the
protocol, a tiny `Autodiff`:

    Engine = make_engine(record, topo_order, RULES, backward)
    B = Engine[NdArray]               # a backend: Tensor[B, 2], backward(), grad()

The reader writes the parts (the chapter's skeleton); this module is only
the plumbing around them, the same shape as `burnbook/autodiff/backend.py`
but in one page:

- a differentiable op (one per rule in `rules`) runs the inner backend's op
  on the values and calls `record(op, value, inputs, rule, args)`;
- creation ops wrap the inner primitive in an untracked `Var`; reads (shape,
  data, comparisons, argmax) unwrap it; Int and Bool ops are the inner
  backend's own;
- an op with no rule stays the protocol's stub, so `missing_ops()` and
  `burnbook.testing.check_autodiff` count it as missing;
- `float_backward(p)` is `backward(topo_order(p), inner)`, a dict from node
  id to gradient (an inner primitive), which `float_grad` reads.

A rule is `rule(B, g, xs, out, args) -> tuple`: `B` the inner backend, `g`
the gradient arriving at the op's output, `xs` the values of the op's tensor
inputs, `out` its output value, `args` its other arguments (a scalar, a
dim); it returns one gradient per input, each of that input's shape.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..backend.base import BOOL_OPS, INT_OPS
from ..backend.decorator import Decorator, OpDeclaration, inner_op
from ..backend.protocol import AutodiffOps

__all__ = ["ELEMENTWISE_OPS", "EXTRA_OPS", "SHAPE_OPS", "Var", "make_engine", "ones_like",
           "show_tape", "trace_rules", "unbroadcast"]

# The ops whose rules the reader writes, step by step (chapter 27's exercises 3, 4 and 6).
ELEMENTWISE_OPS = ("float_add", "float_sub", "float_mul", "float_neg", "float_mul_scalar",
                   "float_exp", "float_tanh", "float_relu")
SHAPE_OPS = ("float_matmul", "float_sum", "float_sum_dim")
EXTRA_OPS = ("float_div", "float_log")

_ids = itertools.count(1)


@dataclass(eq=False)
class Var:
    """The engine's Float primitive: an inner primitive (`value`) and, when
    it came from a tracked op, how: the `op` name, its `parents` (the Vars it
    was computed from, in argument order), the backward `rule` and the op's
    other `args`. A leaf has no parents; `requires_grad` marks the leaves
    whose gradient `backward()` hands back. `id` keys the gradients."""

    value: Any
    op: str = "leaf"
    parents: tuple = ()
    rule: Callable | None = None
    args: tuple = ()
    requires_grad: bool = False
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def tracked(self) -> bool:
        """Whether a gradient can flow into this Var: a leaf that requires
        grad, or the output of an op with a tracked input."""
        return self.requires_grad or bool(self.parents)

    def __repr__(self) -> str:
        origin = ", ".join(f"#{p.id}" for p in self.parents)
        what = f"{self.op}({origin})" if self.parents else ("leaf, requires grad" if self.requires_grad
                                                            else "untracked")
        return f"Var#{self.id} {what}"


def unbroadcast(B: type, g: Any, shape: tuple) -> Any:
    """`g` summed back to `shape`: an input of size 1 on a dim the op
    broadcast (`[2, 3] + [1, 3]`) receives the sum of the gradient over that
    dim. Both have the same rank (the protocol broadcasts same-rank operands)."""
    for dim, (have, want) in enumerate(zip(B.float_shape(g), shape)):
        if want == 1 and have != 1:
            g = B.float_sum_dim(g, dim)
    return g


def ones_like(B: type, p: Any) -> Any:
    """Ones of `p`'s shape, dtype and device: the seed of a backward pass."""
    return B.float_full(tuple(B.float_shape(p)), 1.0, B.float_device(p), B.float_dtype(p))


# -- tracing, to watch the engine work ----------------------------------------------------------
_trace: list | None = None


@contextmanager
def trace_rules() -> Iterator[list]:
    """Inside the block, every rule call of every engine is appended to the
    list it yields as `(op, g, grads)`: the order backward visits the ops and
    the numbers at each step."""
    global _trace
    saved, _trace = _trace, []
    try:
        yield _trace
    finally:
        _trace = saved


def show_tape(nodes: list, B: type) -> None:
    """Print `nodes` (a topological order, root first) as the tape a
    forward pass recorded, oldest first: id, op, parents and shape."""
    for node in reversed(list(nodes)):
        origin = ", ".join(f"#{p.id}" for p in node.parents) or "-"
        flag = "  requires grad" if node.requires_grad else ""
        print(f"#{node.id:<3} {node.op:<17} from {origin:<10} shape {list(B.float_shape(node.value))}{flag}")


# -- the declarations the engine's class body is made of -------------------------------------------
class _Differentiable(OpDeclaration):
    """An op with a rule: run the inner op on the values, then `record`."""

    def __init__(self, rule: Callable, record: Callable) -> None:
        self.rule, self.record = rule, record

    def bind(self, name: str, inner: type) -> Callable | None:
        fn, rule, record = inner_op(inner, name), self.rule, self.record
        if fn is None:
            return None

        def traced(B, g, xs, out, args):
            grads = rule(B, g, xs, out, args)
            if _trace is not None:
                _trace.append((name, g, grads))
            return grads

        def op(*args):
            inputs = tuple(a for a in args if isinstance(a, Var))
            values = [a.value if isinstance(a, Var) else a for a in args]
            rest = tuple(a for a in args if not isinstance(a, Var))
            return record(name, fn(*values), inputs, traced, rest)
        return op


class _Creates(OpDeclaration):
    """A new tensor: the inner primitive in an untracked Var."""

    def bind(self, name: str, inner: type) -> Callable | None:
        fn = inner_op(inner, name)
        return None if fn is None else (lambda *args: Var(fn(*args)))


class _Reads(OpDeclaration):
    """The inner backend's answer about the values (shape, data, comparisons)."""

    def bind(self, name: str, inner: type) -> Callable | None:
        fn = inner_op(inner, name)
        if fn is None:
            return None
        return lambda *args: fn(*[a.value if isinstance(a, Var) else a for a in args])


class _Inner(OpDeclaration):
    """An Int or Bool op: those primitives are the inner backend's own."""

    def bind(self, name: str, inner: type) -> Callable | None:
        return inner_op(inner, name)


_CREATES = ("float_from_data", "float_empty", "float_full", "float_random", "int_into_float",
            "bool_into_float")
_READS = ("float_into_data", "float_shape", "float_device", "float_dtype", "float_argmax",
          "float_argmin", "float_into_int", "float_equal", "float_greater", "float_greater_equal",
          "float_lower", "float_lower_equal", "float_equal_elem", "float_greater_elem",
          "float_greater_equal_elem", "float_lower_elem", "float_lower_equal_elem")


class _EngineOps(AutodiffOps):
    """The autodiff ops (`require_grad`, `backward`, `grad`...) of every engine."""

    @staticmethod
    def float_require_grad(p: Var) -> Var:
        if p.parents or p.requires_grad:
            p.requires_grad = True
            return p
        return Var(p.value, requires_grad=True)

    @classmethod
    def float_set_require_grad(cls, p: Var, flag: bool) -> Var:
        return cls.float_require_grad(p) if flag else Var(p.value)

    @staticmethod
    def float_is_require_grad(p: Var) -> bool:
        return p.requires_grad

    @staticmethod
    def float_detach(p: Var) -> Var:
        return Var(p.value)

    @classmethod
    def float_backward(cls, p: Var, create_graph: bool = False, retain_graph: bool | None = None,
                       retain_grads: bool = False, grad: Any = None) -> dict:
        if create_graph or grad is not None:
            raise NotImplementedError(f"{cls!r} does not implement float_backward with create_graph or a "
                                      "given seed (the tiny engine seeds with ones and records no backward)")
        return cls._backward(cls._topo_order(p), cls._inner)

    @staticmethod
    def float_grad(p: Var, grads: dict) -> Any:
        return grads.get(p.id)

    @staticmethod
    def float_grad_remove(p: Var, grads: dict) -> Any:
        return grads.pop(p.id, None)

    @staticmethod
    def float_grad_replace(p: Var, grads: dict, grad: Any) -> None:
        grads[p.id] = grad

    @staticmethod
    def float_inner(p: Var) -> Any:
        return p.value

    @staticmethod
    def float_from_inner(p: Any) -> Var:
        return Var(p)


def make_engine(record: Callable, topo_order: Callable, rules: dict, backward: Callable,
                name: str = "Tiny") -> type:
    """A backend decorator made of the reader's parts: `make_engine(...)[NdArray]`
    is a backend whose Float ops in `rules` are differentiable (`{op name:
    rule}`), whose `backward()` is `backward(topo_order(root), inner)`."""
    if not isinstance(rules, dict):
        raise TypeError(f"rules should be a dict {{op name: rule}}, got {type(rules).__name__}")
    ns: dict[str, Any] = {
        "prefix": name.lower(), "is_autodiff": True, "__module__": __name__,
        "__doc__": f"{name}[B]: B with the reverse-mode engine of chapter 27.",
        "_topo_order": staticmethod(topo_order), "_backward": staticmethod(backward),
        "_namespace": classmethod(lambda cls, inner: {"InnerBackend": inner, "is_autodiff": True}),
    }
    ns.update({op: _Creates() for op in _CREATES})
    ns.update({op: _Reads() for op in _READS})
    ns.update({op: _Inner() for op in INT_OPS + BOOL_OPS if op not in ns})
    ns.update({op: _Differentiable(rule, record) for op, rule in rules.items()})
    return type(name, (Decorator, _EngineOps), ns)
