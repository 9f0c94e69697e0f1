"""GraphView and its layout: the figure's nodes and edges match the autodiff
graph (nodes_of / edges_of), edges point left to right, gradients shown are
the ones PyTorch computes, parameters carry their module paths."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("plotly")
pytest.importorskip("ipywidgets")
torch = pytest.importorskip("torch")

from burnbook import Tensor, nn  # noqa: E402
from burnbook.autodiff import edges_of, keep_values, nodes_of  # noqa: E402
from burnbook.autodiff.graph import value_of  # noqa: E402
from burnbook.backend import Autodiff, NdArray  # noqa: E402
from burnbook.module import Module  # noqa: E402
from burnbook.widgets import GraphView  # noqa: E402
from burnbook.widgets.graph import value_summary  # noqa: E402
from burnbook.widgets.layout import layered_layout, layers_of  # noqa: E402

from .models import Tiny  # noqa: E402

B = Autodiff[NdArray]
X = [0.5, -1.0, 2.0]


def trace(fig, name):
    found = [t for t in fig.data if t.name == name]
    assert len(found) == 1, f"expected one trace named {name!r}, got {[t.name for t in fig.data]}"
    return found[0]


def expression(keep: bool = True):
    """y = sum(x * x + exp(x)) over a tracked x, with every value kept."""
    x = Tensor[B, 1].from_floats(X).require_grad()
    if keep:
        with keep_values():
            y = (x * x + x.exp()).sum()
    else:
        y = (x * x + x.exp()).sum()
    return x, y


def torch_grad():
    t = torch.tensor(X, dtype=torch.float32, requires_grad=True)
    (t * t + t.exp()).sum().backward()
    return t.grad.numpy()


def tiny_model():
    B.seed(3)
    return Tiny(fc1=nn.LinearConfig(4, 5).init(backend=B), fc2=nn.LinearConfig(5, 2).init(backend=B),
                act=nn.Relu())


# -- layout ---------------------------------------------------------------------------

def test_layers_are_longest_paths():
    edges = [("a", "b"), ("b", "c"), ("a", "c"), ("c", "d"), ("e", "d")]
    # e feeds only d, so it sits just left of d rather than in column 0.
    assert layers_of(list("abcde"), edges) == {"a": 0, "b": 1, "c": 2, "d": 3, "e": 2}


def test_layout_rejects_cycles_and_unknown_nodes():
    with pytest.raises(ValueError, match="cycle"):
        layers_of(["a", "b"], [("a", "b"), ("b", "a")])
    with pytest.raises(ValueError, match="'z'.*not a node"):
        layers_of(["a"], [("a", "z")])


def test_barycentre_ordering_removes_a_crossing():
    # a1 -> b2 and a2 -> b1 cross in the given order; the sweeps untangle it.
    nodes = ["a1", "a2", "b1", "b2"]
    pos = layered_layout(nodes, [("a1", "b2"), ("a2", "b1")])
    assert (pos["a1"][1] < pos["a2"][1]) == (pos["b2"][1] < pos["b1"][1])
    assert {pos[n][0] for n in ("a1", "a2")} == {0.0} and {pos[n][0] for n in ("b1", "b2")} == {1.0}


# -- the graph ------------------------------------------------------------------------

def test_nodes_and_edges_match_the_autodiff_graph():
    _, y = expression()
    view = GraphView(y)
    fig = view.figure()
    nodes = trace(fig, "nodes")
    graph_nodes = nodes_of(y)
    assert len(nodes.x) == len(graph_nodes) == 5
    assert [t.split("<br>")[0] for t in nodes.text] == [n.op for n in graph_nodes]
    assert [t.split("<br>")[1] for t in nodes.text] == [str(list(n.shape)) for n in graph_nodes]
    edges = trace(fig, "edges")
    assert len(edges.x) == 3 * len(edges_of(y))  # x0, x1, None per edge
    pos = {n.id: (x, yy) for n, x, yy in zip(graph_nodes, nodes.x, nodes.y)}
    for parent, child in edges_of(y):
        assert pos[parent.id][0] < pos[child.id][0], f"edge {parent} -> {child} points right to left"
    assert nodes.x[-1] == max(nodes.x)  # the output is the right-most node
    assert nodes.x[0] == 0  # the leaf x is on the left


def test_values_and_gradients_equal_torch():
    x, y = expression()
    grads = y.backward()
    view = GraphView(y, grads=grads, names={"x": x})
    hover = trace(view.figure(), "nodes").hovertext
    assert trace(view.figure(), "nodes").text[0] == "x<br>[3]"
    expected = torch_grad()
    np.testing.assert_allclose(x.grad(grads).to_numpy(), expected, rtol=1e-6)
    leaf = hover[0]
    assert f"gradient: {value_summary(expected.astype(np.float32))}" in leaf
    assert f"value: {value_summary(np.asarray(X, np.float32))}" in leaf
    # The output's value is the sum itself.
    total = float(sum(v * v + np.exp(v) for v in X))
    assert f"{total:.4f}"[:6] in hover[-1]
    # Only the leaf's gradient comes back from a plain backward().
    assert "gradient: none kept" in hover[1]


def test_retain_grads_shows_every_intermediate_gradient():
    _, y = expression()
    grads = B.float_backward(y.into_primitive(), retain_grads=True)
    view = GraphView(y).show_grads(grads)
    hover = trace(view.figure(), "nodes").hovertext
    assert all("none kept" not in h for h in hover)
    assert "gradients on 5 of 5 nodes" in view.summary()
    # d sum / d(x*x + exp x) is ones.
    add = [h for h, n in zip(hover, nodes_of(y)) if n.op == "add"][0]
    assert "gradient: [1., 1., 1.]" in add


def test_values_not_kept_outside_keep_values():
    _, y = expression(keep=False)
    ops = nodes_of(y)
    assert value_of(ops[1]) is None  # the mul's output tensor is gone
    hover = trace(GraphView(y).figure(), "nodes").hovertext
    assert "value: not kept" in hover[1]
    assert "not kept" not in hover[-1]  # the output tensor itself is alive


def test_model_parameters_are_named_and_grouped():
    model = tiny_model()
    x = Tensor[B, 2].from_data(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    loss = model(x).powf_scalar(2.0).mean()
    grads = loss.backward()
    view = GraphView(loss, grads=grads, model=model)
    fig = view.figure()
    nodes = trace(fig, "nodes")
    labels = [t.split("<br>")[0] for t in nodes.text]
    for path in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
        assert path in labels
    legend = {t.name for t in fig.data if t.showlegend is not False and t.name not in ("nodes", "edges")}
    assert legend == {"fc1", "fc2"}
    assert len(fig.layout.shapes) == 2  # one box per module
    # fc1's matmul is coloured as fc1, the relu is not in a module.
    colour = dict(zip(labels, nodes.marker.color))
    assert colour["matmul"] in (colour["fc1.weight"], colour["fc2.weight"])
    assert colour["relu"] not in (colour["fc1.weight"], colour["fc2.weight"])
    # Gradient norms in the summary are those of the parameters.
    g = model.fc1.weight.val().grad(grads).to_numpy()
    assert f"fc1.weight [4, 5]: grad norm {np.linalg.norm(g):.4g}" in view.summary()


class Outer(Module):
    body: Tiny
    head: nn.Linear

    def forward(self, x):
        return self.head(self.body(x))


def test_group_depth_groups_nested_modules_by_prefix():
    B.seed(4)
    model = Outer(body=tiny_model(), head=nn.LinearConfig(2, 1).init(backend=B))
    loss = model(Tensor[B, 2].ones([2, 4])).sum()
    legend = lambda fig: {t.name for t in fig.data if t.name not in ("nodes", "edges", "selected")}  # noqa: E731
    assert legend(GraphView(loss, model=model).figure()) == {"body.fc1", "body.fc2", "head"}
    assert legend(GraphView(loss, model=model, group_depth=1).figure()) == {"body", "head"}
    with pytest.raises(ValueError, match="group_depth must be at least 1"):
        GraphView(loss, model=model, group_depth=0)


def test_the_bundle_is_deterministic_and_carries_the_static_figure():
    _, y1 = expression()
    _, y2 = expression()
    a, b = GraphView(y1)._repr_mimebundle_(), GraphView(y2)._repr_mimebundle_()
    assert "text/html" not in a and a["text/plain"] == b["text/plain"]
    assert a["text/plain"].startswith("GraphView: 5 nodes (1 leaves, 4 ops), 6 edges, 4 layers")
    assert "application/vnd.jupyter.widget-view+json" in a


def test_the_live_widget_has_its_css_class_and_node_picker():
    x, y = expression()
    view = GraphView(y, names={"x": x})
    assert "bb-graph-view" in view._dom_classes
    assert "sum" in view.info.value  # the output node is selected first
    view.select.value = 0
    assert "leaf" in view.info.value and "[ 0.5, -1. ,  2. ]" in view.info.value
    assert view.pane.outputs == ()  # nothing sent before the widget is shown
    view._repr_mimebundle_()
    bundle = view.pane.outputs[0]["data"]
    assert bundle["application/vnd.plotly.v1+json"]["data"][1]["name"] == "nodes"


def test_bad_inputs_are_clear_errors():
    with pytest.raises(TypeError, match="records no graph.*Autodiff\\[NdArray\\]"):
        GraphView(Tensor[NdArray, 1].from_floats([1.0]))
    with pytest.raises(ValueError, match="not tracked"):
        GraphView(Tensor[B, 1].from_floats([1.0]) * 2.0)
    with pytest.raises(TypeError, match="expected a burnbook Tensor"):
        GraphView(np.ones(3))
    _, y = expression()
    with pytest.raises(TypeError, match="grads must be the Gradients"):
        GraphView(y, grads=[1, 2])
    with pytest.raises(TypeError, match="model must be a burnbook Module"):
        GraphView(y, model=object())
    other = Tensor[B, 1].from_floats([1.0]).require_grad()
    with pytest.raises(ValueError, match="names\\['z'\\] is not a tensor of this graph"):
        GraphView(y, names={"z": other})


def _label_boxes(fig) -> tuple[list, tuple]:
    """Each annotation's box in pixels (its estimated text size around where
    plotly puts it: `ay` px below its node) and the plot area, from the
    figure's own size, margins and axis ranges."""
    from burnbook.widgets.graph import LABEL_SIZE
    from burnbook.widgets.layout import text_size

    lay = fig.layout
    (x0, x1), (y0, y1) = lay.xaxis.range, lay.yaxis.range
    m = lay.margin
    plot_w, plot_h = lay.width - m.l - m.r, lay.height - m.t - m.b
    boxes = []
    for a in lay.annotations:
        px = m.l + (a.x - x0) / (x1 - x0) * plot_w
        py = m.t + (y1 - a.y) / (y1 - y0) * plot_h + a.ay
        w, h = text_size(a.text, LABEL_SIZE)
        boxes.append((a.text, px - w / 2, py - h / 2, px + w / 2, py + h / 2))
    return boxes, (m.l, m.t, m.l + plot_w, m.t + plot_h)


