"""Datasets (Burn's `burn::data::dataset`): the protocol, storage, lazy
transformations, and sources.

Sub-modules: `base` (Dataset), `in_memory`, `sqlite`, `transform`,
`vision` (MNIST), `source` (Hugging Face).
"""

from .base import Dataset, DatasetError
from .in_memory import InMemDataset, as_dataset
from .sqlite import SqliteDataset, SqliteDatasetWriter
from .transform import (ComposedDataset, MapperDataset, PartialDataset, SamplerDataset,
                        ShuffledDataset, WindowsDataset, set_epoch, split)

__all__ = [
    "Dataset", "DatasetError", "as_dataset", "InMemDataset", "SqliteDataset", "SqliteDatasetWriter",
    "SamplerDataset", "ShuffledDataset", "PartialDataset", "MapperDataset", "ComposedDataset",
    "WindowsDataset", "split", "set_epoch",
]
