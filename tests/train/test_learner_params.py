"""The Learner refuses a model it could not train, trains layers assigned
the PyTorch way, and its summary shows the parameter count."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from burnbook.backend import NdArray
from burnbook.nn import LinearConfig
from burnbook.optim import SgdConfig
from burnbook.train import AccuracyMetric, LearnerBuilder, LearnerSummary, LossMetric, MetricsRendererBase

from .helpers import B, Classifier, batches, make_data, make_model

X, Y = make_data(64, 1)
XV, YV = make_data(32, 2)


def builder(directory: Path) -> LearnerBuilder:
    return (LearnerBuilder(directory).metric_train_numeric(LossMetric()).metric_valid_numeric(AccuracyMetric())
            .renderer(MetricsRendererBase()).with_file_checkpointer(None).num_epochs(1))


class TorchStyleClassifier(Classifier):
    """The same classifier, its layer assigned in `__init__` as in PyTorch."""

    def __init__(self) -> None:
        B.seed(0)
        self.linear = LinearConfig(4, 3).init(backend=B)


def test_models_without_trainable_parameters_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"Classifier has no trainable parameters.*2 float parameter\(s\) are all "
                                         r"frozen"):
        builder(tmp_path).build(make_model().no_grad(), SgdConfig().init(), 0.1)
    with pytest.raises(ValueError, match=r"no trainable parameters.*'ndarray', which has no autodiff"):
        builder(tmp_path).build(make_model().valid(), SgdConfig().init(), 0.1)

    class Empty(Classifier):
        def __init__(self) -> None:
            self.width = 4  # a setting, not a layer

    with pytest.raises(ValueError, match="Empty has no trainable parameters.*no float parameter"):
        builder(tmp_path).build(Empty(), SgdConfig().init(), 0.1)

    class Duck:
        def train_step(self, batch):
            return None

    with pytest.raises(TypeError, match="Duck is not a Module"):
        builder(tmp_path).build(Duck(), SgdConfig().init(), 0.1)


def test_a_pytorch_style_model_trains_like_the_annotated_one(tmp_path):
    torch_style = TorchStyleClassifier()
    annotated = make_model(0)
    for (_, p), (_, q) in zip(torch_style.named_params(), annotated.named_params()):
        np.testing.assert_array_equal(p.val().to_numpy(), q.val().to_numpy())
    data = batches(X, Y, 16), batches(XV, YV, 32, NdArray)
    a = builder(tmp_path / "a").build(torch_style, SgdConfig().init(), 0.5).fit(*data)
    b = builder(tmp_path / "b").build(annotated, SgdConfig().init(), 0.5).fit(*data)
    for (_, p), (_, q) in zip(a.named_params(), b.named_params()):
        np.testing.assert_array_equal(p.val().to_numpy(), q.val().to_numpy())
    assert not np.allclose(a.linear.weight.val().to_numpy(), torch_style.linear.weight.val().to_numpy())


def test_summary_shows_the_parameter_count(tmp_path, capsys):
    builder(tmp_path).summary().build(make_model(), SgdConfig().init(), 0.1).fit(
        batches(X, Y, 16), batches(XV, YV, 32, NdArray))
    assert "Parameters: 15 (15 trainable)" in capsys.readouterr().out
    summary = LearnerSummary(1, [], []).with_params(make_model().no_grad())
    assert "Parameters: 15 (0 trainable)" in str(summary)
    assert "Parameters" not in str(LearnerSummary.from_dir(tmp_path, ["Loss"]))  # unknown from the logs alone
