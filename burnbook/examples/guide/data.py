"""The guide's data (the book's `src/data.rs`): MNIST items into batches.

`MnistBatcher(device, backend)` turns a list of `MnistItem`s (images of
pixel values 0..255, integer labels) into an `MnistBatch`: images
`[batch, 28, 28]` scaled to [0, 1] then normalised with the mean 0.1307 and
standard deviation 0.3081 of the MNIST training digits (the values of
PyTorch's MNIST example, as in the book), and Int targets `[batch]`::

    batcher_train = MnistBatcher(device, B)                  # Autodiff[NdArray]
    batcher_valid = MnistBatcher(device, B.InnerBackend)     # NdArray

Burn's batcher is generic over the backend (`MNISTBatcher::<B>::new`);
Python passes the backend as an argument. Left out, it is the one a config's
`init(device)` would pick (the autodiff backend over the device's).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from burnbook import Int, Tensor
from burnbook.nn import resolve_backend

__all__ = ["MnistBatch", "MnistBatcher", "MNIST_MEAN", "MNIST_STD", "normalize"]

MNIST_MEAN = 0.1307
MNIST_STD = 0.3081


def normalize(pixels: np.ndarray) -> np.ndarray:
    """Pixel values 0..255 -> zero mean, unit variance over MNIST (float32)."""
    return ((np.asarray(pixels, dtype=np.float32) / 255.0 - MNIST_MEAN) / MNIST_STD).astype(np.float32)


@dataclasses.dataclass
class MnistBatch:
    """Images `[batch, 28, 28]` (Float) and their digits `[batch]` (Int)."""

    images: Tensor
    targets: Tensor

    def __len__(self) -> int:
        return self.targets.dims()[0]


class MnistBatcher:
    """Builds an `MnistBatch` on `device` and `backend` from `MnistItem`s."""

    def __init__(self, device: Any = None, backend: type | None = None) -> None:
        self.backend = resolve_backend(device, backend)
        self.device = device if device is not None else self.backend.default_device()

    def batch(self, items: Sequence[Any]) -> MnistBatch:
        if len(items) == 0:
            raise ValueError("MnistBatcher.batch: no items to batch")
        # One array for the whole batch, then one tensor: the book builds a
        # tensor per item and concatenates them, which gives the same values.
        images = normalize(np.stack([np.asarray(item.image) for item in items]))
        targets = np.fromiter((int(item.label) for item in items), dtype=np.int64, count=len(items))
        return MnistBatch(
            images=Tensor[self.backend, 3].from_data(images, self.device),
            targets=Tensor[self.backend, 1, Int].from_data(targets, self.device),
        )

    def __repr__(self) -> str:
        return f"MnistBatcher(device={self.device}, backend={self.backend.name()!r})"
