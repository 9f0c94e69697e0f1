"""`AttentionView`: a transformer's attention weights, per layer and head.

For one input (one batch item) the view shows the weights of one layer and
one head as a matrix, queries down and keys across, each axis labelled with
its tokens; two drop-downs under it pick the layer and the head ("mean of
heads" averages a layer's heads), and hovering a cell shows its query
token, key token and weight. Row q of a head's matrix is how query q splits
its attention over the keys (it sums to 1).

The colours run from 0 to the largest weight of the whole view, on one
scale for every layer and head so that two heads compare at a glance, and
0 is a colour of its own (Viridis' dark violet, not the white of the
background): a causal mask's zeros read as zero, they do not vanish.

The static figure (the PNG a reader without a kernel sees) shows every
layer (rows) and head (columns) at once, up to `STATIC_PANELS` panels
(else each layer's mean of heads), with the summary written under it.

Input: what burnbook's attention returns. `MultiHeadAttention.forward`
gives `MhaOutput(weights [batch, n_heads, seq_q, seq_k], context)`;
`TransformerEncoder.forward_with_weights` gives one such tensor per layer,
and `AttentionView.from_encoder(encoder, x, tokens)` calls it for you.
"""

from __future__ import annotations

import html
import math
from typing import Any, Sequence

import ipywidgets
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ._static import LAYOUT, MODEBAR_PX, View, add_caption
from .attention_weights import read_weights, token_labels
from .layout import text_size

__all__ = ["AttentionView", "MEAN", "STATIC_PANELS"]

MEAN = "mean"            # the head "value" that averages a layer's heads
COLORSCALE = "Viridis"   # 0 is dark violet, not the background's white
STATIC_PANELS = 24       # the most (layer, head) panels the static figure draws
SUMMARY_ROWS = 12        # query rows listed in the summary
MAX_TICKS = 40           # token labels per axis, at most (every k-th past that)
TITLE_SIZE = 16          # px
MARGIN = {"t": 56, "r": 20, "b": 50}
CAPTION_GAP = 56         # px from the plot's bottom to the caption: below the "key" axis title
COLORBAR_PX = 90         # px right of the plot: the colour bar and its labels


def _visible(token: str) -> str:
    """A token as an axis label: a space or a line break made visible."""
    shown = token.replace(" ", "\u2423").replace("\n", "\u21b5").replace("\t", "\u21e5")
    return html.escape(shown or "''", quote=False)


