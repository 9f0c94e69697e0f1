"""`Tensor[B, D, K]`: the user-facing tensor, generic over backend, rank and kind.

`Tensor[NdArray, 2]` is a class (cached per backend, rank and kind) whose
instances hold one backend primitive. Its methods check ranks, kinds and
arguments, normalise dims, then call the backend's primitive ops; the rank is
part of the type, so an op that changes it returns an instance of another
`Tensor[B, D', K]` class. This file holds the class machinery, creation,
data access and layout ops; `numeric.py` and `floatops.py` add the rest.
"""

from __future__ import annotations

import math
import types
from typing import Any, Sequence

import numpy as np

from burnbook.backend.base import FLOAT_OPS, Backend, broadcast_shape
from . import display
from .data import Shape, TensorData, as_dims, coerce_array, flatten_nested, int_scalar
from .distribution import Distribution
from .kind import Bool, DType, Float, Int, Kind

_SPECIALISED: dict = {}


class Writes:
    """How many times, process-wide, a module field or a tensor's values were
    assigned in place: a cheap "has anything changed?" for caches of module
    state (`module/replay.py`)."""

    count = 0
_FLOAT_ONLY = {op[len("float_"):] for op in FLOAT_OPS}


class _KindOps:
    """The backend's ops of one kind with the prefix dropped (`ops.add` is
    `B.float_add` for Float tensors); a missing op is a TypeError naming it."""

    def __init__(self, backend: type, kind: type) -> None:
        self._kind = kind
        prefix = kind.prefix + "_"
        for name in dir(backend):
            if name.startswith(prefix):
                setattr(self, name[len(prefix):], getattr(backend, name))

    def __getattr__(self, name: str):
        hint = " (a Float operation: convert with .float() first)" if name in _FLOAT_ONLY else ""
        raise TypeError(f"{name} is not available for {self._kind.name} tensors{hint}")


class _Shape(Shape):
    """A `Shape` that may also be called, so `t.shape` (PyTorch) and
    `t.shape()` (Burn) both work."""

    __slots__ = ()

    def __call__(self) -> Shape:
        return self


class hybridmethod:
    """A method that works on the class (`Tensor[B, 1].one_hot(i, n, device)`)
    and on an instance (`indices.one_hot(n)`), calling different functions."""

    def __init__(self, on_class, on_instance) -> None:
        self.on_class, self.on_instance = on_class, on_instance

    def __get__(self, obj, cls):
        if obj is None:
            return types.MethodType(self.on_class, cls)
        return types.MethodType(self.on_instance, obj)


def _as_shape(shape, rank: int | None, op: str) -> tuple:
    dims = tuple(as_dims(shape, op))
    if rank is not None and len(dims) != rank:
        raise ValueError(f"{op}: shape {list(dims)} has rank {len(dims)}, the tensor type has rank {rank}")
    return dims


