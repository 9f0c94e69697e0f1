"""Checking, loading and dumping field values: `_coerce` checks a value
against its annotation and converts it (with the JSON spellings when
loading), `_from_mapping` builds a config from loaded data, `_dump` writes
a value back as JSON-ready data."""

from __future__ import annotations

import collections.abc as cabc
import enum
import math
import re
import sys
import types
import typing
from typing import Any, Literal, Union

import numpy as np

from .errors import _MAX_DEPTH, ConfigError, _describe, _Expected, _join, _Mismatch, _short, _too_deep, _type_name
from .fields import _DEFAULTS, _FIELDS, _types, is_config


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
