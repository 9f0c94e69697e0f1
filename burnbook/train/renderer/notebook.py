"""Rendering inside a Jupyter notebook.

`in_notebook()` tells whether the code runs in a Jupyter kernel (ipykernel
loaded and IPython's shell attached to a kernel), without importing either.
`notebook_renderer(...)` is the hook the widgets package fills: it imports
`burnbook.widgets` lazily and uses its `TrainingDashboard` when it exists
(the live dashboard with curves, progress and a stop button), else falls
back to `NotebookTextRenderer`, which prints one compact line per epoch to
stdout (no progress-bar noise in the cell's output)::

    epoch 1/3  train: Loss 0.412 | Accuracy 88.97 %  valid: Loss 0.305 | Accuracy 91.20 %  (4.1 s)

The dashboard contract: `TrainingDashboard(interrupter=..., checkpoint=...)`
returns a `MetricsRenderer` (optionally with `on_epoch_end(split, epoch)`
and `on_fit_end()`); its stop button calls `interrupter.stop()`.
"""

from __future__ import annotations

import importlib
import logging
import sys
import time
from typing import Any, TextIO

from ..metric.base import MetricEntry, short_text
from ..store import Split
from .base import MetricsRendererBase, MetricState, TrainingProgress

__all__ = ["in_notebook", "notebook_renderer", "NotebookTextRenderer"]

log = logging.getLogger("burnbook.train")


def in_notebook() -> bool:
    """True inside a running Jupyter kernel (not in a terminal IPython)."""
    if "ipykernel" not in sys.modules:
        return False
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    if get_ipython is None:
        return False
    try:
        shell = get_ipython()
    except Exception:
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


def notebook_renderer(interrupter: Any, checkpoint: int | None) -> Any:
    """`burnbook.widgets.TrainingDashboard` when available, else the text renderer."""
    try:
        widgets = importlib.import_module("burnbook.widgets")
    except Exception as err:  # widgets missing their extras (ipywidgets, plotly)
        log.info("burnbook.widgets unavailable (%s): plain notebook renderer", err)
        widgets = None
    dashboard = getattr(widgets, "TrainingDashboard", None)
    if dashboard is not None:
        try:
            return dashboard(interrupter=interrupter, checkpoint=checkpoint)
        except Exception as err:
            log.warning("TrainingDashboard could not start (%s): plain notebook renderer", err)
    return NotebookTextRenderer()


class NotebookTextRenderer(MetricsRendererBase):
    """One line per epoch on stdout, with the epoch's running metrics."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self._entries: dict[Split, dict[str, MetricEntry]] = {Split.Train: {}, Split.Valid: {}}
        self._pending: dict[int, dict[Split, str]] = {}
        self._epoch_total = 0
        self._started: dict[int, float] = {}

    def update_train(self, state: MetricState) -> None:
        self._entries[Split.Train][state.entry.name] = state.entry

    def update_valid(self, state: MetricState) -> None:
        self._entries[Split.Valid][state.entry.name] = state.entry

    def render_train(self, progress: TrainingProgress) -> None:
        self._epoch_total = progress.epoch_total
        self._started.setdefault(progress.epoch, time.monotonic())

    def render_valid(self, progress: TrainingProgress) -> None:
        self._epoch_total = progress.epoch_total

    def on_epoch_end(self, split: Split, epoch: int) -> None:
        text = " | ".join(short_text(e) for e in self._entries[split].values()) or "-"
        self._entries[split] = {}
        self._pending.setdefault(epoch, {})[split] = text
        if split is Split.Valid:
            self._print(epoch)

    def on_fit_end(self) -> None:
        for epoch in sorted(self._pending):
            self._print(epoch)

    def _print(self, epoch: int) -> None:
        parts = self._pending.pop(epoch, {})
        line = f"epoch {epoch}/{self._epoch_total}"
        for split in (Split.Train, Split.Valid):
            if split in parts:
                line += f"  {split}: {parts[split]}"
        started = self._started.pop(epoch, None)
        if started is not None:
            line += f"  ({time.monotonic() - started:.1f} s)"
        print(line, file=self.stream if self.stream is not None else sys.stdout, flush=True)
