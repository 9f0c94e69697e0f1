"""`Batcher` (Burn's trait) and the per-batch context a batcher may read.

A batcher turns a list of items into one batch: `batch(items) -> batch`,
for example MNIST items into an images tensor `[B, 28, 28]` and a targets
tensor `[B]`. Any object with a `batch(items)` method is a batcher; a plain
callable `items -> batch` is accepted too.

While the data loader runs a batcher (in the main process, a worker process
or a worker thread), `batch_info()` tells it which batch it is building:
epoch, batch index, worker. Its `rng` is a NumPy generator seeded by
`(loader seed, epoch, batch index)`, so random augmentation done with it is
the same whatever the number of workers, and after resuming at an epoch.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
from typing import Any, Callable, Iterator, Protocol, Sequence, TypeVar, runtime_checkable

import numpy as np

I = TypeVar("I", contravariant=True)
O = TypeVar("O", covariant=True)


@runtime_checkable
class Batcher(Protocol[I, O]):
    """Anything with `batch(items: list[I]) -> O`."""

    def batch(self, items: Sequence[I]) -> O: ...


def as_batch_fn(batcher: Any) -> Callable[[list], Any]:
    """`batcher.batch`, or `batcher` itself when it is a plain callable."""
    method = getattr(batcher, "batch", None)
    if callable(method):
        return method
    if callable(batcher):
        return batcher
    raise TypeError(f"a batcher needs a batch(items) method (or must be callable), got {type(batcher).__name__}")


@dataclasses.dataclass
class BatchInfo:
    """Which batch is being built: `epoch`, `index` (0-based, within the
    epoch), `worker_id` (None in the main process) of `num_workers`, and the
    loader's `seed` (0 when it does not shuffle)."""

    epoch: int
    index: int
    worker_id: int | None
    num_workers: int
    seed: int

    @functools.cached_property
    def rng(self) -> np.random.Generator:
        """A generator for this batch only, seeded by (seed, epoch, index)."""
        return np.random.default_rng([self.seed, self.epoch, self.index])


_CURRENT: contextvars.ContextVar[BatchInfo | None] = contextvars.ContextVar("burnbook_batch", default=None)


def batch_info() -> BatchInfo | None:
    """The batch being built by the calling batcher; None outside a data loader."""
    return _CURRENT.get()


def batch_rng() -> np.random.Generator:
    """`batch_info().rng` inside a data loader, else a freshly seeded generator."""
    info = _CURRENT.get()
    return info.rng if info is not None else np.random.default_rng()


@contextlib.contextmanager
def building(info: BatchInfo) -> Iterator[BatchInfo]:
    """Make `info` the current batch for the duration of the block."""
    token = _CURRENT.set(info)
    try:
        yield info
    finally:
        _CURRENT.reset(token)


def make_batch(dataset: Any, batch_fn: Callable[[list], Any], indices: Sequence[int], info: BatchInfo) -> Any:
    """Read the items at `indices` and batch them, with `info` current."""
    items = [dataset.get(i) for i in indices]
    with building(info):
        return batch_fn(items)
