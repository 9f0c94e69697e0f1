"""`DataLoader`: batches of a dataset, epoch after epoch, in a reproducible order.

One `iter(loader)` is one epoch (Burn's `dataloader.iter()`), returning a
`DataLoaderIterator` that knows its `progress()`. Epochs are numbered from 0
by the loader itself: the `k`-th `iter()` produces epoch `k`, unless
`set_epoch(k)` says which one comes next. That number decides everything
random about the epoch:

- with `shuffle(seed)`, epoch `k` visits the items in the order
  `np.random.default_rng([seed, k]).permutation(n)`: a new order each epoch,
  the same one in every run with that seed, and the same after resuming at
  epoch `k` (`set_epoch(k)`, or `load_state(state)` with a saved `state()`);
- datasets with a `set_epoch` method (`SamplerDataset`), anywhere inside
  the dataset, are told the epoch before it starts;
- `batch_info().rng` inside the batcher is seeded by (seed, epoch, batch).

Batches are `batch_size` consecutive items of that order; the last one may
be smaller (Burn's `FixBatchStrategy`). They come out in that order whatever
`num_workers` is.
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from typing import Any, Callable, Iterator

import numpy as np

from ..dataset.in_memory import as_dataset
from ..dataset.transform import set_epoch as _set_dataset_epoch
from .batcher import BatchInfo, as_batch_fn, make_batch
from .workers import ProcessWorkers, ThreadWorkers

WORKER_TYPES = ("process", "thread")


@dataclasses.dataclass
class Progress:
    """Burn's `Progress`: items handed out so far in the epoch, of the total."""

    items_processed: int
    items_total: int

    @property
    def fraction(self) -> float:
        return self.items_processed / self.items_total if self.items_total else 1.0


