"""The `Dataset` protocol (Burn's `Dataset<I>` trait) and its Python face.

A dataset is a fixed-length collection of items with random access in
(roughly) constant time. Burn's trait has two methods, `get(index) ->
Option<I>` and `len()`; here `get` returns `None` for an index out of range
(negative indices included: Burn's index is unsigned), and `len()` is a
method. Every `Dataset` also behaves as a Python sequence: `ds[i]` (negative
`i` counts from the end, `IndexError` out of range), `len(ds)` and
`for item in ds`.

A class need not inherit from `Dataset` to be used as one: any object with
`get(index)` and `len()` passes `isinstance(obj, Dataset)` and works in every
transformation and in the data loader. Plain Python lists are accepted where
a dataset is expected (`as_dataset`, in `in_memory.py`, wraps them in an
`InMemDataset`).
"""

from __future__ import annotations

import abc
import operator
from typing import Any, Generic, Iterator, TypeVar

I = TypeVar("I")


class DatasetError(ValueError):
    """A dataset file that cannot be read as one: damaged items, a table of
    the wrong shape, a foreign file. The message names the file and, where
    known, the split and the row."""


class Dataset(abc.ABC, Generic[I]):
    """Base class of datasets: subclasses implement `get` and `len`.

    `get(index)` -> the item, or `None` when `index` is not in `0..len()`.
    `len()` -> the number of items.
    """

    @abc.abstractmethod
    def get(self, index: int) -> I | None:
        """The item at `index`, or `None` when `index` is out of range."""

    @abc.abstractmethod
    def len(self) -> int:
        """The number of items."""

    def is_empty(self) -> bool:
        return self.len() == 0

    # -- the Python sequence protocol -------------------------------------------
    def __len__(self) -> int:
        return self.len()

    def __getitem__(self, index: int) -> I:
        if isinstance(index, slice):
            raise TypeError(
                f"{type(self).__name__} does not take slices; use "
                "PartialDataset(dataset, start, end) for a lazy view"
            )
        i = operator.index(index)
        n = self.len()
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"{type(self).__name__}: index {index} out of range for {n} items")
        return self.get(i)

    def __iter__(self) -> Iterator[I]:
        for i in range(self.len()):
            yield self.get(i)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(len={self.len()})"

    @classmethod
    def __subclasshook__(cls, other: type) -> Any:
        if cls is Dataset:
            if all(callable(getattr(other, m, None)) for m in ("get", "len")):
                return True
        return NotImplemented


def check_index(index: Any) -> int:
    """`index` as a Python int (NumPy integers accepted)."""
    return operator.index(index)
