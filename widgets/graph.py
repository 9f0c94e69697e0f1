"""`GraphView`: the autodiff graph behind a tensor, drawn left to right.

One marker per node of the graph (`nodes_of`): every leaf and every
recorded operation, from the inputs on the left to the tensor itself on the
right (`widgets.layout`). A node is labelled with its op (or its parameter
path, `conv1.weight`, when the model is given) and its shape; hovering shows
its dtype, a summary of its value and, when gradients are given, of its
gradient. The drop-down below the figure shows the same for one node and
rings that node in the figure (the output, until another is picked).

What can be shown depends on what the graph kept:

- values: leaves that are a given model's parameters, tensors still alive,
  and every node built inside `burnbook.autodiff.keep_values()`;
- gradients: the leaves that require grad (what `loss.backward()` returns),
  and every node after `B.float_backward(loss.into_primitive(),
  retain_grads=True)`.

Module grouping: a parameter belongs to the module named by its path
prefix (`linear1.weight` -> `linear1`); an op belongs to the module whose
parameters it reads directly (`linear1`'s matmul), or whose values alone it
combines (the bias add after that matmul). Each group gets a colour and a
box; other ops (activations, dropout, the loss) stay ungrouped.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets
import numpy as np
import plotly.graph_objects as go

from burnbook.autodiff.graph import AutodiffTensor, Node, edges_of, nodes_of, value_of
from burnbook.backend.base import np_dtype_name

from ._static import LAYOUT, MODEBAR_PX, View
from .layout import label_extent, layered_layout, place_labels, text_size

__all__ = ["GraphView", "value_summary"]

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
           "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]
OP_COLOUR = "#9aa5b1"
INPUT_COLOUR = "#444444"
LABEL_SIZE = 10          # px, the node labels' font size
MARKER = 14              # px, a node marker's size
ROW_PX = 118             # px between two rows of a layer: room for two-line labels above and below
LAYER_PX = (22, 140)     # px between two layers: the least tried, and the most
WIDTH = 900              # px: the widest figure a notebook shows beside JupyterLab's file browser
MARGIN = {"l": 10, "r": 10, "t": 80, "b": 10}   # the title and the legend sit in the top margin
TITLE_SIZE = 16          # px, the title's font size
SELECTED_COLOUR = "#f2b705"   # the ring around the node picked in the drop-down



def value_summary(array: np.ndarray | None) -> str:
    """One line describing an array: its values when tiny, else statistics."""
    if array is None:
        return "not kept"
    a = np.asarray(array)
    if a.size == 0:
        return "empty"
    if a.size <= 6:
        return np.array2string(a.reshape(-1), precision=4, separator=", ")
    f = a.astype(np.float64)
    finite = f[np.isfinite(f)]
    bad = a.size - finite.size
    if finite.size == 0:
        return f"all {a.size} values non-finite"
    text = (f"min {finite.min():.4g}, max {finite.max():.4g}, mean {finite.mean():.4g}, "
            f"std {finite.std():.4g}, norm {np.sqrt((finite ** 2).sum()):.4g}")
    return text + (f", {bad} NaN/Inf" if bad else "")


class _Item:
    """What the view knows about one node."""

    __slots__ = ("node", "index", "label", "path", "group", "value", "grad", "dtype")

    def __init__(self, node: Node, index: int) -> None:
        self.node = node
        self.index = index
        self.path: str | None = None
        self.group = ""
        self.value: np.ndarray | None = None
        self.grad: np.ndarray | None = None
        self.dtype = "unknown"
        self.label = node.op

    @property
    def kind(self) -> str:
        if self.path is not None:
            return "param"
        return "input" if self.node.is_leaf else "op"


class GraphView(View):
    """The computation graph behind `tensor` (a Tensor of an `Autodiff[...]`
    backend): `GraphView(loss, grads=grads, model=model)`.

    `grads` (the `Gradients` of a backward pass) adds each node's gradient
    (or later: `view.show_grads(grads)`); `model` names the parameters by
    path and groups the graph by module; `names` labels other tensors of
    the graph (`{"x": x}`) and shows their values; `group_depth` groups
    by the first components of the module path only (1: `encoder` for
    `encoder.layers.0.linear.weight`; default: the whole module path).
    """

    def __init__(self, tensor: Any, grads: Any = None, model: Any = None, *,
                 names: dict[str, Any] | None = None, group_depth: int | None = None,
                 title: str | None = None, height: int | None = None) -> None:
        super().__init__("bb-graph-view")
        root = _primitive(tensor)
        self._backend = tensor.backend
        self._title = title
        self._height = height
        self.nodes: list[Node] = nodes_of(root)
        if not self.nodes:
            raise ValueError(
                "GraphView: the tensor is not tracked, so it has no graph. Call require_grad() "
                "on an input (or use a model on an Autodiff backend) before computing it")
        self.edges: list[tuple[Node, Node]] = edges_of(root)
        self._items = [_Item(n, i) for i, n in enumerate(self.nodes)]
        by_id = {it.node.id: it for it in self._items}
        self._by_id = by_id
        if group_depth is not None and group_depth < 1:
            raise ValueError(f"GraphView: group_depth must be at least 1, got {group_depth}")
        self._group_depth = group_depth
        self._name_params(model, by_id)
        self._name_tensors(names or {}, by_id)
        self._read_values(root, by_id)
        self._group()
        self.positions = layered_layout([n.id for n in self.nodes],
                                        [(p.id, c.id) for p, c in self.edges])
        self.grads = None
        self._labels: dict | None = None   # where the labels go (`_place`), worked out once
        if grads is not None:
            self._set_grads(grads)
        self.select = ipywidgets.Dropdown(
            options=[(self._option(it), it.index) for it in reversed(self._items)],
            value=self._items[-1].index, description="node", layout={"width": "420px"})
        self.select.observe(lambda _: self.refresh(), names="value")
        self.children = [self.pane, self.select, self.info]
        self.refresh()

    # -- building ------------------------------------------------------------------
    def _name_params(self, model: Any, by_id: dict) -> None:
        if model is None:
            return
        named = getattr(model, "named_params", None)
        if named is None:
            raise TypeError(f"GraphView: model must be a burnbook Module, got {type(model).__name__}")
        for path, param in named():
            p = param.val().into_primitive()
            if isinstance(p, AutodiffTensor) and p.node is not None and p.node.id in by_id:
                item = by_id[p.node.id]
                item.path = path
                item.label = path
                if item.value is None:
                    item.value = _host(self._backend, p)

    def _name_tensors(self, names: dict[str, Any], by_id: dict) -> None:
        for name, t in names.items():
            p = _primitive(t)
            if p.node is None or p.node.id not in by_id:
                raise ValueError(f"GraphView: names[{name!r}] is not a tensor of this graph")
            item = by_id[p.node.id]
            item.label = str(name)
            item.value = _host(self._backend, p)

    def _read_values(self, root: AutodiffTensor, by_id: dict) -> None:
        inner = self._backend.InnerBackend
        for it in self._items:
            if it.value is None:
                prim = root.primitive if it.node is root.node else value_of(it.node)
                if prim is not None:
                    it.value = np.asarray(inner.float_into_data(prim))
            if it.value is not None:
                it.dtype = np_dtype_name(it.value.dtype)

    def _group(self) -> None:
        for it in self._items:
            if it.path is not None:
                parts = it.path.split(".")
                parts = parts[:-1] or parts
                it.group = ".".join(parts[:self._group_depth] if self._group_depth else parts)
        params = {it.node.id: it.group for it in self._items if it.path is not None}
        groups = dict(params)
        for it in self._items:  # parents come first
            if it.path is not None or it.node.is_leaf:
                continue
            tracked = [p for p in it.node.parents if p is not None]
            direct = {params[p.id] for p in tracked if p.id in params}
            if len(direct) == 1:
                it.group = direct.pop()
            elif not direct and len(tracked) >= 2:
                # Combining only values of one module (a linear layer's bias add).
                found = {groups.get(p.id, "") for p in tracked}
                if len(found) == 1:
                    it.group = found.pop()
            if it.group:
                groups[it.node.id] = it.group

    def _set_grads(self, grads: Any) -> None:
        if not hasattr(grads, "get") or not hasattr(grads, "backend"):
            raise TypeError(f"GraphView: grads must be the Gradients of a backward pass, got {type(grads).__name__}")
        self.grads = grads
        B = grads.backend
        for it in self._items:
            g = grads.get(it.node.id)
            it.grad = None if g is None else np.asarray(B.float_into_data(g))
            if it.grad is not None and it.value is None:
                it.dtype = np_dtype_name(it.grad.dtype)

    def show_grads(self, grads: Any) -> "GraphView":
        """Show the gradients of `grads` (after `backward`) on the nodes."""
        self._set_grads(grads)
        self.refresh()
        return self

    # -- text ------------------------------------------------------------------------
    def _option(self, it: _Item) -> str:
        return f"n{it.index}: {it.label} {list(it.node.shape)}"

    def _details(self, it: _Item) -> list[tuple[str, str]]:
        parents = ", ".join("const" if p is None else f"n{self._by_id[p.id].index}" for p in it.node.parents)
        rows = [("node", f"n{it.index} ({it.kind})"), ("op", it.node.op)]
        if it.path is not None:
            rows.append(("parameter", it.path))
        if it.group:
            rows.append(("module", it.group))
        rows += [("shape", str(list(it.node.shape))), ("dtype", it.dtype)]
        if parents:
            rows.append(("inputs", parents))
        rows.append(("value", value_summary(it.value)))
        if self.grads is not None:
            rows.append(("gradient", value_summary(it.grad) if it.grad is not None else "none kept"))
        return rows

    def summary(self) -> str:
        n_leaves = sum(it.node.is_leaf for it in self._items)
        layers = int(max(x for x, _ in self.positions.values())) + 1
        out = self._items[-1]
        lines = [
            f"GraphView: {len(self._items)} nodes ({n_leaves} leaves, {len(self._items) - n_leaves} ops), "
            f"{len(self.edges)} edges, {layers} layers",
            f"output n{out.index}: {out.node.op} {list(out.node.shape)} {out.dtype}, value {value_summary(out.value)}",
        ]
        groups = sorted({it.group for it in self._items if it.group})
        if groups:
            lines.append("modules: " + ", ".join(groups))
        if self.grads is not None:
            with_grad = [it for it in self._items if it.grad is not None]
            lines.append(f"gradients on {len(with_grad)} of {len(self._items)} nodes")
            for it in with_grad:
                if it.path is not None or it.node.is_leaf:
                    norm = float(np.sqrt((it.grad.astype(np.float64) ** 2).sum()))
                    lines.append(f"  {it.label} {list(it.node.shape)}: grad norm {norm:.4g}")
        return "\n".join(lines)

    def info_html(self) -> str:
        return self._node_table(self._items[self.select.value]) if hasattr(self, "select") else ""

    def _node_table(self, it: _Item) -> str:
        rows = "".join(f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
                       f"<td style='text-align:left'>{html.escape(v)}</td></tr>" for k, v in self._details(it))
        return f"<table class='bb-node-info'>{rows}</table>"

    @property
    def selected(self) -> int:
        """The index of the node picked in the drop-down (the output's at first)."""
        return self.select.value if hasattr(self, "select") else self._items[-1].index

    # -- the figure --------------------------------------------------------------------
    def _colours(self) -> dict[str, str]:
        groups = sorted({it.group for it in self._items if it.group})
        return {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}

    def figure(self) -> go.Figure:
        """The graph as a plotly figure: a trace "edges", a trace "nodes"
        (one point per node, in `self.nodes` order), a trace "selected" (a
        ring around the node picked in the drop-down), one legend entry per
        module group and a box around each group; each node's label is an
        annotation placed where it overlaps no other (see `_place`)."""
        colours = self._colours()
        pos = self.positions
        ex: list = []
        ey: list = []
        for p, c in self.edges:
            (x0, y0), (x1, y1) = pos[p.id], pos[c.id]
            ex += [x0, x1, None]
            ey += [y0, y1, None]
        fig = go.Figure()
        fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", name="edges", hoverinfo="skip",
                                 line={"color": "#b0b7c0", "width": 1.2}, showlegend=False))
        xs = [pos[it.node.id][0] for it in self._items]
        ys = [pos[it.node.id][1] for it in self._items]
        text = [f"{it.label}<br>{list(it.node.shape)}" for it in self._items]
        hover = ["<br>".join(f"{k}: {html.escape(v)}" for k, v in self._details(it)) for it in self._items]
        colour = [colours.get(it.group, INPUT_COLOUR if it.node.is_leaf else OP_COLOUR) for it in self._items]
        symbol = ["square" if it.kind == "param" else "diamond" if it.kind == "input" else "circle"
                  for it in self._items]
        outline = [2.5 if it.grad is not None else 0.5 for it in self._items]
        if self._labels is None:
            self._labels = self._place(xs, ys, text)
        labels = self._labels
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="markers", name="nodes", text=text,
            hovertext=hover, hoverinfo="text", showlegend=False,
            marker={"size": MARKER, "color": colour, "symbol": symbol,
                    "line": {"color": "#111111", "width": outline}}))
        picked = self.selected
        fig.add_trace(go.Scatter(
            x=[xs[picked]], y=[ys[picked]], mode="markers", name="selected", hoverinfo="skip", showlegend=False,
            marker={"size": MARKER + 6, "symbol": "circle-open", "color": SELECTED_COLOUR,
                    "line": {"width": 2.5, "color": SELECTED_COLOUR}}))   # clear of the labels (see `_place`)
        for group, c in colours.items():
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=group,
                                     marker={"size": 10, "color": c, "symbol": "square"}))
            members = [pos[it.node.id] for it in self._items if it.group == group]
            gx = [x for x, _ in members]
            gy = [y for _, y in members]
            fig.add_shape(type="rect", x0=min(gx) - 0.35, x1=max(gx) + 0.35, y0=min(gy) - 0.45,
                          y1=max(gy) + 0.45, line={"color": c, "width": 1, "dash": "dot"},
                          fillcolor=c, opacity=0.08, layer="below")
        title = self._title or (f"autodiff graph: {len(self._items)} nodes, output "
                                f"{self._items[-1].node.op} {list(self._items[-1].node.shape)}")
        # The title's row also holds plotly's toolbar (top right, on hover):
        # the figure is at least as wide as both side by side.
        width = max(labels["width"], int(text_size(title, TITLE_SIZE)[0]) + MODEBAR_PX + MARGIN["l"] + 8)
        fig.update_layout(
            **{**LAYOUT, "margin": MARGIN},
            title={"text": title, "x": 0.0, "xref": "paper", "xanchor": "left", "y": 1.0, "yref": "container",
                   "yanchor": "top", "pad": {"t": 8, "l": 2}, "font": {"size": TITLE_SIZE}},
            width=width, height=self._height or labels["height"],
            showlegend=bool(colours),
            legend={"title": {"text": "module"}, "orientation": "h", "x": 0.0, "xanchor": "left",
                    "y": 1.0, "yanchor": "bottom"},
            xaxis={"visible": False, "range": labels["xrange"], "fixedrange": False},
            yaxis={"visible": False, "range": labels["yrange"]},
            annotations=labels["annotations"], dragmode="pan")
        return fig

    def _place(self, xs: list[float], ys: list[float], text: list[str]) -> dict:
        """Each node's label above or below it where it meets no other label
        (`layout.place_labels`), and the figure's size and axis ranges that
        hold every label. The layer spacing is the widest that keeps the
        figure within `WIDTH` px without overlaps (roomier is easier to
        read), else the narrowest without overlaps. The labels are
        annotations with a faint line to their node."""
        sizes = [text_size(t, LABEL_SIZE) for t in text]
        x0, y1 = min(xs), max(ys)
        row_px = ROW_PX if len(set(ys)) > 1 else 60
        pad = MARKER / 2 + 4   # px beyond the outermost label or marker

        def attempt(layer_px: float) -> dict:
            points = [((x - x0) * layer_px, (y1 - y) * row_px) for x, y in zip(xs, ys)]
            offsets, overlap = place_labels(points, sizes, marker=MARKER)
            left, top, right, bottom = label_extent(points, sizes, offsets)
            xrange = [x0 - (max(left, MARKER / 2) + pad) / layer_px,
                      max(xs) + (max(right, MARKER / 2) + pad) / layer_px]
            yrange = [min(ys) - (max(bottom, MARKER / 2) + pad) / row_px, y1 + (max(top, MARKER / 2) + pad) / row_px]
            width = int(round((xrange[1] - xrange[0]) * layer_px)) + MARGIN["l"] + MARGIN["r"]
            return {"width": width, "xrange": xrange, "yrange": yrange, "offsets": offsets, "overlap": overlap,
                    "height": int(round((yrange[1] - yrange[0]) * row_px)) + MARGIN["t"] + MARGIN["b"]}

        spacings = []
        px = float(LAYER_PX[0])
        while px < LAYER_PX[1]:
            spacings.append(px)
            px *= 1.08
        tried = [attempt(px) for px in spacings + [float(LAYER_PX[1])]]
        clean = [t for t in tried if t["overlap"] == 0]
        fitting = [t for t in clean if t["width"] <= WIDTH]
        best = fitting[-1] if fitting else clean[0] if clean else tried[-1]
        xrange, yrange, offsets = best["xrange"], best["yrange"], best["offsets"]
        annotations = [
            {"x": x, "y": y, "text": t, "showarrow": True, "ax": 0, "ay": dy, "arrowhead": 0,
             "arrowwidth": 0.7, "arrowcolor": "#c3c9d0", "standoff": MARKER / 2, "font": {"size": LABEL_SIZE},
             "xanchor": "center", "yanchor": "middle"}
            for x, y, t, dy in zip(xs, ys, text, offsets)]
        return {"width": best["width"], "height": best["height"], "xrange": xrange, "yrange": yrange,
                "annotations": annotations, "overlap": best["overlap"]}


def _primitive(tensor: Any) -> AutodiffTensor:
    into = getattr(tensor, "into_primitive", None)
    backend = getattr(tensor, "backend", None)
    if into is None or backend is None:
        raise TypeError(f"GraphView: expected a burnbook Tensor, got {type(tensor).__name__}")
    p = into()
    if not isinstance(p, AutodiffTensor):
        raise TypeError(
            f"GraphView: the tensor is on the backend {backend.name()!r}, which records no graph. "
            f"Use Autodiff[{backend.__name__}] and require_grad() on the inputs")
    return p


def _host(backend: type, p: AutodiffTensor) -> np.ndarray:
    return np.asarray(backend.InnerBackend.float_into_data(p.primitive))
