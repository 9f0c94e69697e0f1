"""Tracing NdArray's calls: `with tracing(on_call):` reports each op the
backend runs on this thread while the block lasts.

NdArray owns this hook because it swaps NdArray's own class attributes: for
the block, each op is replaced by a wrapper that runs it and then calls
`on_call(name, op, args, kwargs, result)`, where `op` is the original (call
it again as `op(*args, **kwargs)`); the originals come back when the block
ends, however it ends. Tensors look each op up on the backend class at every
call, so nothing outside NdArray changes. Reported are the calls made on
the thread that opened the block and not from inside another op (NdArray's
ops call each other: the outer call stands for the inner ones); on other
threads the wrappers are plain calls. One trace runs at a time in a
process: a second `tracing` waits for the first to end.

Replay (`burnbook/module/replay.py`) records a forward pass this way.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

from .backend import NdArray

__all__ = ["OnCall", "op_names", "tracing"]

OnCall = Callable[[str, Callable[..., Any], tuple, dict, Any], None]
"""`on_call(name, op, args, kwargs, result)`, called after each traced op."""

# Callable class attributes that are not ops on primitives.
_NOT_OPS = frozenset({"default_device", "name", "missing_ops"})

_lock = threading.Lock()   # one trace at a time: the class attributes are global


def op_names() -> list[str]:
    """The names of NdArray's ops: its public callables, less classes
    (`Device`, `InnerBackend`) and the few that describe the backend."""
    return [n for n in dir(NdArray) if not n.startswith("_") and n not in _NOT_OPS
            and callable(getattr(NdArray, n)) and not isinstance(getattr(NdArray, n), type)]


class _Trace:
    """One `tracing` block: the thread whose calls are reported, and how
    deep inside an op that thread is."""

    __slots__ = ("thread", "depth", "active", "on_call")

    def __init__(self, on_call: OnCall) -> None:
        self.thread = threading.get_ident()
        self.depth = 0
        self.active = True      # False once the block ended (a wrapper kept somewhere is then a plain call)
        self.on_call = on_call


def _traced(name: str, op: Callable[..., Any], trace: _Trace) -> staticmethod:
    """The class attribute that stands for `op` during a trace."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if trace.depth or not trace.active or trace.thread != threading.get_ident():
            return op(*args, **kwargs)
        trace.depth += 1
        try:
            result = op(*args, **kwargs)
        finally:
            trace.depth -= 1
        trace.on_call(name, op, args, kwargs, result)
        return result

    call.__name__ = call.__qualname__ = name
    wrapper = staticmethod(call)
    wrapper._traced_op = op   # type: ignore[attr-defined]  # marks a wrapper: tests check none is left behind
    return wrapper


@contextlib.contextmanager
def tracing(on_call: OnCall) -> Iterator[None]:
    """Report each NdArray op this thread runs in the block (see the module doc)."""
    with _lock:
        trace = _Trace(on_call)
        saved = {name: NdArray.__dict__.get(name) for name in op_names()}   # None: inherited
        for name in saved:
            setattr(NdArray, name, _traced(name, getattr(NdArray, name), trace))
        try:
            yield
        finally:
            trace.active = False
            for name, original in saved.items():
                if original is None:
                    delattr(NdArray, name)
                else:
                    setattr(NdArray, name, original)
