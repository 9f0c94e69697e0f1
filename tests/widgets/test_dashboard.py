"""TrainingDashboard without a browser: its curves hold exactly what the
Learner logged, refreshes are throttled, the Stop button ends `fit` after
the current step with the finished epochs' checkpoints intact, the Learner
picks it inside a notebook kernel, and its static output (what a saved
notebook shows) carries the curves and passes nbval's sanitising."""

from __future__ import annotations

import base64
import configparser
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("plotly")
pytest.importorskip("ipywidgets")

import burnbook.train.renderer as renderer_pkg  # noqa: E402
from burnbook.backend import NdArray  # noqa: E402
from burnbook.optim import AdamConfig, SgdConfig  # noqa: E402
from burnbook.record import NamedMpkGzFileRecorder  # noqa: E402
from burnbook.train import (  # noqa: E402
    AccuracyMetric, Aggregate, LearnerBuilder, LearningRateMetric, LossMetric, Split,
)
from burnbook.train.metric.base import MetricEntry  # noqa: E402
from burnbook.widgets import TrainingDashboard  # noqa: E402
from burnbook.widgets.dashboard import COLORS  # noqa: E402
from burnbook.widgets.layout import text_size  # noqa: E402

from ..train.helpers import ShuffledLoader, batches, make_data, make_model, weights  # noqa: E402
from .pngs import png_facts  # noqa: E402

SANITIZE = Path(__file__).resolve().parents[2] / "notebooks" / "sanitize.cfg"
X, Y = make_data(256, 1)
XV, YV = make_data(96, 2)
BATCH = 32
ITERATIONS = 256 // BATCH


def builder(directory: Path, epochs: int) -> LearnerBuilder:
    return (LearnerBuilder(directory)
            .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
            .metric_train_numeric(LearningRateMetric())
            .num_epochs(epochs))


def fit(directory: Path, epochs: int = 2, dashboard_cls=TrainingDashboard, **options):
    b = builder(directory, epochs)
    dashboard = dashboard_cls(interrupter=b.interrupter(), display=False, epoch_lines=False, **options)
    learner = b.renderer(dashboard).build(make_model(), AdamConfig().init(), 0.05)
    model = learner.fit(ShuffledLoader(X, Y, BATCH, seed=5), batches(XV, YV, 48, NdArray))
    return dashboard, learner, model


def logged(directory: Path, split: str, epoch: int, name: str) -> list[float]:
    file = directory / split / f"epoch-{epoch}" / f"{name.replace(' ', '_')}.log"   # the logger's file name
    return [float(v) for v in file.read_text().split()]


def trace(fig, name: str):
    found = [t for t in fig.data if t.name == name]
    assert len(found) == 1, f"expected one trace named {name!r}, got {[t.name for t in fig.data]}"
    return found[0]


