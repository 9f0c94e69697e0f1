"""Early stopping (Burn's `learner::early_stopping`).

    LearnerBuilder(artifact_dir).early_stopping(
        MetricEarlyStoppingStrategy(LossMetric(), Aggregate.Mean, Direction.Lowest, Split.Valid,
                                    StoppingCondition.NoImprovementSince(n_epochs=2)))

After each epoch's validation (and checkpoint), the strategy reads the
metric's epoch aggregate from the event store; training stops once the best
value is `n_epochs` epochs old. The metric must be registered as a numeric
metric of that split.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .metric.base import metric_name
from .store import Aggregate, Direction, EventStore, Split

__all__ = ["EarlyStoppingStrategy", "MetricEarlyStoppingStrategy", "StoppingCondition", "NoImprovementSince"]

log = logging.getLogger("burnbook.train")


@dataclass(frozen=True)
class NoImprovementSince:
    """Stop when the best epoch is `n_epochs` or more epochs ago."""

    n_epochs: int

    def __post_init__(self) -> None:
        if isinstance(self.n_epochs, bool) or not isinstance(self.n_epochs, int) or self.n_epochs < 1:
            raise ValueError(f"NoImprovementSince: n_epochs must be an int >= 1, got {self.n_epochs!r}")


class StoppingCondition:
    """Burn's `StoppingCondition` enum: `StoppingCondition.NoImprovementSince(n_epochs=k)`."""

    NoImprovementSince = NoImprovementSince


@runtime_checkable
class EarlyStoppingStrategy(Protocol):
    def should_stop(self, epoch: int, store: EventStore) -> bool:
        ...


class MetricEarlyStoppingStrategy:
    """Stop when a numeric metric has not improved for a while.

    `metric` is a metric instance, its class or its name ("Loss").
    Positional order as Burn's `new(aggregate, direction, split, condition)`,
    with the metric first; all but the metric have defaults (mean validation
    value, lower is better, stop after 1 epoch without improvement).
    """

    def __init__(self, metric: Any, aggregate: Aggregate = Aggregate.Mean, direction: Direction = Direction.Lowest,
                 split: Split = Split.Valid, condition: NoImprovementSince = NoImprovementSince(1)) -> None:
        self.metric_name = metric_name(metric)
        self.aggregate, self.direction, self.split, self.condition = aggregate, direction, split, condition
        self.best_epoch = 1
        self.best_value = math.inf if direction is Direction.Lowest else -math.inf

    def should_stop(self, epoch: int, store: EventStore) -> bool:
        value = store.find_metric(self.metric_name, epoch, self.aggregate, self.split)
        if value is None:
            log.warning("Early stopping: no %s value for %s epoch %d (register it as a numeric %s metric)",
                        self.metric_name, self.split, epoch, self.split)
            return False
        better = value < self.best_value if self.direction is Direction.Lowest else value > self.best_value
        if better:
            self.best_value, self.best_epoch = value, epoch
            log.info("Early stopping: new best epoch %d, %s %s", epoch, self.metric_name, value)
            return False
        stop = epoch - self.best_epoch >= self.condition.n_epochs
        if stop:
            log.info("Early stopping at epoch %d: no improvement of %s since epoch %d (%s); now %s",
                     epoch, self.metric_name, self.best_epoch, self.best_value, value)
        return stop

    def __repr__(self) -> str:
        return (f"MetricEarlyStoppingStrategy({self.metric_name!r}, {self.aggregate.name}, {self.direction.name}, "
                f"{self.split}, {self.condition})")
