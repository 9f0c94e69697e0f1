"""Int ops of the Taichi backend (Burn's `IntTensorOps`): i64 on the device.
Layout and indexing ops are the float ones (`share_layout_ops`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from burnbook.kernels import data

from ..device import TaichiDevice
from ..primitive import TaichiTensor, alloc, full
from .. import runtime
from ..runtime import BOOL, F32, I64
from . import launch as L
from .float_ops import from_data
from .launch import Map1, Map2, Reduce


class IntOps:
    """The `int_*` ops; `Taichi` inherits them."""

    @staticmethod
    def int_from_data(array: np.ndarray, device: TaichiDevice) -> TaichiTensor:
        return from_data(array, device, I64)

    @staticmethod
    def int_empty(shape: tuple, device: TaichiDevice) -> TaichiTensor:
        return alloc(tuple(shape), I64, runtime.start(device).device)

    @staticmethod
    def int_full(shape: tuple, value: int, device: TaichiDevice) -> TaichiTensor:
        return full(shape, L.int_scalar("int_full", value), I64, runtime.start(device).device)

    @staticmethod
    def int_clamp(p: TaichiTensor, min: Any = None, max: Any = None) -> TaichiTensor:  # noqa: A002
        if min is None and max is None:
            return p
        info = np.iinfo(np.int64)
        lo = info.min if min is None else int(min)
        hi = info.max if max is None else int(max)
        return L.map1(p, Map1.CLAMP, None, lo, hi)

    @staticmethod
    def int_arange(start: int, end: int, step: int, device: TaichiDevice) -> TaichiTensor:
        out = alloc((len(range(start, end, step)),), I64, runtime.start(device).device)
        if out.buf is not None:
            data.arange(out.buf, start, step)
        return out

    int_add = L.binary("int_add", Map2.ADD)
    int_sub = L.binary("int_sub", Map2.SUB)
    int_mul = L.binary("int_mul", Map2.MUL)
    int_div = L.binary("int_div", Map2.DIV)
    int_add_scalar = L.scalar_int("int_add_scalar", Map1.ADD_S)
    int_sub_scalar = L.scalar_int("int_sub_scalar", Map1.SUB_S)
    int_mul_scalar = L.scalar_int("int_mul_scalar", Map1.MUL_S)
    int_div_scalar = L.scalar_int("int_div_scalar", Map1.DIV_S)
    int_neg = L.unary(Map1.NEG)
    int_abs = L.unary(Map1.ABS)
    int_equal = L.binary("int_equal", Map2.EQ, BOOL)
    int_greater = L.binary("int_greater", Map2.GT, BOOL)
    int_greater_equal = L.binary("int_greater_equal", Map2.GE, BOOL)
    int_lower = L.binary("int_lower", Map2.LT, BOOL)
    int_lower_equal = L.binary("int_lower_equal", Map2.LE, BOOL)
    int_equal_elem = L.compare_int("int_equal_elem", Map1.EQ_S)
    int_greater_elem = L.compare_int("int_greater_elem", Map1.GT_S)
    int_greater_equal_elem = L.compare_int("int_greater_equal_elem", Map1.GE_S)
    int_lower_elem = L.compare_int("int_lower_elem", Map1.LT_S)
    int_lower_equal_elem = L.compare_int("int_lower_equal_elem", Map1.LE_S)
    int_sum = L.reduction_all("int_sum", Reduce.SUM)
    int_max = L.reduction_all("int_max", Reduce.MAX)
    int_min = L.reduction_all("int_min", Reduce.MIN)
    int_sum_dim = L.reduction("int_sum_dim", Reduce.SUM)
    int_max_dim = L.reduction("int_max_dim", Reduce.MAX)
    int_min_dim = L.reduction("int_min_dim", Reduce.MIN)
    int_argmax = L.reduction("int_argmax", Reduce.ARGMAX)
    int_argmin = L.reduction("int_argmin", Reduce.ARGMIN)
    int_into_float = L.unary(Map1.COPY, F32)
