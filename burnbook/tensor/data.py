"""`TensorData` and `Shape`: tensor contents on the host, backend-free."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np


class Shape:
    """A tensor's shape (Burn's `Shape`): `dims` is a list of sizes."""

    __slots__ = ("dims",)

    def __init__(self, *dims) -> None:
        if len(dims) == 1 and not isinstance(dims[0], (int, np.integer)):
            dims = tuple(dims[0])
        self.dims = [int(d) for d in dims]

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
            shape = tuple(int(s) for s in shape)
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
    """A NumPy array from nested Python lists, with a clear error when ragged."""
    try:
        array = np.array(values)
    except ValueError as err:
        raise ValueError(f"tensor data is ragged (rows of different lengths): {err}") from None
    if array.dtype == object:
        raise ValueError("tensor data is ragged (rows of different lengths) or holds non-numbers")
    return array
