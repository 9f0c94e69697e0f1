"""The live training dashboard: the notebook renderer the Learner drives.

`TrainingDashboard` is a `MetricsRenderer` (see
`burnbook.train.renderer.base`) drawn with ipywidgets and a plotly figure
in a `FigurePane`: one subplot per numeric metric with its train and valid
curves (every iteration, plus the epoch means) under a key to the colours
and marks, a progress bar with the rate and the time left, the learning
rate, the latest value of every metric, and a Stop button that calls the
Learner's `TrainingInterrupter.stop()`, so `fit` ends cleanly after the
current step and returns the model so far. The mean of an epoch that was
stopped part-way is drawn where the epoch stopped (3.4: 40% into epoch 4),
as an open marker, and named partial when hovered.

Inside a Jupyter kernel the Learner builds one by itself
(`burnbook.train.renderer.notebook_renderer`); it shows itself at the first
iteration. Drawing is throttled: metric updates only append to lists, and
the widgets are refreshed at most once per `interval` seconds (and at the
end of each epoch), so the dashboard costs the training loop little. The
figure, the one large message, is resent at most every `figure_interval`
seconds or a tenth of the time since the first iteration, whichever is
longer (and when `fit` ends), with at most `max_points` float32 points per
curve: a fit sends well under 1 MB of widget messages, and no JavaScript
(plotly's `FigureWidget` shipped its ~5 MB bundle with every fit).

The Stop button works while the cell is busy in `fit` with JupyterLab >= 4.4
and ipykernel >= 7: the frontend sends widget messages to a kernel subshell,
whose thread runs the button's handler at once (see `_answer_while_busy`).
With older kernels the click is only handled after the cell ends.

When no live kernel is attached (a saved notebook, nbconvert's HTML, GitHub)
the output still shows the run: the display carries, next to the widget
view, a PNG of the curves (`image/png`, where a browser can draw one, see
`widgets._image`) and a one-line `text/plain` summary, both refreshed in
place when `fit` ends. Each epoch also
prints one plain line to stdout (as `NotebookTextRenderer` does), a text
record of the run that nbval can compare.
"""

from __future__ import annotations

import html
import math
import re
import sys
import time
from typing import Any

import ipywidgets as W
import plotly.graph_objects as go

from burnbook.train.metric.base import short_text
from burnbook.train.renderer.base import MetricState, TrainingProgress
from burnbook.train.renderer.cli import format_duration
from burnbook.train.renderer.notebook import NotebookTextRenderer, in_notebook
from burnbook.train.store import Split
from ._static import FigurePane, static_image
from .training_figure import COLORS, Curve, curves_figure

__all__ = ["TrainingDashboard"]

CSS_CLASS = "bb-training-dashboard"
STOP_CLASS = "bb-stop-button"
CURVES_CLASS = "bb-curves"
FIGURE_GAP_FRACTION = 0.1   # the figure waits at least this share of the time since the first iteration
LEARNING_RATE = "learning rate"   # a metric whose lower-cased name is this feeds the lr read-out


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def number(value: float) -> str:
    """Every number the dashboard shows, in one format: 4 significant
    digits, scientific only below 1e-4 or from 1e4 (0.0711, 2.103, 97.85)."""
    return f"{value:.4g}"


def _entry_text(entry: Any) -> str:
    """A metric's latest entry as "Name value unit" (`short_text`), its
    numbers rewritten by `number`: metrics format their own text
    ("7.11e-2", "0.17"), and the panel shows them side by side."""
    text = short_text(entry)
    name = entry.name
    if not text.startswith(name):
        return text
    return name + _NUMBER.sub(lambda m: number(float(m.group())), text[len(name):])


def _answer_while_busy(widget: W.Widget) -> None:
    """Let `widget`'s messages from the browser be handled while a cell runs.

    A kernel with subshells (ipykernel >= 7) receives JupyterLab's widget
    messages on a subshell of the frontend's choosing, but routes a comm's
    messages back to the shell that last sent on it, which for a widget made
    by a running cell is the busy main shell: the click would wait for `fit`
    to end. Routing this one comm to the frontend's subshell lets its
    handler (the Stop button's) run at once, on the subshell's thread.
    Elsewhere (older kernels, no frontend) this changes nothing.
    """
    comm = getattr(widget, "comm", None)
    route = getattr(comm, "_reply_subshell_for", None)
    if not callable(route):
        return

    def to_frontend_subshell(data: Any, default: Any) -> Any:
        chosen = route(data, default)
        return default if default is not None else chosen

    comm._reply_subshell_for = to_frontend_subshell


