"""`TensorData` and `Shape`: tensor contents on the host, backend-free."""

from __future__ import annotations

import numbers
import sys
from typing import Iterable, Sequence

import numpy as np


class ValueRangeError(OverflowError, ValueError):
    """A number does not fit the element type it is meant for (2**64 in an
    i64 tensor, NaN in an Int tensor). Both an `OverflowError` and a
    `ValueError`, so either `except` catches it."""


_I64_MIN, _I64_MAX = -2 ** 63, 2 ** 63 - 1


def int_scalar(value, op: str) -> int:
    """`value` as an i64 scalar: ints and integral floats; a fraction is a
    `TypeError`, a value beyond i64 (or NaN, inf) a `ValueRangeError`."""
    if isinstance(value, (float, np.floating)) and not float(value).is_integer():
        if not np.isfinite(value):
            raise ValueRangeError(f"{op}: an Int tensor (i64) has no value for the scalar {value}")
        raise TypeError(f"{op}: Int tensor with the non-integer scalar {value}; convert with .float() first")
    if not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: expected a number for an Int tensor, got {value!r} ({type(value).__name__})")
    v = int(value)
    if not _I64_MIN <= v <= _I64_MAX:
        raise ValueRangeError(f"{op}: the scalar {value} is outside the range of this Int tensor's "
                              f"i64 [{_I64_MIN}, {_I64_MAX}]; use a Float tensor for larger values")
    return v


def as_dim(value, op: str, arg: str = "shape", allow: tuple[int, ...] = ()) -> int:
    """`value` as a size: a non-negative Python or NumPy int (bool refused,
    it is almost always a mistake). `allow` lists sentinels such as -1."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: {arg} must be a non-negative int, got {value!r} ({type(value).__name__})")
    value = int(value)
    if value < 0 and value not in allow:
        hint = f" ({' or '.join(map(str, allow))} allowed)" if allow else ""
        raise ValueError(f"{op}: {arg} must be a non-negative int{hint}, got {value}")
    return value


def as_dims(shape, op: str, arg: str = "shape", allow: tuple[int, ...] = ()) -> list[int]:
    """A shape (a sequence of sizes, or one int) as a list of ints; floats,
    strings and negative sizes are refused with the offending value named."""
    if type(shape) is list or type(shape) is tuple:
        # The common case, checked in two C-level passes: plain non-negative
        # ints (bool is a subclass of int, not `int` itself, so it falls through).
        dims = list(shape)
        if all(type(d) is int for d in dims) and (not dims or min(dims) >= 0):
            return dims
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
        return [as_dim(shape, op, arg, allow)]
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Iterable):
        raise TypeError(f"{op}: {arg} must be a list of ints, got {shape!r} ({type(shape).__name__})")
    dims = list(shape)
    for i, d in enumerate(dims):
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{op}: {arg} {dims!r} holds {d!r} ({type(d).__name__}) at position {i}; sizes are ints")
        if d < 0 and d not in allow:
            hint = f" ({' or '.join(map(str, allow))} allowed)" if allow else ""
            raise ValueError(f"{op}: {arg} {[int(x) for x in dims]} has the negative size {int(d)} "
                             f"at position {i}{hint}")
    return [int(d) for d in dims]


class Shape:
    """A tensor's shape (Burn's `Shape`): `dims` is a list of sizes."""

    __slots__ = ("dims",)

    def __init__(self, *dims) -> None:
        if len(dims) == 1 and not isinstance(dims[0], (int, np.integer)):
            dims = dims[0]
        self.dims = as_dims(dims, "Shape")

    def num_elements(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    def num_dims(self) -> int:
        return len(self.dims)

    def __len__(self) -> int:
        return len(self.dims)

    def __iter__(self):
        return iter(self.dims)

    def __getitem__(self, i):
        return self.dims[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Shape):
            return self.dims == other.dims
        if isinstance(other, (list, tuple)):
            return self.dims == list(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self.dims))

    def __repr__(self) -> str:
        return f"Shape({self.dims})"

    def __str__(self) -> str:
        return str(self.dims)


class TensorData:
    """Tensor contents on the host: a flat list of values plus a shape.

    `TensorData(values, shape)` takes a flat sequence (or any nested list /
    NumPy array, whose shape is then checked against `shape`). The values are
    kept as a NumPy array, `.array`; `.value` gives the flat Python list.
    """

    __slots__ = ("array",)

    def __init__(self, values, shape: Sequence[int] | None = None) -> None:
        array = np.asarray(values)
        if array.dtype == object:
            raise TypeError("TensorData: values must be numbers or booleans, not mixed Python objects")
        if shape is not None:
            shape = tuple(as_dims(shape, "TensorData"))
            if array.size != int(np.prod(shape, dtype=np.int64)):
                raise ValueError(
                    f"TensorData: {array.size} values do not fill shape {list(shape)} "
                    f"({int(np.prod(shape, dtype=np.int64))} elements)"
                )
            array = array.reshape(shape)
        self.array = array

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> "TensorData":
        """Wrap a NumPy array (copied, so later edits to it do not leak in)."""
        data = cls.__new__(cls)
        data.array = np.array(array, copy=True)
        return data

    @classmethod
    def _wrap(cls, array: np.ndarray) -> "TensorData":
        data = cls.__new__(cls)
        data.array = array
        return data

    @property
    def shape(self) -> list[int]:
        return list(self.array.shape)

    @property
    def dtype(self):
        from .kind import DType

        return DType(self.array.dtype)

    @property
    def value(self) -> list:
        """The values as a flat Python list."""
        return self.array.reshape(-1).tolist()

    def to_numpy(self) -> np.ndarray:
        return self.array

    def tolist(self) -> list:
        return self.array.tolist()

    def convert(self, dtype) -> "TensorData":
        """The same values in another element type (Burn's `convert`)."""
        return TensorData._wrap(self.array.astype(dtype))

    def num_elements(self) -> int:
        return int(self.array.size)

    def __array__(self, dtype=None, copy=None):
        return self.array if dtype is None else self.array.astype(dtype)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorData):
            return NotImplemented
        return self.array.shape == other.array.shape and bool(np.array_equal(self.array, other.array))

    def assert_approx_eq(self, other: "TensorData", precision: int = 3) -> None:
        """Assert equal shapes and values equal to `precision` decimals (Burn's helper)."""
        if self.shape != other.shape:
            raise AssertionError(f"shapes differ: {self.shape} vs {other.shape}")
        np.testing.assert_allclose(self.array, other.array, rtol=0, atol=10.0 ** (-precision))

    def __repr__(self) -> str:
        from .display import format_float

        flat = self.array.reshape(-1)
        if self.array.dtype.kind == "f":
            values = "[" + ", ".join(format_float(v) for v in flat) + "]"
        else:
            values = str(flat.tolist())
        return f"TensorData(value={values}, shape={self.shape})"


