"""What the `Autodiff` class body declares its ops with, and the closures
`Autodiff[B]` binds them to.

- `tracked(rule)`: a differentiable op. Its row of the op table
  (`ops/table.py`: forward kind, what to save) picks the closure: run B's op
  on the inner primitives and, when an input is tracked, record a node whose
  backward is `rule`. Checked when the class is made: the op's row must name
  that very rule.
- `creates`: a new tensor, untracked (from_data, full, random; Int and Bool
  into Float).
- `reads`: B's answer about the inner primitive (shape, data, argmax, `_elem`
  comparisons...), no gradient.
- `compares`: a comparison of two tensors' inner primitives (a Bool primitive).
- `inner_op`: B's own op, unchanged (Int and Bool ops: those primitives are B's).

Each closure is made once per B, when `Autodiff[B]` is first built; its
per-call cost is one Python call around B's op, plus the node when tracked.
"""

from __future__ import annotations

from typing import Callable

from ..backend.decorator import OpDeclaration, inner_op as inner_op_of
from .graph import AutodiffTensor, track
from .ops import TABLE, OpSpec
from .ops.module import module_forward

_NONE2 = (None, None)


def _shape_fn(inner: type) -> Callable:
    shape = inner.float_shape

    def shape_of(p):
        s = shape(p)
        return s if type(s) is tuple else tuple(s)
    return shape_of


# -- the forward of a tracked op, one factory per kind of the op table --------------------------

def _unary(inner: type, fn: Callable, spec: OpSpec) -> Callable:
    label, rule, state = spec.label, spec.rule, spec.state
    save_x, save_out = spec.save[0], spec.save_out
    shape_of = _shape_fn(inner)

    def op(x, *args):
        p = x.primitive
        out = fn(p, *args)
        node = x.node
        if node is None:
            return AutodiffTensor(out, None)
        return track(label, (node,), out, shape_of(out), rule,
                     (p if save_x else None, out if save_out else None),
                     args if state is None else state(inner, out, p, *args))
    return op


def _binary(inner: type, fn: Callable, spec: OpSpec) -> Callable:
    label, rule, save = spec.label, spec.rule, spec.save[0]
    shape_of = _shape_fn(inner)

    def op(x, y):
        a, b = x.primitive, y.primitive
        out = fn(a, b)
        na, nb = x.node, y.node
        if na is None and nb is None:
            return AutodiffTensor(out, None)
        return track(label, (na, nb), out, shape_of(out), rule, (a, b) if save else _NONE2)
    return op


def _general(inner: type, fn: Callable, spec: OpSpec) -> Callable:
    label, rule, pos, save = spec.label, spec.rule, spec.tensors, spec.save
    shape_of = _shape_fn(inner)

    def op(*args):
        args = list(args)
        parents, saved = [], []
        for i, s in zip(pos, save):
            t = args[i]
            args[i] = t.primitive
            parents.append(t.node)
            saved.append(t.primitive if s else None)
        out = fn(*args)
        if all(p is None for p in parents):
            return AutodiffTensor(out, None)
        static = tuple(a for i, a in enumerate(args) if i not in pos)
        return track(label, tuple(parents), out, shape_of(out), rule, tuple(saved), static)
    return op


def _cat(inner: type, fn: Callable, spec: OpSpec) -> Callable:
    label, rule, state = spec.label, spec.rule, spec.state
    shape_of = _shape_fn(inner)

    def op(ps, dim):
        prims = [t.primitive for t in ps]
        out = fn(prims, dim)
        parents = tuple(t.node for t in ps)
        if all(p is None for p in parents):
            return AutodiffTensor(out, None)
        return track(label, parents, out, shape_of(out), rule, (), state(inner, out, prims, dim))
    return op


_FORWARDS = {"unary": _unary, "binary": _binary, "general": _general, "cat": _cat,
             "module": module_forward}


class _Tracked(OpDeclaration):
    """A differentiable op whose backward is `rule` (a function of `ops/`)."""

    def __init__(self, rule: Callable) -> None:
        self.rule = rule

    def __set_name__(self, owner: type, name: str) -> None:
        spec = TABLE.get(name)
        if spec is None or spec.rule is not self.rule:
            found = "no row" if spec is None else f"the rule {spec.rule.__qualname__}"
            raise TypeError(f"{owner.__name__}.{name} = tracked({self.rule.__qualname__}): "
                            f"the op table has {found} for {name}")

    def bind(self, name: str, inner: type) -> Callable | None:
        fn = inner_op_of(inner, name)
        if fn is None:
            return None
        spec = TABLE[name]
        return _FORWARDS[spec.kind](inner, fn, spec)


def tracked(rule: Callable) -> OpDeclaration:
    """Declare a differentiable op whose backward rule is `rule`."""
    return _Tracked(rule)


class _Creates(OpDeclaration):
    def bind(self, name: str, inner: type) -> Callable | None:
        fn = inner_op_of(inner, name)
        if fn is None:
            return None

        def op(*args, **kwargs):
            return AutodiffTensor(fn(*args, **kwargs), None)
        return op


class _Reads(OpDeclaration):
    def bind(self, name: str, inner: type) -> Callable | None:
        fn = inner_op_of(inner, name)
        if fn is None:
            return None

        def op(x, *args):
            return fn(x.primitive, *args)
        return op


class _Compares(OpDeclaration):
    def bind(self, name: str, inner: type) -> Callable | None:
        fn = inner_op_of(inner, name)
        if fn is None:
            return None

        def op(x, y):
            return fn(x.primitive, y.primitive)
        return op


class _InnerOp(OpDeclaration):
    def bind(self, name: str, inner: type) -> Callable | None:
        return inner_op_of(inner, name)


creates = _Creates()
reads = _Reads()
compares = _Compares()
inner_op = _InnerOp()
