"""`TensorBase`: the class machinery under `Tensor[B, D, K]`, creation, data
access and the basic queries.

`Tensor[NdArray, 2]` is a class (cached per backend, rank and kind) whose
instances hold one backend primitive. Its methods check ranks, kinds and
arguments, normalise dims, then call the backend's primitive op of the
tensor's kind by name (`B.float_add` or `B.int_add`); the rank is part of the
type, so an op that changes it returns an instance of another
`Tensor[B, D', K]` class. The op families (`layout.py`, `arithmetic.py`,
`numeric.py`, `indexing.py`, `floatops.py`, `boolops.py`, `gradops.py`)
subclass `TensorBase` and `tensor.py` assembles them into `Tensor`.
"""

from __future__ import annotations

import math
import types

import numpy as np

from burnbook.backend.base import Backend, broadcast_shape
from . import display
from .data import Shape, TensorData, ValueRangeError, as_dims, coerce_array, flatten_nested, int_scalar
from .distribution import Distribution
from .kind import Bool, DType, Float, Int, Kind, unavailable

# (backend, rank, kind) -> the class Tensor[backend, rank, kind]: a plain cache.
_SPECIALISED: dict = {}


class Writes:
    """How many times, process-wide, a module field or a tensor's values were
    assigned in place: a cheap "has anything changed?" for caches of module
    state (`module/replay.py`)."""

    count = 0


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


def type_params(params) -> tuple:
    """The (backend, rank, kind) of `Tensor[B, D]` or `Tensor[B, D, K]`."""
    if not isinstance(params, tuple):
        params = (params,)
    if len(params) == 2:
        params = params + (Float,)
    if len(params) != 3:
        raise TypeError("use Tensor[Backend, rank] or Tensor[Backend, rank, Int | Bool | Float]")
    return params


class TensorBase:
    """Class machinery, creation, data access and the basic queries of every
    tensor; the base of each op family and of `Tensor`."""

    __slots__ = ("_p",)

    # Set on each specialised class Tensor[B, D, K]; None on the generic Tensor.
    _B: type[Backend] = None  # type: ignore[assignment]
    _D: int = None  # type: ignore[assignment]
    _K: type[Kind] = Float
    _generic: type[TensorBase] | None = None   # the class Tensor[B, D, K] specialises (Tensor)

    # -- the type: Tensor[B, D, K] -------------------------------------------------
    @classmethod
    def _specialise(cls, backend, rank, kind):
        """`Tensor[backend, rank, kind]`: a subclass of the generic class (the
        one `Tensor[...]` was called on), made once and cached."""
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
        generic = cls._generic or cls
        name = f"Tensor[{backend.__name__}, {rank}{'' if kind is Float else ', ' + kind.__name__}]"
        special = type(name, (generic,), {
            "__slots__": (), "_B": backend, "_D": rank, "_K": kind, "_generic": generic,
            "__module__": "burnbook.tensor", "__qualname__": name,
        })
        _SPECIALISED[key] = special
        return special

    def __new__(cls, data=None, device=None):
        if cls._B is None:
            raise TypeError("Tensor needs its backend and rank: Tensor[NdArray, 2](data)")
        return cls.from_data(data, device)

    @classmethod
    def _wrap(cls, primitive) -> TensorBase:
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

    def _scalar(self, s, op: str):
        """`s` as the Python scalar the backend's ops take: an i64 int for Int
        tensors, a float otherwise."""
        if self._K is Int:
            return int_scalar(s, op)
        try:
            return float(s)
        except OverflowError:
            raise ValueRangeError(f"{op}: the scalar {s} is too large for any float dtype") from None

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
    def from_data(cls, data, device=None) -> TensorBase:
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
        B, K = cls._B, cls._K
        array = coerce_array(array, K.default_dtype, f"{cls.__name__}.from_data")
        from_data = B.float_from_data if K is Float else B.int_from_data if K is Int else B.bool_from_data
        return cls._wrap(from_data(array, cls._device(device)))

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
        B, K = cls._B, cls._K
        if K is Bool:
            array = np.full(shape, bool(fill_value))
            return cls._wrap(B.bool_from_data(array, dev))
        if K is Int:
            return cls._wrap(B.int_full(shape, int_scalar(fill_value, "full"), dev))
        return cls._wrap(B.float_full(shape, fill_value, dev))

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
        B, K = cls._B, cls._K
        empty = B.float_empty if K is Float else B.int_empty if K is Int else B.bool_empty
        return cls._wrap(empty(shape, cls._device(device)))

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
        B, K = self._B, self._K
        into_data = B.float_into_data if K is Float else B.int_into_data if K is Int else B.bool_into_data
        return into_data(self._p)

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
    def _shape(self) -> tuple:
        """The backend's shape of the primitive (a tuple)."""
        B, K = self._B, self._K
        return (B.float_shape if K is Float else B.int_shape if K is Int else B.bool_shape)(self._p)

    def dims(self) -> list[int]:
        B, K = self._B, self._K   # `_shape` written out: dims is the most called query
        return list((B.float_shape if K is Float else B.int_shape if K is Int else B.bool_shape)(self._p))

    @property
    def shape(self) -> _Shape:
        return _Shape(self.dims())

    @property
    def ndim(self) -> int:
        return self._D

    def num_elements(self) -> int:
        return math.prod(self._shape())

    def device(self):
        B, K = self._B, self._K
        return (B.float_device if K is Float else B.int_device if K is Int else B.bool_device)(self._p)

    def _dtype(self) -> np.dtype:
        """The primitive's NumPy dtype (Float and Int tensors; the protocol
        has no `bool_dtype`)."""
        B, K = self._B, self._K
        return (B.float_dtype if K is Float else B.int_dtype if K is Int else unavailable("dtype", K))(self._p)

    @property
    def dtype(self) -> DType:
        if self._K is Bool:
            return DType(np.bool_)
        return DType(self._dtype())

    @property
    def kind(self) -> type:
        return self._K

    @property
    def backend(self) -> type[Backend]:
        """The backend class this tensor runs on (`NdArray`, `Autodiff[NdArray]`)."""
        return self._B

    def to_device(self, device):
        B, K = self._B, self._K
        to_device = B.float_to_device if K is Float else B.int_to_device if K is Int else B.bool_to_device
        return self._like(to_device(self._p, device))

    def clone(self):
        """The same tensor (primitives are never mutated, so nothing is copied)."""
        return self._like(self._p)
