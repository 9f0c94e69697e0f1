"""`AccuracyMetric` and `LossMetric` with their inputs (Burn's `acc.rs` and
`loss.rs`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import MetricEntry, MetricMetadata, format_float
from .state import FormatOptions, NumericMetricState

__all__ = ["AccuracyInput", "AccuracyMetric", "LossInput", "LossMetric"]


class AccuracyInput:
    """Scores `[batch, num_classes]` and Int class targets `[batch]`."""

    __slots__ = ("outputs", "targets")

    def __init__(self, outputs: Any, targets: Any) -> None:
        self.outputs, self.targets = outputs, targets

    def __repr__(self) -> str:
        return f"AccuracyInput(outputs={_dims(self.outputs)}, targets={_dims(self.targets)})"


class AccuracyMetric:
    """The share of rows whose highest score is the target class, in
    percent. With a pad token, targets equal to it are left out (sequence
    tasks); the epoch value is then weighted by the targets counted rather
    than by the batch size, so it is exactly correct / counted."""

    NAME = "Accuracy"
    input_type = AccuracyInput

    def __init__(self, pad_token: int | None = None) -> None:
        self.pad_token = pad_token
        self.state = NumericMetricState()

    def with_pad_token(self, index: int) -> "AccuracyMetric":
        self.pad_token = int(index)
        return self

    def name(self) -> str:
        return self.NAME

    def update(self, input: AccuracyInput, metadata: MetricMetadata) -> MetricEntry:  # noqa: A002
        outputs, targets = np.asarray(input.outputs), np.asarray(input.targets)
        if outputs.ndim != 2 or targets.ndim != 1 or outputs.shape[0] != targets.shape[0]:
            raise ValueError(f"AccuracyMetric: expected outputs [batch, classes] and targets [batch], got "
                             f"{list(outputs.shape)} and {list(targets.shape)}")
        correct = outputs.argmax(axis=1) == targets.astype(np.int64)
        if self.pad_token is not None:
            keep = targets != self.pad_token
            counted = int(keep.sum())
            hits = int((correct & keep).sum())
        else:
            counted, hits = int(targets.shape[0]), int(correct.sum())
        accuracy = 100.0 * hits / counted if counted else float("nan")
        if counted == 0:  # nothing to count: show NaN, leave the epoch mean alone
            self.state.current = accuracy
            running = format_float(self.state.running(), 2)
            return MetricEntry(self.NAME, f"epoch {running} % - batch NaN %", "NaN")
        return self.state.update(accuracy, counted, FormatOptions(self.NAME).unit("%").precision(2))

    def clear(self) -> None:
        self.state.reset()

    def value(self) -> float:
        return self.state.value()

    def __repr__(self) -> str:
        return f"AccuracyMetric(pad_token={self.pad_token})"


class LossInput:
    """The loss tensor of a step (`[1]`, or `[batch]` unreduced)."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Any) -> None:
        self.tensor = tensor

    def __repr__(self) -> str:
        return f"LossInput(tensor={_dims(self.tensor)})"


class LossMetric:
    """The mean of the loss the step reports, batch by batch."""

    NAME = "Loss"
    input_type = LossInput

    def __init__(self) -> None:
        self.state = NumericMetricState()

    def name(self) -> str:
        return self.NAME

    def update(self, input: LossInput, metadata: MetricMetadata) -> MetricEntry:  # noqa: A002
        values = np.asarray(input.tensor, dtype=np.float64)
        batch_size = int(values.shape[0]) if values.ndim >= 1 else 1
        return self.state.update(float(values.mean()), batch_size, FormatOptions(self.NAME).precision(2))

    def clear(self) -> None:
        self.state.reset()

    def value(self) -> float:
        return self.state.value()

    def __repr__(self) -> str:
        return "LossMetric()"


def _dims(t: Any) -> Any:
    dims = getattr(t, "dims", None)
    return dims() if callable(dims) else list(np.shape(t))
