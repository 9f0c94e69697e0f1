"""Metric loggers (Burn's `logger::metric`): where each metric entry of each
iteration goes. The default, `FileMetricLogger`, writes the artifact layout
of the book's Learner section::

    <artifact_dir>/train/epoch-1/Accuracy.log
    <artifact_dir>/train/epoch-1/Loss.log
    <artifact_dir>/valid/epoch-1/Loss.log

one line per iteration holding the entry's `serialize` text (the batch value
of a numeric metric, e.g. ``0.4417``). Spaces in metric names become
underscores (``Learning_Rate.log``), as in Burn.

Writing is atomic: lines are kept in memory and each file is rewritten whole
through `burnbook._atomic` at most every `flush_seconds` and at the end of
the epoch, so a killed run leaves complete lines only, never a torn file. A
resumed run rewrites the epoch it restarts.

Reading a log back gives each numeric line's value and item count
(`read_numeric_weighted`); the store weights epoch means by the counts, so a
line "0.5,400000000" costs one pair, not a list of 400 million values. A
malformed numeric line is a `MetricLogError` naming the file and the line.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Protocol, runtime_checkable

from burnbook._atomic import atomic_write
from .metric.base import MetricEntry, NumericEntry

__all__ = ["MetricLogger", "FileMetricLogger", "InMemoryMetricLogger", "MetricLogError", "EPOCH_PREFIX",
           "log_file_name"]

EPOCH_PREFIX = "epoch-"


def log_file_name(metric_name: str) -> str:
    """`"Learning Rate"` -> `"Learning_Rate.log"`."""
    return metric_name.replace(" ", "_").replace(os.sep, "_") + ".log"


class MetricLogError(ValueError):
    """A numeric line of a metric log that cannot be read; the message names
    the file (or logger), the line number and what is wrong."""


@runtime_checkable
class MetricLogger(Protocol):
    """Receives every metric entry of one split (Burn's `MetricLogger`).

    A logger may also offer `read_numeric_weighted(name, epoch)`, the
    (value, item count) pairs, which the store prefers for epoch means.
    """

    def log(self, item: MetricEntry) -> None:
        """Record one entry of the current epoch."""
        ...

    def end_epoch(self, epoch: int) -> None:
        """Epoch `epoch` is over; the next entries belong to `epoch + 1`."""
        ...

    def read_numeric(self, name: str, epoch: int) -> list[float]:
        """The numeric values logged for metric `name` during `epoch`, one per line."""
        ...


class FileMetricLogger:
    """One folder per epoch, one file per metric, one line per iteration.

    `start_epoch(epoch)` (called by the Learner before each epoch) sets the
    epoch folder, so a resumed run writes `epoch-3/` for its first epoch
    (Burn 0.13 always starts counting at 1 there).
    """

    def __init__(self, directory: str | os.PathLike, flush_seconds: float = 2.0) -> None:
        self.directory = Path(directory)
        self.flush_seconds = flush_seconds
        self.epoch = 1
        self._lines: dict[str, list[str]] = {}
        self._dirty: set[str] = set()
        self._last_flush = time.monotonic()

    def file_path(self, name: str, epoch: int) -> Path:
        return self.directory / f"{EPOCH_PREFIX}{epoch}" / log_file_name(name)

    def start_epoch(self, epoch: int) -> None:
        self.flush()
        self._lines, self._dirty = {}, set()
        self.epoch = epoch

    def log(self, item: MetricEntry) -> None:
        self._lines.setdefault(item.name, []).append(item.serialize.replace("\n", " "))
        self._dirty.add(item.name)
        if time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        """Write every file that changed since the last flush (atomically)."""
        for name in sorted(self._dirty):
            text = "".join(f"{line}\n" for line in self._lines[name]).encode()
            atomic_write(self.file_path(name, self.epoch), lambda f, text=text: f.write(text))
        self._dirty.clear()
        self._last_flush = time.monotonic()

    def end_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        self.flush()
        self._lines, self._dirty = {}, set()
        self.epoch = epoch + 1

    def read_numeric(self, name: str, epoch: int) -> list[float]:
        return [value for value, _ in self.read_numeric_weighted(name, epoch)]

    def read_numeric_weighted(self, name: str, epoch: int) -> list[tuple[float, int]]:
        """(value, item count) per numeric line; a plain value counts 1."""
        path = self.file_path(name, epoch)
        if epoch == self.epoch and name in self._lines:
            lines = self._lines[name]
        else:
            try:
                lines = path.read_text().splitlines()
            except (FileNotFoundError, NotADirectoryError):
                return []
        return _entries(lines, str(path))

    def epochs(self) -> int:
        """The highest epoch folder present (0 when none)."""
        if not self.directory.is_dir():
            return 0
        found = [int(p.name[len(EPOCH_PREFIX):]) for p in self.directory.iterdir()
                 if p.is_dir() and p.name.startswith(EPOCH_PREFIX) and p.name[len(EPOCH_PREFIX):].isdigit()]
        return max(found, default=0)

    def __repr__(self) -> str:
        return f"FileMetricLogger({str(self.directory)!r})"


class InMemoryMetricLogger:
    """Keeps every entry in memory (Burn's `InMemoryMetricLogger`): for
    tests, notebooks and dashboards. `values[name][epoch]` is the list of
    serialized lines."""

    def __init__(self) -> None:
        self.epoch = 1
        self.values: dict[str, dict[int, list[str]]] = {}

    def start_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def log(self, item: MetricEntry) -> None:
        self.values.setdefault(item.name, {}).setdefault(self.epoch, []).append(item.serialize)

    def end_epoch(self, epoch: int) -> None:
        self.epoch = epoch + 1

    def read_numeric(self, name: str, epoch: int) -> list[float]:
        return [value for value, _ in self.read_numeric_weighted(name, epoch)]

    def read_numeric_weighted(self, name: str, epoch: int) -> list[tuple[float, int]]:
        """(value, item count) per numeric entry; a plain value counts 1."""
        return _entries(self.values.get(name, {}).get(epoch, []), f"in-memory log of {name!r}, epoch {epoch}")

    def __repr__(self) -> str:
        return f"InMemoryMetricLogger({len(self.values)} metrics)"


def _entries(lines: list[str], where: str) -> list[tuple[float, int]]:
    """(value, count) of the numeric lines; text lines ("not available") are
    skipped, a malformed numeric line raises `MetricLogError` naming `where`."""
    out: list[tuple[float, int]] = []
    for number, line in enumerate(lines, 1):
        try:
            parsed = NumericEntry.deserialize(line)
        except ValueError as err:
            raise MetricLogError(f"{where}, line {number} ({line[:60]!r}): {err}") from None
        if parsed is not None:
            out.append(parsed)
    return out
