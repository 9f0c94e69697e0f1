"""The table of differentiable ops: one small backward per op, by family.

`TABLE` maps each differentiable `float_*` op of the protocol, and each module
op (`module.py`: conv, pooling, embedding; `layers.py`: layer norm, GELU;
`attention.py`), to its `OpSpec`
(forward shape, what to save, the backward rule); `table.py` holds it and
the decorators that fill it. The `Autodiff` class body names each op with its
rule (`float_exp = tracked(unary.exp)`) and `Autodiff[B]` builds the forward
from the op's row, so a new op is one decorated rule in a family file and one
line in autodiff/backend.py.
"""

from . import arithmetic, attention, index, layers, layout, linalg, module, reduce, unary  # noqa: F401  (they fill TABLE)
from .table import TABLE, OpSpec, unbroadcast, zeros

__all__ = ["TABLE", "OpSpec", "unbroadcast", "zeros"]
