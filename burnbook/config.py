"""`@config`: Burn's `#[derive(Config)]` for Python classes.

A config is a small, serialisable value holding the hyper-parameters that
build something (`ModelConfig(...).init(device)`), as the Burn book's Config
section recommends::

    @config
    class ModelConfig:
        num_classes: int
        hidden_size: int
        dropout: float = 0.5

        def init(self, device) -> Model: ...

    cfg = ModelConfig(10, 512)            # required fields first, positional or keyword
    cfg = cfg.with_dropout(0.2)           # a new config; the old one is unchanged
    cfg.save("config.json")               # JSON, written atomically
    assert ModelConfig.load("config.json") == cfg

What the decorator gives a class (methods written in the class body win):

- a constructor taking the required fields first, then the defaulted ones,
  in declaration order; defaults are deep-copied per instance;
- type checks on construction, assignment and loading: `int` fields refuse
  `str` and `bool`, `float` fields accept ints (stored as floats), lists and
  tuples are converted to the annotated container, `Optional`/unions,
  `Literal`, `Enum` (saved by name) and nested config classes are understood;
  an unknown annotation accepts any value;
- `with_<field>(value)`, `to_dict()`/`from_dict(d)`, `to_json()`/
  `from_json(s)`, `save(path)`/`load(path)`, equality, a readable repr, and
  `str(cfg)` as pretty JSON (Burn's `Display` of a config);
- an optional `__post_init__(self)` hook, called at the end of every
  construction (including `with_*`, `from_dict` and `load`) for validation.

A nested config is saved as its dict. When the value's class is not exactly
the annotated one (a union of configs, or a subclass of the annotated config
class) it is saved tagged with its class name, `{"KaimingUniform": {...}}`,
the way Burn's serde writes enum variants, and found again by that name on
load. Fields whose names start with `_` and `ClassVar`s are not fields;
assigning to any other name that is not a field is an `AttributeError`, which
catches typos. Configs are mutable (as Burn's `pub` fields) and so unhashable.

`Config` is the same thing as a base class: `class ModelConfig(Config): ...`.
`isinstance(x, Config)` holds for both spellings.
"""

from __future__ import annotations

import abc
import collections.abc as cabc
import copy
import enum
import inspect
import json
import os
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

import numpy as np

from ._atomic import atomic_write

__all__ = ["config", "Config", "ConfigError", "is_config"]

_FIELDS = "__config_fields__"  # field names in declaration order
_DEFAULTS = "__config_defaults__"  # name -> default, for fields that have one
_TYPES = "__config_types__"  # name -> resolved annotation (filled lazily)
_LOCALNS = "__config_localns__"  # the defining scope, to resolve string annotations
_NO_DEFAULT = inspect.Parameter.empty


class ConfigError(ValueError):
    """A config file, JSON text or dict that does not fit its config class."""


