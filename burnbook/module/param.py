"""`Param` and `ParamId`: a module's trainable tensors and their stable ids."""

from __future__ import annotations

import os
from typing import Any


class ParamId:
    """A parameter's identity, kept across optimizer steps and records, so
    gradients and optimizer state can follow a parameter (Burn's `ParamId`)."""

    __slots__ = ("value",)

    def __init__(self, value: str | None = None) -> None:
        self.value = value if value is not None else os.urandom(8).hex()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParamId) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"ParamId({self.value!r})"

    def __str__(self) -> str:
        return self.value


class Param:
    """A trainable tensor with its `ParamId`.

    On an autodiff backend the tensor is tracked (`require_grad`) unless the
    module was made with `no_grad()`. `param.val()` gives the tensor to use
    in `forward`; attribute access falls through to it (`param.dims()`).
    """

    __slots__ = ("id", "_value", "_require_grad")

    def __init__(self, tensor: Any, id: ParamId | None = None, require_grad: bool = True) -> None:  # noqa: A002
        self.id = id if id is not None else ParamId()
        self._require_grad = require_grad
        # A parameter is always a fresh leaf: a tensor computed from another
        # graph (a mapper's output, a forked copy) is cut from it first.
        self._value = tensor.detach().set_require_grad(require_grad) if _is_float(tensor) else tensor

    @classmethod
    def from_tensor(cls, tensor: Any) -> "Param":
        return cls(tensor)

    def val(self) -> Any:
        """The tensor."""
        return self._value

    def is_require_grad(self) -> bool:
        return self._require_grad

    def with_value(self, tensor: Any, require_grad: bool | None = None) -> "Param":
        """The same parameter (class, id, grad setting unless given) holding
        another tensor."""
        flag = self._require_grad if require_grad is None else require_grad
        return type(self)(tensor, self.id, flag)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._value, name)

    def __repr__(self) -> str:
        return f"Param(id={self.id.value}, shape={self._value.dims()}, dtype={self._value.dtype})"


def _is_float(tensor: Any) -> bool:
    from burnbook.tensor import Float

    return getattr(tensor, "_K", None) is Float


class RunningState(Param):
    """State a module updates as it runs but never trains, such as BatchNorm's
    running mean (Burn's `RunningState`): recorded with the parameters, never
    tracked by autodiff, left out of `num_params`."""

    __slots__ = ()

    def __init__(self, tensor: Any, id: ParamId | None = None, require_grad: bool = False) -> None:  # noqa: A002
        super().__init__(tensor, id, require_grad=False)
