"""How `Fusion[B]` runs an op: record it, fuse a reduction into its input's
kernel, or pass it through to B, and the declarations the `Fusion` class
body names its ops with.

- `recorded_binary(code)`, `recorded_unary(code)`, `recorded_scalar(code)`:
  an element-wise op of `burnbook.kernels.elementwise` (`BinaryOp.ADD`,
  `UnaryOp.EXP`...) makes a lazy `FusionTensor`, after B's own shape checks
  (`broadcast`), so an error names the op the user wrote;
  `clamp`, `mask_fill`, `mask_where` and `cast` record likewise;
- `fused_reduction(op, dim, mean)`: runs at once, in the kernel that
  computes its lazy input (`executor.run_reduce`), or as B's op on a ready one;
- `passed_through`: executes the lazy inputs (`value`), then runs B's op and
  wraps its Taichi outputs as ready tensors; `read_out` returns B's answer
  as it is (host data).

Each declaration is bound to B when `Fusion[B]` is first built
(`Decorator._build`), as the per-op closures were before.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from burnbook.kernels.elementwise import BinaryOp, TernaryOp, UnaryOp
from burnbook.kernels.reduce import Reduce

from ..decorator import OpDeclaration, inner_op
from ..taichi.ops.launch import float_bounds
from ..taichi.primitive import TaichiTensor, broadcast, same_device
from ..taichi.runtime import FLOATS
from . import executor
from .stream import MAX_NODES, FusionTensor, lazy, ready

LIVE: "weakref.WeakSet[FusionTensor]" = weakref.WeakSet()  # lazy tensors, for Fusion.sync()


def value(t: Any) -> Any:
    """The inner primitive of `t`, executing its stream first if it is lazy;
    lists and tuples of tensors element by element; anything else as is."""
    if type(t) is FusionTensor:
        if t.node is not None:
            executor.run(t)
        return t.value
    if type(t) in (list, tuple):
        return type(t)(value(x) for x in t)
    return t


def _wrap(out: Any) -> Any:
    if isinstance(out, TaichiTensor):
        return ready(out)
    if type(out) in (list, tuple):
        return type(out)(_wrap(x) for x in out)
    return out


def _record(code, inputs: tuple, shape: tuple, dtype: np.dtype, scalars: tuple = ()) -> FusionTensor:
    if sum(t.node.size for t in inputs if t.node is not None) >= MAX_NODES:
        for t in inputs:
            value(t)
    out = lazy(code, inputs, shape, dtype, scalars)
    LIVE.add(out)
    return out


def _broadcast(name: str, ts: tuple) -> tuple:
    """The shape the operands of `name` broadcast to; Taichi's own checks."""
    same_device(name, ts)
    return broadcast(name, ts)


def _cast(t: FusionTensor, dtype: np.dtype) -> FusionTensor:
    return t if t.dtype == dtype else _record(UnaryOp.COPY, (t,), t.shape, dtype)


# -- recorded ops: the same for every B -------------------------------------------------------
class _RecordedBinary(OpDeclaration):
    def __init__(self, code: BinaryOp, out: np.dtype | None) -> None:
        self.code, self.out = code, out

    def bind(self, name: str, inner: type) -> Callable:
        code, out = self.code, self.out

        def op(a, b):
            shape = _broadcast(name, (a, b))
            if a.dtype != b.dtype:
                common = np.result_type(a.dtype, b.dtype)
                a, b = _cast(a, common), _cast(b, common)
            return _record(code, (a, b), shape, out or a.dtype)
        return op


class _RecordedUnary(OpDeclaration):
    def __init__(self, code: UnaryOp, out: np.dtype | None, scalar: bool) -> None:
        self.code, self.out, self.scalar = code, out, scalar

    def bind(self, name: str, inner: type) -> Callable:
        code, out = self.code, self.out
        if self.scalar:
            return lambda p, s: _record(code, (p,), p.shape, out or p.dtype, (float(s),))
        return lambda p: _record(code, (p,), p.shape, out or p.dtype)


