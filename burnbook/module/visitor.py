"""Visitor and mapper protocols over a module's parameters (Burn's
`ModuleVisitor` and `ModuleMapper`). Implement the methods you need."""

from __future__ import annotations

from typing import Any, Protocol

from .param import ParamId


class ModuleVisitor(Protocol):
    """Sees every parameter: `module.visit(visitor)`."""

    def visit_float(self, id: ParamId, tensor: Any) -> None: ...  # noqa: A002


class ModuleMapper(Protocol):
    """Replaces every parameter: `module.map(mapper)` returns a new module."""

    def map_float(self, id: ParamId, tensor: Any) -> Any: ...  # noqa: A002
