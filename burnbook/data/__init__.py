"""Data: datasets, lazy transformations, storage, sources and the data loader.

Mirrors Burn's `burn::data` (the book's Dataset chapter and the guide's Data
section):

```
from burnbook.data import DataLoaderBuilder, MnistDataset, ShuffledDataset

train = MnistDataset.train()                 # MnistItem(image [28, 28] f32, label)
loader = DataLoaderBuilder(batcher).batch_size(64).shuffle(42).num_workers(2).build(train)
for batch in loader: ...                     # one epoch
```

Sub-packages: `dataset` (protocol, storage, transforms, `vision`,
`source`), `dataloader`, and `download` (data folders, checksums).
"""

from .dataset import (ComposedDataset, Dataset, DatasetError, InMemDataset, MapperDataset,
                      PartialDataset, SamplerDataset, ShuffledDataset, SqliteDataset,
                      SqliteDatasetWriter, WindowsDataset, as_dataset, split)
from .dataset.source import HuggingfaceDatasetLoader
from .dataset.vision import MNISTDataset, MNISTItem, MnistDataset, MnistItem
from .dataloader import (Batcher, BatchInfo, DataLoader, DataLoaderBuilder, DataLoaderIterator,
                         DataLoaderWorkerError, Progress, batch_info, batch_rng)
from .download import ChecksumError, DataFolderError, DatasetNotFoundError, DownloadError, data_root

__all__ = [
    "Dataset", "DatasetError", "as_dataset", "InMemDataset", "SqliteDataset", "SqliteDatasetWriter",
    "SamplerDataset", "ShuffledDataset", "PartialDataset", "MapperDataset", "ComposedDataset",
    "WindowsDataset", "split",
    "MnistDataset", "MnistItem", "MNISTDataset", "MNISTItem", "HuggingfaceDatasetLoader",
    "Batcher", "BatchInfo", "batch_info", "batch_rng", "DataLoaderBuilder", "DataLoader",
    "DataLoaderIterator", "Progress", "DataLoaderWorkerError",
    "ChecksumError", "DataFolderError", "DatasetNotFoundError", "DownloadError", "data_root",
]