def recorded_binary(code: BinaryOp, out: np.dtype | None = None) -> OpDeclaration:
    """`op(a, b)` recorded as `code`, broadcasting, in the operands' common
    dtype; the result in `out` (a comparison's bool) or that dtype."""
    return _RecordedBinary(code, out)


def recorded_unary(code: UnaryOp) -> OpDeclaration:
    """`op(p)` recorded as `code`, in p's dtype."""
    return _RecordedUnary(code, None, scalar=False)


def recorded_scalar(code: UnaryOp, out: np.dtype | None = None) -> OpDeclaration:
    """`op(p, s)` recorded as `code` with the scalar `s`; the result in `out` or p's dtype."""
    return _RecordedUnary(code, out, scalar=True)


def clamp(p: FusionTensor, min: Any = None, max: Any = None) -> FusionTensor:  # noqa: A002
    if min is None and max is None:
        return p
    return _record(UnaryOp.CLAMP, (p,), p.shape, p.dtype, float_bounds(min, max))


def mask_fill(p: FusionTensor, mask: FusionTensor, v: float) -> FusionTensor:
    shape = _broadcast("mask_fill", (p, mask))
    return _record(BinaryOp.FILL, (p, mask), shape, p.dtype, (float(v),))


def mask_where(p: FusionTensor, mask: FusionTensor, values: FusionTensor) -> FusionTensor:
    shape = _broadcast("mask_where", (p, mask, values))
    return _record(TernaryOp.WHERE, (p, _cast(values, p.dtype), mask), shape, p.dtype)


def cast(p: FusionTensor, dtype: Any) -> FusionTensor:
    dtype = np.dtype(dtype)
    if dtype not in FLOATS:
        raise TypeError(f"float_cast: {dtype} is not a float dtype (f16, f32, f64)")
    return _cast(p, dtype)


# -- reductions fused into their input's kernel, and ops passed through to B --------------------
def _inner_op(inner: type, name: str) -> Callable:
    """B's op `name`; B must have it (only a protocol stub counts as not)."""
    fn = inner_op(inner, name)
    if fn is None:
        raise AttributeError(f"type object {inner.__name__!r} has no attribute {name!r}")
    return fn


class _FusedReduction(OpDeclaration):
    def __init__(self, op: Reduce, dim: bool, mean: bool) -> None:
        self.op, self.dim, self.mean = op, dim, mean

    def bind(self, name: str, inner: type) -> Callable:
        inner_fn, op, mean = _inner_op(inner, name), self.op, self.mean

        def reduce_all(p):
            if p.node is not None:
                out = executor.run_reduce(p, op, None)
                if out is not None:
                    return ready(out)
            return ready(inner_fn(value(p)))

        def reduce_dim(p, dim):
            if p.node is not None and 0 <= dim < len(p.shape):
                out = executor.run_reduce(p, op, dim, mean)
                if out is not None:
                    return ready(out)
            return ready(inner_fn(value(p), dim))
        return reduce_dim if self.dim else reduce_all


def fused_reduction(op: Reduce, dim: bool = False, mean: bool = False) -> OpDeclaration:
    """A reduction `op` over everything (`p -> (1,)`) or along a dim
    (`(p, dim)`, divided by its size when `mean`)."""
    return _FusedReduction(op, dim, mean)


class _PassedThrough(OpDeclaration):
    def bind(self, name: str, inner: type) -> Callable:
        fn = _inner_op(inner, name)
        return lambda *args, **kw: _wrap(fn(*value(args), **{k: value(v) for k, v in kw.items()}))


class _ReadOut(OpDeclaration):
    def bind(self, name: str, inner: type) -> Callable:
        fn = _inner_op(inner, name)
        return lambda *args: fn(*value(args))


passed_through = _PassedThrough()
read_out = _ReadOut()
