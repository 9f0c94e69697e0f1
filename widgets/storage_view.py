"""`LayoutView`: a tensor drawn as a view of its storage.

The storage (the flat buffer the tensor views) is a row of numbered cells at
the bottom; the tensor's elements sit above it as a grid, each with a line
down to the storage cell it reads, `offset + sum(index * stride)` as
`burnbook.tensor.layout_of` reports. A transpose crosses the lines, a slice
with a step skips cells, a broadcast (a stride of 0) sends several elements
to one cell, and a copy made contiguous reads its own storage in order.

`LayoutView(a, b, ..., titles=[...])` stacks one panel per tensor, so a view
and the copy it was made into can be compared. A tensor of rank 1 is one
row; rank 2 is rows by columns; a higher rank shows its leading dims
flattened into rows. Storage cells that the tensor does not reach are drawn
empty (grey): the view says nothing about them. Like every burnbook widget
the output carries a static PNG and a text summary, for readers without a
kernel.
"""

from __future__ import annotations

import html
import math
from typing import Any, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from burnbook.tensor import layout_of

from ._static import LAYOUT, View

__all__ = ["LayoutView", "MAX_CELLS"]

MAX_CELLS = 64          # storage cells or elements a panel draws at most
CELL_PX = 34            # px per cell, across
ROW_PX = 44             # px per row of cells
GAP_ROWS = 1.6          # rows of space between the tensor's grid and the storage row
LINE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return str(v)
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e6 else f"{v:.3g}"


class _Panel:
    """One tensor: its values, layout, and the storage cells it reads."""

    def __init__(self, tensor: Any, title: str) -> None:
        self.layout = lay = layout_of(tensor)
        self.values = np.asarray(tensor.to_numpy(), dtype=np.float64).reshape(lay.shape)
        self.title = title
        n = self.values.size
        if n > MAX_CELLS or lay.storage > MAX_CELLS:
            raise ValueError(f"LayoutView draws at most {MAX_CELLS} elements and storage cells; this tensor "
                             f"has {n} elements viewing a storage of {lay.storage}")
        self.offsets = lay.offsets()
        self.storage = [None] * lay.storage
        for off, v in zip(self.offsets, self.values.reshape(-1)):
            self.storage[off] = float(v)
        cols = lay.shape[-1] if lay.shape else 1
        self.grid = self.values.reshape(-1, cols) if n else np.zeros((0, cols))

    @property
    def rows(self) -> int:
        return self.grid.shape[0]

    @property
    def cols(self) -> int:
        return self.grid.shape[1]

    def width_cells(self) -> int:
        return max(len(self.storage), self.cols, 1)

    def text(self) -> str:
        lay = self.layout
        read = sorted(set(self.offsets))
        return (f"{self.title}: {lay}\n"
                f"  element -> storage cell: {self.offsets}\n"
                f"  cells read: {len(read)} of {lay.storage}"
                + (f" (some several times: stride 0)" if len(read) < len(self.offsets) else ""))


