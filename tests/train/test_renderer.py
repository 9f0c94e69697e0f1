"""Renderers: the terminal bars and lines, the notebook text lines, the
automatic choice (terminal, notebook, widgets dashboard) and the summary;
and `import burnbook.train` loads no notebook package."""

from __future__ import annotations

import io
import subprocess
import sys
import types

import pytest

import burnbook.widgets
from burnbook.backend import NdArray
from burnbook.optim import SgdConfig
from burnbook.train import (
    AccuracyMetric, CliMetricsRenderer, CpuUse, LearnerBuilder, LearnerSummary, LossMetric, MetricsRendererBase,
    NotebookTextRenderer,
)
from burnbook.train.renderer import default_renderer, in_notebook

from .helpers import ShuffledLoader, batches, make_data, make_model

X, Y = make_data(96, 4)


def fit(tmp_path, renderer, epochs: int = 2, summary: bool = False):
    b = (LearnerBuilder(tmp_path).renderer(renderer).num_epochs(epochs)
         .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
         .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric()).metric_train(CpuUse()))
    if summary:
        b = b.summary()
    learner = b.build(make_model(), SgdConfig().init(), 0.1)
    return learner, learner.fit(ShuffledLoader(X, Y, 32, 1), batches(X, Y, 48, NdArray))


def test_plain_terminal_lines(tmp_path, capsys):
    stream = io.StringIO()
    fit(tmp_path, CliMetricsRenderer(stream=stream, use_tqdm=False, interval=0.0))
    lines = stream.getvalue().splitlines()
    assert capsys.readouterr().out == ""  # nothing on stdout
    assert lines[0].startswith("[train] epoch 1/2  32/96 items 33%")
    last_train = [line for line in lines if line.startswith("[train] epoch 2/2  96/96 items 100%")]
    assert last_train and "items/s" in last_train[-1] and "ETA 0:00:00" in last_train[-1]
    assert "Loss " in last_train[-1] and "Accuracy " in last_train[-1] and "CPU Usage" in last_train[-1]
    assert any(line.startswith("[valid] epoch 2/2") for line in lines)


def test_plain_terminal_lines_are_throttled(tmp_path):
    stream = io.StringIO()
    fit(tmp_path, CliMetricsRenderer(stream=stream, use_tqdm=False, interval=3600.0))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4  # only the end of each split's epoch
    assert [line.split("  ")[0] for line in lines] == ["[train] epoch 1/2", "[valid] epoch 1/2",
                                                        "[train] epoch 2/2", "[valid] epoch 2/2"]


def test_tqdm_bars(tmp_path):
    pytest.importorskip("tqdm")
    stream = io.StringIO()
    fit(tmp_path, CliMetricsRenderer(stream=stream, use_tqdm=True))
    text = stream.getvalue()
    for label in ("train 1/2", "valid 1/2", "train 2/2", "valid 2/2"):
        assert label in text
    assert "96/96" in text and "item/s" in text and "Loss" in text


def test_notebook_text_renderer_prints_one_line_per_epoch(tmp_path, capsys):
    fit(tmp_path, NotebookTextRenderer())
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 2 and err == ""
    assert lines[0].startswith("epoch 1/2  train: ") and "  valid: Accuracy " in lines[0]
    assert lines[1].startswith("epoch 2/2") and lines[1].endswith(" s)")


def test_summary_is_printed_after_fit(tmp_path, capsys):
    fit(tmp_path, MetricsRendererBase(), summary=True)
    out = capsys.readouterr().out
    assert "Learner Summary" in out and "Total Epochs: 2" in out
    assert "| Train | Accuracy |" in out and "| Valid | Loss     |" in out
    assert "CPU Usage" not in out  # not numeric
    again = str(LearnerSummary.from_dir(tmp_path, ["Loss", "Accuracy"]))
    assert sorted(again.splitlines()[-4:]) == sorted(out.strip().splitlines()[-4:])


def fake_kernel(monkeypatch):
    shell = types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "ipykernel", types.ModuleType("ipykernel"))
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", ipython)


def test_renderer_choice(monkeypatch, tmp_path):
    assert not in_notebook()
    assert isinstance(default_renderer(), CliMetricsRenderer)
    # Load the real widget stack first: ipywidgets imports IPython.core, which the fake lacks.
    assert burnbook.widgets.TrainingDashboard is not None
    fake_kernel(monkeypatch)
    assert in_notebook()
    monkeypatch.delattr(burnbook.widgets, "TrainingDashboard", raising=False)
    assert isinstance(default_renderer(), NotebookTextRenderer)

    class Dashboard(MetricsRendererBase):
        def __init__(self, interrupter, checkpoint) -> None:
            self.interrupter, self.checkpoint = interrupter, checkpoint

    monkeypatch.setattr(burnbook.widgets, "TrainingDashboard", Dashboard, raising=False)
    builder = LearnerBuilder(tmp_path).checkpoint(3)
    learner = builder.build(make_model(), SgdConfig().init(), 0.1)
    assert isinstance(learner.renderer, Dashboard)
    assert learner.renderer.interrupter is learner.interrupter and learner.renderer.checkpoint == 3

    class Broken:
        def __init__(self, **kwargs) -> None:
            raise RuntimeError("no display")

    monkeypatch.setattr(burnbook.widgets, "TrainingDashboard", Broken, raising=False)
    assert isinstance(default_renderer(), NotebookTextRenderer)


def test_a_terminal_ipython_is_not_a_notebook(monkeypatch):
    fake_kernel(monkeypatch)
    sys.modules["IPython"].get_ipython = lambda: types.SimpleNamespace()  # no kernel attribute
    assert not in_notebook()


def test_importing_train_loads_no_notebook_package():
    code = ("import sys, burnbook.train; "
            "print([m for m in ('ipykernel', 'IPython', 'ipywidgets', 'plotly', 'burnbook.widgets', 'tqdm') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_renderer_must_follow_the_protocol():
    with pytest.raises(TypeError, match="render_train"):
        LearnerBuilder("unused").renderer(object())
