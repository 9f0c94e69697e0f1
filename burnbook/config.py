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

Every config is meant to be saved as standard JSON, so values JSON cannot
hold are refused up front with a `ConfigError` naming the field: NaN and
±infinity in `float` fields (on construction, assignment and loading alike;
JSON has no spelling for them, and a NaN learning rate would turn every
weight to NaN without a word), integers longer than the interpreter's
digit limit (`sys.get_int_max_str_digits()`), and data nested deeper than
100 levels (far beyond any real config, and deep enough to exhaust
Python's stack).

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
import math
import os
import re
import reprlib
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


_MAX_DEPTH = 100  # nesting levels of loaded data, and of nested configs on saving


class ConfigError(ValueError):
    """A config file, JSON text or dict that does not fit its config class,
    or a value no config may hold (NaN or infinity in a float field)."""


class _Mismatch(Exception):
    """Internal: a value that does not fit a field; `path` names the field.

    `bad_value` marks a value of the right type that is still refused (NaN,
    infinity, too deep): construction reports those as `ConfigError`, not
    `TypeError`.
    """

    def __init__(self, path: str, reason: str, bad_value: bool = False) -> None:
        super().__init__(reason)
        self.path, self.reason, self.bad_value = path, reason, bad_value

    def message(self) -> str:
        return f"field '{_short(self.path)}': {self.reason}" if self.path else self.reason


class _Expected(_Mismatch):
    """Internal: a value of the wrong type; the message is only built when
    shown, since most of these are caught while trying a union's options."""

    def __init__(self, path: str, tp: Any, value: Any) -> None:
        Exception.__init__(self, path)
        self.path, self.tp, self.value, self.bad_value = path, tp, value, False

    @property
    def reason(self) -> str:  # type: ignore[override]
        return f"expected {_type_name(self.tp)}, got {_describe(self.value)}"


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
        kind = ConfigError if err.bad_value else TypeError
        raise kind(f"{cls.__name__}: {err.message()}") from None


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
        try:
            return _dump_config(self, "", 0)
        except ConfigError as err:
            raise ConfigError(f"{type(self).__name__}: {err}") from None

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


class _Unreadable:
    """Internal: a JSON number or constant that `_coerce` refuses, naming the
    field it sits in (json.loads itself cannot say where a value is)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _parse_int(text: str) -> Any:
    limit = sys.get_int_max_str_digits()
    digits = len(text.lstrip("-"))
    if limit and digits > limit:
        return _Unreadable(f"an integer of {digits} digits, more than Python's limit of {limit} "
                           "(sys.get_int_max_str_digits())")
    return int(text)


def _too_many_digits(value: int) -> bool:
    """Whether `str(value)` would exceed the interpreter's digit limit (the
    bit length rules out almost every int before the exact comparison)."""
    limit = sys.get_int_max_str_digits()
    return bool(limit) and value.bit_length() >= limit * 3.3219 and abs(value) >= 10 ** limit


def _parse_constant(text: str) -> Any:
    return _Unreadable(f"{text} is not a valid config value (JSON has no NaN or infinity)")


def _parse(cls: type, text: str | bytes, source: str):
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        _check_json_depth(text, source)
        data = json.loads(text, parse_int=_parse_int, parse_constant=_parse_constant)
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


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]')


def _check_json_depth(text: str, source: str) -> None:
    """Refuse JSON nested deeper than `_MAX_DEPTH`, naming where, before
    `json.loads` (whose C parser raises a bare RecursionError) sees it."""
    if text.count("[") + text.count("{") <= _MAX_DEPTH:
        return  # cannot be too deep: the common case costs one pass of count()
    stack: list[list] = []  # per open container: [is_object, key or index]
    expect_key = False
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            if len(stack) == _MAX_DEPTH:
                line = text.count("\n", 0, match.start()) + 1
                column = match.start() - text.rfind("\n", 0, match.start())
                raise ConfigError(
                    f"{source}: nested deeper than the limit of {_MAX_DEPTH} levels at "
                    f"'{_short(_stack_path(stack))}' (line {line}, column {column}); "
                    "configs nest far less than that")
            stack.append([token == "{", None if token == "{" else 0])
            expect_key = token == "{"
        elif token in ("]", "}"):
            if stack:
                stack.pop()
            expect_key = False
        elif token == ",":
            if stack and stack[-1][0]:
                expect_key = True
            elif stack:
                stack[-1][1] += 1
        elif expect_key and stack:  # a string in key position
            try:
                stack[-1][1] = json.loads(token)
            except ValueError:
                stack[-1][1] = token[1:-1]
            expect_key = False


def _stack_path(stack: list[list]) -> str:
    path = ""
    for is_object, key in stack:
        if is_object:
            if key is not None:
                path = _join(path, key)
        else:
            path += f"[{key}]"
    return path or "(top level)"


def _short(text: str, keep: int = 60) -> str:
    return text if len(text) <= 2 * keep + 5 else f"{text[:keep]} ... {text[-keep:]}"


def _too_deep(path: str) -> _Mismatch:
    return _Mismatch(path, f"nested deeper than the limit of {_MAX_DEPTH} levels", bad_value=True)


def _check_plain(value: Any, path: str, depth: int) -> None:
    """Refuse unreadable numbers, NaN and infinity anywhere inside loaded data
    kept as is (an `Any` field); iterative, with the depth limit."""
    todo = [(value, path, depth)]
    while todo:
        item, where, depth = todo.pop()
        if isinstance(item, _Unreadable):
            raise _Mismatch(where, item.reason, bad_value=True)
        if isinstance(item, float) and not math.isfinite(item):
            raise _Mismatch(where, f"{item} is not a valid config value (JSON has no NaN or infinity)",
                            bad_value=True)
        if isinstance(item, (list, tuple, dict)):
            if depth >= _MAX_DEPTH:
                raise _too_deep(where)
            if isinstance(item, dict):
                todo.extend((v, _join(where, k), depth + 1) for k, v in item.items())
            else:
                todo.extend((v, f"{where}[{i}]", depth + 1) for i, v in enumerate(item))


def _from_mapping(cls: type, data: typing.Mapping, path: str, depth: int = 0):
    """Build `cls` from loaded data, raising `_Mismatch` with the field path."""
    if depth >= _MAX_DEPTH:
        raise _too_deep(path)
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
    values = {k: _coerce(v, hints[k], _join(path, k), loading=True, depth=depth)
              for k, v in data.items()}
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:  # __post_init__ refused the values
        raise _Mismatch(path, f"{cls.__name__} rejected the values: {err}") from None


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 40, 40


def _describe(value: Any) -> str:
    try:
        text = _REPR.repr(value)
    except RecursionError:  # a config nested too deep to print
        text = "..."
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _type_name(tp: Any) -> str:
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return repr(tp).replace("typing.", "")


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (Union, types.UnionType)


def _coerce(value: Any, tp: Any, path: str, loading: bool, depth: int = 0) -> Any:
    """`value` checked against annotation `tp` and converted to it.

    `loading` allows the JSON spellings: dicts for configs, names for enums,
    string keys for int-keyed dicts. `depth` counts the containers and
    configs entered, against `_MAX_DEPTH`.
    """
    if isinstance(value, _Unreadable):
        raise _Mismatch(path, value.reason, bad_value=True)
    if depth >= _MAX_DEPTH:
        raise _too_deep(path)
    if tp is Any or tp is object:
        if loading:
            _check_plain(value, path, depth)
        return value
    if tp is None or tp is type(None):
        if value is None:
            return None
        raise _Mismatch(path, f"expected None, got {_describe(value)}")
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    fail = _Expected(path, tp, value)
    if _is_union(tp):
        if value is None and type(None) in args:
            return None
        refused = None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, path, loading, depth)
            except _Mismatch as err:
                if is_config(arg) and isinstance(value, cabc.Mapping) and len(args) <= 2:
                    raise err  # Optional[SomeConfig]: the inner error says more
                if err.bad_value and refused is None:
                    refused = err  # the right type, a refused value: say why
        raise refused or fail
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
            value = int(value)
            if _too_many_digits(value):
                raise _Mismatch(path, f"an integer of more than {sys.get_int_max_str_digits()} digits "
                                      "cannot be saved as JSON (sys.get_int_max_str_digits())",
                                bad_value=True)
            return value
        raise fail
    if tp is float:
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:
                raise _Mismatch(path, f"{_describe(value)} is too large for a float",
                                bad_value=True) from None
            if not math.isfinite(number):
                raise _Mismatch(path, f"{number} is not allowed: a config float must be finite "
                                      "(JSON has no NaN or infinity)", bad_value=True)
            return number
        raise fail
    if tp is str:
        if isinstance(value, str):
            return value
        raise fail
    if tp in (list, tuple, dict) or origin in (list, tuple, dict, cabc.Sequence, cabc.Mapping):
        return _coerce_container(value, tp, origin or tp, args, path, loading, fail, depth + 1)
    if isinstance(tp, type):
        if is_config(tp):
            return _coerce_config(value, tp, path, loading, fail, depth + 1)
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


_INT_KEY = re.compile(r"-?[0-9]+")


def _int_key(key: str, path: str) -> int:
    """A dict key as JSON writes an int key (its decimal string) read back."""
    if not _INT_KEY.fullmatch(key):
        raise _Mismatch(path, f"key {key!r} is not an integer (this dict's keys are int)")
    number = _parse_int(key)
    if isinstance(number, _Unreadable):
        raise _Mismatch(path, f"key {_short(key, 20)!r} is {number.reason}", bad_value=True)
    return number


def _coerce_container(value, tp, origin, args, path, loading, fail, depth):
    if origin in (dict, cabc.Mapping):
        if not isinstance(value, cabc.Mapping):
            raise fail
        key_tp, val_tp = args if len(args) == 2 else (Any, Any)
        out = {}
        for k, v in value.items():
            if loading and key_tp is int and isinstance(k, str):
                k = _int_key(k, path)  # JSON writes int keys as strings
            key = _coerce(k, key_tp, _join(path, k), loading, depth)
            out[key] = _coerce(v, val_tp, _join(path, k), loading, depth)
        return out
    if not isinstance(value, (list, tuple)):
        raise fail
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        if len(value) != len(args):
            raise _Mismatch(path, f"expected {_type_name(tp)} ({len(args)} items), got {len(value)} items")
        return tuple(_coerce(v, a, f"{path}[{i}]", loading, depth)
                     for i, (v, a) in enumerate(zip(value, args)))
    elem = args[0] if args else Any
    items = [_coerce(v, elem, f"{path}[{i}]", loading, depth) for i, v in enumerate(value)]
    return tuple(items) if origin is tuple else items


def _coerce_config(value, tp, path, loading, fail, depth):
    if isinstance(value, tp):
        return value
    if loading and isinstance(value, cabc.Mapping):
        if len(value) == 1:  # a tagged variant: {"ClassName": {...}}
            (tag, inner), = value.items()
            variant = _find_variant(tp, tag)
            if variant is not None and isinstance(inner, cabc.Mapping):
                return _from_mapping(variant, inner, path, depth)
        return _from_mapping(tp, value, path, depth)
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


def _dump_config(cfg: Any, path: str, depth: int) -> dict[str, Any]:
    hints = _types(type(cfg))
    return {n: _dump(getattr(cfg, n), hints[n], _join(path, n), depth + 1)
            for n in getattr(type(cfg), _FIELDS)}


def _dump(value: Any, tp: Any, path: str, depth: int = 0) -> Any:
    """A JSON-ready form of a field value (see `_coerce` for the way back)."""
    if depth > _MAX_DEPTH:
        raise ConfigError(f"field '{_short(path)}': nested deeper than the limit of {_MAX_DEPTH} "
                          "levels, too deep to save")
    if _is_union(tp):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        tp = options[0] if len(options) == 1 else tp
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"field '{path}': {value} cannot be saved (JSON has no NaN or infinity)")
    if isinstance(value, int) and _too_many_digits(value):
        raise ConfigError(f"field '{path}': an integer of more than {sys.get_int_max_str_digits()} "
                          "digits cannot be saved as JSON")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if is_config(value):
        data = _dump_config(value, path, depth)
        return data if type(value) is tp else {type(value).__name__: data}
    if isinstance(value, enum.Enum):
        return value.name
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if isinstance(value, (list, tuple)):
        def elem(i: int) -> Any:
            if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
                return args[i] if i < len(args) else Any
            return args[0] if args else Any
        return [_dump(v, elem(i), f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict):
        val_tp = args[1] if len(args) == 2 else Any
        return {k: _dump(v, val_tp, _join(path, k), depth + 1) for k, v in value.items()}
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return _dump(value.item(), tp, path, depth)  # a NumPy scalar
    raise TypeError(f"field '{path}': a {type(value).__name__} value cannot be saved as JSON")

