"""`Strict`: NdArray behind opaque primitives, checking the protocol's promises.

Autodiff's backward rules must use only protocol ops, so that they run on
Taichi or a user's backend. Under `Strict` a primitive is a `Box`, not a NumPy
array: a rule that used NumPy directly, passed a negative dim, a non-tuple
shape, mismatched ranks or a NumPy scalar fails here instead of on Taichi.
"""

from __future__ import annotations

import numbers

import numpy as np

from burnbook.backend.base import ALL_OPS, Backend
from burnbook.backend.ndarray import Cpu, NdArray


class Box:
    __slots__ = ("a", "kind")

    def __init__(self, a, kind):
        self.a, self.kind = a, kind

    def __repr__(self):
        return f"Box[{self.kind}]({self.a!r})"


_KIND = {"float": "float", "int": "int", "bool": "bool"}
_RETURNS = {  # ops whose result is not of their own kind
    "float_into_int": "int", "int_into_float": "float", "bool_into_int": "int",
    "bool_into_float": "float", "float_argmax": "int", "float_argmin": "int",
    "int_argmax": "int", "int_argmin": "int",
}
_PLAIN = {f"{k}_{s}" for k in ("float", "int", "bool") for s in ("into_data", "shape", "device", "dtype")}
_DIM_FIRST = ("gather", "scatter")
_DIM_SECOND = ("swap_dims", "select", "select_assign", "sum_dim", "mean_dim", "max_dim",
               "min_dim", "argmax", "argmin")


def _unbox(x, op, kind=None):
    if isinstance(x, Box):
        if kind is not None and x.kind != kind:
            raise TypeError(f"{op}: got a {x.kind} primitive where a {kind} one was expected")
        return x.a
    if isinstance(x, (list, tuple)) and x and all(isinstance(v, Box) for v in x):
        return [v.a for v in x]
    if isinstance(x, np.ndarray):
        raise TypeError(f"{op}: got a raw NumPy array, not a primitive of this backend")
    if isinstance(x, np.generic):
        raise TypeError(f"{op}: got a NumPy scalar {x!r}; the protocol passes Python scalars")
    return x


def _check(op, args):
    base = op.split("_", 1)[-1]   # module ops (gelu, attention, conv2d) have no kind prefix
    if base in ("comparison",):
        return
    prims = [a for a in args if isinstance(a, Box)]
    rank = prims[0].a.ndim if prims else None
    dims = []
    if base in _DIM_FIRST:
        dims = [args[0]]
    elif base in _DIM_SECOND and len(args) > 1:
        dims = list(args[1:3]) if base == "swap_dims" else [args[1]]
    for d in dims:
        if not (isinstance(d, int) and not isinstance(d, bool) and 0 <= d < rank):
            raise ValueError(f"{op}: dim {d!r} is not a non-negative int below the rank {rank}")
    if base in ("reshape", "expand", "full", "empty", "random") or base == "permute":
        shape = args[1] if base in ("reshape", "expand", "permute") else args[0]
        if not (isinstance(shape, tuple) and all(isinstance(s, int) for s in shape)):
            raise TypeError(f"{op}: shape/axes {shape!r} must be a tuple of ints")
    if base in ("slice", "slice_assign"):
        ranges = args[1]
        if not (isinstance(ranges, tuple) and all(
                isinstance(r, slice) and isinstance(r.start, int) and isinstance(r.step, int)
                and (isinstance(r.stop, int) or (r.stop is None and r.step < 0))
                for r in ranges)):
            raise TypeError(f"{op}: ranges {ranges!r} must be resolved slice objects")
    if base in ("add", "sub", "mul", "div", "powf", "matmul", "equal", "greater", "lower",
                "greater_equal", "lower_equal", "mask_where") and len(prims) >= 2:
        if len({p.a.ndim for p in prims}) != 1:
            raise ValueError(f"{op}: operands of ranks {[p.a.ndim for p in prims]}")


def _wrap_op(op):
    fn = getattr(NdArray, op)
    kind = op.split("_", 1)[0]
    if kind not in ("float", "int", "bool"):   # a module op: Float primitives
        kind = "float"
    out_kind = _RETURNS.get(op, kind)
    if op.endswith("_from_data") or op in ("float_empty", "float_full", "float_random",
                                           "int_empty", "int_full", "bool_empty", "int_arange"):
        def create(*args, **kwargs):
            _check(op, args)
            return Box(fn(*args, **kwargs), out_kind)
        return create
    plain = op in _PLAIN
    compare = any(op.endswith(s) for s in ("equal", "greater", "lower", "greater_equal",
                                           "lower_equal", "_elem")) and not op.startswith("bool_and")

    def run(*args):
        _check(op, args)
        raw = [_unbox(a, op) for a in args]
        for a in args:
            if isinstance(a, numbers.Number) and isinstance(a, np.generic):
                raise TypeError(f"{op}: NumPy scalar argument {a!r}")
        out = fn(*raw)
        if plain:
            return out
        return Box(out, "bool" if compare else out_kind)
    return run


def _make():
    ns = {"Device": Cpu, "is_autodiff": False, "__module__": __name__}
    for op in ALL_OPS:
        ns[op] = staticmethod(_wrap_op(op))
    return type("Strict", (Backend,), ns)


Strict = _make()
Strict.name = classmethod(lambda cls: "strict")
Strict.default_device = classmethod(lambda cls: NdArray.default_device())
Strict.seed = classmethod(lambda cls, s: NdArray.seed(s))
