"""Int ops of the Taichi backend (Burn's `IntTensorOps`): i64 on the device.
Layout and indexing ops are the float ones (`share_layout_ops`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from burnbook.kernels import data

from ..primitive import TaichiTensor, alloc, full
from .. import runtime
from ..runtime import BOOL, F32, I64, TaichiDevice
from . import launch
from .float_ops import from_data
from .launch import BinaryOp, Reduce, UnaryOp


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
        return full(shape, launch.int_scalar("int_full", value), I64, runtime.start(device).device)

    @staticmethod
    def int_clamp(p: TaichiTensor, min: Any = None, max: Any = None) -> TaichiTensor:  # noqa: A002
        if min is None and max is None:
            return p
        info = np.iinfo(np.int64)
        lo = info.min if min is None else int(min)
        hi = info.max if max is None else int(max)
        return launch.map1(p, UnaryOp.CLAMP, None, lo, hi)

    @staticmethod
    def int_arange(start: int, end: int, step: int, device: TaichiDevice) -> TaichiTensor:
        out = alloc((len(range(start, end, step)),), I64, runtime.start(device).device)
        if out.buf is not None:
            data.arange(out.buf, start, step)
        return out

    int_add = launch.binary("int_add", BinaryOp.ADD)
    int_sub = launch.binary("int_sub", BinaryOp.SUB)
    int_mul = launch.binary("int_mul", BinaryOp.MUL)
    int_div = launch.binary("int_div", BinaryOp.DIV)
    int_add_scalar = launch.scalar_int("int_add_scalar", UnaryOp.ADD_S)
    int_sub_scalar = launch.scalar_int("int_sub_scalar", UnaryOp.SUB_S)
    int_mul_scalar = launch.scalar_int("int_mul_scalar", UnaryOp.MUL_S)
    int_div_scalar = launch.scalar_int("int_div_scalar", UnaryOp.DIV_S)
    int_neg = launch.unary(UnaryOp.NEG)
    int_abs = launch.unary(UnaryOp.ABS)
    int_equal = launch.binary("int_equal", BinaryOp.EQ, BOOL)
    int_greater = launch.binary("int_greater", BinaryOp.GT, BOOL)
    int_greater_equal = launch.binary("int_greater_equal", BinaryOp.GE, BOOL)
    int_lower = launch.binary("int_lower", BinaryOp.LT, BOOL)
    int_lower_equal = launch.binary("int_lower_equal", BinaryOp.LE, BOOL)
    int_equal_elem = launch.compare_int("int_equal_elem", UnaryOp.EQ_S)
    int_greater_elem = launch.compare_int("int_greater_elem", UnaryOp.GT_S)
    int_greater_equal_elem = launch.compare_int("int_greater_equal_elem", UnaryOp.GE_S)
    int_lower_elem = launch.compare_int("int_lower_elem", UnaryOp.LT_S)
    int_lower_equal_elem = launch.compare_int("int_lower_equal_elem", UnaryOp.LE_S)
    int_sum = launch.reduction_all("int_sum", Reduce.SUM)
    int_max = launch.reduction_all("int_max", Reduce.MAX)
    int_min = launch.reduction_all("int_min", Reduce.MIN)
    int_sum_dim = launch.reduction("int_sum_dim", Reduce.SUM)
    int_max_dim = launch.reduction("int_max_dim", Reduce.MAX)
    int_min_dim = launch.reduction("int_min_dim", Reduce.MIN)
    int_argmax = launch.reduction("int_argmax", Reduce.ARGMAX)
    int_argmin = launch.reduction("int_argmin", Reduce.ARGMIN)
    int_into_float = launch.unary(UnaryOp.COPY, F32)
