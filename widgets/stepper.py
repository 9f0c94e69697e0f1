"""`BackwardStepper`: the backward pass played one node at a time, on
burnbook's real engine, with its real numbers.

    stepper = BackwardStepper(lambda x1, w1, x2, w2, b: (x1 * w1 + x2 * w2 + b).tanh(),
                              x1=2.0, w1=-3.0, x2=0.0, w2=1.0, b=6.8813735870195432)
    stepper.steps[0].formula      # the root: the seed, ones
    stepper.step(); stepper.current.formula
    stepper.leaf_grads()          # {"x1": ..., "w1": ...}: what backward() returned

`fn` is a function of named tensors returning a one-element tensor; each
keyword of `inputs` is a leaf (a number, a nested list, a NumPy array or a
Float tensor of an `Autodiff[...]` backend; numbers and arrays go on
`Autodiff[NdArray]`). The stepper runs `fn` inside `keep_values()`, then
`backward()` inside `burnbook.autodiff.observe_backward`: the engine itself
reports every node it visits, in its own order (Kahn's), with the gradient
that arrived and what the rule returned for each parent. Each `Step`'s arrays
are the engine's; only its one-line `formula` re-derives a local derivative.

The view: the graph laid out as `GraphView` lays it out, the nodes the pass
has visited coloured, the current one ringed, the edges along which it sends
gradients drawn thick; under it the current step's formula and arrays, the
previous / next / play buttons and a slider over the steps, and a number box
per one-element leaf that recomputes everything (`set_input`). The static
figure (for readers without a kernel) is the final state with every step's
formula written under the graph.
"""

from __future__ import annotations

import html
import inspect
from typing import Any, Callable

import ipywidgets
import numpy as np
import plotly.graph_objects as go

from burnbook.autodiff import Autodiff, keep_values, observe_backward
from burnbook.autodiff.graph import AutodiffTensor, Node, edges_of, nodes_of, value_of
from burnbook.backend import NdArray
from burnbook.tensor import Float, Tensor

from ._static import LAYOUT, View, with_static_image
from .graph import MARGIN, MARKER, GraphView
from .layout import layered_layout, text_size
from .steps import Step, array_text, format_array, step_formula

__all__ = ["BackwardStepper", "Step", "format_array"]

VISITED_COLOUR = "#2ca02c"
PENDING_COLOUR = "#c9ced6"
CURRENT_COLOUR = "#f2b705"
SENT_COLOUR = "#d62728"
EDGE_COLOUR = "#b0b7c0"
CAPTION_LINES = 40          # the static figure lists at most this many steps
CAPTION_CHARS = 150         # and cuts a longer formula there
CAPTION_FONT = 12           # px
TITLE_SIZE = 16             # px, as GraphView's title
MODEBAR_PX = 190            # px: plotly's toolbar beside the title (as the other widgets keep clear of it)


# -- the stepper ---------------------------------------------------------------------------------

