"""Reading a config's JSON text: the parse hooks that keep NaN, infinity and
over-long integers for `_coerce` to refuse with the field's path, and a
depth check that names where text nests too deep before `json.loads` sees it."""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import _MAX_DEPTH, ConfigError, _join, _Mismatch, _short
from .values import _from_mapping, _parse_int, _Unreadable


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
