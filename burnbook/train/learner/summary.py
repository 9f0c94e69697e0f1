"""`LearnerSummary` (Burn's `learner::summary`): per numeric metric and
split, the best and worst epoch means of a run, printed after `fit` when the
builder asked for `.summary()`, or read back from an artifact folder::

    print(LearnerSummary.from_dir("artifacts", ["Loss", "Accuracy"]))
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..logger import FileMetricLogger
from ..store import Aggregate, EventStore, Split

__all__ = ["LearnerSummary", "MetricSummary"]


@dataclass
class MetricSummary:
    name: str
    entries: list[tuple[int, float]]  # (epoch, mean)

    def best(self, key: Any) -> tuple[int, float]:
        finite = [e for e in self.entries if not math.isnan(e[1])] or self.entries
        return key(finite, key=lambda e: e[1])


@dataclass
class LearnerSummary:
    epochs: int
    train: list[MetricSummary]
    valid: list[MetricSummary]
    model: str | None = None
    params: tuple[int, int] | None = None  # (all, trainable) scalar values of the model

    @classmethod
    def from_store(cls, store: EventStore, metrics: list[str], epochs: int) -> "LearnerSummary":
        def collect(split: Split) -> list[MetricSummary]:
            out = []
            for name in metrics:
                entries = [(e, v) for e in range(1, epochs + 1)
                           if (v := store.find_metric(name, e, Aggregate.Mean, split)) is not None]
                if entries:
                    out.append(MetricSummary(name, entries))
            return out

        return cls(epochs, collect(Split.Train), collect(Split.Valid))

    @classmethod
    def from_dir(cls, directory: str | os.PathLike, metrics: list[str]) -> "LearnerSummary":
        """Read the metric logs of an artifact folder."""
        directory = Path(directory)
        if not (directory / "train").is_dir() and not (directory / "valid").is_dir():
            raise FileNotFoundError(f"no training or validation logs in {directory}")
        store = EventStore()
        train = FileMetricLogger(directory / "train")
        store.register_logger_train(train)
        store.register_logger_valid(FileMetricLogger(directory / "valid"))
        return cls.from_store(store, metrics, train.epochs())

    def with_model(self, model: str) -> "LearnerSummary":
        self.model = model
        return self

    def with_params(self, model: Any) -> "LearnerSummary":
        """Show how many parameter values `model` has, and how many of them
        the optimizer trains (frozen and running-state values excluded)."""
        from burnbook.optim.grads import trainable_params

        trained = sum(p.val().num_elements() for _, p in trainable_params(model, "LearnerSummary")
                      if p.is_require_grad() and p.val().is_require_grad())
        self.params = (model.num_params(), trained)
        return self

    def __str__(self) -> str:
        rows = [(split, m) for split, ms in (("Train", self.train), ("Valid", self.valid)) for m in ms]
        width = max([len("Metric")] + [len(m.name) for _, m in rows])
        lines = [f"{'=' * 24} Learner Summary {'=' * 24}"]
        if self.model is not None:
            lines.append(f"Model: {self.model}")
        if self.params is not None:
            lines.append(f"Parameters: {self.params[0]:,} ({self.params[1]:,} trainable)")
        lines += [f"Total Epochs: {self.epochs}", "", ""]
        lines.append(f"| Split | {'Metric':<{width}} | Min.     | Epoch    | Max.     | Epoch    |")
        lines.append(f"|-------|-{'-' * width}-|----------|----------|----------|----------|")
        for split, m in rows:
            lo, hi = m.best(min), m.best(max)
            lines.append(f"| {split:<5} | {m.name:<{width}} | {lo[1]:<9.3f}| {lo[0]:<9}| {hi[1]:<9.3f}| {hi[0]:<9}|")
        return "\n".join(lines)