class LayoutView(View):
    """Each tensor's elements above the storage they view, a line from each
    element to its cell. `titles`: one per tensor (default "tensor 1"...)."""

    def __init__(self, *tensors: Any, titles: Sequence[str] | None = None) -> None:
        if not tensors:
            raise TypeError("LayoutView takes at least one tensor")
        titles = list(titles) if titles is not None else [f"tensor {i + 1}" for i in range(len(tensors))]
        if len(titles) != len(tensors):
            raise ValueError(f"LayoutView: {len(titles)} titles for {len(tensors)} tensors")
        self.panels = [_Panel(t, title) for t, title in zip(tensors, titles)]
        super().__init__("bb-layout-view")
        self.refresh()

    def summary(self) -> str:
        return "\n".join(p.text() for p in self.panels)

    def info_html(self) -> str:
        return f"<pre class='bb-summary'>{html.escape(self.summary())}</pre>"

    def figure(self) -> go.Figure:
        panels = self.panels
        spans = [p.rows + GAP_ROWS + 1.7 for p in panels]          # each panel's y range, in rows
        title_px = 46
        height = int(sum(spans) * ROW_PX + title_px * len(panels)) + 20
        titles = [f"{p.title}: shape {list(p.layout.shape)}, strides {list(p.layout.strides)}, "
                  f"offset {p.layout.offset}" for p in panels]
        fig = make_subplots(rows=len(panels), cols=1, row_heights=spans, subplot_titles=titles,
                            vertical_spacing=title_px / height if len(panels) > 1 else 0.0)
        width = max(p.width_cells() for p in panels)
        fig_w = max(460, int((width + 1.4) * CELL_PX) + 40)
        cell_px = (fig_w - 40) / (width + 1.4)
        for i, p in enumerate(panels, start=1):
            self._draw_panel(fig, p, i, width, min(0.8 * cell_px, 0.62 * ROW_PX))
        fig.update_layout(**LAYOUT)
        fig.update_layout(showlegend=False, width=fig_w, height=height,
                          margin={"l": 20, "r": 20, "t": title_px, "b": 20})
        fig.update_annotations(font_size=12)
        return fig

    @staticmethod
    def _draw_panel(fig: go.Figure, p: _Panel, row: int, width: int, size: float) -> None:
        where = {"row": row, "col": 1}
        top = p.rows + GAP_ROWS          # the tensor's first row sits at y = top
        x0 = (len(p.storage) - p.cols) / 2 if len(p.storage) > p.cols else 0.0
        flat = list(zip(np.ndindex(p.grid.shape), p.offsets))
        # a line from each element down to its storage cell, one colour per row
        for (r, c), off in flat:
            fig.add_trace(go.Scatter(x=[x0 + c, off], y=[top - r, 0.0], mode="lines",
                                     line={"color": LINE_COLOURS[r % len(LINE_COLOURS)], "width": 1.5},
                                     hoverinfo="skip"), **where)
        box = {"symbol": "square", "size": size, "line": {"width": 1.5, "color": "#2a3f5f"}}
        if flat:
            fig.add_trace(go.Scatter(
                x=[x0 + c for (r, c), _ in flat], y=[top - r for (r, c), _ in flat], mode="markers+text",
                marker={**box, "color": "#dbe9f6"}, text=[_fmt(p.grid[r, c]) for (r, c), _ in flat],
                textposition="middle center", textfont={"size": 11},
                hovertext=[f"element {list(map(int, np.unravel_index(k, p.layout.shape)))} -> cell {off}"
                           for k, (_, off) in enumerate(flat)], hoverinfo="text"), **where)
        read = [v is not None for v in p.storage]
        fig.add_trace(go.Scatter(
            x=list(range(len(p.storage))), y=[0.0] * len(p.storage), mode="markers+text",
            marker={**box, "color": ["#fde9c8" if r else "#f2f2f2" for r in read],
                    "line": {"width": 1.5, "color": ["#2a3f5f" if r else "#b0b0b0" for r in read]}},
            text=[_fmt(v) if v is not None else "" for v in p.storage], textposition="middle center",
            textfont={"size": 11}, hovertext=[f"storage cell {k}" for k in range(len(p.storage))],
            hoverinfo="text"), **where)
        fig.add_trace(go.Scatter(
            x=list(range(len(p.storage))), y=[-0.62] * len(p.storage), mode="text",
            text=[str(k) for k in range(len(p.storage))], textfont={"size": 9, "color": "#7f7f7f"},
            hoverinfo="skip"), **where)
        fig.add_annotation(x=-0.5, y=0, text="storage", showarrow=False, xanchor="right",
                           font={"size": 10, "color": "#7f7f7f"}, **where)
        fig.add_annotation(x=x0 - 0.5, y=top, text="tensor", showarrow=False, xanchor="right",
                           font={"size": 10, "color": "#7f7f7f"}, **where)
        fig.update_xaxes(range=[-1.9, width - 0.5], visible=False, fixedrange=True, **where)
        fig.update_yaxes(range=[-1.0, top + 0.7], visible=False, fixedrange=True, **where)
