"""Lazy dataset transformations (Burn's `dataset::transform`).

None of these copies or reads items when built: they keep a reference to
the wrapped dataset and, at most, an array of indices. Items are read, and
mappers called, only by `get`.

| class | what `get(i)` returns |
| --- | --- |
| `SamplerDataset(ds, size, with_replacement=True, seed=None)` | a sampled item of `ds` |
| `ShuffledDataset(ds, seed=None)` | `ds[perm[i]]`, `perm` a seeded permutation |
| `PartialDataset(ds, start, end)` | `ds[start + i]` |
| `MapperDataset(ds, mapper)` | `mapper(ds[i])` |
| `ComposedDataset([ds1, ds2, ...])` | item `i` of the concatenation |
| `WindowsDataset(ds, size)` | `[ds[i], ..., ds[i + size - 1]]` |

Randomness is NumPy's `default_rng` (PCG64) seeded explicitly, so a seed
gives the same indices on every platform. A `seed=None` draws fresh OS
entropy once, at construction, and keeps it as `.seed` (print it to
reproduce the run).
"""

from __future__ import annotations

import bisect
import math
from typing import Any, Callable, Sequence

import numpy as np

from .base import Dataset
from .in_memory import as_dataset


def _entropy_seed(seed: int | None) -> int:
    if seed is None:
        return int(np.random.SeedSequence().entropy % (1 << 63))
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
    return int(seed)


class SamplerDataset(Dataset):
    """`size` items drawn from `dataset`: a dataset as a distribution.

    With replacement (the default, as in Burn) every index is drawn
    uniformly; without, the indices are successive random permutations of
    the dataset (each item once before any item twice), so `size` may exceed
    the dataset's length either way.

    The draw is redone for each epoch: the data loader calls
    `set_epoch(k)` on the datasets it wraps, and epoch `k` uses the RNG
    seeded by `(seed, k)`. So each epoch sees a different sample (as Burn's
    sampler, which draws on every `get`), yet a seed reproduces every epoch,
    including after resuming at epoch `k`.
    """

    def __init__(self, dataset: Any, size: int, with_replacement: bool = True,
                 seed: int | None = None) -> None:
        self.dataset = as_dataset(dataset)
        if size < 0:
            raise ValueError(f"SamplerDataset: size must be >= 0, got {size}")
        if size > 0 and self.dataset.len() == 0:
            raise ValueError("SamplerDataset: cannot sample from an empty dataset")
        self.size = int(size)
        self.with_replacement = bool(with_replacement)
        self.seed = _entropy_seed(seed)
        self.epoch = -1
        self.set_epoch(0)

    @classmethod
    def without_replacement(cls, dataset: Any, size: int, seed: int | None = None) -> "SamplerDataset":
        """Burn's `SamplerDataset::new_without_replacement`."""
        return cls(dataset, size, with_replacement=False, seed=seed)

    def set_epoch(self, epoch: int) -> None:
        """Draw the sample of epoch `epoch` (the RNG seeded by `(seed, epoch)`)."""
        if epoch == self.epoch:
            return
        n = self.dataset.len()
        rng = np.random.default_rng([self.seed, int(epoch)])
        if self.size == 0:
            indices = np.empty(0, dtype=np.int64)
        elif self.with_replacement:
            indices = rng.integers(0, n, size=self.size, dtype=np.int64)
        else:
            rounds = math.ceil(self.size / n)
            indices = np.concatenate([rng.permutation(n) for _ in range(rounds)])[: self.size]
        self.indices = indices
        self.epoch = int(epoch)

    def get(self, index: int) -> Any:
        if 0 <= index < self.size:
            return self.dataset.get(int(self.indices[index]))
        return None

    def len(self) -> int:
        return self.size


class ShuffledDataset(Dataset):
    """The items of `dataset` in a fixed random order (a seeded permutation).

    The order never changes once built (shuffle before splitting into
    train/test and the split stays clean); the data loader's `shuffle(seed)`
    is the one that reshuffles every epoch.
    """

    def __init__(self, dataset: Any, seed: int | None = None) -> None:
        self.dataset = as_dataset(dataset)
        self.seed = _entropy_seed(seed)
        self.indices = np.random.default_rng(self.seed).permutation(self.dataset.len())

    @classmethod
    def with_seed(cls, dataset: Any, seed: int) -> "ShuffledDataset":
        """Burn's `ShuffledDataset::with_seed`."""
        return cls(dataset, seed)

    def get(self, index: int) -> Any:
        if 0 <= index < len(self.indices):
            return self.dataset.get(int(self.indices[index]))
        return None

    def len(self) -> int:
        return len(self.indices)


