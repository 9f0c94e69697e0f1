"""`Module`: Burn's `#[derive(Module)]` as a Python base class.

A subclass declares its fields by annotation and gets a keyword constructor
(positional too, in declaration order). Fields hold sub-modules, `Param`s,
lists or tuples of modules, and constants (plain tensors, numbers, activation
objects), which are carried along but neither trained nor recorded. Modules
are values: `map`, `to_device`, `no_grad`, `valid` and optimizer steps return
new modules and leave the original as it was.
"""

from __future__ import annotations

import copy
from typing import Any, Callable, Iterator

from ..tensor.core import Writes
from .param import Param, ParamId, RunningState
from .record import Recordable


class DuplicateParamIdError(ValueError):
    """Two different parameters of one module carry the same `ParamId`, so
    gradients and optimizer state, which are keyed by id, would mix them up."""


class Module(Recordable):
    """Base class of every model and layer; see the "Module" chapter. Its
    record methods (`into_record`, `load_record`, `save_file`, `load_file`)
    come from `Recordable`, in `module/record.py`."""

    _fields: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        # PyTorch's habit: `self.l1 = Linear(...)` inside `__init__` registers
        # the layer. Here it becomes a field (after the annotated ones), so
        # records, visitors, optimizers and `valid()` all see it.
        holds = _holds_state(value)
        structural = holds and isinstance(value, (Module, Param, list, tuple))
        if name.startswith("_"):
            if not structural:
                object.__setattr__(self, name, value)  # a private cache or setting, never a field
                return
            raise TypeError(
                f"{type(self).__name__}.{name}: names starting with '_' are not fields, so the parameters "
                f"of this {type(value).__name__} would be neither trained nor saved; drop the underscore "
                f"(self.{name.lstrip('_') or 'layer'} = ...)")
        if isinstance(value, dict) and any(_holds_state(v) for v in value.values()):
            raise TypeError(
                f"{type(self).__name__}.{name}: a dict of modules or parameters is not a module field; "
                f"use a list (self.{name} = [...]) or one field per entry")
        Writes.count += 1
        fields = self._fields
        if holds and name not in fields:
            object.__setattr__(self, "_fields", fields + (name,))
        object.__setattr__(self, name, value)
        if structural:
            _fresh_duplicate_ids(self)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields: list[str] = []
        for klass in reversed(cls.__mro__):
            for name in getattr(klass, "__annotations__", {}):
                if not name.startswith("_") and name not in fields and klass is not Module:
                    fields.append(name)
        cls._fields = tuple(fields)
        if "__init__" not in cls.__dict__:
            cls.__init__ = _field_init  # type: ignore[method-assign]

    # -- structure ------------------------------------------------------------------
    def children(self) -> Iterator[tuple[str, Any]]:
        """(name, value) of every declared field, in declaration order."""
        for name in self._fields:
            yield name, getattr(self, name, None)

    def named_params(self, prefix: str = "") -> Iterator[tuple[str, Param]]:
        """(path, Param) of every parameter, depth first: `("conv1.weight", p)`."""
        for name, value in self.children():
            path = f"{prefix}{name}"
            yield from _params_in(value, path)

    def params(self) -> list[Param]:
        return [p for _, p in self.named_params()]

    def num_params(self) -> int:
        """The number of scalar values in every parameter; a tied parameter
        (one `Param` at several paths) counts once, as in PyTorch."""
        distinct = {id(p): p for p in self.params() if not isinstance(p, RunningState)}
        return sum(p.val().num_elements() for p in distinct.values())

    def devices(self) -> list:
        out: list = []
        for p in self.params():
            d = p.val().device()
            if d not in out:
                out.append(d)
        return out

    # -- visiting and mapping ----------------------------------------------------------
    def visit(self, visitor: Any) -> None:
        """Call `visitor.visit_float(id, tensor)` (or `visit_int`/`visit_bool`)
        for every parameter (Burn's `ModuleVisitor`)."""
        for _, p in self.named_params():
            getattr(visitor, "visit_" + p.val()._K.prefix)(p.id, p.val())

    def map(self, mapper: Any) -> "Module":
        """A new module whose parameters are `mapper.map_float(id, tensor)`
        (or `map_int`/`map_bool`), ids kept (Burn's `ModuleMapper`)."""
        return self.map_params(lambda path, p: p.with_value(getattr(mapper, "map_" + p.val()._K.prefix)(p.id, p.val())))

    def map_params(self, fn: Callable[[str, Param], Param]) -> "Module":
        """A new module with every `Param` replaced by `fn(path, param)`."""
        return _map_value(self, "", fn)

    # -- devices and autodiff -------------------------------------------------------
    def to_device(self, device: Any) -> "Module":
        return self.map_params(lambda _, p: p.with_value(p.val().to_device(device)))

    def fork(self, device: Any) -> "Module":
        """Move to `device` as new leaves (PyTorch's `.to(device).detach()`),
        keeping each parameter's gradient tracking flag."""
        return self.to_device(device)

    def no_grad(self) -> "Module":
        """The same module with no parameter tracked by autodiff."""
        return self.map_params(lambda _, p: p.with_value(p.val(), require_grad=False))

    def valid(self) -> "Module":
        """The module on the inner backend, outside autodiff (Burn's `valid()`),
        for validation and inference; layers such as Dropout switch to eval."""
        def inner(_: str, p: Param) -> Param:
            t = p.val()
            return p.with_value(t.inner() if t._B.is_autodiff else t, require_grad=False)

        return _map_value(self, "", inner, constants=_inner_constant)

    def clone(self) -> "Module":
        """A copy holding the very same parameters (Burn's `clone`: same ids,
        same autodiff nodes). Used next to the original in one model, the
        two are tied: the gradient is the sum over both uses and one
        optimizer step updates both. For an independent layer, build
        another one from its config."""
        return self.map_params(lambda _, p: p)

    # -- display ---------------------------------------------------------------------
    def extra_repr(self) -> dict:
        """Settings shown in the printed form (override in layers)."""
        return {}

    # A class may route its calls through a recording of its forward pass:
    # the ONNX importer's generated models set `_replay = replay_call`
    # (`module/replay.py`).
    _replay: Callable[[Any, tuple, dict], Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """`model(x)` is `model.forward(x)`, as in PyTorch."""
        replay = type(self)._replay
        if replay is not None:
            return replay(self, args, kwargs)
        return self.forward(*args, **kwargs)

    def __repr__(self) -> str:
        return _module_repr(self, 0)


def _field_init(self: Module, *args: Any, **kwargs: Any) -> None:
    cls = type(self)
    if len(args) > len(cls._fields):
        raise TypeError(f"{cls.__name__}() takes {len(cls._fields)} fields, got {len(args)} positional values")
    values = dict(zip(cls._fields, args))
    for key, value in kwargs.items():
        if key not in cls._fields:
            raise TypeError(f"{cls.__name__}() has no field {key!r}; its fields are {list(cls._fields)}")
        if key in values:
            raise TypeError(f"{cls.__name__}() got field {key!r} twice")
        values[key] = value
    missing = [f for f in cls._fields if f not in values and not hasattr(cls, f)]
    if missing:
        raise TypeError(f"{cls.__name__}() is missing field(s) {missing}")
    for name in cls._fields:
        if name in values:
            object.__setattr__(self, name, values[name])
        else:
            object.__setattr__(self, name, copy.copy(getattr(cls, name)))
    _fresh_duplicate_ids(self)


def _holds_state(value: Any) -> bool:
    """Whether `value` is something a module field carries for a reason:
    a sub-module, a `Param`, a tensor, or a list/tuple holding modules or
    `Param`s (at any depth)."""
    from burnbook.tensor.core import TensorBase

    if isinstance(value, (Module, Param, TensorBase)):
        return True
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, (Module, Param)) or (isinstance(v, (list, tuple)) and _holds_state(v))
                   for v in value)
    return False