class BackwardStepper(View):
    """The backward pass of `fn(**inputs)`, one node at a time:
    `BackwardStepper(fn, x=2.0, w=-3.0)`.

    `.steps` (one `Step` per node the engine visited, in its order),
    `.step()` / `.back()` / `.goto(k)` move, `.current` is the step shown,
    `.leaf_grads()` what `backward()` returned per input, `.set_input(name,
    values)` recomputes everything for new input values.
    """

    def __init__(self, fn: Callable, /, **inputs: Any) -> None:
        if not callable(fn):
            raise TypeError(f"BackwardStepper: fn must be a function of the inputs, got {type(fn).__name__}")
        if not inputs:
            raise ValueError("BackwardStepper: give the inputs as keywords, e.g. BackwardStepper(fn, x=2.0, w=-3.0)")
        _check_signature(fn, list(inputs))
        super().__init__("bb-backward-stepper")
        self._fn = fn
        self._backend: type | None = None
        self._specs: dict[str, tuple] = {}     # name -> (tensor type, device, dtype or None)
        self._values: dict[str, np.ndarray] = {}
        for name, v in inputs.items():
            self._take_input(name, v)
        if self._backend is None:
            self._backend = Autodiff[NdArray]
        self._pos = 0
        self._run()
        self._build_controls()
        self.refresh()

    # -- inputs ----------------------------------------------------------------------------
    def _take_input(self, name: str, v: Any) -> None:
        if hasattr(v, "into_primitive") and hasattr(v, "backend"):
            backend = v.backend
            if not getattr(backend, "is_autodiff", False):
                raise TypeError(
                    f"BackwardStepper: input {name!r} is on the backend {backend.name()!r}, which records no "
                    f"graph; use Autodiff[{backend.__name__}] (or pass the values as numbers or a NumPy array)")
            if v.kind is not Float:
                raise TypeError(f"BackwardStepper: input {name!r} is a {v.kind.name} tensor; only Float "
                                "tensors have gradients")
            if self._backend is not None and backend is not self._backend:
                raise TypeError(f"BackwardStepper: input {name!r} is on {backend.name()!r} but another input "
                                f"is on {self._backend.name()!r}; put every input on one backend")
            self._backend = backend
            self._specs[name] = (type(v), v.device(), v.dtype)
            self._values[name] = np.array(v.to_numpy())
            return
        try:
            array = np.array(v, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"BackwardStepper: input {name!r} must be a number, a nested list of numbers, a NumPy "
                            f"array or a Float tensor, got {type(v).__name__} {v!r:.60}") from None
        if array.dtype == object or array.size == 0:
            raise ValueError(f"BackwardStepper: input {name!r} has no values (shape {list(array.shape)})")
        if array.ndim == 0:
            array = array.reshape(1)
        self._specs[name] = (None, None, None)
        self._values[name] = array.astype(np.float32)

    def _leaf(self, name: str) -> Any:
        cls, device, dtype = self._specs[name]
        array = self._values[name]
        if cls is None:
            return Tensor[self._backend, array.ndim].from_data(array).require_grad()
        t = cls.from_data(array, device)
        return (t if t.dtype == dtype else t.cast(dtype)).require_grad()

    def set_input(self, name: str, values: Any) -> "BackwardStepper":
        """Give input `name` new values (same shape), run forward and
        backward again and redraw; the stepper stays at the same step."""
        if name not in self._values:
            raise KeyError(f"BackwardStepper.set_input: no input {name!r}; the inputs are {list(self._values)}")
        old = self._values[name]
        if hasattr(values, "to_numpy"):
            values = values.to_numpy()
        try:
            array = np.array(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"BackwardStepper.set_input: values for {name!r} must be numbers, got "
                            f"{type(values).__name__}") from None
        if array.size == old.size == 1:
            array = array.reshape(old.shape)
        if array.shape != old.shape:
            raise ValueError(f"BackwardStepper.set_input: {name!r} has shape {list(old.shape)}, got values of "
                             f"shape {list(array.shape)}")
        self._values[name] = array.astype(old.dtype)
        try:
            self._run()
        except Exception:
            self._values[name] = old   # fn failed on the new values: keep the last good state
            raise
        self._sync_controls()
        self.refresh()
        return self

    @property
    def inputs(self) -> dict[str, np.ndarray]:
        """The current input values, by name."""
        return {k: v.copy() for k, v in self._values.items()}

    # -- the pass --------------------------------------------------------------------------
    def _run(self) -> None:
        B = self._backend
        inner = B.InnerBackend
        with keep_values():
            leaves = {name: self._leaf(name) for name in self._values}
            out = self._fn(**leaves)
        root = _check_output(out, B)
        self.output = np.array(out.to_numpy())
        nodes = nodes_of(root)
        self.nodes: list[Node] = nodes
        self.edges: list[tuple[Node, Node]] = edges_of(root)
        names = _names(nodes, {t.into_primitive().node.id: k for k, t in leaves.items()})
        self._names = names
        values = {n.id: _host(inner, value_of(n)) for n in nodes}
        visits: list[tuple] = []

        def observe(Bk, n, g, grads):
            for i, p in enumerate(n.parents):   # a leaf made outside keep_values (a captured parameter):
                if p is not None and values.get(p.id) is None and i < len(n.saved) and n.saved[i] is not None:
                    values[p.id] = _host(Bk, n.saved[i])   # its value is in the rule's saved state
            visits.append((n, None if g is None else np.array(Bk.float_into_data(g)),
                           tuple(None if x is None else np.array(Bk.float_into_data(x)) for x in grads),
                           tuple(n.args), tuple(n.parents)))

        with observe_backward(observe):
            grads = out.backward()
        self._leaf_grads = {}
        for name, t in leaves.items():
            gt = t.grad(grads)
            self._leaf_grads[name] = None if gt is None else np.array(gt.to_numpy())
        steps = []
        at: dict[int, int] = {}
        for k, (n, g, outs, args, parents) in enumerate(visits):
            at[n.id] = k
            steps.append(Step(
                index=k, node=n.id, op=n.op, name=names[n.id], shape=tuple(n.shape),
                parents=tuple("const" if p is None else (names[p.id] if p.is_leaf else p.op) for p in parents),
                parent_names=tuple("const" if p is None else names[p.id] for p in parents),
                parent_nodes=tuple(None if p is None else p.id for p in parents),
                output_grad=g, input_grads=outs, value=values.get(n.id), args=args))
        by_node = {s.node: s for s in steps}
        for s in steps:
            for pid, gi in zip(s.parent_nodes, s.input_grads):
                if pid is not None and gi is not None and pid in by_node:
                    by_node[pid].incoming.append((s.index, gi))
        for s, (n, *_rest) in zip(steps, visits):
            s.formula = step_formula(s, [None if p is None else values.get(p.id) for p in n.parents])
        self.steps: list[Step] = steps
        self._step_of = at
        self.positions = layered_layout([n.id for n in nodes], [(p.id, c.id) for p, c in self.edges])
        self._labels = None
        self._pos = min(self._pos, len(steps) - 1)

    def leaf_grads(self) -> dict[str, np.ndarray | None]:
        """Each input's gradient as `backward()` returned it (None if it got none)."""
        return {k: None if v is None else v.copy() for k, v in self._leaf_grads.items()}

    # -- moving ----------------------------------------------------------------------------
    @property
    def current(self) -> Step:
        """The step shown."""
        return self.steps[self._pos]

    def goto(self, k: int) -> Step:
        """Show step `k` (negative counts from the end) and return it."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"BackwardStepper.goto: the step must be an integer, got {type(k).__name__}")
        n = len(self.steps)
        if not -n <= k < n:
            raise IndexError(f"BackwardStepper.goto: step {k} out of range; there are {n} steps (0 to {n - 1})")
        self._pos = int(k) % n
        self._sync_controls()
        self.refresh()
        return self.current

    def step(self) -> Step:
        """The next step (stays on the last one)."""
        return self.goto(min(self._pos + 1, len(self.steps) - 1))

    def back(self) -> Step:
        """The previous step (stays on the first one)."""
        return self.goto(max(self._pos - 1, 0))

    # -- controls ---------------------------------------------------------------------------
    def _build_controls(self) -> None:
        n = len(self.steps)
        self.prev_button = ipywidgets.Button(description="previous", icon="step-backward",
                                             layout={"width": "110px"})
        self.next_button = ipywidgets.Button(description="next", icon="step-forward", layout={"width": "110px"})
        self.slider = ipywidgets.IntSlider(value=self._pos, min=0, max=n - 1, description="step",
                                           continuous_update=True, layout={"width": "360px"})
        self.play = ipywidgets.Play(value=self._pos, min=0, max=n - 1, interval=900, description="play")
        ipywidgets.jslink((self.play, "value"), (self.slider, "value"))
        self.prev_button.on_click(lambda _: self.back())
        self.next_button.on_click(lambda _: self.step())
        self.slider.observe(self._on_slider, names="value")
        self.boxes = {}
        for name, v in self._values.items():
            if v.size == 1:
                box = ipywidgets.FloatText(value=float(v.reshape(-1)[0]), description=name,
                                           layout={"width": "160px"}, style={"description_width": "initial"})
                box.observe(lambda change, name=name: self._on_box(name, change), names="value")
                self.boxes[name] = box
        rows = [ipywidgets.HBox([self.prev_button, self.next_button, self.play, self.slider])]
        if self.boxes:
            rows.append(ipywidgets.HBox(list(self.boxes.values())))
        self.children = [self.pane, *rows, self.info]

    def _on_slider(self, change: dict) -> None:
        if change["new"] != self._pos:
            self.goto(change["new"])

    _syncing = False   # True while the controls are set from the state, not by the reader

    def _on_box(self, name: str, change: dict) -> None:
        if not self._syncing:
            self.set_input(name, change["new"])

    def _sync_controls(self) -> None:
        if not hasattr(self, "slider"):
            return
        self._syncing = True
        try:
            n = len(self.steps)
            if self.slider.max != n - 1:
                self.slider.max = self.play.max = n - 1
            self.slider.value = self._pos
            for name, box in self.boxes.items():
                box.value = float(self._values[name].reshape(-1)[0])
        finally:
            self._syncing = False

    # -- text ---------------------------------------------------------------------------------
    def summary(self) -> str:
        s = self.current
        n, m = len(self.steps), len(self.nodes)
        lines = [f"BackwardStepper: {n} step{'s' * (n != 1)} over {m} node{'s' * (m != 1)}, output "
                 f"{format_array(self.output)}; step {s.index}/{len(self.steps) - 1}: {s.name} ({s.op})",
                 f"  {s.formula}"]
        grads = ", ".join(f"{k} {format_array(v)}" for k, v in self._leaf_grads.items())
        lines.append(f"gradients: {grads}")
        return "\n".join(lines)

    def table(self) -> str:
        """Every step as a line: node, gradient in, the rule with its numbers."""
        return "\n".join(f"{s.index:>3} {s.name:<12} {format_array(s.output_grad):<28} {s.formula}"
                         for s in self.steps)

    def info_html(self) -> str:
        s = self.current
        rows = [("step", f"{s.index} of {len(self.steps) - 1} (the engine's order)"),
                ("node", f"{s.name} ({s.op}), shape {list(s.shape)}"),
                ("rule", s.formula)]
        cells = "".join(f"<tr><th style='text-align:left;padding-right:1em;vertical-align:top'>{html.escape(k)}"
                        f"</th><td class='bb-step-{k}' style='text-align:left'>{html.escape(v)}</td></tr>"
                        for k, v in rows)
        arrays = [("value", s.value), ("gradient in", s.output_grad)]
        arrays += [(f"to {p}", gi) for p, gi in zip(s.parent_names, s.input_grads)]
        blocks = "".join(f"<div style='margin-right:1.5em'><b>{html.escape(k)}</b>"
                         f"<pre style='margin:2px 0'>{html.escape(array_text(a))}</pre></div>" for k, a in arrays)
        return (f"<table class='bb-step-info'>{cells}</table>"
                f"<div style='display:flex;flex-wrap:wrap'>{blocks}</div>")

    # -- the figure ------------------------------------------------------------------------------
    _place = GraphView._place   # the same label placement (and figure size) as GraphView

    def figure(self, upto: int | None = None) -> go.Figure:
        """The graph with the nodes visited up to step `upto` (default: the
        current one) coloured and the current node ringed; traces "edges",
        "sent" (the current node's edges to its parents), "nodes", "current"."""
        k = self._pos if upto is None else upto
        cur = self.steps[k]
        pos = self.positions
        ex: list = []
        ey: list = []
        sx: list = []
        sy: list = []
        for p, c in self.edges:
            px, py = _edge_path(pos[p.id], pos[c.id])
            hot = c.id == cur.node
            (sx if hot else ex).extend(px)
            (sy if hot else ey).extend(py)
        fig = go.Figure()
        fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", name="edges", hoverinfo="skip", showlegend=False,
                                 line={"color": EDGE_COLOUR, "width": 1.2}))
        fig.add_trace(go.Scatter(x=sx, y=sy, mode="lines", name="sent", hoverinfo="skip", showlegend=False,
                                 line={"color": SENT_COLOUR, "width": 3.5}))
        xs = [pos[n.id][0] for n in self.nodes]
        ys = [pos[n.id][1] for n in self.nodes]
        text = [f"{self._names[n.id]}<br>{list(n.shape)}" for n in self.nodes]
        colour, hover = [], []
        for n in self.nodes:
            j = self._step_of.get(n.id)
            colour.append(VISITED_COLOUR if j is not None and j <= k else PENDING_COLOUR)
            s = None if j is None else self.steps[j]
            seen = "not visited" if s is None else f"step {j}: grad in {html.escape(format_array(s.output_grad))}"
            hover.append(f"{html.escape(self._names[n.id])} ({n.op}) {list(n.shape)}<br>{seen}")
        if self._labels is None:
            self._labels = self._place(xs, ys, text)
        labels = self._labels
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name="nodes", text=text, hovertext=hover,
                                 hoverinfo="text", showlegend=False,
                                 marker={"size": MARKER, "color": colour,
                                         "symbol": ["diamond" if n.is_leaf else "circle" for n in self.nodes],
                                         "line": {"color": "#111111", "width": 0.8}}))
        cx, cy = pos[cur.node]
        fig.add_trace(go.Scatter(x=[cx], y=[cy], mode="markers", name="current", hoverinfo="skip",
                                 showlegend=False,
                                 marker={"size": MARKER + 12, "symbol": "circle-open", "color": CURRENT_COLOUR,
                                         "line": {"width": 3, "color": CURRENT_COLOUR}}))
        title = f"backward, step {k} of {len(self.steps) - 1}: {cur.name} ({cur.op})"
        width = max(labels["width"], int(text_size(title, TITLE_SIZE)[0]) + MODEBAR_PX + MARGIN["l"] + 8)
        fig.update_layout(
            **{**LAYOUT, "margin": MARGIN},
            title={"text": html.escape(title), "x": 0.0, "xref": "paper", "xanchor": "left", "y": 1.0,
                   "yref": "container", "yanchor": "top", "pad": {"t": 8, "l": 2}, "font": {"size": TITLE_SIZE}},
            width=width, height=labels["height"], showlegend=False,
            xaxis={"visible": False, "range": labels["xrange"]}, yaxis={"visible": False, "range": labels["yrange"]},
            annotations=labels["annotations"], dragmode="pan")
        return fig

    def static_figure(self) -> go.Figure:
        """The final state (every node visited) with each step's formula
        written under the graph: what a reader without a kernel sees."""
        last = len(self.steps) - 1
        fig = self.figure(upto=last)
        lines = []
        for s in self.steps[:CAPTION_LINES]:
            line = f"{s.index}. " + ("" if s.formula.startswith(s.name + ":") else f"{s.name}: ") + s.formula
            lines.append(line if len(line) <= CAPTION_CHARS else line[:CAPTION_CHARS - 3] + "...")
        if len(self.steps) > CAPTION_LINES:
            lines.append(f"... and {len(self.steps) - CAPTION_LINES} more steps")
        fig.update_layout(title={"text": html.escape(f"backward pass: {len(self.steps)} steps, in the engine's order")})
        return _caption(fig, lines)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict | tuple[dict, dict]:
        # As View's, with the static PNG drawn from `static_figure()`.
        if not self._shown:
            self._shown = True
            self.refresh()
        return with_static_image(ipywidgets.VBox._repr_mimebundle_(self, **kwargs), self)


