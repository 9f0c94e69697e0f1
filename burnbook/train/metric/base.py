"""The metric protocols and what they exchange (Burn's `burn_train::metric`
base: `Metric`, `Numeric`, `Adaptor`, `MetricEntry`, `MetricMetadata`).

A metric is any object with::

    NAME = "Accuracy"                 # the name shown and used for log files
    input_type = AccuracyInput        # what it reads; None: nothing (Burn's `()`)
    def update(self, item, metadata) -> MetricEntry
    def clear(self) -> None           # called at the end of every epoch

and, when it is numeric (so it can be plotted, aggregated per epoch and used
for early stopping or checkpoint selection), also ``value() -> float``.

The Learner gives `update` the model's output *adapted* to `input_type` (see
`adapt`). A metric without an `input_type` attribute receives the output as
the step returned it (detached from the autodiff graph).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

# How far a data loader is into its epoch: items (not batches) processed so
# far and in all (Burn's `Progress`), shared with burnbook.data.
from burnbook.data.dataloader.loader import Progress

__all__ = [
    "Metric", "Numeric", "MetricEntry", "MetricMetadata", "Progress", "NumericEntry", "format_float",
    "metric_name", "is_numeric", "NOT_AVAILABLE",
]

NOT_AVAILABLE = "not available"


@dataclass
class MetricMetadata:
    """What the Learner knows about the current iteration (Burn's
    `MetricMetadata`); `lr` is None during validation."""

    progress: Progress = field(default_factory=lambda: Progress(0, 0))
    epoch: int = 0
    epoch_total: int = 0
    iteration: int = 0
    lr: float | None = None

    @classmethod
    def fake(cls) -> "MetricMetadata":
        """Metadata for calling a metric by hand (tests, notebooks)."""
        return cls(Progress(1, 1), 1, 1, 1, None)


@dataclass
class MetricEntry:
    """One update of one metric (Burn's `MetricEntry`).

    `formatted` is what renderers show ("epoch 85.31 % - batch 87.50 %"),
    `serialize` what metric loggers write, one line per iteration ("87.5").
    `available` is False when the machine cannot measure the metric (no
    sensor, no GPU); `formatted` then says "not available".
    """

    name: str
    formatted: str
    serialize: str
    available: bool = True


@runtime_checkable
class Metric(Protocol):
    """A training or validation metric (Burn's `Metric` trait).

    Subclass it (or just write a class with the same members). `NAME` gives
    the metric's name; override `name()` instead when it depends on the
    instance. `input_type` names the class the model output is adapted to.
    """

    NAME: ClassVar[str]

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Update the state with one batch; return the current entry."""
        ...

    def clear(self) -> None:
        """Forget the state (the Learner calls it at the end of each epoch)."""
        ...

    def name(self) -> str:
        return type(self).NAME


@runtime_checkable
class Numeric(Protocol):
    """A metric whose state is one number (Burn's `Numeric` trait): the
    Learner plots it, averages it per epoch and lets early stopping and
    checkpoint selection read it."""

    def value(self) -> float:
        ...


def metric_name(metric: Any) -> str:
    """The name of a metric instance, a metric class, or a string."""
    if isinstance(metric, str):
        return metric
    if isinstance(metric, type):
        name = metric.__dict__.get("NAME") or getattr(metric, "NAME", None)
        if isinstance(name, str):
            return name
        return metric_name(metric())
    name = getattr(metric, "name", None)
    if callable(name):
        try:
            return str(name())
        except AttributeError:  # the Protocol's default name() without a NAME
            pass
    if isinstance(getattr(metric, "NAME", None), str):
        return metric.NAME
    raise TypeError(f"{type(metric).__name__} is not a metric: give it a NAME (or a name() method)")


def is_numeric(metric: Any) -> bool:
    return callable(getattr(metric, "value", None))


class NumericEntry:
    """Parsing and writing the numeric lines of metric logs: a plain value
    ("0.25"), or a value and the number of items it covers ("0.25,64", the
    Burn 0.13 form, read but not written). Epoch means weight each line by
    its count; nothing ever expands a line into `count` copies."""

    MAX_COUNT: ClassVar[int] = 2**31 - 1

    @staticmethod
    def serialize(value: float) -> str:
        return repr(float(value)) if math.isfinite(value) else ("NaN" if math.isnan(value) else str(value))

    @staticmethod
    def deserialize(line: str) -> tuple[float, int] | None:
        """(value, count), or None when the line is not numeric (text such as
        "not available"). A number followed by anything but one count, a
        decimal integer from 0 to `MAX_COUNT`, raises `ValueError` saying why."""
        parts = line.strip().split(",")
        try:
            value = float(parts[0])
        except ValueError:
            return None
        if len(parts) == 1:
            return value, 1
        if len(parts) > 2:
            raise ValueError(f"{len(parts)} comma-separated fields, where a numeric line is 'value' or 'value,count'")
        count = parts[1].strip()
        if not (_COUNT.fullmatch(count) and int(count) <= NumericEntry.MAX_COUNT):
            raise ValueError(f"the item count {count[:40]!r} is not an integer from 0 to {NumericEntry.MAX_COUNT:,}")
        return value, int(count)


def format_float(value: float, precision: int) -> str:
    """`value` with `precision` decimals, in scientific notation when small
    (Burn's `format_float`: below 0.1**(precision - 1)), e.g. 1.00e-4."""
    if math.isnan(value):
        return "NaN"
    if value != 0.0 and abs(value) <= 0.1 ** (precision - 1):
        mantissa, exponent = f"{value:.{precision}e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return f"{value:.{precision}f}"


_COUNT = re.compile(r"[0-9]{1,19}")
_RUNNING = re.compile(r"^epoch (?P<epoch>.+?) - batch (?P<batch>.+)$")


def short_text(entry: MetricEntry) -> str:
    """A compact "Name value" for progress lines: the epoch's running value
    of a numeric entry ("Loss 0.52"), else the formatted text itself."""
    if not entry.available:
        return f"{entry.name}: {NOT_AVAILABLE}"
    match = _RUNNING.match(entry.formatted)
    if match:
        return f"{entry.name} {match.group('epoch')}"
    return entry.formatted if entry.formatted.startswith(entry.name) else f"{entry.name} {entry.formatted}"
