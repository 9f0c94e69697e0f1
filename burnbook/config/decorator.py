"""The `@config` decorator and its base-class spelling `Config`: what a
config class gets (constructor, `with_<field>`, checks on assignment,
dict/JSON/file round trips, equality and repr)."""

from __future__ import annotations

import abc
import copy
import inspect
import json
import os
import sys
import typing
from pathlib import Path
from typing import Any

from .._atomic import atomic_write
from .errors import ConfigError, _Mismatch
from .fields import _DEFAULTS, _FIELDS, _LOCALNS, _NO_DEFAULT, _types
from .json_text import _parse
from .values import _coerce, _dump_config, _from_mapping


def config(cls: type | None = None, /) -> Any:
    """Class decorator turning annotated fields into a config class (see module doc)."""
    if cls is None:  # also allow @config()
        return config
    return _build(cls, _caller_namespace(sys._getframe(1)))


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


def _check(cls: type, name: str, value: Any, tp: Any) -> Any:
    try:
        return _coerce(value, tp, name, loading=False)
    except _Mismatch as err:
        kind = ConfigError if err.bad_value else TypeError
        raise kind(f"{cls.__name__}: {err.message()}") from None


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
