"""The Learner end to end on a tiny linear classifier: it learns, lays out
the artifact folder as the book shows, logs one value per iteration, keeps
the configured checkpoints, accumulates gradients, stops early or on
request, and holds no autodiff graph in its metrics."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from burnbook.backend import NdArray
from burnbook.optim import (
    AdamConfig, GradientsAccumulator, GradientsParams, LinearLrSchedulerConfig, SgdConfig,
)
from burnbook.record import NamedMpkFileRecorder, NamedMpkGzFileRecorder
from burnbook.train import (
    AccuracyInput, AccuracyMetric, Aggregate, Direction, InMemoryMetricLogger,
    LearnerBuilder, LearningRateMetric, LossMetric, MetricEarlyStoppingStrategy, MetricsRendererBase,
    NoImprovementSince, Split, StoppingCondition,
)
from burnbook.train.metric import MetricEntry

from .helpers import B, ShuffledLoader, batches, make_data, make_model, to_batch, weights

X, Y = make_data(256, 1)
XV, YV = make_data(96, 2)
QUIET = MetricsRendererBase()


def builder(directory: Path, epochs: int = 3) -> LearnerBuilder:
    return (LearnerBuilder(directory)
            .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
            .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
            .renderer(QUIET).num_epochs(epochs))


def loaders(batch_size: int = 32) -> tuple[ShuffledLoader, list]:
    return ShuffledLoader(X, Y, batch_size, seed=5), batches(XV, YV, 48, NdArray)


def files(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def accuracy(model, x, y) -> float:
    logits = model.valid().forward(to_batch(x, y, NdArray).inputs).to_numpy()
    return float((logits.argmax(1) == y).mean())


def test_fit_learns_and_returns_the_trained_model(tmp_path):
    model = make_model()
    before = accuracy(model, XV, YV)
    learner = builder(tmp_path, epochs=4).build(model, AdamConfig().init(), 0.05)
    trained = learner.fit(*loaders())
    assert accuracy(trained, XV, YV) > max(before, 0.9)
    assert learner.epochs_done == [1, 2, 3, 4]
    means = [learner.store.find_metric("Accuracy", e, Aggregate.Mean, Split.Valid) for e in (1, 4)]
    assert means[1] > means[0]
    assert math.isclose(means[1], 100 * accuracy(trained, XV, YV), abs_tol=1e-6)


def test_artifact_layout_is_the_books(tmp_path):
    builder(tmp_path, epochs=3).build(make_model(), SgdConfig().init(), 0.1).fit(*loaders())
    expected = ["experiment.log"]
    expected += [f"checkpoint/{kind}-{e}.mpk.gz" for kind in ("model", "optim", "rng", "scheduler") for e in (2, 3)]
    expected += [f"{split}/epoch-{e}/{m}.log" for split in ("train", "valid") for e in (1, 2, 3)
                 for m in ("Accuracy", "Loss")]
    assert files(tmp_path) == sorted(expected)
    log = (tmp_path / "experiment.log").read_text()
    for text in ("Fitting Classifier", "Epoch 3/3 done", "Saved checkpoint", "Removed checkpoint"):
        assert text in log


def test_recorder_sets_the_checkpoint_format_and_none_turns_checkpoints_off(tmp_path):
    b = builder(tmp_path / "mpk", epochs=1).with_file_checkpointer(NamedMpkFileRecorder())
    b.build(make_model(), SgdConfig().init(), 0.1).fit(*loaders())
    assert sorted(p.name for p in (tmp_path / "mpk" / "checkpoint").iterdir()) == [
        "model-1.mpk", "optim-1.mpk", "rng-1.mpk", "scheduler-1.mpk"]
    b = builder(tmp_path / "none", epochs=1).with_file_checkpointer(None)
    b.build(make_model(), SgdConfig().init(), 0.1).fit(*loaders())
    assert not (tmp_path / "none" / "checkpoint").exists()


@pytest.mark.parametrize("keep, epochs, kept", [(1, 3, [3]), (3, 5, [3, 4, 5])])
def test_checkpoint_retention(tmp_path, keep, epochs, kept):
    builder(tmp_path, epochs).with_checkpoint_retention(keep).build(make_model(), SgdConfig().init(), 0.1).fit(
        *loaders())
    assert files(tmp_path / "checkpoint") == sorted(f"{k}-{e}.mpk.gz" for k in ("model", "optim", "rng", "scheduler")
                                                    for e in kept)


class Scripted:
    """A numeric validation metric whose epoch value follows a script."""

    NAME = "Scripted"
    input_type = None

    def __init__(self, values: list[float]) -> None:
        self.values, self.epoch_values, self.current = values, [], math.nan

    def update(self, item, metadata) -> MetricEntry:
        self.current = self.values[metadata.epoch - 1]
        return MetricEntry(self.NAME, f"{self.current}", repr(self.current))

    def clear(self) -> None:
        pass

    def value(self) -> float:
        return self.current


def test_default_retention_also_keeps_the_best_validation_loss(tmp_path):
    class ScriptedLoss(Scripted):
        NAME = "Loss"

    learner = (LearnerBuilder(tmp_path).renderer(QUIET).num_epochs(5)
               .metric_valid_numeric(ScriptedLoss([1.0, 3.0, 2.0, 2.5, 1.5]))
               .build(make_model(), SgdConfig().init(), 0.1))
    learner.fit(*loaders())
    # the last two epochs, plus epoch 1, the lowest validation loss
    assert files(tmp_path / "checkpoint") == sorted(f"{k}-{e}.mpk.gz" for k in ("model", "optim", "rng", "scheduler")
                                                    for e in (1, 4, 5))


def test_metric_logs_hold_one_value_per_iteration(tmp_path):
    scheduler = LinearLrSchedulerConfig(0.1, 0.01, 10).init()
    learner = (builder(tmp_path, epochs=2).metric_train_numeric(LearningRateMetric())
               .build(make_model(), SgdConfig().init(), scheduler))
    trained = learner.fit(*loaders())
    read = lambda p: (tmp_path / p).read_text().splitlines()  # noqa: E731
    lrs = [float(v) for e in (1, 2) for v in read(f"train/epoch-{e}/Learning_Rate.log")]
    assert len(lrs) == 16 and lrs == [LinearLrSchedulerConfig(0.1, 0.01, 10).init().lr_at(t) for t in range(16)]
    assert len(read("train/epoch-1/Accuracy.log")) == 8 and len(read("valid/epoch-2/Loss.log")) == 2
    for line in read("train/epoch-2/Accuracy.log"):
        assert 0.0 <= float(line) <= 100.0
    # the last validation epoch ran the returned model: recompute its losses
    expected = [trained.valid().valid_step(b).loss.into_scalar() for b in batches(XV, YV, 48, NdArray)]
    assert [float(v) for v in read("valid/epoch-2/Loss.log")] == pytest.approx(expected, rel=1e-6)


def test_custom_metric_loggers_replace_the_files(tmp_path):
    train, valid = InMemoryMetricLogger(), InMemoryMetricLogger()
    builder(tmp_path, epochs=2).metric_loggers(train, valid).build(make_model(), SgdConfig().init(), 0.1).fit(
        *loaders())
    assert not (tmp_path / "train").exists()
    assert len(train.values["Loss"][2]) == 8 and len(valid.values["Accuracy"][1]) == 2


def manual_accumulation(model, optim, lr: float, loader, n: int, epochs: int):
    """The book's loop with a GradientsAccumulator, stepping every n batches."""
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        accumulator, pending = GradientsAccumulator(), 0
        for batch in loader:
            item = model.forward_classification(batch.inputs, batch.targets)
            accumulator.accumulate(model, GradientsParams.from_grads(item.loss.backward(), model))
            pending += 1
            if pending == n:
                model, pending = optim.step(lr, model, accumulator.grads()), 0
    return model


