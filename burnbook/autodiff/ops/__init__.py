"""The table of differentiable ops: one small backward per op, by family.

`TABLE` maps each differentiable `float_*` op of the protocol, and each module
op (`module.py`: conv, pooling, embedding), to its `OpSpec`
(forward shape, what to save, the backward rule). The Autodiff decorator
builds its methods from it; a new op is one decorated rule in a family file.
"""

from . import arithmetic, index, layout, linalg, module, reduce, unary  # noqa: F401  (they fill TABLE)
from ._spec import TABLE, OpSpec, unbroadcast, zeros

__all__ = ["TABLE", "OpSpec", "unbroadcast", "zeros"]