# -- helpers -------------------------------------------------------------------------------------

def _caption(fig: go.Figure, lines: list[str]) -> go.Figure:
    """`lines` written under the graph, left aligned; the figure grows to hold them."""
    line_px = CAPTION_FONT * 1.3
    extra = int(round(len(lines) * line_px)) + 24
    height = (fig.layout.height or 450) + extra
    fig.add_annotation(text="<br>".join(html.escape(line) for line in lines), showarrow=False, xref="paper",
                       yref="paper", x=0.0, y=0.0, xanchor="left", yanchor="top", yshift=-12, align="left",
                       font={"size": CAPTION_FONT, "family": "monospace"})
    text_px = max(len(line) for line in lines) * CAPTION_FONT * 0.62 + MARGIN["l"] + MARGIN["r"] + 10
    margin = dict(MARGIN, b=MARGIN["b"] + extra)
    fig.update_layout(height=height, margin=margin, width=max(fig.layout.width or 0, min(int(text_px), 1600)))
    return fig


def _edge_path(a: tuple, b: tuple, points: int = 16) -> tuple[list, list]:
    """An edge's points and a None: an edge that skips layers bends upwards
    (a quadratic curve), clear of the nodes between its ends."""
    (x0, y0), (x1, y1) = a, b
    span = x1 - x0
    if span <= 1.0:
        return [x0, x1, None], [y0, y1, None]
    bulge = 0.3 * span ** 0.5
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2 + 2 * bulge
    t = np.linspace(0.0, 1.0, points)
    xs = (1 - t) ** 2 * x0 + 2 * (1 - t) * t * cx + t ** 2 * x1
    ys = (1 - t) ** 2 * y0 + 2 * (1 - t) * t * cy + t ** 2 * y1
    return [*map(float, xs), None], [*map(float, ys), None]


