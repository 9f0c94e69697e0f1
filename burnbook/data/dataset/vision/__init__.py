"""Vision datasets: MNIST (Burn's `dataset::vision`)."""

from .idx import IdxError, read_idx, write_idx
from .mnist import MNISTDataset, MNISTItem, MnistDataset, MnistItem

__all__ = ["MnistDataset", "MnistItem", "MNISTDataset", "MNISTItem", "IdxError", "read_idx", "write_idx"]
