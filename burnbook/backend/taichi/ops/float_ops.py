"""Float ops of the Taichi backend (Burn's `FloatTensorOps`): data, layout,
indexing, arithmetic, math, comparison, reductions and matmul."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from burnbook.kernels import data

from ..launcher import host_array, host_writable
from ..primitive import TaichiTensor, alloc, contiguous, full, materialize, reshaped, same_device, unit_dims_view
from ..runtime import BOOL, F32, FLOATS, I64, TaichiDevice, start
from . import launch
from .launch import BinaryOp, Reduce, TernaryOp, UnaryOp


def from_data(array: Any, device: TaichiDevice, dtype: np.dtype) -> TaichiTensor:
    """Upload a host array as a tensor of `dtype` (bools as u8 0/1)."""
    rt = start(device)
    arr = np.asarray(array)
    out = alloc(arr.shape, dtype, rt.device)
    if out.buf is not None:
        if host_writable():  # CPU arch: one NumPy copy (and cast) straight into device memory
            src = arr.astype(np.bool_, copy=False) if dtype == BOOL else arr
            np.copyto(host_array(out.buf, np.uint8 if dtype == BOOL else dtype).reshape(arr.shape), src,
                      casting="unsafe")
        else:
            flat = np.ascontiguousarray(arr, dtype=dtype).reshape(-1)
            data.upload(out.buf, flat.view(np.uint8) if dtype == BOOL else flat)
    return out


def _check_index(name: str, dim: int, p: TaichiTensor, idx: TaichiTensor) -> None:
    """gather/scatter indices: p's rank, and outside `dim` no larger than p
    (the output has the index's shape, as torch.gather's)."""
    if len(idx.shape) != len(p.shape):
        raise ValueError(f"{name}: indices of shape {list(idx.shape)} need the rank of {list(p.shape)}")
    for d, (n, m) in enumerate(zip(idx.shape, p.shape)):
        if d != dim and n > m:
            raise IndexError(f"{name}: indices of shape {list(idx.shape)} exceed {list(p.shape)} in dim {d}")


class FloatOps:
    """The `float_*` ops; `Taichi` inherits them."""

    # -- data and creation -------------------------------------------------------
    @staticmethod
    def float_from_data(array: np.ndarray, device: TaichiDevice) -> TaichiTensor:
        dtype = np.asarray(array).dtype
        return from_data(array, device, dtype if dtype in FLOATS else F32)

    @staticmethod
    def float_into_data(p: TaichiTensor) -> np.ndarray:
        """A host copy; a non-contiguous view is first made contiguous on the device."""
        host = np.empty(p.shape, dtype=np.uint8 if p.dtype == BOOL else p.dtype)
        if p.buf is not None:
            p = contiguous(p)
            data.download(host.reshape(-1), p.buf, p.offset)
        return host.view(np.bool_) if p.dtype == BOOL else host

    @staticmethod
    def float_empty(shape: tuple, device: TaichiDevice, dtype: Any = np.float32) -> TaichiTensor:
        return alloc(tuple(shape), np.dtype(dtype), start(device).device)

    @staticmethod
    def float_full(shape: tuple, value: float, device: TaichiDevice, dtype: Any = np.float32) -> TaichiTensor:
        return full(shape, value, np.dtype(dtype), start(device).device)

    @staticmethod
    def float_shape(p: TaichiTensor) -> tuple:
        return p.shape

    @staticmethod
    def float_device(p: TaichiTensor) -> TaichiDevice:
        return p.device

    @staticmethod
    def float_to_device(p: TaichiTensor, device: TaichiDevice) -> TaichiTensor:
        if device == p.device:
            return p
        start(device)  # raises: one runtime, one device per process
        return p

    @staticmethod
    def float_dtype(p: TaichiTensor) -> np.dtype:
        return p.dtype

    @staticmethod
    def float_cast(p: TaichiTensor, dtype: Any) -> TaichiTensor:
        dtype = np.dtype(dtype)
        if dtype not in FLOATS:
            raise TypeError(f"float_cast: {dtype} is not a float dtype (f16, f32, f64)")
        return p if dtype == p.dtype else materialize(p, dtype)

    # -- layout: views of the same buffer -------------------------------------------
    @staticmethod
    def float_reshape(p: TaichiTensor, shape: tuple) -> TaichiTensor:
        shape = tuple(shape)
        n = math.prod(p.shape)
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            shape = tuple(n // known if s == -1 and known else s for s in shape)
        if math.prod(shape) != n or any(s < 0 for s in shape):
            raise ValueError(f"reshape: cannot reshape {list(p.shape)} ({n} elements) into {list(shape)}")
        if shape != p.shape and not p.contiguous:
            # A strided view stays a view when only size-1 dims come or go; a
            # reshape to its own shape still makes it contiguous (callers rely on it).
            view = unit_dims_view(p, shape)
            if view is not None:
                return view
        return reshaped(p, shape)

    @staticmethod
    def float_swap_dims(p: TaichiTensor, d1: int, d2: int) -> TaichiTensor:
        axes = list(range(len(p.shape)))
        axes[d1], axes[d2] = axes[d2], axes[d1]
        return FloatOps.float_permute(p, axes)

    @staticmethod
    def float_permute(p: TaichiTensor, axes: Sequence[int]) -> TaichiTensor:
        if sorted(axes) != list(range(len(p.shape))):
            raise ValueError(f"permute: {list(axes)} is not a permutation of the dims of {list(p.shape)}")
        return TaichiTensor(p.buf, tuple(p.shape[a] for a in axes), tuple(p.strides[a] for a in axes),
                            p.offset, p.dtype, p.device)

    @staticmethod
    def float_expand(p: TaichiTensor, shape: tuple) -> TaichiTensor:
        shape = tuple(shape)
        lead = len(shape) - len(p.shape)
        if lead < 0 or any(n != m and n != 1 for n, m in zip(p.shape, shape[lead:])):
            raise ValueError(f"expand: shape {list(p.shape)} does not broadcast to {list(shape)}")
        buf = p.buf if math.prod(shape) else None
        _, strides, offset = p.view(shape)
        return TaichiTensor(buf, shape, strides, offset, p.dtype, p.device)

    @staticmethod
    def float_slice(p: TaichiTensor, ranges: Sequence[slice]) -> TaichiTensor:
        return launch.slice_view(p, ranges)

    @staticmethod
    def float_slice_assign(p: TaichiTensor, ranges: Sequence[slice], values: TaichiTensor) -> TaichiTensor:
        same_device("slice_assign", (p, values))
        out = materialize(p)
        launch.copy_into(launch.slice_view(out, ranges), values, "slice_assign")
        return out

    float_cat = staticmethod(launch.cat)

    # -- indexing ----------------------------------------------------------------
    @staticmethod
    def float_gather(dim: int, p: TaichiTensor, indices: TaichiTensor) -> TaichiTensor:
        """take_along_axis: out[i] = p[i with dim -> indices[i]], other dims broadcasting."""
        same_device("gather", (p, indices))
        _check_index("gather", dim, p, indices)
        return launch.gather("gather", dim, p, indices.view(), indices.shape)

    @staticmethod
    def float_scatter(dim: int, p: TaichiTensor, indices: TaichiTensor, values: TaichiTensor) -> TaichiTensor:
        """A copy of p with values added at indices along dim (np.add.at)."""
        same_device("scatter", (p, indices))
        _check_index("scatter", dim, p, indices)
        return launch.scatter("scatter", dim, p, indices.view(), values, indices.shape)

    @staticmethod
    def float_select(p: TaichiTensor, dim: int, indices: TaichiTensor) -> TaichiTensor:
        same_device("select", (p, indices))
        shape = p.shape[:dim] + (indices.shape[0],) + p.shape[dim + 1:]
        return launch.gather("select", dim, p, launch.select_view(indices, shape, dim), shape)

    @staticmethod
    def float_select_assign(p: TaichiTensor, dim: int, indices: TaichiTensor, values: TaichiTensor) -> TaichiTensor:
        same_device("select_assign", (p, indices))
        shape = p.shape[:dim] + (indices.shape[0],) + p.shape[dim + 1:]
        return launch.scatter("select_assign", dim, p, launch.select_view(indices, shape, dim), values, shape)

    @staticmethod
    def float_mask_where(p: TaichiTensor, mask: TaichiTensor, values: TaichiTensor) -> TaichiTensor:
        return launch.map3("mask_where", TernaryOp.WHERE, p, mask, values)

    @staticmethod
    def float_mask_fill(p: TaichiTensor, mask: TaichiTensor, value: Any) -> TaichiTensor:
        s = float(value) if p.dtype in FLOATS else int(value)
        return launch.map2("mask_fill", BinaryOp.FILL, (p, mask), p.dtype, s, promote=False)

    # -- arithmetic --------------------------------------------------------------
    float_add = launch.binary("float_add", BinaryOp.ADD)
    float_sub = launch.binary("float_sub", BinaryOp.SUB)
    float_mul = launch.binary("float_mul", BinaryOp.MUL)
    float_div = launch.binary("float_div", BinaryOp.DIV)
    float_powf = launch.binary("float_powf", BinaryOp.POW)
    float_add_scalar = launch.scalar_float(UnaryOp.ADD_S)
    float_sub_scalar = launch.scalar_float(UnaryOp.SUB_S)
    float_mul_scalar = launch.scalar_float(UnaryOp.MUL_S)
    float_div_scalar = launch.scalar_float(UnaryOp.DIV_S)
    float_powf_scalar = launch.scalar_float(UnaryOp.POW_S)
    float_neg = launch.unary(UnaryOp.NEG)
    float_abs = launch.unary(UnaryOp.ABS)

    @staticmethod
    def float_clamp(p: TaichiTensor, min: Any = None, max: Any = None) -> TaichiTensor:  # noqa: A002
        if min is None and max is None:
            return p
        return launch.map1(p, UnaryOp.CLAMP, None, *launch.float_bounds(min, max))

    # -- unary math ----------------------------------------------------------------
    float_exp = launch.unary(UnaryOp.EXP)
    float_log = launch.unary(UnaryOp.LOG)
    float_log1p = launch.unary(UnaryOp.LOG1P)
    float_erf = launch.unary(UnaryOp.ERF)
    float_sqrt = launch.unary(UnaryOp.SQRT)
    float_recip = launch.unary(UnaryOp.RECIP)
    float_cos = launch.unary(UnaryOp.COS)
    float_sin = launch.unary(UnaryOp.SIN)
    float_tanh = launch.unary(UnaryOp.TANH)

    # -- comparison ----------------------------------------------------------------
    float_equal = launch.binary("float_equal", BinaryOp.EQ, BOOL)
    float_greater = launch.binary("float_greater", BinaryOp.GT, BOOL)
    float_greater_equal = launch.binary("float_greater_equal", BinaryOp.GE, BOOL)
    float_lower = launch.binary("float_lower", BinaryOp.LT, BOOL)
    float_lower_equal = launch.binary("float_lower_equal", BinaryOp.LE, BOOL)
    float_equal_elem = launch.scalar_float(UnaryOp.EQ_S, BOOL)
    float_greater_elem = launch.scalar_float(UnaryOp.GT_S, BOOL)
    float_greater_equal_elem = launch.scalar_float(UnaryOp.GE_S, BOOL)
    float_lower_elem = launch.scalar_float(UnaryOp.LT_S, BOOL)
    float_lower_equal_elem = launch.scalar_float(UnaryOp.LE_S, BOOL)

    # -- reductions ----------------------------------------------------------------
    float_sum = launch.reduction_all("float_sum", Reduce.SUM)
    float_max = launch.reduction_all("float_max", Reduce.MAX)
    float_min = launch.reduction_all("float_min", Reduce.MIN)
    float_sum_dim = launch.reduction("float_sum_dim", Reduce.SUM)
    float_mean_dim = launch.reduction("float_mean_dim", Reduce.SUM, mean=True)
    float_max_dim = launch.reduction("float_max_dim", Reduce.MAX)
    float_min_dim = launch.reduction("float_min_dim", Reduce.MIN)
    float_argmax = launch.reduction("float_argmax", Reduce.ARGMAX)
    float_argmin = launch.reduction("float_argmin", Reduce.ARGMIN)

    # -- linear algebra and conversion -------------------------------------------
    float_matmul = staticmethod(launch.matmul)
    float_into_int = launch.unary(UnaryOp.COPY, I64)