def test_grads_accumulation_matches_the_manual_loop_and_a_bigger_batch(tmp_path):
    train, valid = loaders(batch_size=16)
    learner = builder(tmp_path / "acc", epochs=2).grads_accumulation(2).build(make_model(), SgdConfig().init(), 0.05)
    accumulated = weights(learner.fit(train, valid))
    manual = weights(manual_accumulation(make_model(), SgdConfig().init(), 0.05, ShuffledLoader(X, Y, 16, 5), 2, 2))
    for name in accumulated:
        assert np.array_equal(accumulated[name], manual[name]), name
    # summing the mean-loss gradients of two halves == twice the gradient of the whole batch:
    # same weights as batches of 32 at twice the learning rate (up to float rounding)
    pairs = ShuffledLoader(X, Y, 32, 5)
    big = builder(tmp_path / "big", epochs=2).build(make_model(), SgdConfig().init(), 0.1).fit(pairs, valid)
    for name, value in weights(big).items():
        np.testing.assert_allclose(accumulated[name], value, rtol=1e-5, atol=1e-6)


def test_two_identical_devices_act_as_two_fold_accumulation(tmp_path):
    device = NdArray.default_device()
    two = builder(tmp_path / "dev", 1).devices([device, device]).build(make_model(), SgdConfig().init(), 0.05)
    acc = builder(tmp_path / "acc", 1).grads_accumulation(2).build(make_model(), SgdConfig().init(), 0.05)
    a, b = weights(two.fit(*loaders(16))), weights(acc.fit(*loaders(16)))
    for name in a:
        assert np.array_equal(a[name], b[name])


