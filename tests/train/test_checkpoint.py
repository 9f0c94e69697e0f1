"""Checkpointing strategies, the file checkpointer, the file metric logger
and the event store, on their own."""

from __future__ import annotations

import pytest

from burnbook.record import FullPrecisionSettings, NamedMpkGzFileRecorder, Record
from burnbook.train import (
    Aggregate, ComposedCheckpointingStrategy, Delete, Direction, EventStore, FileCheckpointer, FileMetricLogger,
    InMemoryMetricLogger, KeepLastNCheckpoints, MetricCheckpointingStrategy, Save, Split,
)
from burnbook.train.checkpoint import default_checkpointing_strategy
from burnbook.train.metric import MetricEntry
from burnbook.train.store import MetricsUpdate


def store_with(valid_loss: list[float]) -> EventStore:
    """A store whose valid `Loss` has one value per epoch."""
    store, logger = EventStore(), InMemoryMetricLogger()
    store.register_logger_valid(logger)
    for epoch, value in enumerate(valid_loss, 1):
        store.start_epoch(Split.Valid, epoch)
        store.add_update(Split.Valid, MetricsUpdate([], [(MetricEntry("Loss", "", repr(value)), value)]))
        store.end_epoch(Split.Valid, epoch)
    return store


def test_keep_last_n():
    strategy, store = KeepLastNCheckpoints(2), EventStore()
    assert strategy.checkpointing(1, store) == [Save()]
    assert strategy.checkpointing(2, store) == [Save()]
    assert strategy.checkpointing(3, store) == [Save(), Delete(1)]
    with pytest.raises(ValueError):
        KeepLastNCheckpoints(0)


def test_metric_strategy_keeps_the_best_epoch_only():
    losses = [3.0, 2.0, 2.5, 1.0]
    strategy = MetricCheckpointingStrategy("Loss", Aggregate.Mean, Direction.Lowest, Split.Valid)
    store = store_with(losses)
    actions = [strategy.checkpointing(e, store.until(e)) for e in range(1, 5)]
    assert actions == [[Save()], [Delete(1), Save()], [], [Delete(2), Save()]]


def test_default_strategy_is_last_two_plus_best_loss():
    losses = [1.0, 3.0, 2.0, 2.5, 1.5]
    strategy, store = default_checkpointing_strategy(), store_with(losses)
    kept: set[int] = set()
    for epoch in range(1, 6):
        for action in strategy.checkpointing(epoch, store.until(epoch)):
            kept = kept - {action.epoch} if isinstance(action, Delete) else kept | {epoch}
    assert kept == {1, 4, 5}


def test_composed_strategy_deletes_when_all_agree():
    strategy = ComposedCheckpointingStrategy(KeepLastNCheckpoints(1), KeepLastNCheckpoints(2))
    store = EventStore()
    assert strategy.checkpointing(1, store) == [Save()]
    assert strategy.checkpointing(2, store) == [Save()]  # the first lets 1 go, the second keeps it
    assert strategy.checkpointing(3, store) == [Save(), Delete(1)]


def test_file_checkpointer_round_trip_and_errors(tmp_path):
    checkpointer = FileCheckpointer(NamedMpkGzFileRecorder(FullPrecisionSettings), tmp_path, "optim")
    record = Record(optimizer="Sgd", states={})
    assert checkpointer.save(4, record).name == "optim-4.mpk.gz"
    assert checkpointer.restore(4) == record
    with pytest.raises(FileNotFoundError, match="found: optim-4.mpk.gz"):
        checkpointer.restore(5)
    checkpointer.delete(4)
    checkpointer.delete(4)  # deleting twice is fine
    assert list(tmp_path.iterdir()) == []


def test_file_metric_logger_writes_whole_lines_per_epoch(tmp_path):
    logger = FileMetricLogger(tmp_path, flush_seconds=3600)
    logger.start_epoch(3)
    for value in ("0.5", "0.25"):
        logger.log(MetricEntry("Learning Rate", "", value))
    path = tmp_path / "epoch-3" / "Learning_Rate.log"
    assert not path.exists()  # buffered until a flush
    assert logger.read_numeric("Learning Rate", 3) == [0.5, 0.25]
    logger.flush()
    assert path.read_text() == "0.5\n0.25\n"
    logger.log(MetricEntry("Learning Rate", "", "not available"))
    logger.end_epoch(3)
    assert path.read_text() == "0.5\n0.25\nnot available\n"
    assert logger.epoch == 4 and logger.epochs() == 3
    assert logger.read_numeric("Learning Rate", 3) == [0.5, 0.25]  # from the file, text lines skipped
    assert [p.name for p in path.parent.iterdir()] == ["Learning_Rate.log"]  # no temporary files left
    logger.start_epoch(3)  # a resumed run rewrites the epoch
    logger.log(MetricEntry("Learning Rate", "", "1.0"))
    logger.end_epoch(3)
    assert path.read_text() == "1.0\n"


def test_store_aggregates_reads_burn_013_lines_and_hides_later_epochs(tmp_path):
    (tmp_path / "epoch-1").mkdir()
    (tmp_path / "epoch-1" / "Loss.log").write_text("1.0,3\n2.0,1\n")  # value,items
    (tmp_path / "epoch-2").mkdir()
    (tmp_path / "epoch-2" / "Loss.log").write_text("0.5\n")
    store = EventStore()
    store.register_logger_train(FileMetricLogger(tmp_path))
    assert store.find_metric("Loss", 1, Aggregate.Mean, Split.Train) == pytest.approx(1.25)
    assert store.find_epoch("Loss", Aggregate.Mean, Direction.Lowest, Split.Train) == 2
    assert store.until(1).find_epoch("Loss", Aggregate.Mean, Direction.Lowest, Split.Train) == 1
    assert store.until(1).find_metric("Loss", 2, Aggregate.Mean, Split.Train) is None
    assert store.find_metric("Missing", 1, Aggregate.Mean, Split.Train) is None
