"""`Autodiff[B]`: the backend decorator that makes any backend differentiable.

`Autodiff[B]` is a cached subclass of `Backend` whose Float primitive is an
`AutodiffTensor` (B's primitive plus a graph node, None when untracked). Every
op of `FLOAT_OPS` runs B's op on the inner primitives; when an input is
tracked it also records a node from the op table (`ops/`). Int and Bool
primitives are B's own and their ops are B's, passed through unchanged.

`Autodiff[Autodiff[B]]` is a TypeError: the backend is already
differentiable; gradients of gradients come from `backward(create_graph=True)`.
"""

from __future__ import annotations

from typing import Any, Callable

from ..backend.base import AUTODIFF_OPS, BOOL_OPS, FLOAT_OPS, INT_OPS, MODULE_OPS, Backend
from . import engine
from .gradients import Gradients
from .graph import AutodiffTensor, leaf, track
from .ops import TABLE, OpSpec
from .ops.module import module_forward

# Float ops with no gradient: they make new untracked tensors, or read one.
_CREATE = ("float_from_data", "float_empty", "float_full", "float_random")
_READ = ("float_into_data", "float_shape", "float_device", "float_dtype",
         "float_argmax", "float_argmin", "float_into_int")
_COMPARE = ("float_equal", "float_greater", "float_greater_equal", "float_lower",
            "float_lower_equal")
_COMPARE_ELEM = ("float_equal_elem", "float_greater_elem", "float_greater_equal_elem",
                 "float_lower_elem", "float_lower_equal_elem")
_TO_FLOAT = ("int_into_float", "bool_into_float")

_NONE2 = (None, None)
_AT = AutodiffTensor


def _shape_fn(inner: type) -> Callable:
    shape = inner.float_shape

    def shape_of(p):
        s = shape(p)
        return s if type(s) is tuple else tuple(s)
    return shape_of


# -- method factories: one per forward kind of the op table ----------------------

def _unary(inner: type, fn: Callable, spec: OpSpec) -> Callable:
    label, rule, state = spec.label, spec.rule, spec.state
    save_x, save_out = spec.save[0], spec.save_out
    shape_of = _shape_fn(inner)

    def op(x, *args):
        p = x.primitive
        out = fn(p, *args)
        node = x.node
        if node is None:
            return _AT(out, None)
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
            return _AT(out, None)
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
            return _AT(out, None)
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
            return _AT(out, None)
        return track(label, parents, out, shape_of(out), rule, (), state(inner, out, prims, dim))
    return op


_FACTORIES = {"unary": _unary, "binary": _binary, "general": _general, "cat": _cat,
              "module": module_forward}


def _create(fn: Callable) -> Callable:
    def op(*args, **kwargs):
        return _AT(fn(*args, **kwargs), None)
    return op


def _read(fn: Callable) -> Callable:
    def op(x, *args):
        return fn(x.primitive, *args)
    return op


def _compare(fn: Callable) -> Callable:
    def op(x, y):
        return fn(x.primitive, y.primitive)
    return op


def _no_rule(name: str) -> Callable:
    def op(*args, **kwargs):
        raise NotImplementedError(f"Autodiff: {name} has no backward rule yet (burnbook/autodiff/ops)")
    return op


def _build(inner: type) -> type:
    ns: dict[str, Any] = {
        "InnerBackend": inner,
        "Device": getattr(inner, "Device", None),
        "is_autodiff": True,
        "__doc__": f"`{inner.__name__}` with automatic differentiation (Burn's `Autodiff<{inner.__name__}>`).",
        "__module__": __name__,
    }
    # An op the inner backend lacks stays undefined, so `missing_ops()` lists it.
    for name in FLOAT_OPS + MODULE_OPS:  # module ops: conv, pooling (ops/module.py)
        fn = getattr(inner, name, None)
        if not callable(fn):
            continue
        if name in TABLE:
            spec = TABLE[name]
            ns[name] = staticmethod(_FACTORIES[spec.kind](inner, fn, spec))
        elif name in _CREATE:
            ns[name] = staticmethod(_create(fn))
        elif name in _READ or name in _COMPARE_ELEM:
            ns[name] = staticmethod(_read(fn))
        elif name in _COMPARE:
            ns[name] = staticmethod(_compare(fn))
        else:  # a new op in base.py that the autodiff table does not know yet
            ns[name] = staticmethod(_no_rule(name))
    for name in INT_OPS + BOOL_OPS:
        fn = getattr(inner, name, None)
        if not callable(fn):
            continue
        if name in _TO_FLOAT:
            ns[name] = staticmethod(_create(fn))
        else:
            ns[name] = staticmethod(fn)
    return type(f"Autodiff[{inner.__name__}]", (Autodiff,), ns)


