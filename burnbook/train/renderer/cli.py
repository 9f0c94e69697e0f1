"""The terminal renderer: a progress bar per split and epoch, with the rate,
the time left and the latest metrics, written to stderr (stdout stays free
for what the script prints itself).

With `tqdm` installed and stderr a terminal, the bars are tqdm bars; else
(a log file, CI, no tqdm) the renderer prints a plain progress line every
`interval` seconds and one at the end of each split's epoch::

    [train] epoch 1/3  6000/6000 items 100%  2950 items/s  ETA 0:00:00  Loss 0.412 | Accuracy 88.97 %
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from ..metric.base import MetricEntry, short_text
from ..store import Split
from .base import MetricsRendererBase, MetricState, TrainingProgress

__all__ = ["CliMetricsRenderer", "format_duration"]


def format_duration(seconds: float) -> str:
    """`3725.4` -> `"1:02:05"`."""
    if seconds != seconds or seconds == float("inf"):
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _tqdm() -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


class CliMetricsRenderer(MetricsRendererBase):
    """Progress bars (tqdm) or plain progress lines on `stream`.

    `use_tqdm`: None chooses tqdm when it is installed and `stream` is a
    terminal. `interval`: seconds between plain progress lines.
    """

    def __init__(self, stream: TextIO | None = None, use_tqdm: bool | None = None, interval: float = 10.0) -> None:
        self.stream = stream
        tqdm = _tqdm()
        if use_tqdm is None:
            use_tqdm = tqdm is not None and _isatty(self._out())
        if use_tqdm and tqdm is None:
            raise ImportError("CliMetricsRenderer(use_tqdm=True) needs tqdm: pip install tqdm")
        self._tqdm = tqdm if use_tqdm else None
        self.interval = interval
        self._entries: dict[Split, dict[str, MetricEntry]] = {Split.Train: {}, Split.Valid: {}}
        self._bar: Any = None
        self._bar_key: tuple[Split, int] | None = None
        self._started: dict[tuple[Split, int], float] = {}
        self._last_line = time.monotonic()
        self._last_progress: dict[Split, TrainingProgress] = {}

    def _out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    # -- the protocol ----------------------------------------------------------------
    def update_train(self, state: MetricState) -> None:
        self._entries[Split.Train][state.entry.name] = state.entry

    def update_valid(self, state: MetricState) -> None:
        self._entries[Split.Valid][state.entry.name] = state.entry

    def render_train(self, progress: TrainingProgress) -> None:
        self._render(Split.Train, progress)

    def render_valid(self, progress: TrainingProgress) -> None:
        self._render(Split.Valid, progress)

    def on_epoch_end(self, split: Split, epoch: int) -> None:
        progress = self._last_progress.pop(split, None)
        if self._bar is not None and self._bar_key == (split, epoch):
            self._close_bar()
        elif self._tqdm is None and progress is not None and progress.epoch == epoch:
            self._print_line(split, progress)
        self._entries[split] = {}
        self._started.pop((split, epoch), None)

    def on_fit_end(self) -> None:
        self._close_bar()

    # -- drawing -----------------------------------------------------------------------
    def metrics_text(self, split: Split) -> str:
        return " | ".join(short_text(e) for e in self._entries[split].values())

    def _render(self, split: Split, progress: TrainingProgress) -> None:
        key = (split, progress.epoch)
        self._started.setdefault(key, time.monotonic())
        self._last_progress[split] = progress
        if self._tqdm is not None:
            self._render_bar(split, key, progress)
        elif time.monotonic() - self._last_line >= self.interval:
            self._print_line(split, progress)

    def _render_bar(self, split: Split, key: tuple[Split, int], progress: TrainingProgress) -> None:
        total = progress.progress.items_total or None
        if self._bar_key != key:
            self._close_bar()
            desc = f"{split} {progress.epoch}/{progress.epoch_total}"
            self._bar = self._tqdm(total=total, desc=desc, unit="item", file=self._out(), leave=True,
                                   dynamic_ncols=True, smoothing=0.1)
            self._bar_key = key
        bar = self._bar
        if total is not None and bar.total != total:
            bar.total = total
        bar.set_postfix_str(self.metrics_text(split), refresh=False)
        delta = progress.progress.items_processed - bar.n
        if delta > 0:
            bar.update(delta)

    def _close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self._bar, self._bar_key = None, None

    def _print_line(self, split: Split, progress: TrainingProgress) -> None:
        self._last_line = time.monotonic()
        done, total = progress.progress.items_processed, progress.progress.items_total
        elapsed = max(time.monotonic() - self._started.get((split, progress.epoch), time.monotonic()), 1e-9)
        rate = done / elapsed
        parts = [f"[{split}] epoch {progress.epoch}/{progress.epoch_total}"]
        if total:
            parts.append(f"{done}/{total} items {100.0 * done / total:.0f}%")
            eta = (total - done) / rate if rate > 0 else float("inf")
            parts.append(f"{rate:.0f} items/s  ETA {format_duration(eta)}")
        else:
            parts.append(f"{done} items  {rate:.0f} items/s")
        metrics = self.metrics_text(split)
        if metrics:
            parts.append(metrics)
        print("  ".join(parts), file=self._out(), flush=True)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