def _check_signature(fn: Callable, names: list[str]) -> None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    params = sig.parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    accepted = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    unknown = [n for n in names if n not in accepted]
    required = [p.name for p in params if p.default is p.empty
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in names]
    if unknown or required:
        raise TypeError(f"BackwardStepper: fn takes {sorted(accepted)} but the inputs are {names}"
                        + (f" (no parameter {unknown})" if unknown else "")
                        + (f" (missing {required})" if required else ""))


def _check_output(out: Any, B: type) -> AutodiffTensor:
    if not (hasattr(out, "into_primitive") and hasattr(out, "backend")):
        raise TypeError(f"BackwardStepper: fn must return a tensor (one element), got {type(out).__name__}")
    p = out.into_primitive()
    if not isinstance(p, AutodiffTensor) or p.node is None:
        raise ValueError("BackwardStepper: fn's result does not depend on any input, so it has no graph "
                         "to step through")
    if out.num_elements() != 1:
        raise ValueError(f"BackwardStepper: fn must return a scalar (one element), got shape {out.dims()}; "
                         "reduce it, e.g. with .sum() or .mean()")
    return p


def _names(nodes: list[Node], leaf_names: dict[int, str]) -> dict[int, str]:
    """A display name per node: an input's keyword, an op's label numbered
    in forward order when the label repeats (`mul1`, `mul2`)."""
    labels = [leaf_names.get(n.id, n.op) for n in nodes]
    counts: dict[str, int] = {}
    for n, label in zip(nodes, labels):
        if n.id not in leaf_names:
            counts[label] = counts.get(label, 0) + 1
    seen: dict[str, int] = {}
    out = {}
    for n, label in zip(nodes, labels):
        if n.id in leaf_names or counts[label] == 1:
            out[n.id] = label
        else:
            seen[label] = seen.get(label, 0) + 1
            out[n.id] = f"{label}{seen[label]}"
    return out


def _host(inner: type, p: Any) -> np.ndarray | None:
    return None if p is None else np.array(inner.float_into_data(p))
