"""The data-loader case's items and batcher: MNIST digits (real ones from the
data root when there are enough, else seeded random images) and a batcher
that augments them with NumPy work, the load two worker processes share."""

from __future__ import annotations

import os
import time

import numpy as np

LOADER_BATCH = 64
LOADER_SEED = 0


class AugmentingMnistBatcher:
    """The guide's MNIST batcher plus augmentation:
    a random rotation (+-15 degrees, bilinear, vectorised over the batch), a
    random shift (+-2 px), normalisation with MNIST's mean/std, Gaussian noise;
    the batch as `Tensor[NdArray, 3]` images and `Tensor[NdArray, 1, Int]`
    targets. Randomness comes from `batch_rng()`: every worker count builds
    the same batches."""

    def batch(self, items):
        from burnbook import Int, Tensor
        from burnbook.backend import NdArray
        from burnbook.data import batch_rng

        rng = batch_rng()
        images = np.stack([item.image for item in items])  # [B, 28, 28], 0..255
        labels = [item.label for item in items]
        b = len(images)
        angle = np.deg2rad(rng.uniform(-15, 15, size=b))[:, None, None]
        shift = rng.uniform(-2, 2, size=(b, 2, 1, 1))
        yy, xx = np.meshgrid(np.arange(28) - 13.5, np.arange(28) - 13.5, indexing="ij")
        cos, sin = np.cos(angle), np.sin(angle)
        src_y = cos * yy - sin * xx + 13.5 + shift[:, 0]
        src_x = sin * yy + cos * xx + 13.5 + shift[:, 1]
        y0 = np.floor(src_y).astype(np.int64)
        x0 = np.floor(src_x).astype(np.int64)
        wy, wx = src_y - y0, src_x - x0
        padded = np.pad(images, ((0, 0), (1, 2), (1, 2)))
        n = np.arange(b)[:, None, None]

        def at(y, x):
            return padded[n, np.clip(y + 1, 0, 30), np.clip(x + 1, 0, 30)]

        out = ((1 - wy) * (1 - wx) * at(y0, x0) + (1 - wy) * wx * at(y0, x0 + 1)
               + wy * (1 - wx) * at(y0 + 1, x0) + wy * wx * at(y0 + 1, x0 + 1))
        out = (out / 255.0 - 0.1307) / 0.3081 + rng.normal(0.0, 0.05, size=out.shape)
        return (Tensor[NdArray, 3].from_data(out.astype(np.float32)),
                Tensor[NdArray, 1, Int].from_ints(labels))


_DATASETS: dict = {}


def loader_dataset(items: int):
    """`items` MNIST items and a line saying where they came from: the real
    digits of the data root (`$BURNBOOK_DATA`, else burnbook's user cache;
    never downloaded) when there are enough of them, else seeded random
    28x28 images."""
    if items not in _DATASETS:
        from burnbook.data import MnistDataset, PartialDataset, data_root

        found, why = None, ""
        for split in ("train", "test"):
            try:
                ds = MnistDataset.new(split, download=False)
            except Exception as exc:
                why = f"{type(exc).__name__}"
                continue
            if ds.len() >= items:
                found = (PartialDataset(ds, 0, items),
                         f"{items:,} real MNIST digits ({split} split, {ds.folder})")
                break
            why = f"the {split} split holds only {ds.len()} items"
        if found is None:
            rng = np.random.default_rng(LOADER_SEED)
            images = rng.integers(0, 256, (items, 28, 28), dtype=np.uint8)
            labels = rng.integers(0, 10, items).astype(np.uint8)
            root = os.environ.get("BURNBOOK_DATA") or str(data_root())
            found = (MnistDataset(images, labels, "random"),
                     f"{items:,} seeded random 28x28 images (no MNIST under {root}: {why})")
        _DATASETS[items] = found
    return _DATASETS[items]


def probe_work(dataset, batches: int, offset: int) -> float:
    """Seconds to build `batches` batches with the augmenting batcher, in this process."""
    batcher = AugmentingMnistBatcher()
    n = dataset.len()
    start = time.perf_counter()
    for b in range(offset, offset + batches):
        batcher.batch([dataset.get((b * LOADER_BATCH + i) % n) for i in range(LOADER_BATCH)])
    return time.perf_counter() - start
