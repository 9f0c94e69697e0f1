"""`DataLoaderBuilder`: Burn's builder for data loaders.

```
loader = (DataLoaderBuilder(batcher)
          .batch_size(64)
          .shuffle(42)
          .num_workers(2)
          .build(dataset))
for epoch in range(num_epochs):
    for batch in loader: ...
```

Defaults: batch size 1, no shuffling (dataset order), no workers (batches
built in the calling thread). `num_workers(n)` uses `n` worker processes
(`worker_type("thread")` for threads instead; see `workers.py` for when
each is right). Each method returns the builder, for chaining.
"""

from __future__ import annotations

from typing import Any

from .loader import WORKER_TYPES, DataLoader


class DataLoaderBuilder:
    """Configures and builds a `DataLoader` around `batcher`."""

    def __init__(self, batcher: Any) -> None:
        self._batcher = batcher
        self._batch_size = 1
        self._seed: int | None = None
        self._num_workers = 0
        self._worker_type = "process"
        self._start_method: str | None = None
        self._prefetch = 2

    def batch_size(self, batch_size: int) -> "DataLoaderBuilder":
        """Items per batch."""
        self._batch_size = batch_size
        return self

    def shuffle(self, seed: int) -> "DataLoaderBuilder":
        """Shuffle every epoch, reproducibly: epoch k's order is derived from (seed, k)."""
        self._seed = seed
        return self

    def num_workers(self, num_workers: int) -> "DataLoaderBuilder":
        """Build batches in `num_workers` parallel workers (0: in the caller)."""
        self._num_workers = num_workers
        return self

    def worker_type(self, worker_type: str) -> "DataLoaderBuilder":
        """'process' (default: true parallelism) or 'thread' (no pickling)."""
        if worker_type not in WORKER_TYPES:
            raise ValueError(f"worker_type must be one of {WORKER_TYPES}, got {worker_type!r}")
        self._worker_type = worker_type
        return self

    def start_method(self, method: str) -> "DataLoaderBuilder":
        """multiprocessing start method for worker processes ('fork', 'spawn',
        'forkserver'); default 'fork' on Linux, 'spawn' elsewhere."""
        self._start_method = method
        return self

    def prefetch(self, batches_per_worker: int) -> "DataLoaderBuilder":
        """Batches each worker may build ahead of the consumer (default 2)."""
        self._prefetch = batches_per_worker
        return self

    def build(self, dataset: Any) -> DataLoader:
        """The data loader over `dataset` (a dataset or a list)."""
        return DataLoader(dataset, self._batcher, batch_size=self._batch_size, seed=self._seed,
                          num_workers=self._num_workers, worker_type=self._worker_type,
                          start_method=self._start_method, prefetch=self._prefetch)
