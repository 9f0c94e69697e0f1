"""`python -m burnbook.examples.guide`: train the guide's model from a
terminal, print the validation accuracy, and run inference on one digit
(the book's `src/main.rs`).

    python -m burnbook.examples.guide --epochs 3
    python -m burnbook.examples.guide --epochs 1 --limit-train 512
    python -m burnbook.examples.guide --backend fusion --num-workers 0   # on Autodiff[Fusion[Taichi]]

MNIST comes from `$BURNBOOK_DATA` (a folder holding `mnist/` or
`mnist-offline/`), else from the user cache folder, where it is downloaded.
Progress bars go to stderr; the results to stdout. The defaults (3 epochs,
learning rate 2e-3) reach about 97 % on the 2,000 test digits of the offline
split; the book's own defaults (10 epochs, 1e-4) suit the full 60,000.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

from burnbook.backend import Autodiff, NdArray
from burnbook.data import DatasetNotFoundError, MnistDataset, PartialDataset
from burnbook.optim import AdamConfig
from .inference import infer
from .model import ModelConfig
from .training import TrainingConfig, evaluate, train


def _taichi(fused: bool) -> type:
    from burnbook.backend import Fusion, Taichi

    return Autodiff[Fusion[Taichi]] if fused else Autodiff[Taichi]


BACKENDS = {"ndarray": lambda: Autodiff[NdArray], "taichi": lambda: _taichi(False), "fusion": lambda: _taichi(True)}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m burnbook.examples.guide",
                                     description="Train the Burn Book guide's CNN on MNIST.")
    parser.add_argument("--epochs", type=int, default=3, help="training epochs (default 3)")
    parser.add_argument("--batch-size", type=int, default=64, help="items per batch (default 64)")
    parser.add_argument("--limit-train", type=int, default=None, metavar="N",
                        help="train on the first N training digits only")
    parser.add_argument("--artifact-dir", default=None,
                        help="where to write the artifacts (default: a new temporary folder)")
    parser.add_argument("--lr", type=float, default=2e-3, help="Adam's learning rate (default 2e-3)")
    parser.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    parser.add_argument("--num-workers", type=int, default=2,
                        help="data loader worker processes (default 2)")
    parser.add_argument("--hidden-size", type=int, default=512, help="hidden units (default 512)")
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="ndarray",
                        help="Autodiff[NdArray] (default), Autodiff[Taichi] or Autodiff[Fusion[Taichi]]")
    args = parser.parse_args(argv)
    for name in ("epochs", "batch_size", "hidden_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.limit_train is not None and args.limit_train < 1:
        parser.error("--limit-train must be at least 1")
    if args.num_workers < 0:
        parser.error("--num-workers must be >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    B = BACKENDS[args.backend]()
    device = B.default_device()
    try:
        dataset_train = MnistDataset.train()
        dataset_test = MnistDataset.test()
    except DatasetNotFoundError as err:
        print(f"MNIST is not available: {err}", file=sys.stderr)
        return 2
    if args.limit_train is not None:
        dataset_train = PartialDataset(dataset_train, 0, min(args.limit_train, dataset_train.len()))
    artifact_dir = args.artifact_dir or tempfile.mkdtemp(prefix="burnbook-guide-")

    config = TrainingConfig(ModelConfig(num_classes=10, hidden_size=args.hidden_size), AdamConfig(),
                            num_epochs=args.epochs, batch_size=args.batch_size,
                            num_workers=args.num_workers, seed=args.seed, learning_rate=args.lr)
    print(f"Training on {dataset_train.len()} digits, validating on {dataset_test.len()}, "
          f"backend {B.name()}, artifacts in {artifact_dir}")
    started = time.perf_counter()
    model = train(artifact_dir, config, device, backend=B, dataset_train=dataset_train, dataset_valid=dataset_test)
    elapsed = time.perf_counter() - started
    seen = dataset_train.len() * args.epochs
    print(f"Trained {args.epochs} epoch(s) in {elapsed:.1f} s ({seen / elapsed:.0f} training images/s, "
          "validation included)")

    result = evaluate(model, dataset_test, device)
    print(f"Validation accuracy: {result.accuracy:.2f} % ({result.correct}/{result.total} digits), "
          f"loss {result.loss:.4f}")
    infer(artifact_dir, device, dataset_test.get(42), backend=B.InnerBackend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