def test_guide_cnn_labels_neither_overlap_nor_leave_the_plot():
    """The guide's CNN (36 nodes in 27 layers): every node has its label,
    no two labels meet, and all lie inside the plot area, at a width a
    notebook shows without scrolling. The browser test checks the same on
    the labels Chromium draws."""
    from burnbook.examples.guide import ModelConfig
    from burnbook.tensor import Int

    B.seed(42)
    model = ModelConfig(num_classes=10, hidden_size=512).init(B.default_device())
    rng = np.random.default_rng(0)
    images = Tensor[B, 3].from_data(rng.standard_normal((8, 28, 28)).astype(np.float32))
    targets = Tensor[B, 1, Int].from_data(np.arange(8) % 10)
    with keep_values():
        item = model.forward_classification(images, targets)
    view = GraphView(item.loss, grads=item.loss.backward(), model=model)
    fig = view.figure()
    boxes, (left, top, right, bottom) = _label_boxes(fig)
    assert len(boxes) == len(view.nodes) == 36
    assert {"conv1.weight<br>[8, 1, 3, 3]", "div_scalar<br>[1]"} <= {b[0] for b in boxes}
    for text, l, t, r, b in boxes:
        assert left <= l and r <= right and top <= t and b <= bottom, f"{text!r} leaves the plot area"
    for i, a in enumerate(boxes):
        for c in boxes[i + 1:]:
            apart = a[3] <= c[1] or c[3] <= a[1] or a[4] <= c[2] or c[4] <= a[2]
            assert apart, f"labels {a[0]!r} and {c[0]!r} overlap"
    assert fig.layout.width <= 1100


