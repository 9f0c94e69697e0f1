"""The guide's training (the book's `src/training.rs`).

`train(artifact_dir, config, device)` does what the book's `train` does:
saves `config.json`, seeds the backend, builds the two data loaders (the
MNIST test split serves as the validation set, as in the book), registers
accuracy and loss for training and validation, checkpoints with
`CompactRecorder`, fits, and saves the trained model as `model.mpk`::

    config = TrainingConfig(ModelConfig(10, 512), AdamConfig(),
                            num_epochs=3, learning_rate=1e-3)
    model = train("/tmp/guide", config, device)

`TrainingConfig`'s defaults are the book's (10 epochs, batch 64, 4 workers,
seed 42, learning rate 1e-4, sized for the 60,000 digits of the full
training set). The notebook and `python -m burnbook.examples.guide` use
fewer epochs and a larger learning rate, which suit the 8,000 digits of the
offline split.

Beyond the book, `train` accepts keyword arguments that a test, a notebook
or the command line need: other datasets (`dataset_train`, `dataset_valid`,
e.g. a `PartialDataset` of the first N digits), the backend (`backend`,
default: the autodiff backend over the device's) and the `renderer`
(default: chosen by the Learner). `evaluate(model, dataset, device)` gives
the exact accuracy of a model on a dataset.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from burnbook.config import config
from burnbook.data import DataLoaderBuilder, MnistDataset
from burnbook.nn import resolve_backend
from burnbook.optim import AdamConfig
from burnbook.record import CompactRecorder
from burnbook.train import AccuracyMetric, LearnerBuilder, LossMetric
from .data import MnistBatcher
from .model import Model, ModelConfig

__all__ = ["TrainingConfig", "train", "evaluate", "Evaluation"]


@config
class TrainingConfig:
    """Everything a training run depends on, saved as `config.json`."""

    model: ModelConfig
    optimizer: AdamConfig
    num_epochs: int = 10
    batch_size: int = 64
    num_workers: int = 4
    seed: int = 42
    learning_rate: float = 1.0e-4


def create_artifact_dir(artifact_dir: str | os.PathLike) -> Path:
    """The artifact folder, created if needed (the book removes an old one
    first; here the files of an earlier run in it are overwritten, and the
    caller decides whether to start from an empty folder)."""
    path = Path(artifact_dir)
    path.mkdir(parents=True, exist_ok=True)
    return path


def train(artifact_dir: str | os.PathLike, config: TrainingConfig, device: Any = None, *,
          backend: type | None = None, dataset_train: Any = None, dataset_valid: Any = None,
          renderer: Any = None) -> Model:
    """Train the guide's model; returns it (on the autodiff backend).

    Writes into `artifact_dir`: `config.json`, the Learner's artifacts
    (`experiment.log`, `checkpoint/`, `train/`, `valid/`) and the trained
    weights `model.mpk` (CompactRecorder: named MessagePack, half precision).
    """
    directory = create_artifact_dir(artifact_dir)
    config.save(directory / "config.json")

    B = resolve_backend(device, backend)
    B.seed(config.seed)

    batcher_train = MnistBatcher(device, B)
    # Validation runs on `model.valid()`: the inner backend, no autodiff.
    batcher_valid = MnistBatcher(device, B.InnerBackend)

    dataset_train = MnistDataset.train() if dataset_train is None else dataset_train
    dataset_valid = MnistDataset.test() if dataset_valid is None else dataset_valid
    dataloader_train = (DataLoaderBuilder(batcher_train)
                        .batch_size(config.batch_size)
                        .shuffle(config.seed)
                        .num_workers(config.num_workers)
                        .build(dataset_train))
    dataloader_test = (DataLoaderBuilder(batcher_valid)
                       .batch_size(config.batch_size)
                       .shuffle(config.seed)
                       .num_workers(config.num_workers)
                       .build(dataset_valid))

    builder = (LearnerBuilder(directory)
               .metric_train_numeric(AccuracyMetric())
               .metric_valid_numeric(AccuracyMetric())
               .metric_train_numeric(LossMetric())
               .metric_valid_numeric(LossMetric())
               .with_file_checkpointer(CompactRecorder())
               .num_epochs(config.num_epochs))
    if device is not None:
        builder = builder.devices([device])
    if renderer is not None:
        builder = builder.renderer(renderer)
    learner = builder.build(config.model.init(device, B), config.optimizer.init(), config.learning_rate)

    model_trained = learner.fit(dataloader_train, dataloader_test)

    model_trained.save_file(directory / "model", CompactRecorder())
    return model_trained


class Evaluation:
    """The result of `evaluate`: `correct` of `total` digits, and the mean loss."""

    def __init__(self, correct: int, total: int, loss: float) -> None:
        self.correct, self.total, self.loss = correct, total, loss

    @property
    def accuracy(self) -> float:
        """In percent."""
        return 100.0 * self.correct / self.total if self.total else float("nan")

    def __repr__(self) -> str:
        return (f"Evaluation(accuracy={self.accuracy:.2f} %, correct={self.correct}, total={self.total}, "
                f"loss={self.loss:.4f})")


def evaluate(model: Model, dataset: Any = None, device: Any = None, batch_size: int = 256) -> Evaluation:
    """Exact accuracy (correct / total) and mean loss of `model` on
    `dataset` (default: the MNIST test split), on `model.valid()`.

    (The Learner's epoch value of a metric is the mean of its per-batch
    values, which weighs a smaller last batch as much as a full one; this
    counts every digit once.)"""
    dataset = MnistDataset.test() if dataset is None else dataset
    model_valid = model.valid()
    backend = model_valid.linear2.weight.val().backend
    loader = DataLoaderBuilder(MnistBatcher(device, backend)).batch_size(batch_size).build(dataset)
    correct, total, loss_sum = 0, 0, 0.0
    for batch in loader:
        item = model_valid.valid_step(batch)
        predicted = np.asarray(item.output).argmax(axis=1)
        targets = np.asarray(item.targets)
        correct += int((predicted == targets).sum())
        total += len(targets)
        loss_sum += float(item.loss.into_scalar()) * len(targets)
    return Evaluation(correct, total, loss_sum / total if total else float("nan"))
