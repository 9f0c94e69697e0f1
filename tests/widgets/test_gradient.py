"""GradientView: norms equal NumPy's, flags follow the thresholds on a
crafted vanishing / exploding / NaN case, snapshots switch with a slider,
histograms and heatmaps hold the gradient's values."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("plotly")
pytest.importorskip("ipywidgets")

from burnbook import Tensor, nn  # noqa: E402
from burnbook.backend import Autodiff, NdArray  # noqa: E402
from burnbook.optim import GradientsParams, SgdConfig  # noqa: E402
from burnbook.widgets import GradientView  # noqa: E402
from burnbook.widgets.gradient import block_mean  # noqa: E402

from .models import Tiny  # noqa: E402

B = Autodiff[NdArray]


def setup(seed: int = 1):
    B.seed(seed)
    model = Tiny(fc1=nn.LinearConfig(6, 5).init(backend=B), fc2=nn.LinearConfig(5, 3).init(backend=B),
                 act=nn.Relu())
    x = Tensor[B, 2].from_data(np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6))
    return model, x


def loss_grads(model, x):
    loss = model(x).powf_scalar(2.0).mean()
    return loss.backward()


def trace(fig, name, visible=True):
    found = [t for t in fig.data if t.name == name and (t.visible is not False) == visible]
    assert found, f"no trace {name!r} (visible={visible}) in {[t.name for t in fig.data]}"
    return found[0]


def crafted(model, scale):
    """GradientsParams with gradient `scale[path]` * ones for each parameter."""
    gp = GradientsParams()
    for path, p in model.named_params():
        shape = p.val().dims()
        gp.register(p.id, Tensor[NdArray, len(shape)].from_data(np.full(shape, scale[path], np.float32)))
    return gp


def test_norms_equal_numpy():
    model, x = setup()
    grads = loss_grads(model, x)
    expected = {path: float(np.linalg.norm(p.val().grad(grads).to_numpy())) for path, p in model.named_params()}
    view = GradientView(model, grads)
    assert set(view.norms()) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    for path, norm in view.norms().items():
        assert norm == pytest.approx(expected[path], rel=1e-6)
    bars = trace(view.figure(), "norms")
    assert list(bars.x) == list(view.norms())
    np.testing.assert_allclose(bars.y, [expected[p] for p in bars.x], rtol=1e-6)
    for path, norm in expected.items():
        assert f"norm {norm:<10.4g}" in view.summary()


def test_gradients_params_give_the_same_view():
    model, x = setup()
    a = GradientView(model, loss_grads(model, x)).norms()
    b = GradientView(model, GradientsParams.from_grads(loss_grads(model, x), model)).norms()
    assert a == pytest.approx(b, rel=1e-7)


def test_flags_on_a_crafted_case():
    model, _ = setup()
    scale = {"fc1.weight": 1e-9, "fc1.bias": 0.1, "fc2.weight": 1e4, "fc2.bias": float("nan")}
    view = GradientView(model, crafted(model, scale))
    flags = {path: flag for _, path, flag in view.flagged()}
    assert flags == {"fc1.weight": "vanishing", "fc2.weight": "exploding", "fc2.bias": "non-finite"}
    assert "flagged: step 1 fc1.weight vanishing" in view.summary()
    # The bar colours carry the flags.
    bars = trace(view.figure(), "norms")
    assert list(bars.customdata) == ["vanishing", "ok", "exploding", "non-finite"]
    # Thresholds are settings: with looser ones nothing but the NaN is flagged.
    loose = GradientView(model, crafted(model, scale), vanishing=1e-12, exploding=1e6)
    assert [(p, f) for _, p, f in loose.flagged()] == [("fc2.bias", "non-finite")]
    with pytest.raises(ValueError, match="vanishing < exploding"):
        GradientView(model, crafted(model, scale), vanishing=1.0, exploding=0.5)


def test_missing_gradients_are_reported():
    model, x = setup()
    loss = model.fc1(x).sum()  # fc2 is not used
    view = GradientView(model, loss.backward())
    flags = {path: flag for _, path, flag in view.flagged()}
    assert flags == {"fc2.weight": "missing", "fc2.bias": "missing"}


def test_histograms_and_heatmaps_hold_the_values():
    model, x = setup()
    grads = loss_grads(model, x)
    g = model.fc1.weight.val().grad(grads).to_numpy()
    fig = GradientView(model, grads, bins=10).figure()
    hist = trace(fig, "fc1.weight histogram")
    assert int(np.sum(hist.y)) == g.size
    counts, edges = np.histogram(g.astype(np.float64), bins=10)
    np.testing.assert_array_equal(hist.y, counts)
    np.testing.assert_allclose(hist.x, (edges[:-1] + edges[1:]) / 2, rtol=1e-6)
    heat = trace(fig, "fc1.weight heatmap")
    np.testing.assert_array_equal(np.asarray(heat.z), g)  # [6, 5] fits: not shrunk
    assert not [t for t in fig.data if t.name == "fc1.bias heatmap"]  # 1-D: no heatmap


def test_block_mean():
    a = np.arange(20, dtype=np.float64).reshape(4, 5)
    small = block_mean(a, 2)
    assert small.shape == (2, 2)  # blocks of 2 x 3, the last one padded
    assert small[0, 0] == pytest.approx(a[:2, :3].mean())
    assert small[1, 1] == pytest.approx(a[2:, 3:].mean())
    assert block_mean(a, 5) is a


def test_steps_switch_with_a_slider():
    model, x = setup()
    grads = loss_grads(model, x)
    view = GradientView(model, grads, label="before")
    first = view.norms()
    gp = GradientsParams.from_grads(grads, model)
    model = SgdConfig().init().step(0.5, model, gp)
    view.add_step(loss_grads(model, x), model, label="after")
    assert len(view.steps) == 2 and view.norms(0) == first and view.norms() != first
    fig = view.figure()
    slider = fig.layout.sliders[0]
    assert [s.label for s in slider.steps] == ["before", "after"] and slider.active == 1
    shown = trace(fig, "norms", visible=True)
    np.testing.assert_allclose(shown.y, list(view.norms().values()), rtol=1e-6)
    hidden = trace(fig, "norms", visible=False)
    np.testing.assert_allclose(hidden.y, list(first.values()), rtol=1e-6)
    # Each slider position shows exactly one "norms" trace: its own step's.
    for k, step in enumerate(slider.steps):
        vis = step.args[0]["visible"]
        norms = [i for i, t in enumerate(fig.data) if t.name == "norms" and vis[i]]
        assert len(norms) == 1
        np.testing.assert_allclose(fig.data[norms[0]].y, list(view.norms(k).values()), rtol=1e-6)


def test_widget_bundle_and_errors():
    model, x = setup()
    view = GradientView(model, loss_grads(model, x))
    bundle = view._repr_mimebundle_()
    assert "text/html" not in bundle and "bb-gradient-view" in view._dom_classes
    assert bundle["text/plain"] == view.summary()
    again, x2 = setup()  # the same seed: the same text
    assert bundle["text/plain"] == GradientView(again, loss_grads(again, x2))._repr_mimebundle_()["text/plain"]
    with pytest.raises(TypeError, match="model must be a burnbook Module"):
        GradientView(object(), loss_grads(model, x))
    with pytest.raises(TypeError, match="grads must be Gradients or GradientsParams"):
        GradientView(model, 3)
    with pytest.raises(TypeError, match="pass the model that computed the loss"):
        GradientView(model.valid(), loss_grads(model, x))


def test_the_slider_leaves_room_for_its_end_labels():
    """The first and last step labels sit centred on the rail's ends: the
    rail is inset by at least half of each (else the browser cuts them)."""
    from burnbook.widgets.gradient import SLIDER_FONT
    from burnbook.widgets.layout import text_size

    model, x = setup()
    view = GradientView(model, loss_grads(model, x), label="step 1 (loss 2.345)")
    view.add_step(loss_grads(model, x), label="step 2 (a longer label, loss 2.100)")
    slider = view.figure().layout.sliders[0]
    for step in (slider.steps[0], slider.steps[-1]):
        assert text_size(step.label, SLIDER_FONT)[0] / 2 <= min(slider.pad.l, slider.pad.r)


def test_the_slider_switches_the_statistics_table_with_the_plots():
    """The table of each parameter's numbers is a trace of the figure: each
    slider position shows its own step's table, titled with that step, so
    the table follows the slider in the browser without a kernel."""
    model, x = setup()
    grads = loss_grads(model, x)
    view = GradientView(model, grads, label="before")
    model = SgdConfig().init().step(0.5, model, GradientsParams.from_grads(grads, model))
    view.add_step(loss_grads(model, x), model, label="after")
    fig = view.figure()
    tables = [i for i, t in enumerate(fig.data) if t.name == "table"]
    assert len(tables) == 2 and fig.layout.annotations[1].text == "statistics at after"
    slider = fig.layout.sliders[0]
    for k, step in enumerate(slider.steps):
        assert step.method == "update"
        vis, relayout = step.args
        shown = [i for i in tables if vis["visible"][i]]
        assert len(shown) == 1
        cells = fig.data[shown[0]].cells.values
        assert [list(row) for row in zip(*cells)] == view.table(k)
        assert list(cells[2]) == [f"{n:.4g}" for n in view.norms(k).values()]
        assert relayout == {"annotations[1].text": f"statistics at {view.steps[k][0]}"}
    assert [h.replace("<b>", "").replace("</b>", "") for h in fig.data[tables[-1]].header.values] == [
        "parameter", "shape", "norm", "mean", "std", "min", "max", "flag"]
    # The panel under the figure names no step: it lists the flags of all of them.
    assert "after" not in view.info.value and "flagged: none" in view.info.value


def test_the_panel_lists_the_flags_of_every_step():
    model, _ = setup()
    scale = {"fc1.weight": 1e-9, "fc1.bias": 0.1, "fc2.weight": 0.1, "fc2.bias": 0.1}
    view = GradientView(model, crafted(model, scale), label="first")
    view.add_step(crafted(model, {**scale, "fc1.weight": 0.1}), label="second")
    assert "first fc1.weight" in view.info.value and "vanishing" in view.info.value
    assert view.table(0)[0][-1] == "vanishing" and view.table()[0][-1] == "ok"
