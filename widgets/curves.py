"""Curves against the step: the figure beside a chapter's printed numbers.

A chapter that prints a loss every few epochs, or a parameter after each
optimizer step, shows the same run as a picture with

    fig = plot_curves({"sgd": sgd_values, "adam": adam_values},
                      title="w after each step", yaxis="w")
    show_figure(fig, "w per step for sgd and adam (the numbers above)")

`plot_curves` returns a plain plotly figure with the book's layout, so a
chapter can still add to it (a line for the target, an annotation) before
`show_figure` displays it: live in JupyterLab, with a static PNG that shows
without a kernel, on GitHub and on the site.

A curve is a sequence of y values, drawn at x = 0, 1, 2, ... (`start`
moves the first x), or a pair `(xs, ys)` for curves sampled at other
steps. `marks` rings points of the figure and names them in the legend
(the best epoch, the step where a run stopped).
"""

from __future__ import annotations

from typing import Mapping, Sequence, Union

import numpy as np
import plotly.graph_objects as go

from ._static import LAYOUT

__all__ = ["plot_curves"]

Curve = Union[Sequence[float], tuple[Sequence[float], Sequence[float]]]

MARKERS_UP_TO = 60    # curves with at most this many points show a marker per point


def _xy(name: str, curve: Curve, start: float) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(curve, tuple) and len(curve) == 2 and np.ndim(curve[0]) == 1:
        xs, ys = (np.asarray(c, dtype=np.float64) for c in curve)
        if xs.shape != ys.shape:
            raise ValueError(f"plot_curves: curve {name!r} has {xs.size} x values and {ys.size} y values")
    else:
        ys = np.asarray(curve, dtype=np.float64)
        if ys.ndim != 1:
            raise ValueError(f"plot_curves: curve {name!r} is not a sequence of numbers (shape {ys.shape})")
        xs = start + np.arange(ys.size, dtype=np.float64)
    return xs, ys


def plot_curves(curves: Mapping[str, Curve], *, title: str, xaxis: str = "step", yaxis: str = "loss",
                log_y: bool = False, start: float = 0, marks: Mapping[str, tuple[float, float]] | None = None,
                height: int = 340) -> go.Figure:
    """A figure of one line per entry of `curves` (name -> ys, or name ->
    (xs, ys)), titled `title`, with axis titles `xaxis` and `yaxis`.

    `log_y` draws the y axis on a log scale (a loss falling over decades,
    labelled at the powers of ten when it spans more than two); every y
    value must then be positive. `start` is the x of a bare sequence's
    first value. `marks` maps a label to a point `(x, y)`, drawn as a
    ring named in the legend.
    """
    if not curves:
        raise ValueError("plot_curves: no curves given")
    fig = go.Figure()
    low, high = np.inf, 0.0
    for name, curve in curves.items():
        xs, ys = _xy(name, curve, start)
        if log_y and not (ys > 0).all():
            raise ValueError(f"plot_curves: curve {name!r} has values <= 0, which a log axis cannot show")
        if ys.size:
            low, high = min(low, ys.min()), max(high, ys.max())
        mode = "lines+markers" if xs.size <= MARKERS_UP_TO else "lines"
        fig.add_scatter(x=xs, y=ys, mode=mode, name=name, marker_size=5)
    for label, (x, y) in (marks or {}).items():
        # Named in the legend rather than written beside the point, where the
        # text would cross the curves or run off the plot.
        fig.add_scatter(x=[x], y=[y], mode="markers", name=label,
                        marker={"size": 11, "symbol": "circle-open", "line": {"width": 2}})
    fig.update_layout(**LAYOUT, title={"text": title}, height=height,
                      showlegend=len(curves) > 1 or bool(marks), xaxis_title=xaxis, yaxis_title=yaxis)
    if log_y:
        # Over more than two decades, label the powers of ten only (1, 0.1, 0.01):
        # plotly's default also labels 2 and 5 in each decade, a crowded axis.
        fig.update_yaxes(type="log", dtick=1 if high > 100 * low else None)
    return fig
