"""The Backend protocol written out: one stub per op, by kind, for editors.

`Backend` (base.py) inherits `FloatOps`, `IntOps` and `BoolOps`, so
go-to-definition on `B.float_exp` lands on a signature and a docstring here,
and "find implementations" lists every backend's `float_exp`. `Autodiff`
inherits `AutodiffOps` too. A stub (`@protocol`) counts as no implementation:
see `stub.py`.

- stub.py          the `@protocol` marker and `is_stub`
- float_ops.py     `FloatOps`: creation, layout, indexing, arithmetic, math, reductions, matmul
- int_ops.py       `IntOps`
- bool_ops.py      `BoolOps`
- autodiff_ops.py  `AutodiffOps` (Burn's `AutodiffBackend`)
"""

from .autodiff_ops import AutodiffOps
from .bool_ops import BoolOps
from .float_ops import FloatOps
from .int_ops import IntOps
from .stub import is_stub, protocol

__all__ = ["AutodiffOps", "BoolOps", "FloatOps", "IntOps", "is_stub", "protocol"]
