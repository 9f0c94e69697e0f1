"""What every burnbook widget shares: a plot pane, a static image, a base class.

A widget is an `ipywidgets.VBox` (the live view) whose notebook output also
carries a static PNG of its figure and a text summary, so the figure shows
without a kernel: in a freshly cloned (untrusted) notebook in JupyterLab,
on GitHub, in nbviewer and in nbconvert's HTML, offline, with no script and
no CDN. Stable API (the dashboard and the chapters use it):

- `show_figure(fig, text)`: display a plain plotly figure the way the
  widgets do (the live plotly output, its PNG, `text` as text/plain).
- `figure_bundle(fig, text)`: that output as a MIME bundle.
- `View`: the base class. A subclass implements `figure()` (a plain
  `plotly.graph_objects.Figure`) and `summary()` (short text with real
  numbers) and calls `self.refresh()` whenever its content changes.
  `view._repr_mimebundle_()` returns the widget view plus `image/png` (the
  static figure, where one can be drawn here) and `text/plain` (the summary).
- `FigurePane`: an `ipywidgets.Output` that shows one figure; `pane.show(fig)`.
- `figure_json(fig)`: the figure as plain JSON-able data (NumPy arrays as
  plotly's base64 typed arrays, so large arrays stay compact).
- `LAYOUT`: the small layout defaults every burnbook figure uses.
- `PLOTLY_CONFIG`: the live figures' plotly config (a short toolbar, no
  logo); `MODEBAR_PX`: the width that toolbar takes in a figure's top right
  corner when the pointer is over it, where no title or legend may go.
- `View.static_figure()`: the figure the static PNG shows (by default
  `figure()`; a view adds what its live panel shows beside it), and
  `add_caption(fig, text)`, which writes lines of text under a figure's plot.

Why not plotly's `FigureWidget`: it needs the `anywidget` package and sends
its whole ~5 MB JavaScript bundle to the browser with every instance. The
pane instead sets the `Output` widget's `outputs` to a plotly MIME output,
which JupyterLab draws with the plotly.js its plotly extension ships, and
sends no `display_data` message, so nbval sees only the cell's own outputs.

The PNG is drawn by kaleido in a headless Chromium (`widgets._image`).
Where none is installed (a reader's `make lab`), outputs carry the live
figure and the text only; nbval never compares PNGs, so stored chapters
stay valid either way.
"""

from __future__ import annotations

import base64
import html
import json
from typing import Any

import ipywidgets
import plotly.graph_objects as go

from ._image import figure_png

__all__ = ["View", "FigurePane", "show_figure", "figure_bundle", "figure_json", "plotly_output", "add_caption",
           "LAYOUT", "PLOTLY_CONFIG", "MODEBAR_PX", "PLOTLY_MIME", "PNG_MIME"]

PLOTLY_MIME = "application/vnd.plotly.v1+json"
PNG_MIME = "image/png"

# No template: plotly's default one adds ~6 KB of JSON to every saved figure.
LAYOUT: dict[str, Any] = {
    "template": "none",
    "font": {"family": "sans-serif", "size": 12, "color": "#2a3f5f"},
    "paper_bgcolor": "white",
    "plot_bgcolor": "white",
    "hovermode": "closest",
    "hoverlabel": {"align": "left"},
    "margin": {"l": 50, "r": 20, "t": 50, "b": 40},
}


# The toolbar plotly shows over a live figure's top right corner on hover:
# "download as png", zoom, pan, zoom in / out and reset. Selection tools and
# the logo are dropped (nothing here reads a selection), and so is plotly.js
# 4's "Share chart" button, which uploads the figure to Plotly's cloud: the
# toolbar stays narrow, clear of the titles, and nothing leaves the machine.
PLOTLY_CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "showSendToCloud": False,
    "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d"],
}
MODEBAR_PX = 190   # its width (6 buttons: 168 px in Chromium) and a margin; the browser test measures it


def figure_json(fig: go.Figure) -> dict:
    """`fig` as JSON-compatible data, arrays encoded as base64 typed arrays."""
    return json.loads(fig.to_json())


def plotly_output(fig: go.Figure) -> dict:
    """The live figure as the value of a plotly MIME output: its data and
    layout, and `PLOTLY_CONFIG` (JupyterLab's plotly renderer passes the
    config on to plotly.js)."""
    return {**figure_json(fig), "config": dict(PLOTLY_CONFIG)}


def static_image(fig: go.Figure) -> tuple[dict, dict]:
    """The figure's PNG as `({"image/png": base64}, {"image/png": {"width": ...}})`
    (data and metadata of a MIME bundle), or two empty dicts where no image
    can be drawn here. The width metadata shows the HiDPI image at its
    CSS size."""
    drawn = figure_png(fig)
    if drawn is None:
        return {}, {}
    png, width, height = drawn
    return ({PNG_MIME: base64.b64encode(png).decode("ascii")},
            {PNG_MIME: {"width": width, "height": height}})