class TrainingDashboard:
    """Live curves, progress and a Stop button for `Learner.fit`.

    `interrupter`: the Learner's `TrainingInterrupter` (the Stop button calls
    its `stop()`; without one the button is disabled). `checkpoint`: the
    epoch the run resumes from, shown in the header. `interval`: seconds
    between two refreshes of the widgets, `figure_interval` the least
    between two refreshes of the figure. `max_points`: points per curve
    sent to the browser (longer runs are thinned evenly). `display`: show
    the dashboard at the first iteration (None: when inside a Jupyter
    kernel). `epoch_lines`: also print one text line per epoch to stdout.
    """

    def __init__(self, interrupter: Any = None, checkpoint: int | None = None, *, interval: float = 0.25,
                 figure_interval: float = 1.0, max_points: int = 400, display: bool | None = None,
                 epoch_lines: bool = True) -> None:
        if interval < 0 or figure_interval < 0:
            raise ValueError(f"TrainingDashboard: interval and figure_interval must be >= 0 seconds, got "
                             f"{interval} and {figure_interval}")
        if max_points < 2:
            raise ValueError(f"TrainingDashboard: max_points must be at least 2, got {max_points}")
        self.interrupter, self.checkpoint = interrupter, checkpoint
        self.interval, self.max_points = float(interval), int(max_points)
        self.figure_interval = float(figure_interval)
        self._display = in_notebook() if display is None else bool(display)
        self._text = NotebookTextRenderer() if epoch_lines else None
        self.curves: dict[tuple[str, Split], Curve] = {}
        self.metric_names: list[str] = []              # numeric metrics, in order of appearance
        self._pending: dict[Split, dict[str, float]] = {Split.Train: {}, Split.Valid: {}}
        self._entries: dict[Split, dict[str, Any]] = {Split.Train: {}, Split.Valid: {}}
        self._progress: dict[Split, TrainingProgress] = {}
        self._started: dict[tuple[Split, int], float] = {}
        self._elapsed: dict[Split, float] = {}        # seconds into the split's epoch at its last iteration
        self._split = Split.Train
        self.lr: float | None = None
        self.status = "waiting for the first iteration"
        self.state = "waiting"      # waiting | running | stopping | stopped | finished | failed
        self.flushes = 0            # widget refreshes so far (the throttle's count)
        self.redraws = 0            # figures sent to the pane so far
        self._last_flush = -math.inf
        self._last_redraw = -math.inf
        self._first_flush: float | None = None
        self._handle: Any = None
        self._build_widgets()

    # -- widgets ---------------------------------------------------------------------------
    def _build_widgets(self) -> None:
        self.status_html = W.HTML(self._status_text())
        self.status_html.add_class("bb-status")
        self.progress_bar = W.FloatProgress(value=0.0, min=0.0, max=1.0, bar_style="info",
                                            layout=W.Layout(width="260px"))
        self.progress_bar.add_class("bb-progress")
        self.progress_html = W.HTML("")
        self.progress_html.add_class("bb-progress-text")
        self.stop_button = W.Button(description="Stop", icon="stop", button_style="danger",
                                    tooltip="End fit after the current step; the model so far is returned")
        self.stop_button.add_class(STOP_CLASS)
        if self.interrupter is None:
            self.stop_button.disabled = True
            self.stop_button.tooltip = "No TrainingInterrupter: pass interrupter=builder.interrupter()"
        self.stop_button.on_click(self._on_stop)
        _answer_while_busy(self.stop_button)
        self.metrics_html = W.HTML("")
        self.metrics_html.add_class("bb-metrics")
        # Empty (and invisible) until the first refresh that knows a metric.
        self.pane = FigurePane()
        self.pane.add_class(CURVES_CLASS)
        header = W.HBox([self.stop_button, self.progress_bar, self.progress_html],
                        layout=W.Layout(align_items="center"))
        self.root = W.VBox([self.status_html, header, self.metrics_html, self.pane])
        self.root.add_class(CSS_CLASS)

    def _on_stop(self, _button: Any = None) -> None:
        """The Stop button (may run on another thread than `fit`: with a
        kernel that has subshells, JupyterLab delivers widget messages while
        the cell is busy)."""
        if self.interrupter is None or self.state in ("stopped", "finished", "failed"):
            return
        self.interrupter.stop()
        self.stop_button.disabled = True
        self.stop_button.description = "Stopping..."

    # -- the renderer protocol -------------------------------------------------------------
    def update_train(self, state: MetricState) -> None:
        self._update(Split.Train, state)

    def update_valid(self, state: MetricState) -> None:
        self._update(Split.Valid, state)

    def render_train(self, progress: TrainingProgress) -> None:
        self._render(Split.Train, progress)

    def render_valid(self, progress: TrainingProgress) -> None:
        self._render(Split.Valid, progress)

    def on_epoch_end(self, split: Split, epoch: int) -> None:
        done = self._partial(split, epoch)
        for (_, curve_split), curve in self.curves.items():
            if curve_split is split:
                curve.close_epoch(epoch, done)
        if self._text is not None:
            self._text.on_epoch_end(split, epoch)
        self._flush(force=True)

    def on_fit_end(self) -> None:
        error = sys.exc_info()[1]
        stopped = self.interrupter is not None and self.interrupter.should_stop()
        if error is not None and not isinstance(error, StopIteration):
            self.state, self.status = "failed", f"failed: {type(error).__name__}: {error}"
        elif stopped:
            self.state, self.status = "stopped", f"stopped {self._where()}: fit returned the model so far"
        else:
            progress = self._progress.get(Split.Train)
            early = progress is not None and progress.epoch < progress.epoch_total
            self.state = "finished"
            self.status = f"{'ended early' if early else 'finished'} {self._where()}"
        self.stop_button.disabled = True
        self.stop_button.description = "Stopped" if self.state == "stopped" else "Done"
        self.stop_button.button_style = ""
        if self._text is not None:
            self._text.on_fit_end()
        self._flush(force=True)
        if self._handle is not None:
            self._handle.update(self)   # the saved notebook keeps the final static figure

    # -- recording -------------------------------------------------------------------------
    def _update(self, split: Split, state: MetricState) -> None:
        name = state.entry.name
        self._entries[split][name] = state.entry
        if self._text is not None:
            (self._text.update_train if split is Split.Train else self._text.update_valid)(state)
        if state.value is None:
            return
        self._pending[split][name] = state.value
        if name.lower() == LEARNING_RATE and split is Split.Train and math.isfinite(state.value):
            self.lr = state.value

    def _render(self, split: Split, progress: TrainingProgress) -> None:
        if self._handle is None and self._display:
            self._show()
        if self._text is not None:
            (self._text.render_train if split is Split.Train else self._text.render_valid)(progress)
        self._split = split
        self._progress[split] = progress
        started = self._started.setdefault((split, progress.epoch), time.monotonic())
        self._elapsed[split] = time.monotonic() - started
        lr = getattr(progress, "lr", None)   # when the Learner passes it along
        if isinstance(lr, (int, float)) and math.isfinite(lr):
            self.lr = float(lr)
        done, total = progress.progress.items_processed, progress.progress.items_total
        x = round(progress.epoch - 1 + (done / total if total > 0 else 1.0), 6)
        for name, value in self._pending[split].items():
            curve = self.curves.get((name, split))
            if curve is None:
                curve = self.curves[(name, split)] = Curve()
                if name not in self.metric_names:
                    self.metric_names.append(name)
            curve.add(x, value)
        self._pending[split] = {}
        force = False
        if self.state == "waiting":
            self.state, force = "running", True
        if self.state == "running" and self.interrupter is not None and self.interrupter.should_stop():
            self.state, force = "stopping", True
        self.status = {"running": "running", "stopping": "stopping after the current step"}.get(
            self.state, self.status)
        self._flush(force=force)

    def _partial(self, split: Split, epoch: int) -> float | None:
        """The share of its items that `split`'s epoch `epoch` saw, when it
        ended before all of them (a stopped fit); None when it ran whole or
        its size is unknown."""
        progress = self._progress.get(split)
        if progress is None or progress.epoch != epoch:
            return None
        done, total = progress.progress.items_processed, progress.progress.items_total
        return round(done / total, 6) if 0 < total and done < total else None

    def _where(self) -> str:
        progress = self._progress.get(Split.Train)
        if progress is None:
            return "before the first iteration"
        return f"in epoch {progress.epoch}/{progress.epoch_total} at iteration {progress.iteration}"

    # -- drawing ---------------------------------------------------------------------------
    def _flush(self, force: bool = False) -> None:
        """Push what changed to the widgets; at most once per `interval`
        unless forced (state changes, epoch ends), the figure less often."""
        now = time.monotonic()
        if not force and now - self._last_flush < self.interval:
            return
        self._last_flush = now
        self.flushes += 1
        if self._first_flush is None:
            self._first_flush = now
        dirty = any(c.dirty for c in self.curves.values())
        gap = max(self.figure_interval, FIGURE_GAP_FRACTION * (now - self._first_flush))
        final = self.state in ("stopped", "finished", "failed")
        if self.metric_names and dirty and (final or now - self._last_redraw >= gap):
            self._redraw(now)
        self.status_html.value = self._status_text()
        fraction, text = self._progress_text()
        self.progress_bar.value = fraction
        self.progress_bar.bar_style = {"stopped": "warning", "failed": "danger", "finished": "success"}.get(
            self.state, "info")
        self.progress_html.value = text
        self.metrics_html.value = self._metrics_text()

    def _redraw(self, now: float) -> None:
        """Send the whole figure to the pane (an Output widget: one message)."""
        for curve in self.curves.values():
            curve.dirty = False
        self._last_redraw = now
        self.redraws += 1
        self.pane.show(self.figure(), self.summary())

    def _status_text(self) -> str:
        resumed = f" (resumed after epoch {self.checkpoint})" if self.checkpoint else ""
        return (f'<b>Training</b>{resumed}: <span class="bb-state bb-state-{self.state}">'
                f"{html.escape(self.status)}</span>")

    def _progress_text(self) -> tuple[float, str]:
        progress = self._progress.get(self._split)
        if progress is None:
            return 0.0, ""
        done, total = progress.progress.items_processed, progress.progress.items_total
        rate = done / max(self._elapsed.get(self._split, 0.0), 1e-9)
        parts = [f"epoch {progress.epoch}/{progress.epoch_total}", f"{self._split} {done:,}/{total:,} items"]
        if total > 0:
            parts[-1] += f" ({100.0 * done / total:.0f}%)"
        parts.append(f"{rate:,.0f} items/s")
        if total > 0 and self.state in ("running", "stopping"):
            eta = (total - done) / rate if rate > 0 else float("inf")
            parts.append(f"ETA {format_duration(eta)}")
        if self.lr is not None:
            parts.append(f"lr {number(self.lr)}")
        return (done / total if total > 0 else 0.0), " &middot; ".join(html.escape(p) for p in parts)

    def _metrics_text(self) -> str:
        rows = []
        for split in (Split.Train, Split.Valid):   # the latest entry of every metric, numeric or not
            entries = self._entries[split]
            if entries:
                text = " | ".join(_entry_text(e) for e in entries.values())
                rows.append(f"<tr><th style='text-align:left;padding-right:1em;color:{COLORS[split]}'>{split}</th>"
                            f"<td>{html.escape(text)}</td></tr>")
        return f"<table>{''.join(rows)}</table>" if rows else ""

    def figure(self) -> go.Figure:
        """The curves as a plain plotly `Figure` (what the static output
        shows): one subplot per numeric metric; in each, per split, the
        value at every iteration (thin) and the epoch means (markers)."""
        return curves_figure(self.curves, self.metric_names, self.max_points)

    def close(self) -> None:
        """Close every widget of the dashboard (their views disappear and the
        kernel forgets them); the curves stay available in `figure()`."""
        for widget in (self.status_html, self.progress_bar, self.progress_html, self.stop_button,
                       self.metrics_html, self.pane, *self.root.children, self.root):
            if widget is not None:
                widget.close()

    # -- output ----------------------------------------------------------------------------
    def _show(self) -> None:
        from IPython.display import display

        self._handle = display(self, display_id=True)

    def summary(self) -> str:
        """One line: the state and each curve's last epoch mean (or last value)."""
        parts = []
        for split in (Split.Train, Split.Valid):
            values = []
            for name in self.metric_names:
                curve = self.curves.get((name, split))
                if curve is None:
                    continue
                value = curve.epoch_y[-1] if curve.epoch_y else (curve.y[-1] if curve.y else None)
                if value is not None:
                    values.append(f"{name} {number(value)}")
            if values:
                parts.append(f"{split}: {', '.join(values)}")
        return f"TrainingDashboard: {self.status}" + (f"; {'; '.join(parts)}" if parts else "")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None,
                          **kwargs: Any) -> dict | tuple[dict, dict]:
        bundle = self.root._repr_mimebundle_(include=include, exclude=exclude) or {}
        if isinstance(bundle, tuple):   # (data, metadata) from some ipywidgets versions
            bundle = bundle[0]
        bundle = dict(bundle)
        bundle.pop("text/html", None)
        metadata: dict = {}
        if self.state in ("stopped", "finished", "failed"):
            # Drawn once, when fit ends (`on_fit_end` updates the display):
            # the display made at the first iteration has no curves yet.
            image, metadata = static_image(self.figure())
            bundle.update(image)
        bundle["text/plain"] = self.summary()
        return (bundle, metadata) if metadata else bundle

    def __repr__(self) -> str:
        return self.summary()