class DataLoader:
    """Batches of `dataset` made by `batcher`; build one with `DataLoaderBuilder`.

    `len(loader)` is the number of batches per epoch, `num_items()` the
    number of items. Iterate it once per epoch.
    """

    def __init__(self, dataset: Any, batcher: Any, batch_size: int = 1, seed: int | None = None,
                 num_workers: int = 0, worker_type: str = "process", start_method: str | None = None,
                 prefetch: int = 2) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if num_workers < 0:
            raise ValueError(f"num_workers must be >= 0, got {num_workers}")
        if worker_type not in WORKER_TYPES:
            raise ValueError(f"worker_type must be one of {WORKER_TYPES}, got {worker_type!r}")
        if prefetch < 1:
            raise ValueError(f"prefetch must be >= 1, got {prefetch}")
        if seed is not None and (not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ValueError(f"shuffle seed must be a non-negative int, got {seed!r}")
        self.dataset = as_dataset(dataset)
        self.batcher = batcher
        self.batch_fn: Callable[[list], Any] = as_batch_fn(batcher)
        self.batch_size = int(batch_size)
        self.seed = None if seed is None else int(seed)
        self.num_workers = int(num_workers)
        self.worker_type = worker_type
        self.start_method = start_method
        self.prefetch = int(prefetch)
        self._epoch = 0
        self._progress = Progress(0, self.num_items())

    # -- sizes -----------------------------------------------------------------
    def num_items(self) -> int:
        """Items per epoch (Burn's `num_items`)."""
        return self.dataset.len()

    def __len__(self) -> int:
        """Batches per epoch (the last one may be partial)."""
        return math.ceil(self.num_items() / self.batch_size)

    num_batches = __len__

    # -- epochs and resuming ---------------------------------------------------
    @property
    def epoch(self) -> int:
        """The epoch the next `iter()` produces."""
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Make the next `iter()` produce epoch `epoch` (to resume a run)."""
        if epoch < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch}")
        self._epoch = int(epoch)

    def state(self) -> dict:
        """What a checkpoint needs to reproduce the coming epochs."""
        return {"epoch": self._epoch, "seed": self.seed}

    def load_state(self, state: dict) -> None:
        """Resume from `state()`; refuses a state saved with another seed."""
        if state.get("seed") != self.seed:
            raise ValueError(
                f"data loader state was saved with shuffle seed {state.get('seed')!r}, "
                f"this loader has {self.seed!r}: the data order would differ")
        self.set_epoch(state["epoch"])

    def order(self, epoch: int) -> np.ndarray:
        """The item indices of epoch `epoch`, in the order they are batched."""
        n = self.num_items()
        if self.seed is None:
            return np.arange(n, dtype=np.int64)
        return np.random.default_rng([self.seed, int(epoch)]).permutation(n)

    # -- iteration -------------------------------------------------------------
    def iter(self) -> "DataLoaderIterator":
        """One epoch's iterator (Burn's `iter()`); advances `epoch`."""
        iterator = DataLoaderIterator(self, self._epoch)
        self._epoch += 1
        self._progress = iterator._progress
        return iterator

    def __iter__(self) -> "DataLoaderIterator":
        return self.iter()

    def progress(self) -> Progress:
        """Progress of the latest epoch started (0 of N before any)."""
        return dataclasses.replace(self._progress)

    def __repr__(self) -> str:
        return (f"DataLoader(items={self.num_items()}, batch_size={self.batch_size}, "
                f"batches={len(self)}, shuffle_seed={self.seed}, num_workers={self.num_workers}, "
                f"worker_type={self.worker_type!r}, next_epoch={self._epoch})")


class DataLoaderIterator:
    """The batches of one epoch, in order; `progress()` says how far it is.

    Workers (if any) start on the first `next()` and stop at the end of the
    epoch, on `close()`, on leaving a `with` block, or when the iterator is
    garbage-collected (breaking out of a `for` loop).
    """

    def __init__(self, loader: DataLoader, epoch: int) -> None:
        self.loader = loader
        self.epoch = epoch
        _set_dataset_epoch(loader.dataset, epoch)  # before any worker forks
        self._order = loader.order(epoch)
        self._num_batches = len(loader)
        self._next_submit = 0
        self._next_yield = 0
        self._progress = Progress(0, len(self._order))
        self._workers: ProcessWorkers | ThreadWorkers | None = None
        self._finalizer: weakref.finalize | None = None
        self.closed = False

    def _indices(self, batch: int) -> list[int]:
        size = self.loader.batch_size
        return self._order[batch * size:(batch + 1) * size].tolist()

    def _seed(self) -> int:
        return 0 if self.loader.seed is None else self.loader.seed

    def _start_workers(self) -> None:
        loader = self.loader
        n = min(loader.num_workers, self._num_batches)
        if loader.worker_type == "thread":
            workers = ThreadWorkers(n, loader.dataset, loader.batch_fn, self.epoch, self._seed())
        else:
            workers = ProcessWorkers(n, loader.dataset, loader.batch_fn, self.epoch, self._seed(),
                                     loader.start_method)
        self._workers = workers
        self._finalizer = weakref.finalize(self, workers.close)

    def __iter__(self) -> Iterator[Any]:
        return self

    def __next__(self) -> Any:
        if self.closed or self._next_yield >= self._num_batches:
            self.close()
            raise StopIteration
        index = self._next_yield
        indices = self._indices(index)
        try:
            if self.loader.num_workers == 0:
                info = BatchInfo(self.epoch, index, None, 0, self._seed())
                batch = make_batch(self.loader.dataset, self.loader.batch_fn, indices, info)
            else:
                if self._workers is None:
                    self._start_workers()
                workers = self._workers
                limit = min(self._num_batches, index + self.loader.prefetch * workers.n)
                while self._next_submit < limit:
                    workers.submit(self._next_submit, self._indices(self._next_submit))
                    self._next_submit += 1
                batch = workers.next_result()
        except BaseException:
            self.close()
            raise
        self._next_yield += 1
        self._progress.items_processed += len(indices)
        if self._next_yield >= self._num_batches:
            self.close()
        return batch

    next = __next__

    def progress(self) -> Progress:
        """Items handed out so far in this epoch, of the epoch's total."""
        return dataclasses.replace(self._progress)

    def worker_pids(self) -> list[int]:
        """Process ids of the running worker processes (empty when none)."""
        return [] if self._workers is None or self._workers.closed else list(self._workers.pids)

    def close(self) -> None:
        """Stop the workers now (idempotent); the iterator then yields nothing."""
        self.closed = True
        if self._finalizer is not None:
            self._finalizer()  # runs workers.close() once
        if self._workers is not None and not self._workers.closed:
            self._workers.close()  # finishes a close that a Ctrl-C cut short

    def __len__(self) -> int:
        return self._num_batches - self._next_yield

    def __enter__(self) -> "DataLoaderIterator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