def test_early_stopping_after_n_epochs_without_improvement(tmp_path):
    strategy = MetricEarlyStoppingStrategy(Scripted, Aggregate.Mean, Direction.Lowest, Split.Valid,
                                           StoppingCondition.NoImprovementSince(n_epochs=2))
    learner = (builder(tmp_path, epochs=10).metric_valid_numeric(Scripted([5.0, 4.0, 4.5, 4.2, 1.0, 0.5]))
               .early_stopping(strategy).build(make_model(), SgdConfig().init(), 0.1))
    learner.fit(*loaders())
    assert learner.epochs_done == [1, 2, 3, 4]  # best at 2; 4 - 2 >= 2
    assert strategy.best_epoch == 2
    assert sorted(p.name for p in (tmp_path / "valid").iterdir()) == ["epoch-1", "epoch-2", "epoch-3", "epoch-4"]
    assert "Early stopping after epoch 4" in (tmp_path / "experiment.log").read_text()
    with pytest.raises(ValueError):
        NoImprovementSince(0)


class StopAt(MetricsRendererBase):
    """Presses the stop button during a given training iteration."""

    def __init__(self, learner_ref: list, epoch: int, iteration: int) -> None:
        self.ref, self.at = learner_ref, (epoch, iteration)

    def render_train(self, progress) -> None:
        if (progress.epoch, progress.iteration) == self.at:
            self.ref[0].interrupter.stop()


def test_interrupter_stops_after_the_current_step_keeping_checkpoints(tmp_path):
    ref: list = []
    b = builder(tmp_path, epochs=5)
    learner = b.renderer(StopAt(ref, 2, 3)).build(make_model(), SgdConfig().init(), 0.1)
    ref.append(learner)
    assert learner.interrupter is b.interrupter()
    model = learner.fit(*loaders())
    assert learner.epochs_done == [1] and learner.interrupter.should_stop()
    assert files(tmp_path / "checkpoint") == ["model-1.mpk.gz", "optim-1.mpk.gz", "rng-1.mpk.gz", "scheduler-1.mpk.gz"]
    assert len((tmp_path / "train/epoch-2/Loss.log").read_text().splitlines()) == 3
    assert not (tmp_path / "valid/epoch-2").exists()
    # the returned model is the one after 8 + 3 steps, not the epoch-1 checkpoint
    saved = make_model().load_file(tmp_path / "checkpoint/model-1", NamedMpkGzFileRecorder())
    assert any(not np.array_equal(a, b) for a, b in zip(weights(model).values(), weights(saved).values()))
    assert "interrupted during epoch 2" in (tmp_path / "experiment.log").read_text()


