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

__all__ = ["View", "FigurePane", "show_figure", "figure_bundle", "figure_json", "LAYOUT", "PLOTLY_MIME",
           "PNG_MIME"]

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


def figure_json(fig: go.Figure) -> dict:
    """`fig` as JSON-compatible data, arrays encoded as base64 typed arrays."""
    return json.loads(fig.to_json())


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
    data = {PLOTLY_MIME: figure_json(fig), **data, "text/plain": text or _title_text(fig)}
    return data, metadata


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
        bundle = {PLOTLY_MIME: figure_json(fig), "text/plain": text or "<plotly figure>"}
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
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        if isinstance(bundle, tuple):  # (data, metadata) from some versions
            bundle = bundle[0]
        bundle = dict(bundle)
        bundle.pop("text/html", None)
        image, metadata = static_image(self.figure())
        bundle.update(image)
        bundle["text/plain"] = self.summary()
        return (bundle, metadata) if metadata else bundle

    def __repr__(self) -> str:
        return self.summary()

