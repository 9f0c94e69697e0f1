"""How the ops reach their kernels: checks on shapes and dtypes, the output
allocation, then one kernel family's launch (element-wise, reduce, index, matmul)."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from burnbook.kernels import elementwise, index, layout, matmul as matmul_kernel, reduce as reduce_kernel
from burnbook.kernels.elementwise import BinaryOp, TernaryOp, UnaryOp
from burnbook.kernels.reduce import Reduce

from ...base import broadcast_shape
from .. import runtime as _rt
from ..primitive import TaichiTensor, alloc, broadcast, copy, full, materialize, same_device
from ..runtime import BOOL, F16, F32, I64
from ..settings import SETTINGS
from . import blas, host_reduce

__all__ = ["BinaryOp", "Reduce", "TernaryOp", "UnaryOp", "binary", "cat", "compare_int", "copy_into", "gather",
           "int_compare", "int_scalar", "map1", "map2", "map3", "matmul", "reduce", "reduce_all", "reduction",
           "reduction_all", "scalar_float", "scalar_int", "scatter", "select_view", "slice_view", "unary"]


def map1(p: TaichiTensor, op: UnaryOp, dtype: np.dtype | None = None, s1: Any = 0, s2: Any = 0) -> TaichiTensor:
    """op(p, s1, s2) element-wise, into a new tensor of `dtype` (p's by default)."""
    out = alloc(p.shape, dtype or p.dtype, p.device)
    if out.buf is not None:
        elementwise.run(op, p.shape, out.out(), (p.view(),), s1, s2)
    return out


def map2(name: str, op: BinaryOp, ps: Sequence[TaichiTensor], dtype: np.dtype | None = None, s1: Any = 0,
         promote: bool = True) -> TaichiTensor:
    """op(a, b) over broadcast operands; operands of differing dtypes are
    promoted as NumPy would (the tensor layer normally prevents it)."""
    device = same_device(name, ps)
    shape = broadcast(name, ps)
    if promote and ps[0].dtype != ps[1].dtype:
        common = np.result_type(ps[0].dtype, ps[1].dtype)
        ps = [p if p.dtype == common else materialize(p, common) for p in ps]
    out = alloc(shape, dtype or ps[0].dtype, device)
    if out.buf is not None:
        elementwise.run(op, shape, out.out(), [p.view(shape) for p in ps], s1)
    return out


def map3(name: str, op: TernaryOp, p: TaichiTensor, mask: TaichiTensor, values: TaichiTensor) -> TaichiTensor:
    """op(p, values, mask) over broadcast operands, in p's dtype."""
    device = same_device(name, (p, mask, values))
    shape = broadcast(name, (p, mask, values))
    if values.dtype != p.dtype:
        values = materialize(values, p.dtype)
    out = alloc(shape, p.dtype, device)
    if out.buf is not None:
        elementwise.run(op, shape, out.out(), (p.view(shape), values.view(shape), mask.view(shape)))
    return out


def int_scalar(name: str, s: Any) -> int:
    if isinstance(s, (bool, int, np.integer)):
        return int(s)
    if isinstance(s, (float, np.floating)) and float(s).is_integer():
        return int(s)
    raise TypeError(f"{name}: an Int tensor takes an integer scalar, got {s!r}")


def int_compare(name: str, p: TaichiTensor, s: Any, op: UnaryOp) -> TaichiTensor:
    """Compare an int tensor with a scalar; a non-integral float scalar compares
    exactly as NumPy does, by rounding it the way that keeps the answer."""
    if isinstance(s, (float, np.floating)) and not float(s).is_integer():
        s = float(s)
        if math.isnan(s) or op == UnaryOp.EQ_S:
            return full(p.shape, False, BOOL, p.device)
        if math.isinf(s):
            return full(p.shape, (op in (UnaryOp.GT_S, UnaryOp.GE_S)) == (s < 0), BOOL, p.device)
        s = math.floor(s) if op in (UnaryOp.GT_S, UnaryOp.LE_S) else math.ceil(s)
    return map1(p, op, BOOL, int_scalar(name, s))


def reduce(name: str, p: TaichiTensor, dim: int, op: Reduce, mean: bool = False) -> TaichiTensor:
    """Reduce `dim` to size 1; arg reductions give i64."""
    arg = op in (Reduce.ARGMAX, Reduce.ARGMIN)
    shape = p.shape[:dim] + (1,) + p.shape[dim + 1:]
    out = alloc(shape, I64 if arg else p.dtype, p.device)
    if out.buf is None:
        return out
    n = p.shape[dim]
    if n == 0:
        if op != Reduce.SUM:
            raise ValueError(f"{name}: dim {dim} of shape {list(p.shape)} has size 0, and max/min/arg* "
                             "of nothing is undefined")
        return full(shape, math.nan if mean else 0, p.dtype, p.device)
    acc = _rt.current.accumulator[p.dtype]
    scale = 1.0 / n if mean else 1.0
    if host_reduce.applies(op, p.dtype, p.shape, p.strides, dim):
        host_acc = np.dtype(np.float64) if acc is _rt.current.ti_dtype[np.dtype(np.float64)] else np.dtype(np.float32)
        host_reduce.sum_dim(p.view(), p.shape, dim, out.buf, p.dtype, host_acc, scale)
        return out
    reduce_kernel.run(op, p.view(), p.shape, dim, out.buf, acc, scale)
    return out


def reduce_all(name: str, p: TaichiTensor, op: Reduce) -> TaichiTensor:
    """Full reduction to shape (1,): one strided walk when the view merges to
    a single dim, else over a contiguous copy."""
    n = math.prod(p.shape)
    if n == 0:
        if op != Reduce.SUM:
            raise ValueError(f"{name}: a zero-size tensor of shape {list(p.shape)} has no max/min")
        return full((1,), 0, p.dtype, p.device)
    merged, (strides,) = layout.coalesce(p.shape, [p.strides])
    if len(merged) > 1:
        p = materialize(p)
        strides = [1]
    flat = TaichiTensor(p.buf, (n,), (strides[0] if strides else 1,), p.offset, p.dtype, p.device)
    return reduce(name, flat, 0, op)


def _raise_bad(name: str, bad: int, dim: int, n: int) -> None:
    if bad:
        raise IndexError(f"{name}: {bad} index value(s) out of range for dim {dim} of size {n}")


def gather(name: str, dim: int, p: TaichiTensor, idx_view: tuple, shape: tuple) -> TaichiTensor:
    """out[i] = p[i with dim -> index[i]] over `shape`; `idx_view` is the index
    seen as `shape` (buffer, strides, offset)."""
    out = alloc(shape, p.dtype, p.device)
    if out.buf is None:
        return out
    if p.buf is None:
        raise IndexError(f"{name}: dim {dim} of shape {list(p.shape)} is empty; no index is in range")
    pst = list(p.view(shape)[1])
    pst[dim] = 0
    bad = index.gather(shape, out.out(), (p.buf, tuple(pst), p.offset), idx_view, p.shape[dim], p.strides[dim])
    _raise_bad(name, bad, dim, p.shape[dim])
    return out


def scatter(name: str, dim: int, p: TaichiTensor, idx_view: tuple, values: TaichiTensor, shape: tuple) -> TaichiTensor:
    """A copy of p with values[i] added at [i with dim -> index] for i over `shape`."""
    same_device(name, (p, values))
    if len(values.shape) != len(shape) or any(m != n and m != 1 for n, m in zip(shape, values.shape)):
        raise ValueError(f"{name}: values of shape {list(values.shape)} do not broadcast to {list(shape)}")
    if p.dtype == F16 and _rt.current.spirv:
        # f16 atomics are optional on SPIR-V devices (lavapipe has none, and its
        # pipeline creation then crashes the process): add in f32, round once.
        wide = scatter(name, dim, materialize(p, F32), idx_view, materialize(values, F32), shape)
        return materialize(wide, F16)
    out = materialize(p)
    if math.prod(shape) == 0:
        return out
    if out.buf is None:
        raise IndexError(f"{name}: dim {dim} of shape {list(p.shape)} is empty; no index is in range")
    ost = list(out.strides)
    ost[dim] = 0
    bad = index.scatter_add(shape, (out.buf, tuple(ost), 0), idx_view, values.view(shape),
                            p.shape[dim], out.strides[dim])
    _raise_bad(name, bad, dim, p.shape[dim])
    return out


def select_view(idx: TaichiTensor, shape: tuple, dim: int) -> tuple:
    """A 1-D index tensor seen as `shape`, varying along `dim` only."""
    st = [0] * len(shape)
    st[dim] = idx.strides[0]
    return idx.buf, tuple(st), idx.offset


def slice_view(p: TaichiTensor, ranges: Sequence[slice]) -> TaichiTensor:
    shape, strides, offset = list(p.shape), list(p.strides), p.offset
    for d, r in enumerate(ranges):
        start, stop, step = r.indices(shape[d])  # NumPy's reading of the slice object
        n = len(range(start, stop, step))
        if n:
            offset += start * strides[d]
        shape[d], strides[d] = n, strides[d] * step
    shape = tuple(shape)
    buf = p.buf if math.prod(shape) else None
    return TaichiTensor(buf, shape, tuple(strides), offset, p.dtype, p.device)


def copy_into(region: TaichiTensor, values: TaichiTensor, name: str) -> None:
    if len(values.shape) != len(region.shape) or any(
            m != n and m != 1 for n, m in zip(region.shape, values.shape)):
        raise ValueError(f"{name}: values of shape {list(values.shape)} do not broadcast to the "
                         f"slice of shape {list(region.shape)}")
    if math.prod(region.shape) == 0:
        return
    copy(region.shape, region.out(), values.view(region.shape), region.dtype, values.dtype)


def cat(ps: Sequence[TaichiTensor], dim: int) -> TaichiTensor:
    device = same_device("cat", ps)
    first = ps[0].shape
    for p in ps:
        if len(p.shape) != len(first) or any(a != b for d, (a, b) in enumerate(zip(p.shape, first)) if d != dim):
            raise ValueError(f"cat: shapes {[list(q.shape) for q in ps]} differ outside dim {dim}")
    dtype = np.result_type(*[p.dtype for p in ps])
    shape = first[:dim] + (sum(p.shape[dim] for p in ps),) + first[dim + 1:]
    out = alloc(shape, dtype, device)
    at = 0
    for p in ps:
        if p.buf is not None:
            region = TaichiTensor(out.buf, p.shape, out.strides, at * out.strides[dim], dtype, device)
            copy(p.shape, region.out(), p.view(), dtype, p.dtype)
        at += p.shape[dim]
    return out


def matmul(lhs: TaichiTensor, rhs: TaichiTensor) -> TaichiTensor:
    """`[..., m, k] @ [..., k, n]`, batch dims broadcasting. Kernel selection: on
    the CPU arch NumPy's BLAS runs on the device buffers themselves (zero-copy;
    ~60 GFLOP/s against 3-6 for the Taichi kernel at 1024x1024 f32, measured);
    GPU archs run the Taichi kernel (`SETTINGS.matmul`; ops/blas.py, kernels/matmul.py)."""
    device = same_device("float_matmul", (lhs, rhs))
    ls, rs = lhs.shape, rhs.shape
    if len(ls) < 2 or len(ls) != len(rs) or ls[-1] != rs[-2]:
        raise ValueError(f"float_matmul: shapes {list(ls)} and {list(rs)} cannot be multiplied "
                         "(need [..., m, k] @ [..., k, n] of the same rank)")
    try:
        batch = broadcast_shape("float_matmul", ls[:-2], rs[:-2])
    except ValueError:
        raise ValueError(f"float_matmul: batch dims of {list(ls)} and {list(rs)} do not broadcast") from None
    if lhs.dtype != rhs.dtype:
        common = np.result_type(lhs.dtype, rhs.dtype)
        lhs, rhs = materialize(lhs, common), materialize(rhs, common)
    oshape = batch + (ls[-2], rs[-1])
    if ls[-1] == 0:
        return full(oshape, 0, lhs.dtype, device)
    out = alloc(oshape, lhs.dtype, device)
    if out.buf is not None:
        run = blas.run if SETTINGS.matmul == "blas" else matmul_kernel.run
        run(out.buf, lhs.view(), rhs.view(), ls, rs, oshape, lhs.dtype)
    return out


def float_bounds(min: Any, max: Any) -> tuple:  # noqa: A002 - the protocol's names
    """clamp's bounds as floats, an absent one unbounded."""
    return -math.inf if min is None else float(min), math.inf if max is None else float(max)


# -- method factories: one line per op in the ops classes -------------------------
def binary(name: str, op: BinaryOp, dtype: np.dtype | None = None) -> staticmethod:
    return staticmethod(lambda a, b: map2(name, op, (a, b), dtype))


def unary(op: UnaryOp, dtype: np.dtype | None = None) -> staticmethod:
    return staticmethod(lambda p: map1(p, op, dtype))


def scalar_float(op: UnaryOp, dtype: np.dtype | None = None) -> staticmethod:
    return staticmethod(lambda p, s: map1(p, op, dtype, float(s)))


def scalar_int(name: str, op: UnaryOp) -> staticmethod:
    return staticmethod(lambda p, s: map1(p, op, None, int_scalar(name, s)))


def compare_int(name: str, op: UnaryOp) -> staticmethod:
    return staticmethod(lambda p, s: int_compare(name, p, s, op))


def reduction(name: str, op: Reduce, mean: bool = False) -> staticmethod:
    return staticmethod(lambda p, dim: reduce(name, p, dim, op, mean))


def reduction_all(name: str, op: Reduce) -> staticmethod:
    return staticmethod(lambda p: reduce_all(name, p, op))
