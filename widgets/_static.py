"""What every burnbook widget shares: a plot pane, a static fallback, a base class.

A widget is an `ipywidgets.VBox` (live view) that also carries a static
plotly figure, so a notebook saved without a kernel, nbconvert's HTML and
nbval all see the same result. Stable API (the dashboard imports it):

- `View`: the base class. A subclass implements `figure()` (a plain
  `plotly.graph_objects.Figure`) and `summary()` (short text with real
  numbers) and calls `self.refresh()` whenever its content changes.
  `view._repr_mimebundle_()` returns the widget view plus `text/html` (the
  static figure) and `text/plain` (the summary).
- `FigurePane`: an `ipywidgets.Output` that shows one figure; `pane.show(fig)`.
- `static_html(fig, prefix)`: the figure as an HTML fragment whose div id is
  derived from the figure itself (the same figure always gives the same text).
- `figure_json(fig)`: the figure as plain JSON-able data (NumPy arrays as
  plotly's base64 typed arrays, so large arrays stay compact).
- `LAYOUT`: the small layout defaults every burnbook figure uses.

Why not plotly's `FigureWidget`: it needs the `anywidget` package and stores
its whole 4.8 MB JavaScript bundle in the notebook's widget state. The pane
instead sets the `Output` widget's `outputs` directly, which sends no
`display_data` message, so nbval sees only the cell's own outputs.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from typing import Any

import ipywidgets
import plotly.graph_objects as go

__all__ = ["View", "FigurePane", "static_html", "figure_json", "LAYOUT", "PLOTLY_MIME"]

PLOTLY_MIME = "application/vnd.plotly.v1+json"

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


def static_html(fig: go.Figure, prefix: str = "bb") -> str:
    """An HTML fragment drawing `fig` with plotly.js from the CDN.

    The div id is `prefix-` plus a hash of the figure's JSON, so running the
    same notebook twice writes identical HTML (nbval compares it).
    """
    text = fig.to_json()
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
    return fig.to_html(include_plotlyjs="cdn", full_html=False, div_id=f"{prefix}-{digest}",
                       config={"responsive": True, "displaylogo": False})


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

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        if not self._shown:
            self._shown = True
            self.refresh()
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        if isinstance(bundle, tuple):  # (data, metadata) from some versions
            bundle = bundle[0]
        bundle = dict(bundle)
        bundle["text/plain"] = self.summary()
        static = static_html(self.figure(), _slug(self._css_class))
        bundle["text/html"] = f"<div class='{self._css_class} bb-static'>{static}</div>"
        return bundle

    def __repr__(self) -> str:
        return self.summary()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "bb"
