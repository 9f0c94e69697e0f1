"""The Taichi backend's ops, split by kind as Burn's backend traits are."""

from .bool_ops import BoolOps
from .float_ops import FloatOps
from .int_ops import IntOps

__all__ = ["BoolOps", "FloatOps", "IntOps"]
