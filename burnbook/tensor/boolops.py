"""Bool ops: logical not, and, or (`bool_*` ops of the backend), and the
host-side `all` / `any`."""

from __future__ import annotations

import numpy as np

from .core import TensorBase
from .kind import Bool


class BoolOps(TensorBase):
    """Logical ops of Bool tensors (`~`, `&`, `|`)."""

    __slots__ = ()

    def bool_not(self):
        """Element-wise logical not of a Bool tensor."""
        if self._K is not Bool:
            raise TypeError(f"bool_not is a Bool operation; this tensor's kind is {self._K.name}")
        return self._like(self._B.bool_not(self._p))

    def _check_bools(self, op: str, other) -> None:
        if self._K is not Bool or not isinstance(other, TensorBase) or other._K is not Bool:
            raise TypeError(f"{op}: both operands must be Bool tensors")
        self._check_other(op, other)

    def bool_and(self, other):
        """Element-wise logical and of two Bool tensors (sizes broadcast)."""
        self._check_bools("and", other)
        try:
            return self._like(self._B.bool_and(self._p, other._p))
        except ValueError:
            self._broadcast_error("and", other)
            raise

    def bool_or(self, other):
        """Element-wise logical or of two Bool tensors (sizes broadcast)."""
        self._check_bools("or", other)
        try:
            return self._like(self._B.bool_or(self._p, other._p))
        except ValueError:
            self._broadcast_error("or", other)
            raise

    __invert__ = bool_not
    __and__ = bool_and
    __or__ = bool_or

    def all(self) -> bool:
        return bool(np.all(self.to_numpy()))

    def any(self) -> bool:
        return bool(np.any(self.to_numpy()))
