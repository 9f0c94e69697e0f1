"""The renderer API (Burn's `renderer::MetricsRenderer`): how the Learner
shows a run as it goes. A renderer is any object with::

    update_train(state: MetricState)      # a metric entry of the last training iteration
    update_valid(state: MetricState)
    render_train(progress: TrainingProgress)   # once per iteration, after its updates
    render_valid(progress: TrainingProgress)

and optionally the hooks ``on_epoch_end(split, epoch)`` (after the last
iteration of a split's epoch) and ``on_fit_end()`` (training is over:
close bars, release widgets). `MetricsRendererBase` implements all of them
as no-ops, so a renderer overrides only what it needs.

The notebook dashboard (`burnbook.widgets.TrainingDashboard`) is a renderer
like any other; it gets the Learner's `TrainingInterrupter` for its stop
button.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..metric.base import MetricEntry, Progress
from ..store import Split

__all__ = ["MetricState", "TrainingProgress", "MetricsRenderer", "MetricsRendererBase"]


@dataclass
class MetricState:
    """A metric entry, with its numeric value for numeric metrics (Burn's
    `MetricState::Generic(entry)` / `MetricState::Numeric(entry, value)`)."""

    entry: MetricEntry
    value: float | None = None

    @classmethod
    def Generic(cls, entry: MetricEntry) -> "MetricState":  # noqa: N802 - Burn's variant name
        return cls(entry, None)

    @classmethod
    def Numeric(cls, entry: MetricEntry, value: float) -> "MetricState":  # noqa: N802
        return cls(entry, float(value))

    @property
    def is_numeric(self) -> bool:
        return self.value is not None

    @property
    def name(self) -> str:
        return self.entry.name


@dataclass
class TrainingProgress:
    """Where the run is: items of the epoch, epoch out of all, iteration
    within the epoch (Burn's `TrainingProgress`), and the step's learning
    rate when training (burnbook's addition, for the dashboard)."""

    progress: Progress = field(default_factory=lambda: Progress(0, 0))
    epoch: int = 0
    epoch_total: int = 0
    iteration: int = 0
    lr: float | None = None

    @classmethod
    def none(cls) -> "TrainingProgress":
        return cls()


@runtime_checkable
class MetricsRenderer(Protocol):
    def update_train(self, state: MetricState) -> None:
        ...

    def update_valid(self, state: MetricState) -> None:
        ...

    def render_train(self, progress: TrainingProgress) -> None:
        ...

    def render_valid(self, progress: TrainingProgress) -> None:
        ...


class MetricsRendererBase:
    """A renderer that shows nothing; subclass it and override what you need.
    Also the renderer to pass for a silent run: `.renderer(MetricsRendererBase())`."""

    def update_train(self, state: MetricState) -> None:
        pass

    def update_valid(self, state: MetricState) -> None:
        pass

    def render_train(self, progress: TrainingProgress) -> None:
        pass

    def render_valid(self, progress: TrainingProgress) -> None:
        pass

    def on_epoch_end(self, split: Split, epoch: int) -> None:
        pass

    def on_fit_end(self) -> None:
        pass
