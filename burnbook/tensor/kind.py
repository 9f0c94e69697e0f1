"""Tensor kinds (Burn's `Float`, `Int`, `Bool`) and their element types."""

from __future__ import annotations

from typing import NoReturn

import numpy as np

from burnbook.backend.base import FLOAT_OPS, np_dtype_name


class Kind:
    """A tensor kind: which family of backend ops (`float_*`, `int_*`,
    `bool_*`) a tensor uses and which NumPy dtype its data defaults to."""

    name: str = ""
    prefix: str = ""
    default_dtype: np.dtype

    def __init_subclass__(cls) -> None:
        cls.default_dtype = np.dtype(cls.default_dtype)

    def __new__(cls):  # kinds are markers, never instantiated
        raise TypeError(f"{cls.__name__} is a tensor kind marker; use Tensor[B, D, {cls.__name__}]")


class Float(Kind):
    """Floating-point tensors (f32 by default): the only kind autodiff tracks."""

    name = "Float"
    prefix = "float"
    default_dtype = np.float32


class Int(Kind):
    """Integer tensors (i64)."""

    name = "Int"
    prefix = "int"
    default_dtype = np.int64


class Bool(Kind):
    """Boolean tensors, as made by comparisons."""

    name = "Bool"
    prefix = "bool"
    default_dtype = np.bool_


_FLOAT_OPS = frozenset(FLOAT_OPS)


def unavailable(op: str, kind: type[Kind]) -> NoReturn:
    """Raise the TypeError for an op that the backend protocol has no
    version of for `kind` (`exp` of an Int tensor, `add` of a Bool one); an
    op that only Float tensors have says how to convert."""
    hint = " (a Float operation: convert with .float() first)" if "float_" + op in _FLOAT_OPS else ""
    raise TypeError(f"{op} is not available for {kind.name} tensors{hint}")


class DType:
    """A tensor's element type; `str(dtype)` is Burn's name (`"f32"`)."""

    __slots__ = ("np",)

    def __init__(self, np_dtype) -> None:
        self.np = np.dtype(np_dtype)

    def __str__(self) -> str:
        return np_dtype_name(self.np)

    def __repr__(self) -> str:
        return f"DType({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return self.np == other.np
        if isinstance(other, str):
            return str(self) == other
        try:
            return self.np == np.dtype(other)
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self.np)
