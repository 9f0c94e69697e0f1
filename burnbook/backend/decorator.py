"""The base of the backend decorators `Autodiff[B]` and `Fusion[B]`.

A decorator is a generic class whose body *declares* its ops by name
(`float_exp = tracked(unary.exp)` in Autodiff, `float_exp =
recorded_unary(...)` in Fusion) and knows nothing of B until it is
parametrised. `Decorator[B]` is then built once and cached: a subclass whose
every declared op is bound to B's own op (a closure made here, at
parametrisation, so a call costs what it did when each decorator wrote its
own builder). What the two decorators share lives here:

- `Decorator[B]`: the per-inner cache (`Autodiff[B] is Autodiff[B]`), the
  "already parametrised" error, the inner backend's check;
- `repr(Autodiff[NdArray]) == "Autodiff[NdArray]"` (`DecoratorMeta`);
- `name()`, `default_device`, `seed`, `sync` and the host generator `_rng`,
  delegated to the inner backend;
- `OpDeclaration.bind(name, inner)`: how a declaration becomes B's method;
  an op B lacks (absent, or only the protocol's stub) stays the protocol's
  stub, so `missing_ops()` lists it.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, ClassVar

from .base import Backend
from .protocol import is_stub


class OpDeclaration:
    """An op a decorator's class body declares; `Decorator[B]` asks it for
    the method that runs the op on B. One instance may serve several names
    (`int_add = int_sub = inner_op`): the name is passed to `bind`."""

    def bind(self, name: str, inner: type) -> Callable | None:
        """The function `Decorator[inner].<name>` runs (a static method), or
        None when `inner` has no such op."""
        raise NotImplementedError(f"{type(self).__name__}.bind")


def inner_op(inner: type, name: str) -> Callable | None:
    """`inner`'s op `name`, or None when it has none (absent, or only the
    protocol's stub): what a declaration binds to."""
    fn = getattr(inner, name, None)
    return None if not callable(fn) or is_stub(fn) else fn


class DecoratorMeta(type):
    """Prints `Autodiff` for the generic class, `Autodiff[NdArray]` for a
    parametrised one, and lends the inner backend's host generator (`_rng`,
    read and written by `rng_state`/`set_rng_state`)."""

    def __repr__(cls) -> str:
        inner = cls.__dict__.get("_inner")
        return cls.__name__ if inner is None else f"{cls._generic.__name__}[{inner.__name__}]"

    @property
    def _rng(cls) -> Any:
        """The inner backend's host generator (random ops run on it)."""
        return getattr(cls._inner, "_rng", None)

    @_rng.setter
    def _rng(cls, generator: Any) -> None:
        cls._inner._rng = generator


class Decorator(Backend, metaclass=DecoratorMeta):
    """A backend that wraps another: `Decorator[B]` is built once per B from
    the ops its generic class declares (`OpDeclaration` attributes).

    A generic decorator sets `prefix` (its `name()` is `"<prefix><B's name>"`)
    and may override `_check_inner` (refuse a B) and `_namespace` (the
    class attributes of `Decorator[B]` beside its ops)."""

    prefix: ClassVar[str] = "decorator"
    _inner: ClassVar[type | None] = None    # B, on a parametrised class
    _generic: ClassVar[type]                # Autodiff or Fusion, for the repr
    _cache: ClassVar[dict]                  # B -> Decorator[B], one per generic class

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_inner" not in cls.__dict__:     # a generic decorator, not a built Decorator[B]
            cls._cache = {}
            cls._generic = cls

    def __class_getitem__(cls, inner: type) -> type:
        if cls._inner is not None:
            raise TypeError(f"{cls!r} is already parametrised")
        built = cls._cache.get(inner)
        if built is None:
            cls._check_inner(inner)
            built = cls._cache[inner] = cls._build(inner)
        return built

    @classmethod
    def _check_inner(cls, inner: Any) -> None:
        """Raise a TypeError when this decorator cannot wrap `inner`."""
        if not (isinstance(inner, type) and issubclass(inner, Backend)):
            raise TypeError(f"{cls.__name__}[...] takes a backend class, got {inner!r}")

    @classmethod
    def _namespace(cls, inner: type) -> dict:
        """Class attributes of `cls[inner]` besides its ops."""
        return {}

    @classmethod
    def _declarations(cls) -> dict[str, OpDeclaration]:
        """The ops the generic class declares, by name, in the order written."""
        return {name: value for name, value in vars(cls).items() if isinstance(value, OpDeclaration)}

    @classmethod
    def _build(cls, inner: type) -> type:
        ns: dict[str, Any] = {"_inner": inner, "Device": getattr(inner, "Device", None),
                              "__module__": cls.__module__, **cls._namespace(inner)}
        for name, declaration in cls._declarations().items():
            fn = declaration.bind(name, inner)
            # an op the inner backend lacks stays the protocol's stub: missing_ops() lists it
            ns[name] = inspect.getattr_static(Backend, name) if fn is None else staticmethod(fn)
        return type(f"{cls.__name__}[{inner.__name__}]", (cls,), ns)

    # -- identity, delegated to the inner backend --------------------------------------------
    @classmethod
    def name(cls) -> str:
        return f"{cls.prefix}<{cls._inner.name()}>"

    @classmethod
    def default_device(cls) -> Any:
        return cls._inner.default_device()

    @classmethod
    def seed(cls, seed: int) -> None:
        cls._inner.seed(seed)

    @classmethod
    def sync(cls, device: Any = None) -> None:
        cls._inner.sync(device)
