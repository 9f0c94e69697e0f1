"""Bool ops of the Taichi backend (Burn's `BoolTensorOps`): u8 0/1 on the
device, read back as `np.bool_`. Layout and indexing ops are the float ones."""

from __future__ import annotations

import numpy as np

from ..device import TaichiDevice
from ..primitive import TaichiTensor, full
from ..runtime import BOOL, F32, I64, start
from . import launch as L
from .float_ops import from_data
from .launch import Map1, Map2


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

    bool_equal = L.binary("bool_equal", Map2.EQ, BOOL)
    bool_not = L.unary(Map1.NOT, BOOL)
    bool_and = L.binary("bool_and", Map2.AND, BOOL)
    bool_or = L.binary("bool_or", Map2.OR, BOOL)
    bool_into_int = L.unary(Map1.COPY, I64)
    bool_into_float = L.unary(Map1.COPY, F32)
