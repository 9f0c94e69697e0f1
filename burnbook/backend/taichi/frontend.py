"""Memos for Taichi's Python front end, the step that turns a kernel's
Python source into Taichi IR the first time a process launches it.

The offline cache keeps compiled code keyed by that IR, so the front end
runs in every process, and in Taichi 1.7.4 two of its steps redo work whose
answer cannot change:

- each inlined call of a `ti.func` reads the function's source again with
  `inspect.getsourcelines`, which tokenises the file from the top down to
  the function's end (a fused kernel of 16 ops inlines `unary` or `binary`
  8 lanes x 16 times);
- each AST node it visits gets a position message (file, line, the source
  line and a row of carets under the node, wrapped to 80 columns by a
  TextWrapper) for errors raised while building that node, whether or not
  one is raised.

`install()` wraps both in memos keyed by everything they read: the source
lines by the function's code object and its file's modification time and
size (an edited file is read again, as before); the position message by the
file, the line offset, the function's name, the indent, the node's kind and
span and the source lines under it. Same inputs give the same strings, so
the IR, the compiled kernels and every error message stay as they were; only
the time changes. Measured on this 2-core machine with
`benchmarks/first_build.py` (fresh processes alternating between the two
front ends, 3 each, warm offline cache, the bench's setups with their
untimed steps off), the first two steps of Autodiff[Fusion[Taichi]], medians:
the transformer bench's small GPT 13.1 s -> 5.9 s, the guide CNN 5.5 s ->
2.9 s. Later steps, which build nothing, are unchanged.

The memos reach into Taichi's private modules, so they install only on the
version they were written against (`VERSION`); any other version runs
Taichi's front end untouched. `uninstall()` restores the originals, and
`BURNBOOK_TAICHI_FRONTEND=taichi` keeps them from being installed at all
(`benchmarks/first_build.py` times both).
"""

from __future__ import annotations

import inspect
import os
from typing import Any, Callable

import taichi
from taichi.lang import kernel_impl
from taichi.lang.ast import ast_transformer_utils

__all__ = ["ENV", "VERSION", "chosen", "install", "installed", "uninstall"]

ENV = "BURNBOOK_TAICHI_FRONTEND"
"""The environment variable choosing the front end: "memo" (the default) or "taichi"."""

VERSION = (1, 7, 4)
"""The Taichi release whose internals the memos wrap."""

_MAX_POSITIONS = 1 << 16   # position messages kept before the memo starts afresh
_HEADER_KINDS = ("For", "While", "FunctionDef", "If")  # multi-line nodes whose message stops at the body

_originals: dict[str, Callable[..., Any]] = {}
_sources: dict[tuple, tuple[tuple[str, ...], int]] = {}
_positions: dict[tuple, str] = {}


def chosen() -> bool:
    """Whether the environment asks for the memos (`ENV` unset, empty or
    "memo"); "taichi" asks for Taichi's own front end; anything else is a
    ValueError naming the variable."""
    raw = os.environ.get(ENV, "")
    value = raw.strip().lower() or "memo"
    if value not in ("memo", "taichi"):
        raise ValueError(f"{ENV}={raw!r}: expected 'memo' (burnbook's memos, the default) or 'taichi' "
                         "(Taichi's own front end)")
    return value == "memo"


def installed() -> bool:
    """Whether the memos wrap Taichi's front end in this process."""
    return bool(_originals)


def install() -> bool:
    """Wrap Taichi's source reader and position messages in memos (once per
    process; again after `uninstall`). False, touching nothing, on a Taichi
    other than `VERSION`."""
    if _originals:
        return True
    if tuple(taichi.__version__) != VERSION:
        return False
    _originals["getsourcelines"] = kernel_impl.getsourcelines
    _originals["get_pos_info"] = ast_transformer_utils.ASTTransformerContext.get_pos_info
    kernel_impl.getsourcelines = _source_lines
    ast_transformer_utils.ASTTransformerContext.get_pos_info = _position
    return True


def uninstall() -> None:
    """Put Taichi's own functions back and forget what the memos hold."""
    if not _originals:
        return
    kernel_impl.getsourcelines = _originals.pop("getsourcelines")
    ast_transformer_utils.ASTTransformerContext.get_pos_info = _originals.pop("get_pos_info")
    _sources.clear()
    _positions.clear()


def _source_lines(obj: Any) -> tuple[list[str], int]:
    """Taichi's `getsourcelines(obj)`, read once per code object and file version."""
    read = _originals["getsourcelines"]
    # inspect reads the wrapped function's source (a `ti.func` is a wrapper
    # whose own code object is the same for every one of them), so key on that.
    code = getattr(inspect.unwrap(obj), "__code__", None)
    if code is None:
        return read(obj)
    try:
        stat = os.stat(code.co_filename)
    except OSError:   # no file (a notebook cell, an exec'd string): Taichi's own lookup decides
        return read(obj)
    key = (code, stat.st_mtime_ns, stat.st_size)
    hit = _sources.get(key)
    if hit is None:
        lines, lineno = read(obj)
        hit = _sources[key] = (tuple(lines), lineno)
    return list(hit[0]), hit[1]


def _position(ctx: Any, node: Any) -> str:
    """Taichi's `ASTTransformerContext.get_pos_info(node)`, drawn once per
    distinct (file, function, indent, node span, source lines)."""
    kind = type(node).__name__
    first, last = node.lineno, node.end_lineno
    body = node.body[0].lineno if kind in _HEADER_KINDS and first != last else None
    key = (ctx.file, ctx.lineno_offset, ctx.func.func.__name__, ctx.indent, kind, first, last,
           node.col_offset, node.end_col_offset, body, tuple(ctx.src[first - 1:last]))
    hit = _positions.get(key)
    if hit is None:
        if len(_positions) >= _MAX_POSITIONS:
            _positions.clear()
        hit = _positions[key] = _originals["get_pos_info"](ctx, node)
    return hit
