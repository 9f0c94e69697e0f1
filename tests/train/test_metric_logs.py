"""Metric logs read back: "value,count" lines are weighted, never expanded,
and a malformed numeric line names its file and line."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pytest

from burnbook.train import (
    Aggregate, EventStore, FileMetricLogger, InMemoryMetricLogger, LearnerSummary, MetricLogError, Split,
)
from burnbook.train.metric import MetricEntry


def write_log(folder, epoch: int, name: str, text: str):
    path = folder / f"epoch-{epoch}" / f"{name}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_huge_count_is_a_weight_not_a_list(tmp_path) -> None:
    write_log(tmp_path / "train", 1, "Loss", "0.5,400000000\n1.0,100000000\n")
    write_log(tmp_path / "valid", 1, "Loss", "2.0,400000000\n")
    tracemalloc.start()
    start = time.monotonic()
    try:
        summary = LearnerSummary.from_dir(tmp_path, ["Loss"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.monotonic() - start < 2 and peak < 1 << 20  # a 400-million-item list would need 3 GB
    assert summary.train[0].entries == [(1, pytest.approx(0.6))]  # (0.5 * 4e8 + 1.0 * 1e8) / 5e8
    assert summary.valid[0].entries == [(1, 2.0)]


def test_the_weighted_mean_is_the_mean_of_the_items(tmp_path) -> None:
    rng = np.random.default_rng(0)
    values, counts = rng.standard_normal(50), rng.integers(0, 70, 50)
    lines = [f"{float(v)!r},{int(n)}" for v, n in zip(values, counts)] + ["not available", "NaN,64", "3.5"]
    write_log(tmp_path, 1, "Loss", "\n".join(lines) + "\n")
    store = EventStore()
    store.register_logger_train(FileMetricLogger(tmp_path))
    items = np.concatenate([np.repeat(values, counts), [3.5]])  # NaN lines and count-0 lines cover nothing
    assert store.find_metric("Loss", 1, Aggregate.Mean, Split.Train) == pytest.approx(items.mean(), rel=1e-12)
    logger = FileMetricLogger(tmp_path)
    assert logger.read_numeric("Loss", 1)[:3] == list(values[:3])  # one value per line
    assert logger.read_numeric_weighted("Loss", 1)[:2] == [(values[0], counts[0]), (values[1], counts[1])]


def test_only_zero_counts_give_no_mean(tmp_path) -> None:
    write_log(tmp_path, 1, "Loss", "0.5,0\n0.7,0\n")
    store = EventStore()
    store.register_logger_train(FileMetricLogger(tmp_path))
    assert store.find_metric("Loss", 1, Aggregate.Mean, Split.Train) is None


@pytest.mark.parametrize("line, why", [
    ("0.5,-3", r"the item count '-3' is not an integer from 0 to 2,147,483,647"),
    ("0.5,abc", r"the item count 'abc' is not an integer"),
    ("0.5,1.5", r"the item count '1.5' is not an integer"),
    ("0.5,", r"the item count '' is not an integer"),
    ("0.5,4294967296", r"the item count '4294967296' is not an integer from 0 to"),
    ("0.5," + "9" * 5000, r"the item count '9{40}' is not an integer"),
    ("0.5,1,2", r"3 comma-separated fields"),
])
def test_a_malformed_numeric_line_names_the_file_and_line(tmp_path, line, why) -> None:
    path = write_log(tmp_path / "train", 2, "Accuracy", f"0.25,64\nnot available\n{line}\n")
    write_log(tmp_path / "train", 1, "Accuracy", "0.5\n")
    with pytest.raises(MetricLogError, match=rf"{path}, line 3 \(.*\): {why}") as err:
        LearnerSummary.from_dir(tmp_path, ["Accuracy"])
    assert isinstance(err.value, ValueError)


def test_in_memory_logs_are_checked_the_same_way() -> None:
    logger = InMemoryMetricLogger()
    logger.log(MetricEntry("Loss", "", "1.0,3"))
    logger.log(MetricEntry("Loss", "", "2.0,1"))
    store = EventStore()
    store.register_logger_train(logger)
    assert store.find_metric("Loss", 1, Aggregate.Mean, Split.Train) == 1.25
    logger.log(MetricEntry("Loss", "", "2.0,-1"))
    with pytest.raises(MetricLogError, match=r"in-memory log of 'Loss', epoch 1, line 3"):
        logger.read_numeric("Loss", 1)


def test_a_logger_with_read_numeric_only_still_averages() -> None:
    class Plain:
        def log(self, item): ...
        def end_epoch(self, epoch): ...
        def read_numeric(self, name, epoch):
            return [1.0, 2.0, float("nan"), 6.0]

    store = EventStore()
    store.register_logger_valid(Plain())
    assert store.find_metric("Loss", 1) == 3.0