def _distinct_params(module: Module) -> Iterator[tuple[str, Param, str | None]]:
    """(first path, param, path of an earlier different `Param` with the same
    id or None) for every distinct `Param` of `module`: a tied parameter (one
    object at several paths) comes once."""
    seen: set[int] = set()
    owners: dict[ParamId, str] = {}
    for path, p in module.named_params():
        if id(p) in seen:
            continue
        seen.add(id(p))
        yield path, p, owners.get(p.id)
        owners.setdefault(p.id, path)


def unique_params(module: Module, where: str) -> list[tuple[str, Param]]:
    """(first path, param) of every distinct `Param` of `module` (a tied
    parameter once). `DuplicateParamIdError` naming both paths when two
    different `Param`s share an id; `where` starts the message."""
    out = []
    for path, p, clash in _distinct_params(module):
        if clash is not None:
            raise DuplicateParamIdError(
                f"{where}: parameters '{clash}' and '{path}' are two different tensors with the same "
                f"ParamId {p.id.value!r}, so their gradients and optimizer states would be mixed up. "
                "Share one Param object (module.clone() or the same layer twice) to tie them, or give one "
                "of them its own id (a layer built again from its config)")
        out.append((path, p))
    return out


def _fresh_duplicate_ids(module: Module) -> None:
    """Give a fresh `ParamId` to every `Param` whose id an earlier, different
    `Param` of `module` already holds (parts loaded from one record, a copy
    made with `no_grad()`...). Fields are replaced by new values; the parts
    the caller passed in are left as they were."""
    renamed = {id(p): type(p)(p.val(), ParamId(), p.is_require_grad())
               for _, p, clash in _distinct_params(module) if clash is not None}
    if not renamed:
        return
    fields = object.__getattribute__(module, "_fields")
    for name in fields:
        value = getattr(module, name, None)
        new = _map_value(value, name, lambda _, p: renamed.get(id(p), p))
        if new is not value:
            object.__setattr__(module, name, new)