def figure_bundle(fig: go.Figure, text: str = "") -> tuple[dict, dict]:
    """`(data, metadata)` of a plain figure's output: the live plotly figure,
    its PNG (where one can be drawn) and `text` (default: the title)."""
    data, metadata = static_image(fig)
    data = {PLOTLY_MIME: plotly_output(fig), **data, "text/plain": text or _title_text(fig)}
    return data, metadata


CAPTION_FONT = 12   # px


def add_caption(fig: go.Figure, text: str, *, gap: int = 28) -> go.Figure:
    """Write `text` (one or more lines) under `fig`'s plot area, left
    aligned with it, `gap` px below its bottom edge (clear of the x axis'
    tick labels). The bottom margin grows to hold it and the figure grows
    by as much, so the plot keeps its size. Returns `fig`."""
    lines = text.splitlines() or [""]
    fig.add_annotation(text="<br>".join(html.escape(line) for line in lines), showarrow=False,
                       xref="paper", yref="paper", x=0.0, y=0.0, xanchor="left", yanchor="top", yshift=-gap,
                       align="left", font={"size": CAPTION_FONT})
    old = fig.layout.margin.b if fig.layout.margin.b is not None else LAYOUT["margin"]["b"]
    new = gap + int(round(len(lines) * CAPTION_FONT * 1.3)) + 8
    fig.update_layout(height=(fig.layout.height or 450) + max(new - old, 0), margin={"b": max(new, old)})
    return fig


def show_figure(fig: go.Figure, text: str = "") -> None:
    """Display a plain plotly figure in a notebook the way burnbook's widgets
    do: JupyterLab draws it live (zoom, hover), and the stored output also
    holds a static PNG, so the figure shows without a kernel, untrusted, on
    GitHub and in nbviewer, with no CDN. `text` is the plain-text output
    (what nbval compares; give the numbers the figure shows), by default
    the figure's title."""
    from IPython.display import display

    if not isinstance(fig, go.Figure):
        raise TypeError(f"show_figure: expected a plotly.graph_objects.Figure, got {type(fig).__name__}")
    data, metadata = figure_bundle(fig, text)
    display(data, metadata=metadata, raw=True)


def _title_text(fig: go.Figure) -> str:
    title = fig.layout.title.text if fig.layout.title is not None else None
    return f"<figure: {title}>" if title else "<figure>"


class FigurePane(ipywidgets.Output):
    """An output area that shows one plotly figure (through JupyterLab's
    plotly renderer, so zoom, pan and hover work offline)."""

    def show(self, fig: go.Figure, text: str = "") -> None:
        """Replace what the pane shows with `fig` (`text`: the plain fallback)."""
        bundle = {PLOTLY_MIME: plotly_output(fig), "text/plain": text or "<plotly figure>"}
        self.outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)


class View(ipywidgets.VBox):
    """Base class of the burnbook widgets: a figure pane above an info panel.

    Subclasses call `super().__init__(css_class)` then `self.refresh()`; they
    may append their own controls to `self.children`.
    """

    def __init__(self, css_class: str, **kwargs: Any) -> None:
        self._shown = False
        self.pane = FigurePane()
        self.info = ipywidgets.HTML()
        super().__init__(children=[self.pane, self.info], **kwargs)
        self.add_class("bb-view")
        self.add_class(css_class)
        self._css_class = css_class

    # -- what subclasses provide -------------------------------------------------
    def figure(self) -> go.Figure:
        """The widget's content as a plain plotly figure."""
        raise NotImplementedError(f"{type(self).__name__}.figure() is not implemented")

    def summary(self) -> str:
        """A few lines of text with the numbers the figure shows."""
        raise NotImplementedError(f"{type(self).__name__}.summary() is not implemented")

    def info_html(self) -> str:
        """The info panel below the figure (the summary, by default)."""
        return f"<pre class='bb-summary'>{html.escape(self.summary())}</pre>"

    def static_figure(self) -> go.Figure:
        """The figure of the static PNG, which a reader without a kernel sees
        alone (no info panel under it): `figure()` by default; a view whose
        panel holds numbers the figure lacks draws them in here."""
        return self.figure()

    # -- shared behaviour --------------------------------------------------------
    def refresh(self) -> None:
        """Redraw the live view from the current state. The figure is sent
        to the pane only once the widget has been displayed: a widget that
        is built just for its `summary()` adds nothing to the notebook."""
        if self._shown:
            self.pane.show(self.figure(), self.summary())
        self.info.value = self.info_html()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | tuple[dict, dict]:
        if not self._shown:
            self._shown = True
            self.refresh()
        return with_static_image(super()._repr_mimebundle_(**kwargs), self)

    def __repr__(self) -> str:
        return self.summary()


def with_static_image(bundle: Any, view: Any) -> dict | tuple[dict, dict]:
    """A live widget's mime bundle with the static PNG of `view.static_figure()`
    in place of its HTML and `view.summary()` as its text, so a saved notebook
    shows the figure without a kernel."""
    if isinstance(bundle, tuple):  # (data, metadata) from some versions
        bundle = bundle[0]
    bundle = dict(bundle or {})
    bundle.pop("text/html", None)
    image, metadata = static_image(view.static_figure())
    bundle.update(image)
    bundle["text/plain"] = view.summary()
    return (bundle, metadata) if metadata else bundle
