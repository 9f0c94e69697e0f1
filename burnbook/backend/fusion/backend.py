"""`Fusion[B]`: the backend decorator that records element-wise ops and runs
each chain as one generated kernel (Burn's burn-fusion).

Every op of the protocol is one of three kinds here:
- *recorded*: element-wise float ops (arithmetic, scalar ops, math,
  comparisons, clamp, cast, mask_fill, mask_where, relu, sigmoid) make a lazy
  `FusionTensor`, after the same shape and dtype checks B makes, so an
  error names the op the user wrote;
- *fused reductions*: sum, max, min, and their `_dim` forms and mean_dim run
  at once, in the kernel that computes their lazy input;
- *passed through*: everything else (layout, indexing, matmul, module ops,
  Int and Bool ops, reading data) executes the lazy inputs, then runs B's op.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from burnbook.kernels.elementwise import Map1, Map2, Map3
from burnbook.kernels.reduce import Reduce

from ..base import ALL_OPS, Backend
from ..taichi.ops.launch import float_bounds
from ..taichi.primitive import broadcast, same_device
from ..taichi.runtime import BOOL as _BOOL, FLOATS as _FLOATS
from . import executor
from .stream import MAX_NODES, FusionTensor, lazy, ready

_RAW = {f"{kind}_{op}" for kind in ("float", "int", "bool") for op in ("into_data", "shape", "device", "dtype")}
_live: "weakref.WeakSet[FusionTensor]" = weakref.WeakSet()  # lazy tensors, for sync()


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


def _wrap(out: Any, prim: type) -> Any:
    if isinstance(out, prim):
        return ready(out)
    if type(out) in (list, tuple):
        return type(out)(_wrap(x, prim) for x in out)
    return out


def _record(code, inputs: tuple, shape: tuple, dtype: np.dtype, scalars: tuple = ()) -> FusionTensor:
    if sum(t.node.size for t in inputs if t.node is not None) >= MAX_NODES:
        for t in inputs:
            value(t)
    out = lazy(code, inputs, shape, dtype, scalars)
    _live.add(out)
    return out


def _broadcast(name: str, ts: tuple) -> tuple:
    """The shape the operands of `name` broadcast to; Taichi's own checks."""
    same_device(name, ts)
    return broadcast(name, ts)


def _cast(t: FusionTensor, dtype: np.dtype) -> FusionTensor:
    return t if t.dtype == dtype else _record(Map1.COPY, (t,), t.shape, dtype)


# -- method factories ------------------------------------------------------------
def _binary(name: str, code: Map2, out: np.dtype | None = None) -> Callable:
    def op(a, b):
        shape = _broadcast(name, (a, b))
        if a.dtype != b.dtype:
            common = np.result_type(a.dtype, b.dtype)
            a, b = _cast(a, common), _cast(b, common)
        return _record(code, (a, b), shape, out or a.dtype)
    return staticmethod(op)


def _unary(code: Map1, out: np.dtype | None = None) -> Callable:
    return staticmethod(lambda p: _record(code, (p,), p.shape, out or p.dtype))


def _scalar(code: Map1, out: np.dtype | None = None) -> Callable:
    return staticmethod(lambda p, s: _record(code, (p,), p.shape, out or p.dtype, (float(s),)))


def _reduction(name: str, inner_fn: Callable, op: Reduce, all_: bool, mean: bool = False) -> Callable:
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
    return staticmethod(reduce_all if all_ else reduce_dim)


def _passthrough(name: str, fn: Callable, prim: type) -> Callable:
    if name in _RAW:  # they return host data, shapes, devices, dtypes
        return staticmethod(lambda *args: fn(*value(args)))
    return staticmethod(lambda *args, **kw: _wrap(fn(*value(args), **{k: value(v) for k, v in kw.items()}), prim))


def _clamp(p, min=None, max=None):  # noqa: A002 - the protocol's names
    if min is None and max is None:
        return p
    return _record(Map1.CLAMP, (p,), p.shape, p.dtype, float_bounds(min, max))


def _mask_fill(p, mask, v):
    shape = _broadcast("mask_fill", (p, mask))
    return _record(Map2.FILL, (p, mask), shape, p.dtype, (float(v),))


def _mask_where(p, mask, values):
    shape = _broadcast("mask_where", (p, mask, values))
    return _record(Map3.WHERE, (p, _cast(values, p.dtype), mask), shape, p.dtype)


def _float_cast(p, dtype):
    dtype = np.dtype(dtype)
    if dtype not in _FLOATS:
        raise TypeError(f"float_cast: {dtype} is not a float dtype (f16, f32, f64)")
    return _cast(p, dtype)


_ARITH = {"add": Map2.ADD, "sub": Map2.SUB, "mul": Map2.MUL, "div": Map2.DIV, "powf": Map2.POW}
_COMPARE = {"equal": Map2.EQ, "greater": Map2.GT, "greater_equal": Map2.GE, "lower": Map2.LT,
            "lower_equal": Map2.LE}
_MATH = {"neg": Map1.NEG, "abs": Map1.ABS, "exp": Map1.EXP, "log": Map1.LOG, "log1p": Map1.LOG1P,
         "erf": Map1.ERF, "sqrt": Map1.SQRT, "recip": Map1.RECIP, "cos": Map1.COS, "sin": Map1.SIN,
         "tanh": Map1.TANH}
