"""Data loading (Burn's `burn::data::dataloader`): `Batcher`,
`DataLoaderBuilder`, `DataLoader`, its iterator and `Progress`."""

from .batcher import Batcher, BatchInfo, batch_info, batch_rng
from .builder import DataLoaderBuilder
from .loader import DataLoader, DataLoaderIterator, Progress
from .workers import DataLoaderWorkerError

__all__ = [
    "Batcher", "BatchInfo", "batch_info", "batch_rng", "DataLoaderBuilder", "DataLoader",
    "DataLoaderIterator", "Progress", "DataLoaderWorkerError",
]