class TensorBase:
    """Class machinery, creation, data access and layout of every tensor."""

    __slots__ = ("_p",)

    _B: type | None = None
    _D: int | None = None
    _K: type = Float
    _ops: _KindOps | None = None

    # -- the type: Tensor[B, D, K] -------------------------------------------------
    def __class_getitem__(cls, params):
        if not isinstance(params, tuple):
            params = (params,)
        if len(params) == 2:
            params = params + (Float,)
        if len(params) != 3:
            raise TypeError("use Tensor[Backend, rank] or Tensor[Backend, rank, Int | Bool | Float]")
        backend, rank, kind = params
        return cls._specialise(backend, rank, kind)

    @classmethod
    def _specialise(cls, backend, rank, kind):
        key = (backend, rank, kind)
        special = _SPECIALISED.get(key)
        if special is not None:
            return special
        if not (isinstance(backend, type) and issubclass(backend, Backend)):
            raise TypeError(f"Tensor[B, D]: B must be a backend class such as NdArray, got {backend!r}")
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
            raise TypeError(f"Tensor[B, D]: D must be a rank >= 1, got {rank!r}")
        if not (isinstance(kind, type) and issubclass(kind, Kind) and kind is not Kind):
            raise TypeError(f"Tensor[B, D, K]: K must be Float, Int or Bool, got {kind!r}")
        base = _tensor_class()
        name = f"Tensor[{backend.__name__}, {rank}{'' if kind is Float else ', ' + kind.__name__}]"
        special = type(name, (base,), {
            "__slots__": (), "_B": backend, "_D": rank, "_K": kind,
            "_ops": _KindOps(backend, kind), "__module__": "burnbook.tensor",
            "__qualname__": name,
        })
        _SPECIALISED[key] = special
        return special

    def __new__(cls, data=None, device=None):
        if cls._B is None:
            raise TypeError("Tensor needs its backend and rank: Tensor[NdArray, 2](data)")
        return cls.from_data(data, device)

    @classmethod
    def _wrap(cls, primitive) -> "TensorBase":
        t = object.__new__(cls)
        t._p = primitive
        return t

    def _like(self, primitive):
        t = object.__new__(type(self))
        t._p = primitive
        return t

    def _as(self, primitive, rank: int | None = None, kind: type | None = None):
        key = (self._B, rank or self._D, kind or self._K)
        cls = _SPECIALISED.get(key)   # `_specialise`'s own first step, without the call: ops run this often
        if cls is None:
            cls = type(self)._specialise(*key)
        t = object.__new__(cls)
        t._p = primitive
        return t

    def _dim(self, dim: int, op: str = "dim") -> int:
        if type(dim) is int and -self._D <= dim < self._D:   # the common case (a bool's type is not int)
            return dim + self._D if dim < 0 else dim
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise TypeError(f"{op}: dim must be an int, got {dim!r} ({type(dim).__name__})")
        d = int(dim)
        if d < 0:
            d += self._D
        if not 0 <= d < self._D:
            raise IndexError(f"{op}: dim {dim} is out of range for a tensor of rank {self._D}")
        return d

    def _require_float(self, op: str) -> None:
        if self._K is not Float:
            raise TypeError(f"{op} is a Float operation; this tensor's kind is {self._K.name} (convert with .float())")

    def _check_other(self, op: str, other) -> None:
        """Explain why `other` cannot join `self` in a binary op."""
        if not isinstance(other, TensorBase):
            raise TypeError(f"{op}: expected a tensor or a number, got {type(other).__name__}")
        if other._B is not self._B:
            raise TypeError(
                f"{op}: tensors from different backends ({self._B.name()} and {other._B.name()}); "
                "move one with Tensor[B, D].from_data(t.to_data(), device)"
            )
        if other._K is not self._K:
            raise TypeError(f"{op}: tensor kinds differ ({self._K.name} and {other._K.name}); convert with .float() or .int()")
        if other._D != self._D:
            raise ValueError(
                f"{op}: ranks differ ({self._D} for {self.dims()} and {other._D} for {other.dims()}); "
                "use unsqueeze/reshape so both have the same rank"
            )

    def _broadcast_error(self, op: str, other) -> None:
        broadcast_shape(op, self.dims(), other.dims())

    # -- creation ------------------------------------------------------------------
    @classmethod
    def _device(cls, device):
        return cls._B.default_device() if device is None else device

    @classmethod
    def from_data(cls, data, device=None) -> "TensorBase":
        """A tensor from a `TensorData`, NumPy array or nested list (converted to
        the kind's element type: f32, i64, bool)."""
        if cls._B is None:
            raise TypeError("from_data needs the tensor type: Tensor[B, D].from_data(data, device)")
        if isinstance(data, TensorData):
            array = data.array
        elif isinstance(data, np.ndarray):
            array = data
        elif isinstance(data, TensorBase):
            array = data.to_numpy()
        else:
            array = flatten_nested(data)
        if array.ndim != cls._D:
            raise ValueError(
                f"{cls.__name__}: data has rank {array.ndim} (shape {list(array.shape)}), "
                f"expected rank {cls._D}"
            )
        kind = cls._K
        array = coerce_array(array, kind.default_dtype, f"{cls.__name__}.from_data")
        return cls._wrap(getattr(cls._B, kind.prefix + "_from_data")(array, cls._device(device)))

    @classmethod
    def from_floats(cls, values, device=None):
        """A Float tensor from (nested) Python floats."""
        return cls._specialise(cls._B, cls._D, Float).from_data(values, device)

    @classmethod
    def from_ints(cls, values, device=None):
        """An Int tensor from (nested) Python ints."""
        return cls._specialise(cls._B, cls._D, Int).from_data(values, device)

    @classmethod
    def from_bool(cls, values, device=None):
        """A Bool tensor from (nested) Python bools."""
        return cls._specialise(cls._B, cls._D, Bool).from_data(values, device)

    @classmethod
    def full(cls, shape, fill_value, device=None):
        """A tensor of `shape` filled with `fill_value`."""
        shape = _as_shape(shape, cls._D, "full")
        dev = cls._device(device)
        if cls._K is Bool:
            array = np.full(shape, bool(fill_value))
            return cls._wrap(cls._B.bool_from_data(array, dev))
        if cls._K is Int:
            fill_value = int_scalar(fill_value, "full")
        return cls._wrap(getattr(cls._B, cls._K.prefix + "_full")(shape, fill_value, dev))

    @classmethod
    def zeros(cls, shape, device=None):
        return cls.full(_as_shape(shape, cls._D, "zeros"), 0, device)

    @classmethod
    def ones(cls, shape, device=None):
        return cls.full(_as_shape(shape, cls._D, "ones"), 1, device)

    @classmethod
    def empty(cls, shape, device=None):
        """A tensor whose values are unspecified (Burn's `empty`)."""
        shape = _as_shape(shape, cls._D, "empty")
        return cls._wrap(getattr(cls._B, cls._K.prefix + "_empty")(shape, cls._device(device)))

    @classmethod
    def random(cls, shape, distribution=Distribution.Default, device=None):
        """Random values from `distribution`, reproducible after `B.seed(s)`."""
        shape = _as_shape(shape, cls._D, "random")
        p = cls._B.float_random(shape, distribution, cls._device(device))
        t = cls._specialise(cls._B, cls._D, Float)._wrap(p)
        return t if cls._K is Float else (t.int() if cls._K is Int else t.bool())

    def zeros_like(self):
        return type(self).full(self.dims(), 0, self.device())

    def ones_like(self):
        return type(self).full(self.dims(), 1, self.device())

    def full_like(self, fill_value):
        return type(self).full(self.dims(), fill_value, self.device())

    def random_like(self, distribution=Distribution.Default):
        return type(self).random(self.dims(), distribution, self.device())

    @classmethod
    def arange(cls, start, end=None, device=None):
        """Int values start..end (a Python `range` is accepted as `start`)."""
        if isinstance(start, range):
            device, end = end, None
            return cls.arange_step(start.start, start.stop, start.step, device)
        return cls.arange_step(start, end, 1, device)

    @classmethod
    def arange_step(cls, start: int, end: int, step: int, device=None):
        """Int values start, start+step, ... before end."""
        if cls._D != 1:
            raise ValueError(f"arange gives a rank-1 tensor, not rank {cls._D}")
        for name, v in (("start", start), ("end", end), ("step", step)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"arange: {name} must be an int, got {v!r} ({type(v).__name__})")
        if step == 0:
            raise ValueError("arange_step: step must not be 0")
        p = cls._B.int_arange(int(start), int(end), int(step), cls._device(device))
        t = cls._specialise(cls._B, 1, Int)._wrap(p)
        return t if cls._K is Int else t.float()

    # -- data --------------------------------------------------------------------
    def to_numpy(self) -> np.ndarray:
        """The values as a NumPy array (float32 / int64 / bool by default)."""
        return getattr(self._B, self._K.prefix + "_into_data")(self._p)

    def into_data(self) -> TensorData:
        return TensorData._wrap(self.to_numpy())

    to_data = into_data

    def into_scalar(self):
        """The single value of a one-element tensor, as a Python number."""
        array = self.to_numpy()
        if array.size != 1:
            raise ValueError(f"into_scalar: the tensor has {array.size} elements (shape {list(array.shape)}), not 1")
        return array.reshape(()).item()

    def into_primitive(self):
        return self._p

    @classmethod
    def from_primitive(cls, primitive):
        return cls._wrap(primitive)

    def __array__(self, dtype=None, copy=None):
        array = self.to_numpy()
        return array if dtype is None else array.astype(dtype)

    def __float__(self) -> float:
        return float(self.into_scalar())

    def __int__(self) -> int:
        return int(self.into_scalar())

    def __bool__(self) -> bool:
        return bool(self.into_scalar())

    def __len__(self) -> int:
        return self.dims()[0]

    def __repr__(self) -> str:
        return display.format_tensor(
            self.to_numpy(), self.dims(), self.device(), self._B.name(), self._K.name, str(self.dtype)
        )

    __str__ = __repr__

    # -- basic queries ----------------------------------------------------------
    def dims(self) -> list[int]:
        return list(self._ops.shape(self._p))

    @property
    def shape(self) -> _Shape:
        return _Shape(self.dims())

    @property
    def ndim(self) -> int:
        return self._D

    def num_elements(self) -> int:
        return math.prod(self._ops.shape(self._p))

    def device(self):
        return self._ops.device(self._p)

    @property
    def dtype(self) -> DType:
        if self._K is Bool:
            return DType(np.bool_)
        return DType(self._ops.dtype(self._p))

    @property
    def kind(self) -> type:
        return self._K

    @property
    def backend(self) -> type:
        """The backend class this tensor runs on (`NdArray`, `Autodiff[NdArray]`)."""
        return self._B

    def to_device(self, device):
        return self._like(self._ops.to_device(self._p, device))

    def clone(self):
        """The same tensor (primitives are never mutated, so nothing is copied)."""
        return self._like(self._p)