class Keeper:
    """A metric that keeps every input it is given."""

    NAME = "Keeper"
    input_type = AccuracyInput

    def __init__(self) -> None:
        self.kept: list = []

    def update(self, item, metadata) -> MetricEntry:
        self.kept.append(item)
        return MetricEntry(self.NAME, "kept", "0")

    def clear(self) -> None:
        pass


def test_metrics_receive_items_detached_from_the_autodiff_graph(tmp_path):
    keeper = Keeper()
    builder(tmp_path, epochs=1).metric_train(keeper).build(make_model(), SgdConfig().init(), 0.1).fit(*loaders())
    assert len(keeper.kept) == 8
    for item in keeper.kept:
        assert not item.outputs._B.is_autodiff and not item.targets._B.is_autodiff


def test_resume_needs_the_checkpoint_and_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="no model checkpoint for epoch 2"):
        builder(tmp_path, epochs=3).checkpoint(2).build(make_model(), SgdConfig().init(), 0.1).fit(*loaders())
    with pytest.raises(ValueError, match="needs a checkpointer"):
        (builder(tmp_path, epochs=3).with_file_checkpointer(None).checkpoint(2)
         .build(make_model(), SgdConfig().init(), 0.1).fit(*loaders()))
    with pytest.raises(TypeError, match="train_step"):
        builder(tmp_path).build(object(), SgdConfig().init(), 0.1)
    with pytest.raises(TypeError, match=r"\.init\(\)"):
        builder(tmp_path).build(make_model(), SgdConfig(), 0.1)
    with pytest.raises(TypeError, match="numeric"):
        builder(tmp_path).metric_train_numeric(Keeper())
    with pytest.raises(ValueError, match="already registered"):
        builder(tmp_path).metric_train_numeric(LossMetric())
    with pytest.raises(ValueError, match="no batch"):
        builder(tmp_path, 1).build(make_model(), SgdConfig().init(), 0.1).fit(iter([]), [])
    with pytest.raises(ValueError):
        builder(tmp_path).num_epochs(0)


def test_resume_in_process_replays_the_checkpoint_strategy(tmp_path):
    full = builder(tmp_path / "full", epochs=4).build(make_model(), AdamConfig().init(), 0.05)
    expected = weights(full.fit(*loaders()))
    first = builder(tmp_path / "cut", epochs=2).build(make_model(), AdamConfig().init(), 0.05)
    first.fit(*loaders())
    resumed = builder(tmp_path / "cut", epochs=4).checkpoint(2).build(make_model(seed=9), AdamConfig().init(), 0.05)
    got = weights(resumed.fit(*loaders()))
    for name in expected:
        assert np.array_equal(expected[name], got[name])
    assert files(tmp_path / "cut" / "checkpoint") == files(tmp_path / "full" / "checkpoint")
    assert resumed.epochs_done == [3, 4]


class ItemBatcher:
    def __init__(self, backend: type) -> None:
        self.backend = backend

    def batch(self, items: list):
        return to_batch(np.stack([x for x, _ in items]), np.array([y for _, y in items]), self.backend)


@pytest.mark.parametrize("workers", [0, 2])
def test_fit_with_the_data_loader_matches_across_workers(tmp_path, workers):
    from burnbook.data import DataLoaderBuilder, InMemDataset

    def run(directory: Path, num_workers: int) -> dict:
        train = (DataLoaderBuilder(ItemBatcher(B)).batch_size(32).shuffle(5).num_workers(num_workers)
                 .build(InMemDataset(list(zip(X, Y)))))
        valid = DataLoaderBuilder(ItemBatcher(NdArray)).batch_size(48).build(InMemDataset(list(zip(XV, YV))))
        learner = builder(directory, epochs=2).build(make_model(), AdamConfig().init(), 0.05)
        return weights(learner.fit(train, valid))

    got = run(tmp_path / "run", workers)
    # the same order as the list-backed loader seeded the same way
    reference = weights(builder(tmp_path / "ref", epochs=2).build(make_model(), AdamConfig().init(), 0.05)
                        .fit(*loaders()))
    for name in got:
        assert np.array_equal(got[name], reference[name])
    assert (tmp_path / "run/train/epoch-2/Loss.log").read_text() == (tmp_path / "ref/train/epoch-2/Loss.log").read_text()
