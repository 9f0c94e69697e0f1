"""The event store (Burn's `metric::store`): it passes every metric update
to the loggers of its split and answers "what was metric M's mean during
epoch E?", which early stopping, checkpoint selection and the summary ask.

The answer is read back from the loggers, as in Burn, so a resumed run sees
the epochs the interrupted run logged to files. Aggregates of finished
epochs are cached. A mean weights each logged value by the items it covers
(Burn 0.13's "value,count" lines), never expanding a line into copies.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any

from .metric.base import MetricEntry

__all__ = ["Aggregate", "Direction", "Split", "MetricsUpdate", "EventStore", "StoreView"]


class Aggregate(enum.Enum):
    """How an epoch's values become one number (Burn has `Mean` only)."""

    Mean = "mean"


class Direction(enum.Enum):
    """Which way is better for a metric."""

    Lowest = "lowest"
    Highest = "highest"


class Split(enum.Enum):
    Train = "train"
    Valid = "valid"

    def __str__(self) -> str:
        return self.value


@dataclass
class MetricsUpdate:
    """The entries of one iteration: generic ones, and numeric ones with
    their `value()`."""

    entries: list[MetricEntry] = field(default_factory=list)
    entries_numeric: list[tuple[MetricEntry, float]] = field(default_factory=list)


class EventStore:
    """Loggers per split, and epoch aggregates read back from them."""

    def __init__(self) -> None:
        self.loggers: dict[Split, list[Any]] = {Split.Train: [], Split.Valid: []}
        self._cache: dict[tuple[str, int, Aggregate, Split], float] = {}
        self._current: dict[Split, int] = {Split.Train: 1, Split.Valid: 1}

    def register_logger_train(self, logger: Any) -> None:
        self.loggers[Split.Train].append(logger)

    def register_logger_valid(self, logger: Any) -> None:
        self.loggers[Split.Valid].append(logger)

    def start_epoch(self, split: Split, epoch: int) -> None:
        self._current[split] = epoch
        for logger in self.loggers[split]:
            start = getattr(logger, "start_epoch", None)
            if callable(start):
                start(epoch)

    def add_update(self, split: Split, update: MetricsUpdate) -> None:
        for logger in self.loggers[split]:
            for entry in update.entries:
                logger.log(entry)
            for entry, _ in update.entries_numeric:
                logger.log(entry)

    def end_epoch(self, split: Split, epoch: int) -> None:
        for logger in self.loggers[split]:
            logger.end_epoch(epoch)
        self._current[split] = epoch + 1

    def flush(self) -> None:
        """Make every logger write what it holds (used when a run stops)."""
        for loggers in self.loggers.values():
            for logger in loggers:
                flush = getattr(logger, "flush", None)
                if callable(flush):
                    flush()

    def find_metric(self, name: str, epoch: int, aggregate: Aggregate = Aggregate.Mean,
                    split: Split = Split.Valid) -> float | None:
        """The aggregate of metric `name` over `epoch`, or None if never logged."""
        key = (name, epoch, aggregate, split)
        if key in self._cache:
            return self._cache[key]
        pairs: list[tuple[float, int]] = []
        for logger in self.loggers[split]:
            weighted = getattr(logger, "read_numeric_weighted", None)
            pairs = weighted(name, epoch) if callable(weighted) else [(v, 1) for v in logger.read_numeric(name, epoch)]
            if pairs:
                break
        pairs = [(v, n) for v, n in pairs if n > 0 and not math.isnan(v)]
        if not pairs:
            return None
        # The mean over items, each line weighted by the items it covers.
        value = sum(v * n for v, n in pairs) / sum(n for _, n in pairs)
        if epoch < self._current[split]:  # finished: it will not change
            self._cache[key] = value
        return value

    def find_epoch(self, name: str, aggregate: Aggregate = Aggregate.Mean, direction: Direction = Direction.Lowest,
                   split: Split = Split.Valid, until: int | None = None) -> int | None:
        """The epoch with the best aggregate of `name`, counting from epoch 1
        until the first epoch with no value, or `until` (the first best on ties)."""
        best_epoch, best = None, None
        epoch = 1
        while (until is None or epoch <= until) and (value := self.find_metric(name, epoch, aggregate, split)) is not None:
            better = best is None or (value < best if direction is Direction.Lowest else value > best)
            if better:
                best_epoch, best = epoch, value
            epoch += 1
        return best_epoch

    def until(self, epoch: int) -> "StoreView":
        """The store as it was at the end of `epoch` (later epochs hidden)."""
        return StoreView(self, epoch)


class StoreView:
    """An `EventStore` seen up to an epoch: what a strategy saw back then.
    The Learner replays its strategies on views when it resumes, so their
    state (best epoch so far, checkpoints kept) is the uninterrupted run's."""

    def __init__(self, store: EventStore, limit: int) -> None:
        self.store, self.limit = store, limit

    def find_metric(self, name: str, epoch: int, aggregate: Aggregate = Aggregate.Mean,
                    split: Split = Split.Valid) -> float | None:
        return None if epoch > self.limit else self.store.find_metric(name, epoch, aggregate, split)

    def find_epoch(self, name: str, aggregate: Aggregate = Aggregate.Mean, direction: Direction = Direction.Lowest,
                   split: Split = Split.Valid, until: int | None = None) -> int | None:
        limit = self.limit if until is None else min(until, self.limit)
        return self.store.find_epoch(name, aggregate, direction, split, until=limit)
