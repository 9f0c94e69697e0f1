"""A tiny classifier and synthetic, linearly separable data for the Learner
tests: fast (a few ms per epoch) and deterministic on Autodiff[NdArray]."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from burnbook import Int, Tensor
from burnbook.backend import Autodiff, NdArray
from burnbook.module import Module
from burnbook.nn import Linear, LinearConfig
from burnbook.nn.loss import CrossEntropyLossConfig
from burnbook.train import ClassificationOutput, TrainOutput

B = Autodiff[NdArray]
D_IN, CLASSES = 4, 3


@dataclass
class Batch:
    inputs: Any   # Tensor [batch, D_IN]
    targets: Any  # Tensor [batch] Int


class Classifier(Module):
    """One linear layer: logits = x W + b."""

    linear: Linear

    def forward(self, x: Tensor) -> Tensor:
        return self.linear(x)

    def forward_classification(self, inputs: Tensor, targets: Tensor) -> ClassificationOutput:
        output = self.forward(inputs)
        loss = CrossEntropyLossConfig().init(backend=type(output)._B).forward(output, targets)
        return ClassificationOutput(loss, output, targets)

    def train_step(self, batch: Batch) -> TrainOutput:
        item = self.forward_classification(batch.inputs, batch.targets)
        return TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch: Batch) -> ClassificationOutput:
        return self.forward_classification(batch.inputs, batch.targets)


def make_model(seed: int = 0) -> Classifier:
    B.seed(seed)
    return Classifier(linear=LinearConfig(D_IN, CLASSES).init(backend=B))


def make_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Points around three well separated centres."""
    rng = np.random.default_rng(seed)
    centres = np.array([[3, 0, 0, 0], [0, 3, 0, 0], [0, 0, 3, 0]], dtype=np.float32)
    labels = rng.integers(0, CLASSES, n)
    x = centres[labels] + rng.standard_normal((n, D_IN)).astype(np.float32)
    return x.astype(np.float32), labels.astype(np.int64)


def to_batch(x: np.ndarray, y: np.ndarray, backend: type = B) -> Batch:
    return Batch(Tensor[backend, 2].from_data(x), Tensor[backend, 1, Int].from_data(y))


def batches(x: np.ndarray, y: np.ndarray, batch_size: int, backend: type = B) -> list[Batch]:
    return [to_batch(x[i:i + batch_size], y[i:i + batch_size], backend) for i in range(0, len(x), batch_size)]


class ShuffledLoader:
    """A list-backed loader with `set_epoch`, seeded by (seed, epoch) as a
    real DataLoader does, and progress in items."""

    def __init__(self, x: np.ndarray, y: np.ndarray, batch_size: int, seed: int, backend: type = B) -> None:
        self.x, self.y, self.batch_size, self.seed, self.backend = x, y, batch_size, seed, backend
        self.epoch = 0
        self.done = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return -(-len(self.x) // self.batch_size)

    def progress(self) -> tuple[int, int]:
        return (self.done, len(self.x))

    def __iter__(self):
        order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.x))
        self.epoch += 1
        self.done = 0
        for i in range(0, len(order), self.batch_size):
            idx = order[i:i + self.batch_size]
            self.done += len(idx)
            yield to_batch(self.x[idx], self.y[idx], self.backend)


def weights(model: Module) -> dict[str, np.ndarray]:
    return {path: p.val().to_numpy().copy() for path, p in model.named_params()}
