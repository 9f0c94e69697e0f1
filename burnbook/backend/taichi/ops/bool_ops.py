"""Bool ops of the Taichi backend (Burn's `BoolTensorOps`): u8 0/1 on the
device, read back as `np.bool_`. Layout and indexing ops are the float ones."""

from __future__ import annotations

import numpy as np

from ..primitive import TaichiTensor, full
from ..runtime import BOOL, F32, I64, TaichiDevice, start
from . import launch
from .float_ops import from_data
from .launch import BinaryOp, UnaryOp


class BoolOps:
    """The `bool_*` ops; `Taichi` inherits them."""

    @staticmethod
    def bool_from_data(array: np.ndarray, device: TaichiDevice) -> TaichiTensor:
        return from_data(np.asarray(array, dtype=np.bool_), device, BOOL)

    @staticmethod
    def bool_empty(shape: tuple, device: TaichiDevice) -> TaichiTensor:
        """All False, as NdArray's."""
        return full(shape, 0, BOOL, start(device).device)

    @staticmethod
    def bool_dtype(p: TaichiTensor) -> np.dtype:
        return p.dtype

    bool_equal = launch.binary("bool_equal", BinaryOp.EQ, BOOL)
    bool_not = launch.unary(UnaryOp.NOT, BOOL)
    bool_and = launch.binary("bool_and", BinaryOp.AND, BOOL)
    bool_or = launch.binary("bool_or", BinaryOp.OR, BOOL)
    bool_into_int = launch.unary(UnaryOp.COPY, I64)
    bool_into_float = launch.unary(UnaryOp.COPY, F32)
