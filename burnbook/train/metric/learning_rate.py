"""`LearningRateMetric` (Burn's `learning_rate.rs`): the learning rate the
scheduler gave the current training iteration."""

from __future__ import annotations

from .base import MetricEntry, MetricMetadata
from .state import FormatOptions, NumericMetricState

__all__ = ["LearningRateMetric"]


class LearningRateMetric:
    """Reads `metadata.lr`; needs no input. During validation there is no
    learning rate: the entry says so and the value is NaN."""

    NAME = "Learning Rate"
    input_type = None

    def __init__(self) -> None:
        self.state = NumericMetricState()

    def name(self) -> str:
        return self.NAME

    def update(self, item: None, metadata: MetricMetadata) -> MetricEntry:
        if metadata.lr is None:
            self.state.current = float("nan")
            return MetricEntry(self.NAME, f"{self.NAME}: none (no optimizer step)", "NaN", available=False)
        return self.state.update(metadata.lr, 1, FormatOptions(self.NAME).precision(2))

    def clear(self) -> None:
        self.state.reset()

    def value(self) -> float:
        return self.state.value()

    def __repr__(self) -> str:
        return "LearningRateMetric()"
