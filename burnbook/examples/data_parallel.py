"""Data-parallel training of a small MNIST classifier with `DataParallel`:
the script of the book's "Training on many machines" chapter.

On one machine (a local Ray instance, started by the script)::

    python -m burnbook.examples.data_parallel --workers 2 artifacts/dp

On two machines, with burnbook[distributed] and the same data folder on
both (`BURNBOOK_DATA`)::

    # machine A (the head):
    ray start --head --port=6379 --num-cpus=2
    # machine B, with A's address:
    ray start --address=A_HOST:6379 --num-cpus=2
    # then on machine A:
    python -m burnbook.examples.data_parallel --address auto --workers 4 artifacts/dp
    # finally, on both machines:
    ray stop

The process that runs the script drives the training (rank 0's host): it
reads MNIST, shares out each batch, and writes the metrics and checkpoints
into the artifact folder on its own machine.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from typing import Any

from burnbook.backend import Autodiff, NdArray
from burnbook.data import DataLoaderBuilder, MnistDataset, PartialDataset
from burnbook.examples.guide.data import MnistBatch, MnistBatcher
from burnbook.module import Module
from burnbook.nn import Linear, LinearConfig, Relu
from burnbook.nn.loss import CrossEntropyLossConfig
from burnbook.optim import SgdConfig
from burnbook.train import (
    AccuracyMetric, ClassificationOutput, LearnerBuilder, LossMetric, TrainOutput,
)

__all__ = ["Mlp", "make_model", "loaders", "train", "main"]

B = Autodiff[NdArray]


class Mlp(Module):
    """28x28 pixels -> `hidden` (ReLU) -> 10 digits. No dropout, so any
    number of workers trains exactly the same weights."""

    fc1: Linear
    fc2: Linear
    activation: Relu

    def forward(self, images: Any) -> Any:
        batch = images.dims()[0]
        return self.fc2(self.activation(self.fc1(images.reshape([batch, 28 * 28]))))

    def forward_classification(self, images: Any, targets: Any) -> ClassificationOutput:
        output = self.forward(images)
        loss = CrossEntropyLossConfig().init(backend=type(output)._B).forward(output, targets)
        return ClassificationOutput(loss, output, targets)

    def train_step(self, batch: MnistBatch) -> TrainOutput:
        item = self.forward_classification(batch.images, batch.targets)
        return TrainOutput(self, item.loss.backward(), item)

    def valid_step(self, batch: MnistBatch) -> ClassificationOutput:
        return self.forward_classification(batch.images, batch.targets)


def make_model(hidden: int = 64, seed: int = 42) -> Mlp:
    B.seed(seed)
    return Mlp(fc1=LinearConfig(28 * 28, hidden).init(backend=B), fc2=LinearConfig(hidden, 10).init(backend=B),
               activation=Relu())


def loaders(train_items: int, valid_items: int, batch_size: int, seed: int = 42) -> tuple[Any, Any]:
    """MNIST's first `train_items` training digits (shuffled by `seed`) and
    first `valid_items` test digits."""
    train = PartialDataset(MnistDataset.train(), 0, train_items)
    valid = PartialDataset(MnistDataset.test(), 0, valid_items)
    return (DataLoaderBuilder(MnistBatcher(None, B)).batch_size(batch_size).shuffle(seed).build(train),
            DataLoaderBuilder(MnistBatcher(None, NdArray)).batch_size(batch_size).build(valid))


@dataclass
class Run:
    model: Any
    seconds: float
    learner: Any


def train(artifact_dir: str | os.PathLike, workers: int = 2, address: str | None = None, *, epochs: int = 1,
          train_items: int = 4096, valid_items: int = 512, batch_size: int = 128, learning_rate: float = 0.1,
          renderer: Any = None, seed: int = 42) -> Run:
    """Train the MLP on `workers` replicas (0: in this process, no Ray)."""
    from burnbook.train.distributed import DataParallel

    loader_train, loader_valid = loaders(train_items, valid_items, batch_size, seed)
    builder = (LearnerBuilder(artifact_dir)
               .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
               .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
               .num_epochs(epochs))
    if renderer is not None:
        builder = builder.renderer(renderer)
    if workers > 0:
        builder = builder.distributed(DataParallel(workers, address=address))
    learner = builder.build(make_model(seed=seed), SgdConfig().init(), learning_rate)
    start = time.perf_counter()
    model = learner.fit(loader_train, loader_valid)
    return Run(model, time.perf_counter() - start, learner)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("artifact_dir")
    parser.add_argument("--workers", type=int, default=2, help="model replicas (Ray worker processes)")
    parser.add_argument("--address", default=None,
                        help="None: a local Ray instance; 'auto': the cluster of `ray start`; ray://host:10001")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--items", type=int, default=4096, help="training digits")
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args(argv)
    run = train(args.artifact_dir, args.workers, args.address, epochs=args.epochs, train_items=args.items,
                batch_size=args.batch_size)
    print(f"trained {args.epochs} epoch(s) on {args.workers} worker(s) in {run.seconds:.1f} s; "
          f"artifacts in {args.artifact_dir}")


if __name__ == "__main__":
    main()
