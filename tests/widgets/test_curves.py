"""`plot_curves`: the figure of a value against the step that a chapter also
prints, shown by `show_figure` with its static PNG."""

from __future__ import annotations

import base64

import numpy as np
import pytest

pytest.importorskip("plotly")
pytest.importorskip("ipywidgets")

from burnbook.widgets import plot_curves, show_figure  # noqa: E402
from burnbook.widgets._static import LAYOUT  # noqa: E402

from .pngs import png_facts  # noqa: E402


def test_one_line_per_curve_at_steps_from_start():
    fig = plot_curves({"sgd": [1.0, 0.8, 0.64], "adam": [1.0, 0.9, 0.8]}, title="w per step",
                      yaxis="w", start=1)
    assert [t.name for t in fig.data] == ["sgd", "adam"]
    assert list(fig.data[0].x) == [1.0, 2.0, 3.0] and list(fig.data[0].y) == [1.0, 0.8, 0.64]
    assert fig.data[0].mode == "lines+markers"
    assert fig.layout.title.text == "w per step"
    assert fig.layout.xaxis.title.text == "step" and fig.layout.yaxis.title.text == "w"
    assert fig.layout.showlegend is True
    assert fig.layout.template.layout.to_plotly_json() == {}   # the book's "none" template, no 6 KB default
    assert fig.layout.font.family == LAYOUT["font"]["family"]


def test_explicit_xs_log_axis_marks_and_long_curves():
    epochs = np.arange(0, 200, 2)
    loss = 10.0 * 0.95 ** epochs + 0.01
    fig = plot_curves({"train": (epochs, loss)}, title="loss", xaxis="epoch", log_y=True,
                      marks={"best": (198, float(loss[-1]))})
    line, mark = fig.data
    assert np.array_equal(line.x, epochs) and line.mode == "lines"   # 100 points: no marker each
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.dtick == 1   # 10 -> 0.01: powers of ten
    narrow = plot_curves({"valid": [0.9, 0.7, 0.5]}, title="t", log_y=True)
    assert narrow.layout.yaxis.type == "log" and narrow.layout.yaxis.dtick is None
    # A mark is a ring named in the legend, so a single curve gets a legend too.
    assert list(mark.x) == [198] and mark.name == "best" and mark.mode == "markers"
    assert fig.layout.showlegend is True and narrow.layout.showlegend is False


def test_bad_curves_are_named():
    with pytest.raises(ValueError, match="no curves"):
        plot_curves({}, title="t")
    with pytest.raises(ValueError, match="'valid' has values <= 0"):
        plot_curves({"valid": [1.0, 0.0]}, title="t", log_y=True)
    with pytest.raises(ValueError, match="'pairs' has 3 x values and 2 y values"):
        plot_curves({"pairs": ([0, 1, 2], [1.0, 2.0])}, title="t")
    with pytest.raises(ValueError, match="'grid' is not a sequence of numbers"):
        plot_curves({"grid": [[1.0, 2.0], [3.0, 4.0]]}, title="t")


def test_shown_with_a_static_png(real_png, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *a, **k: shown.append((a, k)))
    fig = plot_curves({"loss": [2.3, 1.8, 1.2, 0.7, 0.2]}, title="training loss")
    show_figure(fig, "loss 2.3 -> 0.2")
    ((data,), options), = shown
    assert data["text/plain"] == "loss 2.3 -> 0.2"
    width, height, ink = png_facts(base64.b64decode(data["image/png"]))
    assert (width, height) == (900, 340) and ink > 0.01