class _Mismatch(Exception):
    """Internal: a value that does not fit a field; `path` names the field."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(reason)
        self.path, self.reason = path, reason

    def message(self) -> str:
        return f"field '{self.path}': {self.reason}" if self.path else self.reason


# ---------------------------------------------------------------------------
# building a config class


def config(cls: type | None = None, /) -> Any:
    """Class decorator turning annotated fields into a config class (see module doc)."""
    if cls is None:  # also allow @config()
        return config
    return _build(cls, _caller_namespace(sys._getframe(1)))


def is_config(obj: Any) -> bool:
    """True for a config class or a config instance."""
    klass = obj if isinstance(obj, type) else type(obj)
    return any(_FIELDS in vars(k) for k in klass.__mro__)


def _caller_namespace(frame) -> dict | None:
    """The locals of the scope defining the class (None at module level), so
    string annotations naming classes local to a function still resolve."""
    if frame is None or frame.f_locals is frame.f_globals:
        return None
    return dict(frame.f_locals)


def _build(cls: type, localns: dict | None) -> type:
    if _FIELDS in cls.__dict__:
        return cls  # already built (e.g. @config on a Config subclass)
    if "__init__" in cls.__dict__:
        raise TypeError(
            f"{cls.__name__}: a config class gets its constructor from its fields; "
            "put checks in __post_init__(self) instead of defining __init__"
        )
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        for name, ann in klass.__dict__.get("__annotations__", {}).items():
            if name.startswith("_") or _is_classvar(ann) or name in names:
                continue
            names.append(name)
    defaults = {}
    for name in names:
        for klass in cls.__mro__:
            if name in klass.__dict__:
                defaults[name] = klass.__dict__[name]
                break
    setattr(cls, _FIELDS, tuple(names))
    setattr(cls, _DEFAULTS, defaults)
    setattr(cls, _LOCALNS, localns)
    cls.__init__ = _make_init(cls, names, defaults)
    for member in _INSTALLED:
        if not _defined_below(cls, member):
            setattr(cls, member, Config.__dict__[member])
    if not _defined_below(cls, "__eq__"):
        cls.__eq__ = Config.__dict__["__eq__"]
        cls.__hash__ = None  # mutable values
    for name in names:
        if not _defined_below(cls, f"with_{name}"):
            setattr(cls, f"with_{name}", _make_with(cls, name))
    return cls


def _is_classvar(ann: Any) -> bool:
    if isinstance(ann, str):
        return ann.startswith(("ClassVar", "typing.ClassVar"))
    return ann is typing.ClassVar or typing.get_origin(ann) is typing.ClassVar


def _defined_below(cls: type, name: str) -> bool:
    """Whether `name` is defined by `cls` or a base other than object/Config."""
    return any(name in vars(k) for k in cls.__mro__ if k not in (object, Config))


def _make_init(cls: type, names: list[str], defaults: dict) -> Any:
    ordered = [n for n in names if n not in defaults] + [n for n in names if n in defaults]
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [
        inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=defaults.get(n, _NO_DEFAULT))
        for n in ordered
    ]
    signature = inspect.Signature(params)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{cls.__name__}(): {err}") from None
        hints = _types(cls)
        for name in names:
            if name in bound.arguments:
                value = bound.arguments[name]
            else:
                value = copy.deepcopy(defaults[name])
            object.__setattr__(self, name, _check(cls, name, value, hints[name]))
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()

    __init__.__signature__ = signature
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__doc__ = f"Build a {cls.__name__}: " + ", ".join(ordered)
    return __init__


def _make_with(cls: type, name: str) -> Any:
    def with_field(self, value: Any):
        return self._replace(**{name: value})

    with_field.__name__ = f"with_{name}"
    with_field.__qualname__ = f"{cls.__qualname__}.with_{name}"
    with_field.__doc__ = f"A copy of this config with `{name}` set to `value` (Burn's builder method)."
    return with_field


def _types(cls: type) -> dict[str, Any]:
    """The resolved field annotations of a config class, cached on first use."""
    cached = cls.__dict__.get(_TYPES)
    if cached is not None:
        return cached
    localns: dict = {}
    for klass in reversed(cls.__mro__):
        localns.update(klass.__dict__.get(_LOCALNS) or {})
        localns[klass.__name__] = klass
    try:
        hints = typing.get_type_hints(cls, localns=localns)
    except Exception as err:  # a NameError for an annotation naming an unknown class
        raise TypeError(f"{cls.__name__}: cannot resolve its field annotations: {err}") from None
    resolved = {name: hints.get(name, Any) for name in getattr(cls, _FIELDS)}
    setattr(cls, _TYPES, resolved)
    return resolved


def _check(cls: type, name: str, value: Any, tp: Any) -> Any:
    try:
        return _coerce(value, tp, name, loading=False)
    except _Mismatch as err:
        raise TypeError(f"{cls.__name__}: {err.message()}") from None


# ---------------------------------------------------------------------------
# the methods every config class gets


class Config(abc.ABC):
    """Base-class spelling of `@config`: `class ModelConfig(Config): ...`."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _build(cls, _caller_namespace(sys._getframe(1)))

    @classmethod
    def __subclasshook__(cls, other: type) -> Any:
        if cls is Config and any(_FIELDS in vars(k) for k in other.__mro__):
            return True
        return NotImplemented

    def __setattr__(self, name: str, value: Any) -> None:
        fields = getattr(type(self), _FIELDS)
        if name in fields:
            value = _check(type(self), name, value, _types(type(self))[name])
        elif not name.startswith("_"):
            raise AttributeError(
                f"{type(self).__name__} has no field '{name}' (its fields: {', '.join(fields)})"
            )
        object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in getattr(type(self), _FIELDS))
        return f"{type(self).__name__}({inner})"

    def __str__(self) -> str:
        return self.to_json()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in getattr(type(self), _FIELDS))

    def _replace(self, **changes: Any):
        """A new config of the same class with some fields changed (runs checks and __post_init__)."""
        values = {n: copy.deepcopy(getattr(self, n)) for n in getattr(type(self), _FIELDS) if n not in changes}
        return type(self)(**values, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain JSON-ready values (nested configs as dicts)."""
        hints = _types(type(self))
        return {n: _dump(getattr(self, n), hints[n], n) for n in getattr(type(self), _FIELDS)}

    @classmethod
    def from_dict(cls, data: typing.Mapping[str, Any]):
        """Build from a dict as `to_dict` makes; a `ConfigError` names every bad key."""
        try:
            return _from_mapping(cls, data, "")
        except _Mismatch as err:
            raise ConfigError(f"{cls.__name__}: {err.message()}") from None

    def to_json(self) -> str:
        """Pretty JSON text of `to_dict()`."""
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str | bytes):
        """Parse JSON text written by `to_json`/`save`."""
        return _parse(cls, text, "JSON text")

    def save(self, path: str | os.PathLike) -> Path:
        """Write the config as JSON to `path` (atomically: temp file, then rename)."""
        data = (self.to_json() + "\n").encode("utf-8")
        return atomic_write(path, lambda f: f.write(data))

    @classmethod
    def load(cls, path: str | os.PathLike):
        """Read a config saved by `save`; errors name the file and the bad keys."""
        try:
            text = Path(path).read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(f"config file not found: {os.fspath(path)}") from None
        return _parse(cls, text, os.fspath(path))


_INSTALLED = (
    "__setattr__", "__repr__", "__str__", "_replace", "to_dict", "from_dict",
    "to_json", "from_json", "save", "load",
)


# ---------------------------------------------------------------------------
# checking, loading and dumping values


def _parse(cls: type, text: str | bytes, source: str):
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        data = json.loads(text)
    except UnicodeDecodeError as err:
        raise ConfigError(f"{source}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{source}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object with the fields of {cls.__name__}, "
                          f"found a JSON {type(data).__name__}")
    try:
        return _from_mapping(cls, data, "")
    except _Mismatch as err:
        raise ConfigError(f"{source}: {cls.__name__}: {err.message()}") from None


def _from_mapping(cls: type, data: typing.Mapping, path: str):
    """Build `cls` from loaded data, raising `_Mismatch` with the field path."""
    fields, defaults, hints = getattr(cls, _FIELDS), getattr(cls, _DEFAULTS), _types(cls)
    where = f" in '{path}'" if path else ""
    unknown = [k for k in data if k not in fields]
    if unknown:
        raise _Mismatch("", f"unknown key(s) {', '.join(map(repr, unknown))}{where} "
                            f"({cls.__name__} has fields: {', '.join(fields)})")
    missing = [n for n in fields if n not in data and n not in defaults]
    if missing:
        raise _Mismatch("", f"missing required key(s) {', '.join(map(repr, missing))}{where} "
                            f"for {cls.__name__}")
    values = {k: _coerce(v, hints[k], _join(path, k), loading=True) for k, v in data.items()}
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:  # __post_init__ refused the values
        raise _Mismatch(path, f"{cls.__name__} rejected the values: {err}") from None


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _type_name(tp: Any) -> str:
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return repr(tp).replace("typing.", "")


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _coerce(value: Any, tp: Any, path: str, loading: bool) -> Any:
    """`value` checked against annotation `tp` and converted to it.

    `loading` allows the JSON spellings: dicts for configs, names for enums,
    string keys for int-keyed dicts.
    """
    if tp is Any or tp is object:
        return value
    if tp is None or tp is type(None):
        if value is None:
            return None
        raise _Mismatch(path, f"expected None, got {_describe(value)}")
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    fail = _Mismatch(path, f"expected {_type_name(tp)}, got {_describe(value)}")
    if _is_union(tp):
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, path, loading)
            except _Mismatch as err:
                if is_config(arg) and isinstance(value, cabc.Mapping) and len(args) <= 2:
                    raise err  # Optional[SomeConfig]: the inner error says more
        raise fail
    if origin is Literal:
        for option in args:
            if value == option and type(value) is type(option):
                return option
        raise fail
    if tp is bool:
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise fail
    if tp is int:
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return int(value)
        raise fail
    if tp is float:
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            return float(value)
        raise fail
    if tp is str:
        if isinstance(value, str):
            return value
        raise fail
    if tp in (list, tuple, dict) or origin in (list, tuple, dict, cabc.Sequence, cabc.Mapping):
        return _coerce_container(value, tp, origin or tp, args, path, loading, fail)
    if isinstance(tp, type):
        if is_config(tp):
            return _coerce_config(value, tp, path, loading, fail)
        if issubclass(tp, enum.Enum):
            if isinstance(value, tp):
                return value
            if loading and isinstance(value, str) and value in tp.__members__:
                return tp[value]
            raise fail
        if isinstance(value, tp):
            return value
        raise fail
    return value  # an annotation we do not interpret: accept as is


def _coerce_container(value, tp, origin, args, path, loading, fail):
    if origin in (dict, cabc.Mapping):
        if not isinstance(value, cabc.Mapping):
            raise fail
        key_tp, val_tp = args if len(args) == 2 else (Any, Any)
        out = {}
        for k, v in value.items():
            if loading and key_tp is int and isinstance(k, str) and k.lstrip("-").isdigit():
                k = int(k)  # JSON writes int keys as strings
            out[_coerce(k, key_tp, _join(path, k), loading)] = _coerce(v, val_tp, _join(path, k), loading)
        return out
    if not isinstance(value, (list, tuple)):
        raise fail
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        if len(value) != len(args):
            raise _Mismatch(path, f"expected {_type_name(tp)} ({len(args)} items), got {len(value)} items")
        return tuple(_coerce(v, a, f"{path}[{i}]", loading) for i, (v, a) in enumerate(zip(value, args)))
    elem = args[0] if args else Any
    items = [_coerce(v, elem, f"{path}[{i}]", loading) for i, v in enumerate(value)]
    return tuple(items) if origin is tuple else items


def _coerce_config(value, tp, path, loading, fail):
    if isinstance(value, tp):
        return value
    if loading and isinstance(value, cabc.Mapping):
        if len(value) == 1:  # a tagged variant: {"ClassName": {...}}
            (tag, inner), = value.items()
            variant = _find_variant(tp, tag)
            if variant is not None and isinstance(inner, cabc.Mapping):
                return _from_mapping(variant, inner, path)
        return _from_mapping(tp, value, path)
    raise fail


def _find_variant(base: type, name: str) -> type | None:
    """The config class named `name`: `base` itself or one of its subclasses."""
    todo = [base]
    while todo:
        klass = todo.pop()
        if klass.__name__ == name and is_config(klass):
            return klass
        todo.extend(klass.__subclasses__())
    return None


def _dump(value: Any, tp: Any, path: str) -> Any:
    """A JSON-ready form of a field value (see `_coerce` for the way back)."""
    if _is_union(tp):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        tp = options[0] if len(options) == 1 else tp
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if is_config(value):
        data = value.to_dict()
        return data if type(value) is tp else {type(value).__name__: data}
    if isinstance(value, enum.Enum):
        return value.name
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if isinstance(value, (list, tuple)):
        def elem(i: int) -> Any:
            if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
                return args[i] if i < len(args) else Any
            return args[0] if args else Any
        return [_dump(v, elem(i), f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        val_tp = args[1] if len(args) == 2 else Any
        return {k: _dump(v, val_tp, _join(path, k)) for k, v in value.items()}
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()  # a NumPy scalar
    raise TypeError(f"field '{path}': a {type(value).__name__} value cannot be saved as JSON")