class AttentionView(View):
    """Attention weights, per layer and head, for one input.

    `weights`: a list (one per layer, first layer first) of tensors or
    arrays `[batch, n_heads, seq_q, seq_k]` or `[n_heads, seq_q, seq_k]`,
    or a single one (an `MhaOutput` works as its weights); `tokens` labels
    both axes (a list of strings, token ids, or a string: one character per
    position); `query_tokens` / `key_tokens` label one axis each (cross-
    attention, where the lengths differ); `batch` picks the batch item;
    `title` goes before the layer and head in the figure's title.
    """

    def __init__(self, weights: Any, tokens: Sequence[Any] | str | None = None, *,
                 query_tokens: Sequence[Any] | str | None = None, key_tokens: Sequence[Any] | str | None = None,
                 batch: int = 0, title: str | None = None) -> None:
        super().__init__("bb-attention-view")
        self.weights: np.ndarray = read_weights(weights, batch)   # [n_layers, n_heads, seq_q, seq_k]
        n_layers, n_heads, seq_q, seq_k = self.weights.shape
        self.batch = int(batch)
        self.query_tokens = token_labels(tokens if query_tokens is None else query_tokens, seq_q, "query",
                                         "tokens" if query_tokens is None else "query_tokens")
        self.key_tokens = token_labels(tokens if key_tokens is None else key_tokens, seq_k, "key",
                                       "tokens" if key_tokens is None else "key_tokens")
        self._title = title
        self.zmax = float(self.weights.max()) or 1.0
        self._layer, self._head = 0, 0
        self._syncing = False
        self.layer_select = ipywidgets.Dropdown(
            options=[(f"layer {i}", i) for i in range(n_layers)], value=0, description="layer",
            layout={"width": "180px"}, style={"description_width": "40px"})
        self.head_select = ipywidgets.Dropdown(
            options=[(f"head {h}", h) for h in range(n_heads)] + [(f"mean of {n_heads} heads", MEAN)], value=0,
            description="head", layout={"width": "220px"}, style={"description_width": "40px"})
        self.layer_select.add_class("bb-attention-layer")
        self.head_select.add_class("bb-attention-head")
        self.layer_select.observe(self._on_select, names="value")
        self.head_select.observe(self._on_select, names="value")
        self.children = [self.pane, ipywidgets.HBox([self.layer_select, self.head_select]), self.info]
        self.refresh()

    @classmethod
    def from_encoder(cls, encoder: Any, input: Any, tokens: Sequence[Any] | str | None = None,  # noqa: A002
                     **kwargs: Any) -> "AttentionView":
        """The view of every layer of a `TransformerEncoder` for `input` (a
        `TransformerEncoderInput`, with its masks, or a tensor `[batch, seq,
        d_model]`), through `encoder.forward_with_weights`. An encoder on an
        autodiff backend runs as `encoder.valid()` (inference: no dropout on
        the weights). Other keywords go to the constructor."""
        from burnbook.nn.transformer import TransformerEncoderInput

        run = getattr(encoder, "forward_with_weights", None)
        if run is None:
            raise TypeError(f"AttentionView.from_encoder: expected a TransformerEncoder, got {type(encoder).__name__}")
        if not isinstance(input, TransformerEncoderInput):
            if not hasattr(input, "dims"):
                raise TypeError("AttentionView.from_encoder: input must be a TransformerEncoderInput or a tensor "
                                f"[batch, seq, d_model], got {type(input).__name__}")
            input = TransformerEncoderInput(input)
        if getattr(input.tensor.backend, "is_autodiff", False):
            encoder = encoder.valid()
            input = TransformerEncoderInput(input.tensor.inner(), input.padding, input.attention)
        _, weights = encoder.forward_with_weights(input)
        return cls(weights, tokens, **kwargs)

    # -- selection -------------------------------------------------------------------------
    @property
    def n_layers(self) -> int:
        return self.weights.shape[0]

    @property
    def n_heads(self) -> int:
        return self.weights.shape[1]

    @property
    def layer(self) -> int:
        """The layer shown."""
        return self._layer

    @property
    def head(self) -> int | str:
        """The head shown, or `MEAN` ("mean") for the mean of the layer's heads."""
        return self._head

    def _check(self, layer: Any, head: Any) -> tuple[int, int | str]:
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
            raise TypeError(f"AttentionView: layer must be an integer, got {type(layer).__name__}")
        if not -self.n_layers <= layer < self.n_layers:
            raise IndexError(f"AttentionView: layer {layer} is out of range; there are {self.n_layers} layers "
                             f"(0 to {self.n_layers - 1})")
        if head != MEAN:
            if isinstance(head, bool) or not isinstance(head, (int, np.integer)):
                raise TypeError(f"AttentionView: head must be an integer or {MEAN!r}, got {head!r}")
            if not -self.n_heads <= head < self.n_heads:
                raise IndexError(f"AttentionView: head {head} is out of range; there are {self.n_heads} heads "
                                 f"(0 to {self.n_heads - 1}, or {MEAN!r})")
            head = int(head) % self.n_heads
        return int(layer) % self.n_layers, head

    def matrix(self, layer: int | None = None, head: int | str | None = None) -> np.ndarray:
        """The weights `[seq_q, seq_k]` of `layer` and `head` (`"mean"`: the
        mean over the layer's heads); by default the ones shown."""
        layer, head = self._check(self._layer if layer is None else layer, self._head if head is None else head)
        w = self.weights[layer]
        return w.mean(axis=0) if head == MEAN else w[head]

    def select(self, layer: int | None = None, head: int | str | None = None) -> "AttentionView":
        """Show `layer` and `head` (negative counts from the end; `"mean"`
        for the mean of the heads), as the drop-downs do; returns the view."""
        self._layer, self._head = self._check(self._layer if layer is None else layer,
                                              self._head if head is None else head)
        self._syncing = True
        try:
            self.layer_select.value = self._layer
            self.head_select.value = self._head
        finally:
            self._syncing = False
        self.refresh()
        return self

    def _on_select(self, _change: dict) -> None:
        if not self._syncing:
            self.select(self.layer_select.value, self.head_select.value)

    def pair(self, query: int, key: int) -> tuple[str, str, float]:
        """(query token, key token, weight) of one cell of the shown matrix:
        what hovering it says."""
        m = self.matrix()
        return self.query_tokens[query], self.key_tokens[key], float(m[query, key])

    # -- text --------------------------------------------------------------------------------
    def _selection_name(self, layer: int | None = None, head: int | str | None = None) -> str:
        layer = self._layer if layer is None else layer
        head = self._head if head is None else head
        return f"layer {layer}, " + (f"mean of {self.n_heads} heads" if head == MEAN else f"head {head}")

    def summary(self) -> str:
        n_layers, n_heads, seq_q, seq_k = self.weights.shape
        lines = [f"AttentionView: {n_layers} layer{'s' * (n_layers != 1)} x {n_heads} head{'s' * (n_heads != 1)}, "
                 f"{seq_q} queries x {seq_k} keys, batch item {self.batch}; showing {self._selection_name()}",
                 "strongest key per query (weight):"]
        m = self.matrix()
        for q in range(min(seq_q, SUMMARY_ROWS)):
            k = int(np.argmax(m[q]))
            lines.append(f"  q{q} {self.query_tokens[q]!r} -> k{k} {self.key_tokens[k]!r} {m[q, k]:.3f}")
        if seq_q > SUMMARY_ROWS:
            lines.append(f"  ... and {seq_q - SUMMARY_ROWS} more queries")
        return "\n".join(lines)

    # -- figures -----------------------------------------------------------------------------
    def _heatmap(self, m: np.ndarray, name: str, label: str) -> go.Heatmap:
        """One matrix as a heatmap on integer axes (duplicate tokens stay
        apart), hover naming the query, the key and the weight, and `label`
        (the layer and head) beside them."""
        text = [[f"query {q} {html.escape(repr(qt), quote=False)}<br>key {k} {html.escape(repr(kt), quote=False)}"
                 for k, kt in enumerate(self.key_tokens)] for q, qt in enumerate(self.query_tokens)]
        return go.Heatmap(z=m.astype(np.float32), x=list(range(m.shape[1])), y=list(range(m.shape[0])), text=text,
                          name=name, coloraxis="coloraxis", xgap=0, ygap=0,
                          hovertemplate="%{text}<br>weight %{z:.4f}<extra>" + html.escape(label) + "</extra>")

    def _axis(self, labels: list[str], title: str | None, show: bool) -> dict:
        step = max(1, math.ceil(len(labels) / MAX_TICKS))
        ticks = list(range(0, len(labels), step))
        return {"tickmode": "array", "tickvals": ticks, "ticktext": [_visible(labels[i]) for i in ticks],
                "showticklabels": show, "showgrid": False, "zeroline": False, "ticks": "",
                "title": {"text": title} if title else None, "constrain": "domain"}

    def _coloraxis(self) -> dict:
        return {"colorscale": COLORSCALE, "cmin": 0.0, "cmax": self.zmax,
                "colorbar": {"title": {"text": "weight", "side": "right"}, "thickness": 14}}

    def _label_px(self, labels: list[str], size: int = 12) -> int:
        return int(max(text_size(_visible(t), size)[0] for t in labels))

    def figure(self) -> go.Figure:
        """The shown layer and head: one heatmap trace named "attention",
        row q the query at position q (top to bottom), column k the key."""
        seq_q, seq_k = self.weights.shape[2:]
        m = self.matrix()
        cell = max(8, min(36, int(440 / max(seq_q, seq_k))))
        left = 40 + self._label_px(self.query_tokens)
        bottom = MARGIN["b"]
        title = (f"{self._title}: " if self._title else "") + f"attention, {self._selection_name()}"
        plot_w = seq_k * cell
        width = max(left + plot_w + COLORBAR_PX + MARGIN["r"],
                    int(text_size(html.escape(title), TITLE_SIZE)[0]) + MODEBAR_PX + 16)
        fig = go.Figure(self._heatmap(m, "attention", self._selection_name()))
        fig.update_layout(**LAYOUT)
        fig.update_layout(
            title={"text": html.escape(title), "x": 0.0, "xref": "container", "xanchor": "left", "y": 1.0,
                   "yref": "container", "yanchor": "top", "pad": {"t": 10, "l": 10}, "font": {"size": TITLE_SIZE}},
            width=width, height=MARGIN["t"] + seq_q * cell + bottom + 10,
            margin={"l": left, "r": width - left - plot_w, "t": MARGIN["t"], "b": bottom},
            xaxis=self._axis(self.key_tokens, "key", True),
            yaxis={**self._axis(self.query_tokens, "query", True), "autorange": "reversed", "scaleanchor": "x"},
            coloraxis=self._coloraxis())
        return fig

    def static_panels(self) -> list[tuple[int, int | str]]:
        """The (layer, head) panels of the static figure: every layer and
        head when there are at most `STATIC_PANELS`, else each layer's mean
        of heads (at most `STATIC_PANELS` layers), else the one shown."""
        if self.n_layers * self.n_heads <= STATIC_PANELS:
            return [(layer, head) for layer in range(self.n_layers) for head in range(self.n_heads)]
        if self.n_layers <= STATIC_PANELS:
            return [(layer, MEAN) for layer in range(self.n_layers)]
        return [(self._layer, self._head)]

    def static_figure(self) -> go.Figure:
        """Every layer (rows) and head (columns) at once, on one colour
        scale, with the summary written under it: what a reader without a
        kernel sees, who cannot switch the drop-downs."""
        panels = self.static_panels()
        cols = len({h for _, h in panels}) if len(panels) > 1 else 1
        rows = math.ceil(len(panels) / cols)
        seq_q, seq_k = self.weights.shape[2:]
        cell = max(3, min(24, int(min(200, 1200 / cols) / max(seq_q, seq_k))))
        panel_w, panel_h = seq_k * cell, seq_q * cell
        labelled = max(seq_q, seq_k) <= 24 and cell >= 8
        left = 40 + (self._label_px(self.query_tokens, 10) if labelled else 0)
        gap_x, gap_y = 24, 48
        plot_w = cols * panel_w + (cols - 1) * gap_x
        plot_h = rows * panel_h + (rows - 1) * gap_y
        titles = [self._selection_name(layer, head) for layer, head in panels]
        fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles,
                            horizontal_spacing=gap_x / plot_w if cols > 1 else 0.0,
                            vertical_spacing=gap_y / plot_h if rows > 1 else 0.0)
        for i, (layer, head) in enumerate(panels):
            r, c = divmod(i, cols)
            name = self._selection_name(layer, head)
            fig.add_trace(self._heatmap(self.matrix(layer, head), name, name),
                          row=r + 1, col=c + 1)
            fig.update_xaxes(self._axis(self.key_tokens, "key" if r == rows - 1 else None,
                                        labelled and r == rows - 1), row=r + 1, col=c + 1)
            fig.update_yaxes({**self._axis(self.query_tokens, "query" if c == 0 else None, labelled and c == 0),
                              "autorange": "reversed"}, row=r + 1, col=c + 1)
        fig.update_annotations(font={"size": 11})
        what = ("every layer (rows) and head (columns)" if len(panels) == self.n_layers * self.n_heads
                else "each layer's mean of heads (rows)" if panels[0][1] == MEAN else self._selection_name())
        title = (f"{self._title}: " if self._title else "") + "attention weights, " + what
        top = MARGIN["t"] + 10
        width = max(left + plot_w + COLORBAR_PX + MARGIN["r"],
                    int(text_size(html.escape(title), TITLE_SIZE)[0]) + 40)
        fig.update_layout(**LAYOUT)
        fig.update_layout(
            title={"text": html.escape(title), "x": 0.0, "xref": "container", "xanchor": "left", "y": 1.0,
                   "yref": "container", "yanchor": "top", "pad": {"t": 10, "l": 10}, "font": {"size": TITLE_SIZE}},
            width=width, height=top + plot_h + MARGIN["b"],
            margin={"l": left, "r": width - left - plot_w, "t": top, "b": MARGIN["b"]},
            coloraxis=self._coloraxis())
        return add_caption(fig, self.summary(), gap=CAPTION_GAP)
