"""The `@protocol` marker: an op the Backend protocol declares but does not implement.

A stub is written out, a signature and a one-line docstring (`def
float_exp(cls, p)`, "e**x element-wise"), so that an editor's
go-to-definition on `B.float_exp` lands on the protocol's signature and
docstring, and "find implementations" lists the backends. At run time
a stub counts as *absent*: `Backend.missing_ops()` lists it,
`share_layout_ops` and the Autodiff and Fusion builders skip it, and
calling it raises a NotImplementedError naming the backend class and the op.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

_MARK = "_protocol_stub"


def protocol(fn: Callable) -> classmethod:
    """Mark `fn` (a stub whose body is its docstring) as a protocol op: a
    class method that raises NotImplementedError and that `is_stub` knows."""
    op = fn.__name__

    @functools.wraps(fn)
    def stub(cls: type, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{cls.__name__} does not implement {op} (a Backend protocol op: "
            f"define {op} on the backend class; burnbook/backend/protocol lists its signature)")
    setattr(stub, _MARK, True)
    return classmethod(stub)


def is_stub(obj: Any) -> bool:
    """Whether `obj` (a function, a bound method, a classmethod or
    staticmethod object) is a protocol stub, i.e. no implementation."""
    return getattr(getattr(obj, "__func__", obj), _MARK, False) is True