_SCALARS = {"add_scalar": Map1.ADD_S, "sub_scalar": Map1.SUB_S, "mul_scalar": Map1.MUL_S,
            "div_scalar": Map1.DIV_S, "powf_scalar": Map1.POW_S, "equal_elem": Map1.EQ_S,
            "greater_elem": Map1.GT_S, "greater_equal_elem": Map1.GE_S, "lower_elem": Map1.LT_S,
            "lower_equal_elem": Map1.LE_S}
_REDUCE = {"sum": (Reduce.SUM, True, False), "max": (Reduce.MAX, True, False), "min": (Reduce.MIN, True, False),
           "sum_dim": (Reduce.SUM, False, False), "mean_dim": (Reduce.SUM, False, True),
           "max_dim": (Reduce.MAX, False, False), "min_dim": (Reduce.MIN, False, False)}


def _recorded() -> dict:
    ns: dict = {f"float_{k}": _binary(f"float_{k}", c) for k, c in _ARITH.items()}
    ns.update({f"float_{k}": _binary(f"float_{k}", c, _BOOL) for k, c in _COMPARE.items()})
    ns.update({f"float_{k}": _unary(c) for k, c in _MATH.items()})
    ns.update({f"float_{k}": _scalar(c, _BOOL if k.endswith("_elem") else None) for k, c in _SCALARS.items()})
    ns.update(float_clamp=staticmethod(_clamp), float_mask_fill=staticmethod(_mask_fill),
              float_mask_where=staticmethod(_mask_where), float_cast=staticmethod(_float_cast),
              float_shape=staticmethod(lambda p: p.shape), float_dtype=staticmethod(lambda p: p.dtype),
              float_device=staticmethod(lambda p: p.device))
    for kind in ("int", "bool"):
        ns[f"{kind}_shape"], ns[f"{kind}_device"] = ns["float_shape"], ns["float_device"]
    ns["int_dtype"] = ns["float_dtype"]
    return ns


def _build(inner: type) -> type:
    from ..taichi import Taichi, TaichiTensor

    if not (isinstance(inner, type) and issubclass(inner, Taichi)):
        raise TypeError(f"Fusion[{inner!r}]: fused kernels are generated for the Taichi backend only")
    ns = _recorded()
    for name in ALL_OPS:
        if name in ns or name in ("float_relu", "float_sigmoid"):  # Backend's defaults, recorded ops
            continue
        kind_op = name.split("_", 1)[-1]
        if name.startswith("float_") and kind_op in _REDUCE:
            op, all_, mean = _REDUCE[kind_op]
            ns[name] = _reduction(name, getattr(inner, name), op, all_, mean)
        else:
            ns[name] = _passthrough(name, getattr(inner, name), TaichiTensor)
    ns.update(_inner=inner, Device=inner.Device, is_autodiff=False)
    return type(f"Fusion[{inner.__name__}]", (Fusion,), ns)


class _FusionMeta(type):
    def __repr__(cls) -> str:
        inner = cls.__dict__.get("_inner")
        return "Fusion" if inner is None else f"Fusion[{inner.__name__}]"

    @property
    def _rng(cls):
        """The inner backend's host generator (random ops pass through)."""
        return getattr(cls._inner, "_rng", None)

    @_rng.setter
    def _rng(cls, generator) -> None:
        cls._inner._rng = generator


class Fusion(Backend, metaclass=_FusionMeta):
    """The decorator: `Fusion[Taichi]` records element-wise ops and compiles
    each chain into one kernel; `Autodiff[Fusion[Taichi]]` trains on it.
    Classes are cached, so `Fusion[B] is Fusion[B]`."""

    _cache: dict = {}
    _inner: type | None = None

    def __class_getitem__(cls, inner: type) -> type:
        if cls is not Fusion:
            raise TypeError(f"{cls!r} is already parametrised")
        built = Fusion._cache.get(inner)
        if built is None:
            if getattr(inner, "is_autodiff", False):
                raise TypeError(f"Fusion[{inner!r}]: put Fusion inside Autodiff, as Autodiff[Fusion[B]]")
            built = Fusion._cache[inner] = _build(inner)
        return built

    @classmethod
    def name(cls) -> str:
        return f"fusion<{cls._inner.name()}>"

    @classmethod
    def default_device(cls) -> Any:
        return cls._inner.default_device()

    @classmethod
    def seed(cls, seed: int) -> None:
        cls._inner.seed(seed)

    @classmethod
    def sync(cls, device: Any = None) -> None:
        """Execute every recorded op whose result is still referenced, then
        wait for the device.

        Only the roots run (lazy tensors no other lazy op reads): each root's
        kernel also writes the intermediates something else still holds
        (executor._external), so an optimizer step's new parameter and its
        moments come out of one kernel, not one launch per recorded op."""
        pending = [t for t in _live if t.node is not None]
        read = {id(i) for t in pending for i in t.node.inputs}
        roots = sorted((t for t in pending if id(t) not in read), key=lambda t: t.node.id)
        del pending
        while roots:
            value(roots.pop(0))
        # Whatever a kernel left lazy (a miscounted reference) runs on its own.
        for t in sorted((t for t in _live if t.node is not None), key=lambda t: t.node.id):
            value(t)
        cls._inner.sync(device)

    @staticmethod
    def stats() -> dict:
        """Fused kernels `compiled` (generated and loaded) by this process,
        streams `executed`, the element-wise ops they `fused_ops`, and the
        streams that ran in SIMD `lanes` (`KernelSettings.lanes`)."""
        return dict(executor.STATS)