def _decoded(value):
    """A plotly typed array ({"dtype", "bdata"}) as NumPy; anything else as is."""
    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
    if isinstance(value, dict):
        return {k: _decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    return value


def live(dashboard) -> types.SimpleNamespace:
    """The figure the browser got last: the pane's plotly output, decoded."""
    (output,) = dashboard.pane.outputs
    spec = _decoded(output["data"]["application/vnd.plotly.v1+json"])
    return types.SimpleNamespace(data=[types.SimpleNamespace(**t) for t in spec["data"]], layout=spec["layout"])


def test_curves_hold_every_logged_value_and_the_epoch_means(tmp_path):
    dashboard, learner, _ = fit(tmp_path, epochs=2, interval=0.0)
    assert dashboard.metric_names == ["Accuracy", "Loss", "Learning Rate"]
    figure = live(dashboard)
    assert "bb-curves" in dashboard.pane._dom_classes
    for split, per_epoch in ((Split.Train, ITERATIONS), (Split.Valid, 2)):
        for name in ("Accuracy", "Loss"):
            want = logged(tmp_path, str(split), 1, name) + logged(tmp_path, str(split), 2, name)
            line = trace(figure, f"{name} ({split})")
            np.testing.assert_allclose(line.y, want, rtol=1e-6)   # float32 in the browser
            # x runs through the epochs: the last point of epoch e sits at e
            assert len(line.x) == 2 * per_epoch and line.x[per_epoch - 1] == pytest.approx(1.0)
            assert line.x[-1] == pytest.approx(2.0) and np.all(np.diff(line.x) > 0)
            means = trace(figure, f"{name} ({split}, epoch mean)")
            store = [learner.store.find_metric(name, e, Aggregate.Mean, split) for e in (1, 2)]
            np.testing.assert_allclose(means.y, store, rtol=1e-6)
            assert list(means.x) == [1.0, 2.0]
    assert trace(figure, "Learning Rate (train)").y == pytest.approx([0.05] * 2 * ITERATIONS)
    assert dashboard.lr == pytest.approx(0.05) and "lr 0.05" in dashboard.progress_html.value
    assert dashboard.state == "finished" and dashboard.stop_button.disabled
    assert "Accuracy" in dashboard.metrics_html.value and "Loss" in dashboard.metrics_html.value


def test_the_learning_rate_shows_without_its_metric(tmp_path):
    """The Learner passes each step's rate in the progress, so the dashboard
    shows it even when no `LearningRateMetric` is registered."""
    b = (LearnerBuilder(tmp_path).metric_train_numeric(LossMetric()).num_epochs(1))
    dashboard = TrainingDashboard(interrupter=b.interrupter(), display=False, epoch_lines=False)
    b.renderer(dashboard).build(make_model(), SgdConfig().init(), 0.125).fit(
        ShuffledLoader(X, Y, BATCH, seed=5), batches(XV, YV, 48, NdArray))
    assert dashboard.metric_names == ["Loss"]
    assert dashboard.lr == pytest.approx(0.125) and "lr 0.125" in dashboard.progress_html.value


def test_refreshes_are_throttled(tmp_path):
    every, _, _ = fit(tmp_path / "every", epochs=2, interval=0.0)
    throttled, _, _ = fit(tmp_path / "throttled", epochs=2, interval=3600.0)
    iterations = 2 * (ITERATIONS + 2)
    assert every.flushes >= iterations
    # a long interval leaves only the forced refreshes: the first iteration,
    # the end of each split's epoch and the end of fit
    assert throttled.flushes == 1 + 2 * 2 + 1
    # the points are not lost, only drawn later
    np.testing.assert_array_equal(trace(live(throttled), "Loss (train)").y, trace(live(every), "Loss (train)").y)


def test_long_runs_are_thinned_for_the_browser(tmp_path):
    dashboard, _, _ = fit(tmp_path, epochs=3, interval=0.0, max_points=5)
    line = trace(live(dashboard), "Loss (train)")
    full = np.float32(logged(tmp_path, "train", 1, "Loss") + logged(tmp_path, "train", 2, "Loss") +
                      logged(tmp_path, "train", 3, "Loss"))
    assert len(line.y) == 5 and line.y[0] == full[0] and line.y[-1] == full[-1]
    assert set(line.y) <= set(full)
    assert len(dashboard.curves[("Loss", Split.Train)].y) == len(full)   # all kept in Python


class ClickStopAt(TrainingDashboard):
    """Clicks its own Stop button during one training iteration, as a reader would."""

    at = (2, 3)

    def render_train(self, progress) -> None:
        super().render_train(progress)
        if (progress.epoch, progress.iteration) == self.at:
            self.stop_button.click()


def test_stop_button_ends_fit_after_the_current_step(tmp_path):
    dashboard, learner, model = fit(tmp_path, epochs=5, dashboard_cls=ClickStopAt, interval=0.0)
    assert learner.interrupter.should_stop() and learner.epochs_done == [1]
    assert dashboard.state == "stopped" and "stopped in epoch 2/5 at iteration 3" in dashboard.status
    assert dashboard.stop_button.disabled and dashboard.stop_button.description == "Stopped"
    assert len(dashboard.curves[("Loss", Split.Train)].y) == ITERATIONS + 3
    # epoch 1's checkpoint is intact and loads; the returned model went 3 steps further
    checkpoint = tmp_path / "checkpoint"
    kept = sorted(p.name for p in checkpoint.iterdir())
    assert {"model-1.mpk.gz", "optim-1.mpk.gz", "scheduler-1.mpk.gz"} <= set(kept)
    assert all("-1." in name for name in kept), kept
    saved = make_model().load_file(checkpoint / "model-1", NamedMpkGzFileRecorder())
    assert any(not np.array_equal(a, b) for a, b in zip(weights(model).values(), weights(saved).values()))
    # a late click (the cell is over) changes nothing
    learner.interrupter.reset()
    dashboard.stop_button.click()
    assert not learner.interrupter.should_stop()


def test_a_stopped_epoch_is_drawn_where_it_stopped_and_marked_partial(tmp_path):
    """Stopped at iteration 3 of 8 in epoch 2: that epoch's mean sits at
    1 + 3/8 (not at 2, where a whole epoch's would), as an open marker
    named partial, and the key explains the mark."""
    dashboard, _, _ = fit(tmp_path, epochs=5, dashboard_cls=ClickStopAt, interval=0.0)
    figure = live(dashboard)
    means = trace(figure, "Loss (train, epoch mean)")
    assert list(means.x) == pytest.approx([1.0, 1.0 + 3 / ITERATIONS])
    assert list(means.marker["symbol"]) == ["circle", "circle-open"]
    assert list(means.customdata) == ["epoch 1", "epoch 2 (partial: 38% of its items)"]
    curve = dashboard.curves[("Loss", Split.Train)]
    assert curve.epoch_partial == [None, pytest.approx(3 / ITERATIONS)]
    assert curve.epoch_y[-1] == pytest.approx(np.mean(curve.y[ITERATIONS:]))
    # epoch 2 was never validated: its valid curve ends with epoch 1, whole
    assert list(trace(figure, "Loss (valid, epoch mean)").x) == [1.0]
    key = [t.name for t in figure.data if t.showlegend]
    assert key == ["train", "valid", "epoch mean", "partial epoch (stopped)"]


def test_the_figure_has_a_key_to_its_colours_and_marks(tmp_path):
    """The static image is seen without the metrics panel that names the
    splits by colour: the figure carries its own key, in the top row, left
    of where plotly's toolbar appears, above the subplot titles."""
    from burnbook.widgets._static import MODEBAR_PX

    dashboard, _, _ = fit(tmp_path, epochs=1, interval=0.0)
    fig = dashboard.figure()
    key = [t for t in fig.data if t.showlegend]
    assert [t.name for t in key] == ["train", "valid", "epoch mean"]   # nothing was stopped
    assert [t.line.color for t in key[:2]] == [COLORS[Split.Train], COLORS[Split.Valid]]
    assert all(t.x == (None,) for t in key)   # a key only: no point of its own
    assert all(t.showlegend is False for t in fig.data if t not in key)
    legend = fig.layout.legend
    assert (legend.yref, legend.y, legend.yanchor, legend.xanchor, legend.orientation) == (
        "container", 1, "top", "left", "h")
    assert legend.itemclick is False
    # The key's row (about 30 px) lies above the subplot titles, which sit on the plots' top edge.
    assert fig.layout.margin.t >= 30 + 20
    keys_px = sum(text_size(t.name, 12)[0] + 50 for t in key)
    assert keys_px + MODEBAR_PX <= 900


def test_stop_button_without_an_interrupter_is_disabled():
    dashboard = TrainingDashboard(display=False)
    assert dashboard.stop_button.disabled and "interrupter" in dashboard.stop_button.tooltip
    assert "bb-stop-button" in dashboard.stop_button._dom_classes
    assert "bb-training-dashboard" in dashboard.root._dom_classes
    with pytest.raises(ValueError, match="interval"):
        TrainingDashboard(interval=-1)
    with pytest.raises(ValueError, match="max_points"):
        TrainingDashboard(max_points=1)


def test_generic_metrics_show_as_text():
    dashboard = TrainingDashboard(display=False, epoch_lines=False)
    from burnbook.train.renderer.base import MetricState, TrainingProgress
    from burnbook.train.metric.base import Progress

    dashboard.update_valid(MetricState.Generic(MetricEntry("Most Confused", "9 read as 4 (3x)", "9->4")))
    dashboard.render_valid(TrainingProgress(Progress(10, 20), 1, 1, 1))
    assert "Most Confused" in dashboard.metrics_html.value and "9 read as 4" in dashboard.metrics_html.value
    assert dashboard.metric_names == []   # nothing to plot


def test_learner_uses_the_dashboard_inside_a_notebook(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(renderer_pkg, "in_notebook", lambda: True)
    shown, updated = [], []

    def show(self) -> None:   # IPython's display(self, display_id=True), recorded
        shown.append(self)
        self._handle = types.SimpleNamespace(update=updated.append)

    monkeypatch.setattr(TrainingDashboard, "_show", show)
    b = builder(tmp_path, 1)
    learner = b.build(make_model(), SgdConfig().init(), 0.1)
    dashboard = learner.renderer
    assert isinstance(dashboard, TrainingDashboard) and dashboard.interrupter is learner.interrupter
    dashboard._display = True
    learner.fit(ShuffledLoader(X, Y, BATCH, seed=5), batches(XV, YV, 48, NdArray))
    assert shown == [dashboard]     # displayed once, at the first iteration,
    assert updated == [dashboard]   # and refreshed in place when fit ended
    out = capsys.readouterr().out
    assert re.search(r"epoch 1/1  train: Accuracy [\d.]+ % \| Loss [\d.]+", out)   # the text record


def test_static_output_shows_the_curves_and_sanitises_for_nbval(tmp_path, real_png):
    dashboard, _, _ = fit(tmp_path, epochs=2, interval=0.0)
    bundle, metadata = dashboard._repr_mimebundle_()
    view = bundle["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == dashboard.root.model_id
    text = bundle["text/plain"]
    assert text.startswith("TrainingDashboard: finished in epoch 2/2")
    loss = logged(tmp_path, "valid", 2, "Loss")
    assert f"Loss {np.mean(loss):.4g}" in text.split("valid:")[1]
    assert "text/html" not in bundle   # no script, no CDN
    png = base64.b64decode(bundle["image/png"])
    width, height, ink = png_facts(png)
    assert (width, height) == (900, 320) == (metadata["image/png"]["width"], metadata["image/png"]["height"])
    assert ink > 0.01   # curves, axes and titles drawn, not a blank page
    fig = dashboard.figure()
    assert [t.name for t in fig.data] == [t.name for t in live(dashboard).data]

    # nbval compares the first display (before any curve) with the stored,
    # final one: after notebooks/sanitize.cfg they must be equal.
    first = TrainingDashboard(display=False)._repr_mimebundle_()
    assert "image/png" not in first   # drawn when fit ends, not for the empty first display
    patterns = configparser.ConfigParser()
    patterns.read(SANITIZE, encoding="utf-8")

    def sanitise(value: str) -> str:
        for section in patterns.sections():
            value = re.sub(patterns[section]["regex"], patterns[section]["replace"], value)
        return value

    assert sanitise(first["text/plain"]) == sanitise(bundle["text/plain"])
    assert "epoch 1/2  train: Accuracy 75.00 %" == sanitise("epoch 1/2  train: Accuracy 75.00 %")


def test_the_overhead_benchmark_trains_the_same_weights_with_both_renderers():
    """`make bench`'s dashboard case on a few digits: the plain and the
    dashboard runs end with identical weights (equal to the reference run's),
    and the dashboard's widget messages were serialised and counted."""
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks.cases import dashboard as case

    fw = types.SimpleNamespace(backend=NdArray, device=None)
    ns, reference = {}, {}
    case._setup(128, 1)(fw, ns)
    got = ns["pair"]().to_numpy()
    case._reference(128)(None, reference)
    np.testing.assert_array_equal(got, reference["pair"]())
    (plain, dashboard), = case.PAIRS[128]
    assert plain > 0 and dashboard > 0
    refreshes, sent = case.SENT[128]
    assert refreshes >= 3 and 0 < sent < 1_000_000   # no JavaScript bundle (FigureWidget's was ~5 MB)
    res = types.SimpleNamespace(case=types.SimpleNamespace(size="128"))
    case.PAIRS[128] = [(9.0, 9.0), (1.0, 1.02), (2.0, 2.2), (1.5, 1.5)]   # the first (cold) pair is dropped
    assert case.overhead(res) == pytest.approx(1.5 / 1.5)


def test_an_error_in_fit_shows_as_failed(tmp_path):
    made = []

    class Failing(TrainingDashboard):
        def __init__(self, **kwargs) -> None:
            super().__init__(**kwargs)
            made.append(self)

        def render_train(self, progress) -> None:
            super().render_train(progress)
            if progress.iteration == 2:
                raise RuntimeError("out of memory (simulated)")

    with pytest.raises(RuntimeError, match="simulated"):
        fit(tmp_path, epochs=1, dashboard_cls=Failing, interval=0.0)
    dashboard, = made
    assert dashboard.state == "failed" and "RuntimeError: out of memory (simulated)" in dashboard.status
    assert dashboard.stop_button.disabled and dashboard.progress_bar.bar_style == "danger"


def test_the_dashboard_needs_no_anywidget(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "anywidget", None)   # `import anywidget` now raises ImportError
    dashboard, _, _ = fit(tmp_path, epochs=1, interval=0.0)
    assert dashboard.state == "finished" and dashboard.redraws >= 1


class HeldOutLoss(LossMetric):
    NAME = "Held-out Loss"


def test_a_metric_only_validation_has_extends_the_same_figure(tmp_path):
    b = builder(tmp_path, 1).metric_valid_numeric(HeldOutLoss())
    dashboard = TrainingDashboard(interrupter=b.interrupter(), display=False, epoch_lines=False, interval=0.0,
                                  figure_interval=0.0)
    pane = dashboard.pane
    b.renderer(dashboard).build(make_model(), AdamConfig().init(), 0.05).fit(
        ShuffledLoader(X, Y, BATCH, seed=5), batches(XV, YV, 48, NdArray))
    assert dashboard.pane is pane and dashboard.root.children[-1] is pane   # one pane, redrawn
    assert dashboard.metric_names[-1] == "Held-out Loss"
    figure = live(dashboard)
    np.testing.assert_allclose(trace(figure, "Held-out Loss (valid)").y, logged(tmp_path, "valid", 1, "Held-out Loss"),
                               rtol=1e-6)
    np.testing.assert_allclose(trace(figure, "Loss (train)").y, logged(tmp_path, "train", 1, "Loss"), rtol=1e-6)
    assert figure.layout["xaxis4"]["domain"][1] == pytest.approx(1.0)   # four subplots side by side
    assert [a["text"] for a in figure.layout["annotations"]] == dashboard.metric_names


def test_every_number_in_the_panel_has_one_format(tmp_path):
    """Loss entries format themselves as 7.11e-2, accuracy as 30.86: the
    panel rewrites both to 4 significant digits, units kept."""
    from burnbook.train.metric.base import MetricEntry
    from burnbook.widgets.dashboard import _entry_text, number

    assert _entry_text(MetricEntry("Loss", "epoch 7.11e-2 - batch 6.00e-2", "0.06")) == "Loss 0.0711"
    assert _entry_text(MetricEntry("Accuracy", "epoch 30.86 % - batch 40.00 %", "40")) == "Accuracy 30.86 %"
    assert _entry_text(MetricEntry("Top-5 Accuracy", "epoch 97.80 % - batch 1 %", "1")) == "Top-5 Accuracy 97.8 %"
    assert [number(v) for v in (0.071123, 2.10349, 97.8523, 1e-5)] == ["0.07112", "2.103", "97.85", "1e-05"]
    dashboard, _, _ = fit(tmp_path, epochs=1, interval=0.0)
    shown = re.sub(r"<[^>]+>", " ", dashboard.metrics_html.value + dashboard.progress_html.value)
    values = re.findall(r"(?:Accuracy|Loss|Rate|lr) ([-\d.e+]+)", shown)
    assert len(values) >= 5 and all(number(float(v)) == v for v in values), values
