"""Renaming tensor keys with regular expressions (Burn's `with_key_remap`).

Each rule is a pattern and a replacement. Every key is passed through the
rules in order; a rule whose pattern matches anywhere in the key replaces
every match (Rust's `Regex::replace_all`, Python's `re.sub`). The
replacement may be written in Python's syntax (`\\1`, `\\g<name>`) or in
Burn's (`$1`, `${1}`, `$name`, `$$` for a dollar sign), so a rule copied from
a Burn program works unchanged:

    ("conv\\.(.*)", "$1")        # "conv.conv1.weight" -> "conv1.weight"
    (r"^0\\.", "fc1.")           # nn.Sequential index 0 -> field fc1
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from burnbook.record import RecordError

__all__ = ["compile_rule", "remap_keys"]

_DOLLAR = re.compile(r"\$(?:\$|\{(\w+)\}|(\w+))")


def compile_rule(pattern: str, replacement: str) -> tuple[re.Pattern, str]:
    """A checked rule: the compiled pattern and a replacement in Python's syntax.

    Raises `ValueError` naming the pattern when it is not a valid regular
    expression, or names a group the pattern does not have.
    """
    if not isinstance(pattern, str) or not isinstance(replacement, str):
        raise TypeError("with_key_remap(pattern, replacement) takes two strings")
    try:
        regex = re.compile(pattern)
    except re.error as err:
        raise ValueError(f"key remap pattern {pattern!r} is not a valid regular expression: {err}") from None
    template = _DOLLAR.sub(_to_python, replacement)
    groups = set(regex.groupindex) | {str(i) for i in range(regex.groups + 1)}
    for named in re.findall(r"\\g<(\w+)>|\\(\d+)", template):
        group = named[0] or named[1]
        if group not in groups:
            raise ValueError(f"key remap replacement {replacement!r} refers to group {group!r}, but the pattern "
                             f"{pattern!r} has groups {sorted(groups)}")
    return regex, template


def _to_python(match: re.Match) -> str:
    if match.group(0) == "$$":
        return "$"
    return f"\\g<{match.group(1) or match.group(2)}>"


def remap_keys(keys: Iterable[str], rules: Sequence[tuple[re.Pattern, str]]) -> dict[str, str]:
    """`{original key: new key}` after applying every rule in order.

    Raises `RecordError` naming both originals when two keys end up with the
    same name, since one tensor would silently replace the other.
    """
    renamed: dict[str, str] = {}
    owner: dict[str, str] = {}
    for key in keys:
        new = key
        for regex, template in rules:
            if regex.search(new):
                new = regex.sub(template, new)
        if new in owner:
            raise RecordError(f"key remap gives two tensors the name {new!r}: {owner[new]!r} and {key!r}")
        owner[new] = key
        renamed[key] = new
    return renamed
