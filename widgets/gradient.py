"""`GradientView`: a model's parameter gradients, per parameter and per step.

For each parameter (by path, `conv1.weight`) the view shows the L2 norm of
its gradient on a log scale, a histogram of the gradient's values and, for
2-D weights, a heatmap. A gradient is flagged

- "vanishing" when its norm is below `vanishing` (default 1e-6): the
  parameter barely moves, as in the early layers of a deep sigmoid network;
- "exploding" when its norm is above `exploding` (default 1e3): one step
  would throw the parameter far away (clip the gradient or lower the rate);
- "non-finite" when it holds NaN or Inf;
- "missing" when the parameter has no gradient (unused, or not tracked).

Both thresholds are constructor arguments. `view.add_step(grads, model)`
adds a snapshot after another training step; a slider under the figure
moves between the snapshots. The table of each parameter's statistics is
part of the figure, so the slider switches it with the plots, in the
browser alone (no kernel needed), and the static image shows it too.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from burnbook.module.param import RunningState
from burnbook.tensor import Float

from ._static import LAYOUT, View
from .layout import text_size

__all__ = ["GradientView", "ParamGradient", "block_mean"]

SLIDER_FONT = 12   # px, the slider's step labels
NORMS_PX = 200     # px, the norms' bar chart
TABLE_ROW_PX = 24  # px, one row of the statistics table (its header too)
PLOT_PX = 180      # px, a row of histograms or heatmaps
GAP_PX = 64        # px between two rows of subplots (each row's titles sit in it)
TABLE_COLUMNS = ("parameter", "shape", "norm", "mean", "std", "min", "max", "flag")
FLAG_COLOURS = {"ok": "#2ca02c", "vanishing": "#1f77b4", "exploding": "#d62728",
                "non-finite": "#9467bd", "missing": "#7f7f7f"}


def block_mean(a: np.ndarray, max_side: int) -> np.ndarray:
    """`a` (2-D) shrunk to at most `max_side` per side by averaging blocks;
    unchanged when it already fits."""
    r, c = a.shape
    fr, fc = math.ceil(r / max_side), math.ceil(c / max_side)
    if fr == 1 and fc == 1:
        return a
    pad = np.full((math.ceil(r / fr) * fr, math.ceil(c / fc) * fc), np.nan)
    pad[:r, :c] = a
    blocks = pad.reshape(pad.shape[0] // fr, fr, pad.shape[1] // fc, fc)
    return np.nanmean(blocks, axis=(1, 3))


class ParamGradient:
    """The statistics of one parameter's gradient at one step."""

    __slots__ = ("path", "shape", "norm", "mean", "std", "min", "max", "nonfinite",
                 "counts", "edges", "heatmap", "flag", "values")

    def __init__(self, path: str, shape: list[int], grad: np.ndarray | None, *, bins: int,
                 vanishing: float, exploding: float, heat_side: int, keep: bool = False) -> None:
        self.path = path
        self.shape = shape
        self.heatmap = None
        self.values = grad if keep else None
        if grad is None:
            self.norm = self.mean = self.std = self.min = self.max = float("nan")
            self.nonfinite = 0
            self.counts, self.edges = np.zeros(0), np.zeros(0)
            self.flag = "missing"
            return
        g = np.asarray(grad, dtype=np.float64)
        finite = g[np.isfinite(g)]
        self.nonfinite = int(g.size - finite.size)
        self.norm = float(np.sqrt((finite ** 2).sum()))
        self.mean = float(finite.mean()) if finite.size else float("nan")
        if finite.size and abs(self.mean) < 1e-6 * float(np.abs(finite).max()):
            # Rounding noise of a gradient that sums to zero (a softmax
            # bias): shown as 0 so that the text does not vary by machine.
            self.mean = 0.0
        self.std = float(finite.std()) if finite.size else float("nan")
        self.min = float(finite.min()) if finite.size else float("nan")
        self.max = float(finite.max()) if finite.size else float("nan")
        self.counts, self.edges = np.histogram(finite, bins=bins) if finite.size else (np.zeros(0), np.zeros(0))
        if g.ndim == 2:
            self.heatmap = block_mean(g, heat_side).astype(np.float32)
        if self.nonfinite:
            self.flag = "non-finite"
        elif self.norm < vanishing:
            self.flag = "vanishing"
        elif self.norm > exploding:
            self.flag = "exploding"
        else:
            self.flag = "ok"


