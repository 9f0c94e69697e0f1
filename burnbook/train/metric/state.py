"""`NumericMetricState` and `FormatOptions` (Burn's `metric::state`): the
running epoch average most numeric metrics keep."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .base import MetricEntry, NumericEntry, format_float

__all__ = ["NumericMetricState", "FormatOptions"]


@dataclass
class FormatOptions:
    """How a numeric entry is shown: its name, an optional unit and number
    of decimals (`FormatOptions("Accuracy").unit("%").precision(2)`)."""

    name: str
    _unit: str | None = None
    _precision: int | None = None

    def unit(self, unit: str) -> "FormatOptions":
        self._unit = unit
        return self

    def precision(self, precision: int) -> "FormatOptions":
        self._precision = precision
        return self


class NumericMetricState:
    """The current batch value and the epoch's running mean, weighted by
    batch size. `value()` is the current batch value, as in Burn; the
    running mean is `running()`. The log line is the current value."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.sum = 0.0
        self.count = 0
        self.current = math.nan

    def update(self, value: float, batch_size: int, format: FormatOptions) -> MetricEntry:  # noqa: A002
        value = float(value)
        self.sum += value * batch_size
        self.count += batch_size
        self.current = value
        running = self.running()
        if format._precision is not None:
            current_text = format_float(value, format._precision)
            running_text = format_float(running, format._precision)
        else:
            current_text, running_text = f"{value}", f"{running}"
        if format._unit is not None:
            formatted = f"epoch {running_text} {format._unit} - batch {current_text} {format._unit}"
        else:
            formatted = f"epoch {running_text} - batch {current_text}"
        return MetricEntry(format.name, formatted, NumericEntry.serialize(value))

    def running(self) -> float:
        return self.sum / self.count if self.count else math.nan

    def value(self) -> float:
        return self.current