def flatten_nested(values: Iterable) -> np.ndarray:
    """A NumPy array from nested Python lists, with a clear error when ragged.

    Ints too large for any NumPy integer (2**64) give an object array of
    Python numbers; `coerce_array` then converts or refuses them by kind."""
    try:
        array = np.array(values)
    except ValueError as err:
        if "inhomogeneous" in str(err):
            raise ValueError(f"tensor data is ragged (rows of different lengths): {err}") from None
        raise ValueError(f"tensor data cannot be read as numbers: {err}") from None
    if array.dtype == object:
        _check_numbers(array)
    return array


def _check_numbers(array: np.ndarray) -> None:
    for index, v in np.ndenumerate(array):
        if not isinstance(v, numbers.Number) or isinstance(v, complex):
            kind = "a sequence (the rows are ragged)" if isinstance(v, (list, tuple)) else type(v).__name__
            raise TypeError(f"tensor data holds {v!r}, {kind}, at index {list(index)}; "
                            "tensor data must be numbers or booleans")


def _first(array: np.ndarray, bad: np.ndarray) -> tuple:
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return array[index], list(index)


def coerce_array(array: np.ndarray, dtype, where: str) -> np.ndarray:
    """`array` converted to `dtype` (f32, i64, bool...), refusing what a cast
    would change silently: strings and other non-numbers for every dtype, and
    for integer dtypes NaN, inf and values outside the dtype's range (NumPy
    would give INT64_MIN for NaN and wrap 2**64-1 to -1). Finite floats in
    range are truncated toward zero, as Burn's `convert` does."""
    dtype = np.dtype(dtype)
    if array.dtype == dtype:
        return array
    if array.dtype == object:
        _check_numbers(array)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            for index, v in np.ndenumerate(array):
                if isinstance(v, (float, np.floating)) and not np.isfinite(v):
                    raise ValueRangeError(f"{where}: {v} at index {list(index)} has no {_name(dtype)} value")
                if not info.min <= int(v) <= info.max:
                    raise ValueRangeError(f"{where}: {v} at index {list(index)} is outside the range of "
                                          f"{_name(dtype)} [{info.min}, {info.max}]")
            return np.array([int(v) for v in array.reshape(-1)], dtype=dtype).reshape(array.shape)
        try:
            return np.array([float(v) for v in array.reshape(-1)], dtype=dtype).reshape(array.shape)
        except OverflowError:
            big = next(v for v in array.reshape(-1) if abs(v) > sys.float_info.max)
            raise ValueRangeError(f"{where}: {big} is too large for any float dtype") from None
    if array.dtype.kind not in "biuf":
        sample = array.reshape(-1)[0].item() if array.size else ""
        raise TypeError(f"{where}: cannot make {_name(dtype)} data from {array.dtype} values "
                        f"such as {sample!r}; pass numbers")
    if dtype.kind in "iu" and array.dtype.kind in "fiu" and array.size:
        info = np.iinfo(dtype)
        if array.dtype.kind == "f":
            bad = ~np.isfinite(array)
            if bad.any():
                v, index = _first(array, bad)
                raise ValueRangeError(f"{where}: {v} at index {index} has no {_name(dtype)} value")
            # float(max) + 1 is the power of two just past the range (2.0**63
            # for i64), exact in every float dtype.
            bad = (array < float(info.min)) | (array >= float(info.max) + 1)
        else:
            bad = (array < info.min) if np.iinfo(array.dtype).min < info.min else None
            if np.iinfo(array.dtype).max > info.max:
                over = array > info.max
                bad = over if bad is None else bad | over
        if bad is not None and bad.any():
            v, index = _first(array, bad)
            raise ValueRangeError(f"{where}: {v} at index {index} is outside the range of "
                                  f"{_name(dtype)} [{info.min}, {info.max}]")
    if dtype.kind == "f":
        with np.errstate(over="ignore"):  # f64 beyond f32's range becomes inf, as IEEE casts do
            return array.astype(dtype)
    return array.astype(dtype)


def _name(dtype: np.dtype) -> str:
    from .kind import DType

    return str(DType(dtype))