def test_place_labels_separates_a_crowded_chain():
    from burnbook.widgets.layout import place_labels

    points = [(30.0 * k, 0.0) for k in range(20)]   # labels three times wider than the spacing
    sizes = [(90.0, 24.0)] * 20
    offsets, overlap = place_labels(points, sizes)
    assert overlap == 0
    boxes = [(x - 45, dy - 12, x + 45, dy + 12) for (x, _), dy in zip(points, offsets)]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
        assert abs(offsets[i]) >= 7 + 12   # clear of the node's own marker
    # Too crowded for three levels a side: the overlap left is reported, not hidden.
    assert place_labels([(5.0 * k, 0.0) for k in range(20)], sizes)[1] > 0


def test_the_node_picked_in_the_drop_down_is_ringed_in_the_figure():
    x, y = expression()
    view = GraphView(y, names={"x": x})
    view._repr_mimebundle_()   # shown: the pane holds the live figure

    def ring_and_node(fig, index):
        nodes, ring = trace(fig, "nodes"), trace(fig, "selected")
        return (ring.x[0], ring.y[0]), (nodes.x[index], nodes.y[index])

    last = len(view.nodes) - 1
    ring, node = ring_and_node(view.figure(), last)   # the output, until another is picked
    assert ring == node
    sent = len(view.pane.outputs[0]["data"]["application/vnd.plotly.v1+json"]["data"])
    view.select.value = 0
    ring, node = ring_and_node(view.figure(), 0)
    assert ring == node and view.selected == 0
    # The pane got the new figure: its ring is on node 0 too.
    live = view.pane.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert len(live["data"]) == sent
    ring_trace = next(t for t in live["data"] if t["name"] == "selected")
    nodes_trace = next(t for t in live["data"] if t["name"] == "nodes")
    assert (ring_trace["x"][0], ring_trace["y"][0]) == (_decoded(nodes_trace["x"])[0], _decoded(nodes_trace["y"])[0])


def _decoded(value):
    import base64

    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).tolist()
    return list(value)


def test_the_title_leaves_room_for_plotlys_toolbar():
    """A small graph's figure is still wide enough for its title and, to
    its right, the toolbar plotly shows on hover (the browser test measures
    both); the live output passes the toolbar's config along."""
    from burnbook.widgets._static import MODEBAR_PX, PLOTLY_CONFIG
    from burnbook.widgets.graph import MARGIN, TITLE_SIZE
    from burnbook.widgets.layout import text_size

    x = Tensor[B, 1].from_floats(X).require_grad()
    view = GraphView(x.sum(), title="a title long enough to meet the toolbar of a small figure")
    fig = view.figure()
    title_px = text_size(fig.layout.title.text, TITLE_SIZE)[0]
    assert fig.layout.width >= MARGIN["l"] + title_px + MODEBAR_PX
    assert fig.layout.title.xanchor == "left" and fig.layout.title.yref == "container"
    view._repr_mimebundle_()
    assert view.pane.outputs[0]["data"]["application/vnd.plotly.v1+json"]["config"] == PLOTLY_CONFIG