class GradientView(View):
    """Gradient norms, histograms and heatmaps of `model`'s parameters.

    `grads` is the `Gradients` of `loss.backward()` (read through each
    parameter, so pass the model that computed the loss) or a
    `GradientsParams`. `vanishing` / `exploding` are the norm thresholds of
    the flags; `bins` the histogram bins; `heatmap_side` the largest side of
    a heatmap (bigger weights are averaged in blocks).
    """

    def __init__(self, model: Any, grads: Any, *, vanishing: float = 1e-6, exploding: float = 1e3,
                 bins: int = 30, heatmap_side: int = 24, label: str | None = None) -> None:
        if not (0 <= vanishing < exploding):
            raise ValueError(f"GradientView: need 0 <= vanishing < exploding, got vanishing={vanishing}, "
                             f"exploding={exploding}")
        super().__init__("bb-gradient-view")
        self.vanishing = float(vanishing)
        self.exploding = float(exploding)
        self.bins = int(bins)
        self.heatmap_side = int(heatmap_side)
        self.steps: list[tuple[str, list[ParamGradient]]] = []
        self._model = model
        self.add_step(grads, model, label)

    # -- data --------------------------------------------------------------------------
    def add_step(self, grads: Any, model: Any = None, label: str | None = None) -> "GradientView":
        """Add a snapshot: the gradients `grads` of `model` (default: the model
        given before; after an optimizer step pass the new one, whose
        parameters are new tensors)."""
        model = self._model if model is None else model
        named = getattr(model, "named_params", None)
        if named is None:
            raise TypeError(f"GradientView: model must be a burnbook Module, got {type(model).__name__}")
        self._model = model
        rows = []
        for path, param in named():
            tensor = param.val()
            if isinstance(param, RunningState) or tensor.kind is not Float:
                continue
            if tensor.backend.is_autodiff and not param.is_require_grad():
                continue  # frozen: never has a gradient
            rows.append(ParamGradient(path, tensor.dims(), _grad_of(param, grads), bins=self.bins,
                                      vanishing=self.vanishing, exploding=self.exploding,
                                      heat_side=self.heatmap_side))
        if not rows:
            raise ValueError("GradientView: the model has no trainable parameters")
        self.steps.append((label or f"step {len(self.steps) + 1}", rows))
        self.refresh()
        return self

    def flagged(self) -> list[tuple[str, str, str]]:
        """Every (step label, parameter path, flag) whose flag is not "ok"."""
        return [(label, r.path, r.flag) for label, rows in self.steps for r in rows if r.flag != "ok"]

    def norms(self, step: int = -1) -> dict[str, float]:
        """`{path: gradient norm}` at one step (the last by default)."""
        return {r.path: r.norm for r in self.steps[step][1]}

    # -- text ----------------------------------------------------------------------------
    def summary(self) -> str:
        label, rows = self.steps[-1]
        width = max(len(r.path) for r in rows)
        lines = [f"GradientView: {len(rows)} parameters, {len(self.steps)} step(s); showing {label} "
                 f"(vanishing < {self.vanishing:g}, exploding > {self.exploding:g})"]
        for r in rows:
            lines.append(f"  {r.path:<{width}} {str(r.shape):<16} norm {r.norm:<10.4g} mean {r.mean:<11.4g} "
                         f"std {r.std:<10.4g} {r.flag}")
        bad = self.flagged()
        if bad:
            lines.append("flagged: " + "; ".join(f"{s} {p} {f}" for s, p, f in bad))
        return "\n".join(lines)

    def info_html(self) -> str:
        """The panel under the figure: the thresholds and every flag of every
        step (the per-step table is in the figure, switched by its slider)."""
        bad = self.flagged()
        flags = "; ".join(f"{html.escape(s)} {html.escape(p)} "
                          f"<span style='color:{FLAG_COLOURS[f]};font-weight:bold'>{f}</span>" for s, p, f in bad)
        return (f"<div class='bb-summary'>{len(self.steps)} step(s); flags: vanishing &lt; {self.vanishing:g}, "
                f"exploding &gt; {self.exploding:g}; flagged: {flags or 'none'}</div>")

    def table(self, step: int = -1) -> list[list[str]]:
        """The statistics table of one step (the last by default), as the
        figure shows it: one row per parameter, `TABLE_COLUMNS`."""
        return [[r.path, str(r.shape), f"{r.norm:.4g}", f"{r.mean:.4g}", f"{r.std:.4g}", f"{r.min:.4g}",
                 f"{r.max:.4g}", r.flag] for r in self.steps[step][1]]

    # -- the figure --------------------------------------------------------------------
    def figure(self) -> go.Figure:
        """Row 1: gradient norms (trace "norms"); row 2: the statistics table
        (trace "table"); below: one histogram per parameter, then heatmaps
        of 2-D weights. One set of traces per step, switched by the slider,
        which also retitles the table; the last step is shown first."""
        rows0 = self.steps[0][1]
        paths = [r.path for r in rows0]
        heat = [r.path for r in rows0 if r.heatmap is not None]
        cols = min(4, len(paths))
        hist_rows = math.ceil(len(paths) / cols)
        heat_rows = math.ceil(len(heat) / cols) if heat else 0
        wide = [{"colspan": cols}] + [None] * (cols - 1)
        specs = [wide, [{**wide[0], "type": "table"}] + wide[1:]] + [[{}] * cols for _ in range(hist_rows + heat_rows)]
        last = len(self.steps) - 1
        titles = ["gradient L2 norm per parameter", self._table_title(last)] + [f"{p} values" for p in paths] + \
                 [""] * (hist_rows * cols - len(paths)) + [f"{p} (heatmap)" for p in heat]
        n_rows = 2 + hist_rows + heat_rows
        table_px = TABLE_ROW_PX * (len(paths) + 1) + 4
        heights = [NORMS_PX, table_px] + [PLOT_PX] * (hist_rows + heat_rows)
        plot_px = sum(heights) + GAP_PX * (n_rows - 1)
        fig = make_subplots(rows=n_rows, cols=cols, specs=specs, subplot_titles=titles, row_heights=heights,
                            vertical_spacing=GAP_PX / plot_px, horizontal_spacing=0.06)
        groups: list[list[int]] = []
        for k, (label, rows) in enumerate(self.steps):
            visible = k == last
            start = len(fig.data)
            by_path = {r.path: r for r in rows}
            fig.add_trace(go.Bar(
                x=[r.path for r in rows], y=[r.norm if r.norm > 0 else None for r in rows], name="norms",
                marker={"color": [FLAG_COLOURS[r.flag] for r in rows]}, visible=visible, showlegend=False,
                customdata=[r.flag for r in rows],
                hovertemplate="%{x}<br>norm %{y:.4g}<br>%{customdata}<extra>" + html.escape(label) + "</extra>"),
                row=1, col=1)
            cells = [list(column) for column in zip(*self.table(k))]
            fig.add_trace(go.Table(
                name="table", visible=visible, columnwidth=[3, 2.4, 1.6, 1.6, 1.6, 1.6, 1.6, 1.6],
                header={"values": [f"<b>{h}</b>" for h in TABLE_COLUMNS], "align": "left", "height": TABLE_ROW_PX,
                        "fill": {"color": "#eef1f5"}, "line": {"color": "#d5dae1"}, "font": {"size": 12}},
                cells={"values": cells, "align": "left", "height": TABLE_ROW_PX, "line": {"color": "#e5e8ec"},
                       "fill": {"color": "white"},
                       "font": {"size": 12, "color": [["#2a3f5f"] * len(rows)] * 7 +
                                [[FLAG_COLOURS[r.flag] for r in rows]]}}),
                row=2, col=1)
            for i, path in enumerate(paths):
                r = by_path.get(path)
                if r is None or r.counts.size == 0:
                    continue
                centres = (r.edges[:-1] + r.edges[1:]) / 2
                fig.add_trace(go.Bar(
                    x=centres.astype(np.float32), y=r.counts.astype(np.int32), name=f"{path} histogram",
                    width=float(r.edges[1] - r.edges[0]), marker={"color": FLAG_COLOURS[r.flag]},
                    visible=visible, showlegend=False,
                    hovertemplate="%{x:.3g}: %{y}<extra>" + html.escape(path) + "</extra>"),
                    row=3 + i // cols, col=1 + i % cols)
            for i, path in enumerate(heat):
                r = by_path.get(path)
                if r is None or r.heatmap is None:
                    continue
                bound = float(np.nanmax(np.abs(r.heatmap))) or 1.0
                fig.add_trace(go.Heatmap(
                    z=r.heatmap, name=f"{path} heatmap", colorscale="RdBu", zmid=0, zmin=-bound, zmax=bound,
                    showscale=False, visible=visible,
                    hovertemplate="row %{y}, col %{x}: %{z:.3g}<extra>" + html.escape(path) + "</extra>"),
                    row=3 + hist_rows + i // cols, col=1 + i % cols)
            groups.append(list(range(start, len(fig.data))))
        finite = [r.norm for _, rows in self.steps for r in rows if r.norm > 0 and math.isfinite(r.norm)]
        low = min(finite + [self.vanishing])
        high = max(finite + [self.exploding])
        for value, name in ((self.vanishing, "vanishing"), (self.exploding, "exploding")):
            if value > 0:
                fig.add_trace(go.Scatter(x=[paths[0], paths[-1]], y=[value, value], mode="lines",
                                         name=f"{name} threshold", showlegend=False,
                                         line={"color": FLAG_COLOURS[name], "dash": "dash", "width": 1},
                                         hovertemplate=f"{name} threshold {value:g}<extra></extra>"),
                              row=1, col=1)
        fig.update_yaxes(type="log", range=[math.log10(low) - 0.5, math.log10(high) + 0.5], row=1, col=1)
        total = len(fig.data)
        fixed = list(range(groups[-1][-1] + 1, total)) if groups and groups[-1] else []
        slider_px = 0
        if len(self.steps) > 1:
            steps = []
            for k, (label, _) in enumerate(self.steps):
                vis = [False] * total
                for i in groups[k] + fixed:
                    vis[i] = True
                # "update": the traces' visibility and the table's title (annotation 1).
                steps.append({"label": label, "method": "update",
                              "args": [{"visible": vis}, {"annotations[1].text": self._table_title(k)}]})
            # The first and last step labels are centred on the rail's ends:
            # inset the rail by half the widest label, so none is cut off.
            inset = max(text_size(label, SLIDER_FONT)[0] for label, _ in self.steps) / 2 + 4
            fig.update_layout(sliders=[{"active": last, "steps": steps, "currentvalue": {"prefix": "showing "},
                                        "font": {"size": SLIDER_FONT}, "pad": {"t": 30, "l": inset, "r": inset}}])
            slider_px = 90
        fig.update_layout(**LAYOUT)
        margin = LAYOUT["margin"]
        fig.update_layout(height=plot_px + margin["t"] + margin["b"] + slider_px, bargap=0,
                          margin={"t": margin["t"] + 10},
                          title={"text": f"gradients of {len(paths)} parameters, {len(self.steps)} step(s)",
                                 "x": 0.01, "xanchor": "left", "y": 1.0, "yref": "container", "yanchor": "top",
                                 "pad": {"t": 8}, "font": {"size": 16}})
        fig.update_annotations(font_size=11)
        return fig

    def _table_title(self, step: int) -> str:
        return f"statistics at {self.steps[step][0]}"


def _grad_of(param: Any, grads: Any) -> np.ndarray | None:
    """The gradient of `param` in `grads` as a NumPy array, or None."""
    if hasattr(grads, "ids") and hasattr(grads, "backend"):  # autodiff Gradients
        tensor = param.val()
        if not tensor.backend.is_autodiff:
            raise TypeError(f"GradientView: parameter on the backend {tensor.backend.name()!r} has no "
                            "gradient; pass the model that computed the loss (on Autodiff[...])")
        g = tensor.grad(grads)
    elif hasattr(grads, "get"):  # GradientsParams, keyed by ParamId
        g = grads.get(param.id)
    else:
        raise TypeError(f"GradientView: grads must be Gradients or GradientsParams, got {type(grads).__name__}")
    return None if g is None else np.asarray(g.to_numpy())
