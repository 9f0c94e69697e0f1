"""What a config refuses, and how it says so: `ConfigError` (public), the
internal `_Mismatch`/`_Expected` that carry the field path while a value is
checked, and the helpers that write paths and values into messages."""

from __future__ import annotations

import reprlib
import typing
from typing import Any


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


def _short(text: str, keep: int = 60) -> str:
    return text if len(text) <= 2 * keep + 5 else f"{text[:keep]} ... {text[-keep:]}"


def _too_deep(path: str) -> _Mismatch:
    return _Mismatch(path, f"nested deeper than the limit of {_MAX_DEPTH} levels", bad_value=True)


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
