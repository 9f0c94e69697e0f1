"""Data loader throughput with 0 vs N worker processes on a batcher doing
real NumPy work (not a test; run it by hand):

    BURNBOOK_DATA=../shared/data .venv/bin/python tests/data/bench_loader.py [workers...]

The batcher mirrors the guide's MNIST batcher plus augmentation: a random
rotation (+-15 degrees, bilinear, vectorised over the batch), a random
shift (+-2 px), normalisation with MNIST's mean/std, Gaussian noise, and
the batch as `Tensor[NdArray, 3]` images and `Tensor[NdArray, 1, Int]`
targets. Randomness comes from `batch_rng()`, so every worker count
produces the same batches.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from burnbook import Int, Tensor
from burnbook.backend import NdArray
from burnbook.data import DataLoaderBuilder, MnistDataset, batch_rng


class AugmentingMnistBatcher:
    def batch(self, items):
        rng = batch_rng()
        images = np.stack([item.image for item in items])  # [B, 28, 28] 0..255
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


def epoch_time(dataset, workers: int, batch_size: int = 64) -> tuple[float, float]:
    loader = (DataLoaderBuilder(AugmentingMnistBatcher()).batch_size(batch_size).shuffle(0)
              .num_workers(workers).build(dataset))
    start = time.perf_counter()
    checksum = 0.0
    for images, _ in loader:
        checksum += float(images.to_numpy()[0, 14, 14])
    return time.perf_counter() - start, checksum


def main() -> None:
    counts = [int(a) for a in sys.argv[1:]] or [0, 2]
    dataset = MnistDataset.train()
    epoch_time(dataset, 0)  # warm up
    results = {}
    for workers in counts:
        runs = [epoch_time(dataset, workers) for _ in range(3)]
        best = min(t for t, _ in runs)
        results[workers] = best
        print(f"workers={workers}: {best:.3f} s/epoch ({dataset.len() / best:,.0f} images/s), "
              f"checksum {runs[0][1]:.4f}")
    base = results.get(0)
    if base:
        for workers, t in results.items():
            if workers:
                print(f"speedup {workers} workers vs 0: {base / t:.2f}x")


if __name__ == "__main__":
    main()