class PartialDataset(Dataset):
    """The items `start..end` of `dataset` (end excluded, clamped to its
    length): a view for train/valid/test splits."""

    def __init__(self, dataset: Any, start: int, end: int) -> None:
        self.dataset = as_dataset(dataset)
        if not 0 <= start <= end:
            raise ValueError(f"PartialDataset: need 0 <= start <= end, got start={start}, end={end}")
        self.start = int(start)
        self.end = int(min(end, self.dataset.len()))

    @staticmethod
    def split(dataset: Any, num: int) -> list["PartialDataset"]:
        """`num` consecutive views covering `dataset`, their lengths differing
        by at most one (the first `len % num` views get the extra item;
        Burn gives the whole remainder to the last view)."""
        dataset = as_dataset(dataset)
        if num < 1:
            raise ValueError(f"split: num must be >= 1, got {num}")
        n = dataset.len()
        base, extra = divmod(n, num)
        parts, start = [], 0
        for k in range(num):
            end = start + base + (1 if k < extra else 0)
            parts.append(PartialDataset(dataset, start, end))
            start = end
        return parts

    def get(self, index: int) -> Any:
        if 0 <= index < self.end - self.start:
            return self.dataset.get(self.start + index)
        return None

    def len(self) -> int:
        return max(self.end - self.start, 0)


def split(dataset: Any, num: int) -> list[PartialDataset]:
    """`PartialDataset.split(dataset, num)`."""
    return PartialDataset.split(dataset, num)


class MapperDataset(Dataset):
    """`mapper` applied to each item, when it is read (never before).

    `mapper` is a callable `item -> new_item`, or an object with
    `map(item)` (Burn's `Mapper` trait).
    """

    def __init__(self, dataset: Any, mapper: Callable[[Any], Any] | Any) -> None:
        self.dataset = as_dataset(dataset)
        if hasattr(mapper, "map") and callable(mapper.map):
            self._fn = mapper.map
        elif callable(mapper):
            self._fn = mapper
        else:
            raise TypeError(f"MapperDataset: mapper must be callable or have map(item), got {type(mapper).__name__}")
        self.mapper = mapper

    def get(self, index: int) -> Any:
        item = self.dataset.get(index)
        return None if item is None else self._fn(item)

    def len(self) -> int:
        return self.dataset.len()


class ComposedDataset(Dataset):
    """The datasets one after the other (their lengths read at construction)."""

    def __init__(self, datasets: Sequence[Any]) -> None:
        self.datasets = [as_dataset(d) for d in datasets]
        self.offsets: list[int] = []
        total = 0
        for d in self.datasets:
            self.offsets.append(total)
            total += d.len()
        self._len = total

    def get(self, index: int) -> Any:
        if not 0 <= index < self._len:
            return None
        # The last dataset starting at or before `index` (never an empty one:
        # an empty dataset shares its offset with the next).
        k = bisect.bisect_right(self.offsets, index) - 1
        return self.datasets[k].get(index - self.offsets[k])

    def len(self) -> int:
        return self._len


class WindowsDataset(Dataset):
    """Sliding windows of `size` consecutive items (Burn's `WindowsDataset`):
    item `i` is the list `[ds[i], ..., ds[i + size - 1]]`."""

    def __init__(self, dataset: Any, size: int) -> None:
        if size < 1:
            raise ValueError(f"WindowsDataset: size must be >= 1, got {size}")
        self.dataset = as_dataset(dataset)
        self.size = int(size)

    def get(self, index: int) -> list | None:
        if not 0 <= index < self.len():
            return None
        return [self.dataset.get(index + k) for k in range(self.size)]

    def len(self) -> int:
        return max(self.dataset.len() - self.size + 1, 0)


def set_epoch(dataset: Any, epoch: int) -> None:
    """Call `set_epoch(epoch)` on `dataset` and on every dataset it wraps
    (through `.dataset` and `.datasets`), as the data loader does at the
    start of each epoch."""
    seen: set[int] = set()
    stack = [dataset]
    while stack:
        d = stack.pop()
        if id(d) in seen:
            continue
        seen.add(id(d))
        hook = getattr(d, "set_epoch", None)
        if callable(hook):
            hook(epoch)
        inner = getattr(d, "dataset", None)
        if inner is not None:
            stack.append(inner)
        stack.extend(getattr(d, "datasets", None) or ())

