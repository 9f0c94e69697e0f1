"""The operator table: for each supported ONNX operator, an emitter (the
Python line(s) a node becomes) and a check (what of its attributes and
inputs the importer can translate; None when it takes everything).

The families in `ops/` register into it with `@op`; this module imports
none of them. Importing `ops` (as `walk` does) fills it; `walk` reads it.
"""

from __future__ import annotations

from typing import Any, Callable

from .graph import Graph
from .lowering import Lowering


Emitter = Callable[[Lowering, Any, dict], None]
Checker = Callable[[Graph, Any, dict], "list[str]"]

TABLE: dict[str, tuple[Emitter, Checker | None]] = {}
"""ONNX operator name -> (emitter, check)."""


def op(*names: str, check: Checker | None = None) -> Callable[[Emitter], Emitter]:
    """Register the decorated emitter (and `check`) for each of `names`."""
    def register(fn: Emitter) -> Emitter:
        for name in names:
            TABLE[name] = (fn, check)
        return fn

    return register
