"""Run by test_resume.py in a subprocess: train the tiny classifier, with
dropout in front of its linear layer, using Adam, an exponential
learning-rate schedule and a shuffling DataLoader.

    python -m tests.train.resume_script ARTIFACT_DIR OUT.npz full
    python -m tests.train.resume_script ARTIFACT_DIR OUT.npz crash   # SIGKILLs itself in epoch 3
    python -m tests.train.resume_script ARTIFACT_DIR OUT.npz resume 2

writes the final weights to OUT.npz (not in crash mode, which never ends).
"""

from __future__ import annotations

import os
import signal
import sys

import numpy as np

from burnbook.backend import NdArray
from burnbook.data import DataLoaderBuilder, InMemDataset
from burnbook.optim import AdamConfig, ExponentialLrSchedulerConfig
from burnbook.train import AccuracyMetric, LearnerBuilder, LearningRateMetric, LossMetric, MetricsRendererBase

from burnbook import Tensor
from burnbook.nn import Dropout, DropoutConfig, LinearConfig

from .helpers import B, D_IN, CLASSES, Classifier, make_data, to_batch, weights

EPOCHS = 4


class DropoutClassifier(Classifier):
    """The tiny classifier with dropout on its inputs: its training draws
    from the backend's random generator, which a checkpoint must restore."""

    dropout: Dropout

    def forward(self, x: Tensor) -> Tensor:
        return self.linear(self.dropout(x))


def make_model(seed: int) -> DropoutClassifier:
    B.seed(seed)
    return DropoutClassifier(linear=LinearConfig(D_IN, CLASSES).init(backend=B), dropout=DropoutConfig(0.3).init())


class Batcher:
    def __init__(self, backend: type) -> None:
        self.backend = backend

    def batch(self, items: list) -> object:
        return to_batch(np.stack([x for x, _ in items]), np.array([y for _, y in items]), self.backend)


class CrashIn(MetricsRendererBase):
    """Kills the process, without any cleanup, at an iteration of an epoch."""

    def __init__(self, epoch: int, iteration: int) -> None:
        self.epoch, self.iteration = epoch, iteration

    def render_train(self, progress) -> None:
        if (progress.epoch, progress.iteration) == (self.epoch, self.iteration):
            sys.stdout.flush()
            if hasattr(signal, "SIGKILL"):
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(9)


def main(directory: str, out: str, mode: str, epoch: int | None = None) -> None:
    x, y = make_data(384, 1)
    xv, yv = make_data(96, 2)
    train = DataLoaderBuilder(Batcher(B)).batch_size(32).shuffle(11).build(InMemDataset(list(zip(x, y))))
    valid = DataLoaderBuilder(Batcher(NdArray)).batch_size(48).build(InMemDataset(list(zip(xv, yv))))
    builder = (LearnerBuilder(directory)
               .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
               .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
               .metric_train_numeric(LearningRateMetric())
               .num_epochs(EPOCHS)
               .renderer(CrashIn(3, 5) if mode == "crash" else MetricsRendererBase()))
    if mode == "resume":
        builder = builder.checkpoint(epoch)
    model = make_model(seed=123 if mode == "resume" else 0)  # resuming must not depend on the init
    scheduler = ExponentialLrSchedulerConfig(initial_lr=0.05, gamma=0.97).init()
    trained = builder.build(model, AdamConfig().init(), scheduler).fit(train, valid)
    np.savez(out, **weights(trained))


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0], args[1], args[2], int(args[3]) if len(args) > 3 else None)