class _AutodiffMeta(type):
    def __repr__(cls) -> str:
        inner = cls.__dict__.get("InnerBackend")
        return "Autodiff" if inner is None else f"Autodiff[{inner.__name__}]"


class Autodiff(Backend, metaclass=_AutodiffMeta):
    """The decorator: `Autodiff[B]` is B with a dynamic graph (Burn's
    `Autodiff<B>`); `Autodiff[B].InnerBackend is B`. Classes are cached, so
    `Autodiff[B] is Autodiff[B]`."""

    _cache: dict = {}
    is_autodiff = True
    InnerBackend = None  # set on each Autodiff[B]

    def __class_getitem__(cls, inner: type) -> type:
        if cls is not Autodiff:
            raise TypeError(f"{cls!r} is already parametrised")
        built = Autodiff._cache.get(inner)
        if built is not None:
            return built
        if not (isinstance(inner, type) and issubclass(inner, Backend)):
            raise TypeError(f"Autodiff[...] takes a backend class, got {inner!r}")
        if getattr(inner, "is_autodiff", False):
            raise TypeError(
                f"Autodiff[{inner!r}]: {inner!r} is already differentiable. For "
                "gradients of gradients use backward(create_graph=True)."
            )
        built = Autodiff._cache[inner] = _build(inner)
        return built

    # -- backend identity ----------------------------------------------------
    @classmethod
    def name(cls) -> str:
        return f"autodiff<{cls.InnerBackend.name()}>"

    @classmethod
    def default_device(cls) -> Any:
        return cls.InnerBackend.default_device()

    @classmethod
    def seed(cls, seed: int) -> None:
        cls.InnerBackend.seed(seed)

    @classmethod
    def sync(cls, device: Any = None) -> None:
        cls.InnerBackend.sync(device)

    # -- AUTODIFF_OPS (Burn's AutodiffBackend) -----------------------------------
    @classmethod
    def float_require_grad(cls, p: AutodiffTensor) -> AutodiffTensor:
        """Track `p` as a leaf whose gradient `backward()` returns. On a tensor
        that is already tracked (an op's output) it asks `backward()` to
        return that node's gradient too (PyTorch's `retain_grad`)."""
        n = p.node
        if n is None:
            return _AT(p.primitive, leaf(_shape_fn(cls.InnerBackend)(p.primitive), p.primitive))
        n.requires_grad = True
        return p

    @classmethod
    def float_set_require_grad(cls, p: AutodiffTensor, flag: bool) -> AutodiffTensor:
        """`require_grad()` when `flag`, else an untracked tensor (as Burn)."""
        return cls.float_require_grad(p) if flag else cls.float_detach(p)

    @staticmethod
    def float_is_require_grad(p: AutodiffTensor) -> bool:
        """Whether `p` is a leaf that requires grad (Burn: `Requirement::Grad`);
        False for ops' outputs, which are tracked but not returned."""
        return p.node is not None and p.node.requires_grad

    @staticmethod
    def float_detach(p: AutodiffTensor) -> AutodiffTensor:
        return p if p.node is None else _AT(p.primitive, None)

    @classmethod
    def float_backward(cls, p: AutodiffTensor, create_graph: bool = False,
                       retain_graph: bool | None = None, retain_grads: bool = False,
                       grad: Any = None) -> Gradients:
        """Gradients of `p` (seeded with ones of its shape, or with `grad`)
        for every tracked leaf that requires grad.

        - `create_graph`: record the backward pass so that the gradients
          (then Autodiff primitives) can be differentiated again.
        - `retain_graph`: None frees every node nothing can reach again (the
          root always); False frees every visited node; True frees nothing.
        - `retain_grads`: also keep every intermediate node's gradient (for
          drawing the graph).
        """
        return engine.backward(cls, p, create_graph, retain_graph, retain_grads, grad)

    @staticmethod
    def float_grad(p: AutodiffTensor, grads: Gradients) -> Any:
        """p's gradient: an inner primitive (an Autodiff primitive when
        `grads.create_graph`), or None when p is untracked or has none."""
        n = p.node
        return None if n is None else grads.get(n.id)

    @staticmethod
    def float_grad_remove(p: AutodiffTensor, grads: Gradients) -> Any:
        n = p.node
        return None if n is None else grads.remove(n.id)

    @staticmethod
    def float_grad_replace(p: AutodiffTensor, grads: Gradients, grad: Any) -> None:
        n = p.node
        if n is not None:
            grads.replace(n.id, grad)

    @staticmethod
    def float_inner(p: AutodiffTensor) -> Any:
        return p.primitive

    @staticmethod
    def float_from_inner(p: Any) -> AutodiffTensor:
        return _AT(p, None)


assert all(hasattr(Autodiff, op) for op in AUTODIFF_OPS)