def _params_in(value: Any, path: str) -> Iterator[tuple[str, Param]]:
    if isinstance(value, Param):
        yield path, value
    elif isinstance(value, Module):
        yield from value.named_params(path + ".")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _params_in(item, f"{path}.{i}")


def _inner_constant(value: Any) -> Any:
    from burnbook.tensor.core import TensorBase

    if isinstance(value, TensorBase) and value._B.is_autodiff:
        return value.inner()
    return value


def _map_value(value: Any, path: str, fn: Callable, constants: Callable | None = None,
               memo: dict | None = None) -> Any:
    """`value` with every `Param` replaced by `fn(path, param)`. A `Param`
    object found at several paths (a tied parameter) is mapped once, at its
    first path, and stays shared in the result."""
    if memo is None:
        memo = {}
    if isinstance(value, Param):
        key = id(value)
        if key not in memo:
            memo[key] = (value, fn(path, value))  # keep `value` alive so its id() stays unique
        return memo[key][1]
    if isinstance(value, Module):
        new = copy.copy(value)
        prefix = f"{path}." if path else ""
        for name, child in value.children():
            object.__setattr__(new, name, _map_value(child, prefix + name, fn, constants, memo))
        return new
    if isinstance(value, (list, tuple)) and _holds_state(value):
        items = [_map_value(v, f"{path}.{i}", fn, constants, memo) for i, v in enumerate(value)]
        return type(value)(items)
    return constants(value) if constants is not None else value


def _module_repr(module: Module, depth: int) -> str:
    pad = "  " * (depth + 1)
    lines = [f"{type(module).__name__} {{"]
    simple = True
    for name, value in module.children():
        if isinstance(value, Module):
            lines.append(f"{pad}{name}: {_module_repr(value, depth + 1)}")
            simple = False
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, Module) for v in value):
            inner = ", ".join(_module_repr(v, depth + 1) for v in value)
            lines.append(f"{pad}{name}: [{inner}]")
            simple = False
        elif isinstance(value, Param):
            lines.append(f"{pad}{name}: {value.val().dims()}")
    settings = ", ".join(f"{k}: {v}" for k, v in module.extra_repr().items())
    n = module.num_params()
    if simple:
        parts = [settings] if settings else []
        parts.append(f"params: {n}")
        return f"{type(module).__name__} {{{', '.join(parts)}}}"
    if settings:
        lines.append(f"{pad}{settings}")
    lines.append(f"{pad}params: {n}")
    lines.append("  " * depth + "}")
    return "\n".join(lines)
