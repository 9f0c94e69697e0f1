"""The training dashboard's figure: one subplot per numeric metric, with
its train and valid curves and a key.

`Curve` holds one metric of one split as the dashboard records it: the
value at every iteration (x in epochs: 1.5 is half-way through epoch 2) and
the epoch means. `curves_figure(curves, names, max_points)` draws them: in
each subplot, per split, the value at every iteration (a thin line) and the
epoch means (a dotted line with markers); an epoch that was stopped
part-way has its mean drawn where it stopped, as an open marker. The key
(the legend, in the top row, left of where plotly's toolbar appears on
hover) names the colour of each split and the marks, because the static
image is seen without the dashboard's metrics panel.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go

from burnbook.train.store import Split

from ._static import LAYOUT

__all__ = ["Curve", "curves_figure", "thin", "COLORS", "KEY_COLOR", "FIGURE_HEIGHT"]

COLORS = {Split.Train: "#1f77b4", Split.Valid: "#ff7f0e"}
KEY_COLOR = "#555555"       # the key's marks that stand for both splits
FIGURE_HEIGHT = 320         # px: the key's row, the subplot titles and the plots


@dataclass
class Curve:
    """One numeric metric of one split: its value at every iteration
    (x in epochs: 1.5 is half-way through epoch 2) and its epoch means;
    `epoch_partial[i]` is the share of its items an epoch saw when it was
    stopped part-way (None: it ran whole)."""

    x: list = field(default_factory=list)
    y: list = field(default_factory=list)
    epoch_x: list = field(default_factory=list)
    epoch_y: list = field(default_factory=list)
    epoch_partial: list = field(default_factory=list)
    this_epoch: list = field(default_factory=list)
    dirty: bool = False

    def add(self, x: float, y: float) -> None:
        if math.isfinite(y):
            self.x.append(x)
            self.y.append(y)
            self.this_epoch.append(y)
            self.dirty = True

    def close_epoch(self, epoch: int, done: float | None = None) -> None:
        """The epoch's mean is the mean of its iteration values (what the
        Learner's event store reports for the epoch), drawn at the epoch's
        end, or where it stopped when it saw only the share `done` (0..1)
        of its items."""
        if self.this_epoch:
            self.epoch_x.append(float(epoch) if done is None else round(epoch - 1 + done, 6))
            self.epoch_y.append(float(np.mean(self.this_epoch)))
            self.epoch_partial.append(done)
            self.this_epoch = []
            self.dirty = True


def thin(xs: list, ys: list, limit: int) -> tuple[list, list]:
    """At most `limit` evenly spaced points (the last one kept), so a long
    run does not send ever larger arrays to the browser."""
    n = len(xs)
    if n <= limit:
        return list(xs), list(ys)
    keep = np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))
    return [xs[i] for i in keep], [ys[i] for i in keep]


def curves_figure(curves: dict[tuple[str, Split], Curve], names: list[str], max_points: int) -> go.Figure:
    """The figure of `curves` (keyed by metric name and split), one subplot
    per name, built as one dict (plotly's `make_subplots` and `add_trace`
    validate every call and cost ~100 ms per figure; one dict is validated
    once). Values are sent as float32 (plotly encodes NumPy arrays as
    base64): half the bytes of float64, and far finer than a curve can
    show; at most `max_points` per curve (`thin`)."""
    names = list(names)
    cols = max(len(names), 1)
    gap = 0.08 if cols > 1 else 0.0
    width = (1.0 - gap * (cols - 1)) / cols
    layout: dict[str, Any] = dict(LAYOUT)
    # The key takes the top row, left (plotly's toolbar appears on the
    # right of it on hover); the subplot titles sit under it.
    layout.update(height=FIGURE_HEIGHT, margin=dict(l=50, r=20, t=62, b=40), annotations=[],
                  showlegend=bool(names),
                  legend=dict(orientation="h", x=0.0, xanchor="left", xref="paper", y=1.0, yanchor="top",
                              yref="container", font=dict(size=12), itemclick=False, itemdoubleclick=False))
    data: list[dict] = []
    partial = False
    for col, name in enumerate(names or ["waiting for the first iteration"], start=1):
        suffix = "" if col == 1 else str(col)
        left = (col - 1) * (width + gap)
        layout[f"xaxis{suffix}"] = dict(domain=[left, left + width], anchor=f"y{suffix}", title=dict(text="epoch"),
                                        showgrid=True, gridcolor="#eee", zeroline=False)
        layout[f"yaxis{suffix}"] = dict(domain=[0.0, 1.0], anchor=f"x{suffix}", showgrid=True, gridcolor="#eee",
                                        zeroline=False)
        layout["annotations"].append(dict(text=name, x=left + width / 2, y=1.0, xref="paper", yref="paper",
                                          xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=14)))
        if not names:
            break
        for split in (Split.Train, Split.Valid):
            curve = curves.get((name, split), Curve())
            xs, ys = (np.asarray(v, dtype=np.float32) for v in thin(curve.x, curve.y, max_points))
            axes = dict(xaxis=f"x{suffix}", yaxis=f"y{suffix}", showlegend=False)
            data.append(dict(type="scatter", x=xs, y=ys, mode="lines", name=f"{name} ({split})",
                             line=dict(color=COLORS[split], width=1), opacity=0.6, **axes))
            cut = [p is not None for p in curve.epoch_partial]
            partial = partial or any(cut)
            data.append(dict(type="scatter", x=np.asarray(curve.epoch_x, dtype=np.float32),
                             y=np.asarray(curve.epoch_y, dtype=np.float32), mode="lines+markers",
                             name=f"{name} ({split}, epoch mean)",
                             marker=dict(size=7, color=COLORS[split], line=dict(width=2, color=COLORS[split]),
                                         symbol=["circle-open" if c else "circle" for c in cut]),
                             customdata=[f"epoch {math.ceil(x)} (partial: {100 * p:.0f}% of its items)"
                                         if p is not None else f"epoch {round(x)}"
                                         for x, p in zip(curve.epoch_x, curve.epoch_partial)],
                             hovertemplate="%{customdata} mean: %{y:.4g}<extra>" + html.escape(str(split)) + "</extra>",
                             line=dict(color=COLORS[split], width=2, dash="dot"), **axes))
    if names:
        data += key_traces(partial)
    return go.Figure(dict(data=data, layout=layout))


def key_traces(partial: bool) -> list[dict]:
    """Traces that only make the legend: the colour of each split, the
    marks of the epoch means, and of a partial epoch's when one is drawn
    (they hold no point; the legend is a key, clicking it hides nothing)."""
    none = dict(x=[None], y=[None], type="scatter", hoverinfo="skip", showlegend=True)
    key = [dict(name=str(split), mode="lines", line=dict(color=COLORS[split], width=2), **none)
           for split in (Split.Train, Split.Valid)]
    key.append(dict(name="epoch mean", mode="lines+markers", marker=dict(size=7, color=KEY_COLOR),
                    line=dict(color=KEY_COLOR, width=2, dash="dot"), **none))
    if partial:
        key.append(dict(name="partial epoch (stopped)", mode="markers",
                        marker=dict(size=7, symbol="circle-open", color=KEY_COLOR, line=dict(width=2, color=KEY_COLOR)),
                        **none))
    return key
