"""From step outputs to metric entries, loggers and the renderer (Burn's
`metric::processor`: `Metrics`, `FullEventProcessor`, `LearnerItem`).

For every iteration the processor adapts the (detached) step output to each
registered metric's input, updates the metric, sends the entries to the
event store (hence the metric loggers) and to the renderer, then asks the
renderer to draw. At the end of a split's epoch it clears the metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .metric.adaptor import RAW, adapt
from .metric.base import MetricMetadata, Progress, is_numeric, metric_name
from .renderer.base import MetricState, TrainingProgress
from .store import EventStore, MetricsUpdate, Split

__all__ = ["LearnerItem", "Metrics", "EventProcessor"]


@dataclass
class LearnerItem:
    """A step's output with where it happened (Burn's `LearnerItem`)."""

    item: Any
    progress: Progress
    epoch: int
    epoch_total: int
    iteration: int
    lr: float | None = None

    def metadata(self) -> MetricMetadata:
        return MetricMetadata(self.progress, self.epoch, self.epoch_total, self.iteration, self.lr)

    def training_progress(self) -> TrainingProgress:
        return TrainingProgress(self.progress, self.epoch, self.epoch_total, self.iteration, self.lr)


@dataclass
class _Registered:
    metric: Any
    name: str
    numeric: bool


class Metrics:
    """The metrics of each split, in registration order."""

    def __init__(self) -> None:
        self.splits: dict[Split, list[_Registered]] = {Split.Train: [], Split.Valid: []}

    def register(self, split: Split, metric: Any, numeric: bool) -> None:
        if isinstance(metric, type):
            raise TypeError(f"register a metric instance, e.g. {metric.__name__}(), not the class")
        for method in ("update", "clear"):
            if not callable(getattr(metric, method, None)):
                raise TypeError(f"{type(metric).__name__} is not a metric: it has no {method}() method")
        name = metric_name(metric)
        if numeric and not is_numeric(metric):
            raise TypeError(f"{name} is not numeric (no value() method): register it with "
                            f"metric_{split}(...) instead of metric_{split}_numeric(...)")
        if any(r.name == name for r in self.splits[split]):
            raise ValueError(f"a {split} metric named {name!r} is already registered (its log file would be "
                             "shared); give one of them another NAME")
        self.splits[split].append(_Registered(metric, name, numeric))

    def names(self, split: Split, numeric_only: bool = False) -> list[str]:
        return [r.name for r in self.splits[split] if r.numeric or not numeric_only]

    def update(self, split: Split, item: LearnerItem) -> MetricsUpdate:
        metadata = item.metadata()
        update = MetricsUpdate()
        for r in self.splits[split]:
            value = adapt(item.item, getattr(r.metric, "input_type", RAW), metric=f"the {split} metric {r.name}")
            entry = r.metric.update(value, metadata)
            if r.numeric:
                update.entries_numeric.append((entry, float(r.metric.value())))
            else:
                update.entries.append(entry)
        return update

    def end_epoch(self, split: Split) -> None:
        for r in self.splits[split]:
            r.metric.clear()


class EventProcessor:
    """Metrics, store and renderer wired together (Burn's `FullEventProcessor`)."""

    def __init__(self, metrics: Metrics, renderer: Any, store: EventStore) -> None:
        self.metrics, self.renderer, self.store = metrics, renderer, store

    def start_epoch(self, split: Split, epoch: int) -> None:
        self.store.start_epoch(split, epoch)

    def process(self, split: Split, item: LearnerItem) -> None:
        update = self.metrics.update(split, item)
        self.store.add_update(split, update)
        send = self.renderer.update_train if split is Split.Train else self.renderer.update_valid
        for entry in update.entries:
            send(MetricState.Generic(entry))
        for entry, value in update.entries_numeric:
            send(MetricState.Numeric(entry, value))
        render = self.renderer.render_train if split is Split.Train else self.renderer.render_valid
        render(item.training_progress())

    def end_epoch(self, split: Split, epoch: int) -> None:
        self.metrics.end_epoch(split)
        self.store.end_epoch(split, epoch)
        hook = getattr(self.renderer, "on_epoch_end", None)
        if callable(hook):
            hook(split, epoch)
