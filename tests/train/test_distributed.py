"""`DataParallel` on a local Ray instance: two workers train exactly as one
process does on the same global batches (checked against the Learner and
against plain NumPy SGD), a worker killed mid-epoch ends `fit` with an error
naming it and leaves the last checkpoint, which resumes on 1 or 2 workers,
and the stop flag stops every worker. One Ray instance serves the module
(starting it is the slow part)."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from burnbook.backend import NdArray
from burnbook.optim import AdamConfig, SgdConfig
from burnbook.train import Aggregate, LearnerBuilder, LossMetric, MetricsRendererBase, Split
from burnbook.train.distributed import (
    DataParallel, DistributedWorkerError, EpochTimes, UnevenBatchError, shutdown_workers, start_local,
)
from burnbook.train.distributed import notices
from burnbook.train.distributed.transport import batch_size_of, dumps, loads, shard_sizes, split_batch

from .helpers import CLASSES, B, batches, make_data, make_model, to_batch, weights

ROOT = Path(__file__).resolve().parents[2]
X, Y = make_data(75, 1)
TRAIN = batches(X, Y, 15)  # 15 items per batch: shards of 8 and 7, an uneven split
VALID = batches(X[:20], Y[:20], 10, NdArray)
LR = 0.2


@pytest.fixture(scope="module")
def ray_instance():
    ray = pytest.importorskip("ray", reason="the [distributed] extra (ray) is not installed")
    pytest.importorskip("torch", reason="Ray's Gloo backend needs torch")
    # Workers import this test module (the model's class) from the repository root.
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    start_local(num_cpus=2, runtime_env={"env_vars": env})
    yield ray
    ray.shutdown()


def builder(directory: Path, epochs: int, strategy=None) -> LearnerBuilder:
    b = (LearnerBuilder(directory).metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
         .renderer(MetricsRendererBase()).num_epochs(epochs))
    return b.distributed(strategy) if strategy is not None else b


def numpy_sgd(epochs: int) -> dict[str, np.ndarray]:
    """The same training by hand: softmax cross-entropy of x W + b, mean over
    each whole batch, plain SGD."""
    params = weights(make_model())
    w, b = params["linear.weight"].astype(np.float64), params["linear.bias"].astype(np.float64)
    for _ in range(epochs):
        for i in range(0, len(X), 15):
            x, y = X[i:i + 15].astype(np.float64), Y[i:i + 15]
            logits = x @ w + b
            p = np.exp(logits - logits.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            p[np.arange(len(y)), y] -= 1.0
            w, b = w - LR * x.T @ p / len(y), b - LR * p.sum(0) / len(y)
    return {"linear.weight": w, "linear.bias": b}


def test_two_workers_equal_one_process_and_hand_written_sgd(ray_instance, tmp_path):
    single = builder(tmp_path / "one", 2).build(make_model(), SgdConfig().init(), LR).fit(TRAIN, VALID)
    learner = builder(tmp_path / "two", 2, DataParallel(2)).build(make_model(), SgdConfig().init(), LR)
    parallel = learner.fit(TRAIN, VALID)
    expected, got, alone = numpy_sgd(2), weights(parallel), weights(single)
    for name in expected:
        np.testing.assert_allclose(got[name], alone[name], atol=1e-5, rtol=0, err_msg=name)
        np.testing.assert_allclose(got[name], expected[name], atol=1e-5, rtol=0, err_msg=name)
    assert weights(make_model())["linear.weight"].tolist() != got["linear.weight"].tolist()
    # rank 0's host wrote the metrics (the merged batch's loss) and the checkpoints
    loss = [learner.store.find_metric("Loss", e, Aggregate.Mean, Split.Train) for e in (1, 2)]
    loss_alone = [float(v) for v in (tmp_path / "one/train/epoch-2/Loss.log").read_text().split()]
    assert loss[1] < loss[0]
    assert [float(v) for v in (tmp_path / "two/train/epoch-2/Loss.log").read_text().split()] == \
        pytest.approx(loss_alone, abs=1e-5)
    for rank in (0, 1):
        lines = (tmp_path / f"two/train/epoch-1/Worker_{rank}_Throughput.log").read_text().split("\n")
        assert len([line for line in lines if line]) == len(TRAIN)
        assert all(float(line.split()[0]) > 0 for line in lines if line)
    assert (tmp_path / "two/checkpoint/model-2.mpk.gz").is_file()
    assert learner.distributed.workers == []  # fit stopped its workers
    # where each epoch's time went: both workers computed and all-reduced in every step
    times = learner.distributed.epoch_times
    assert [t.batches for t in times] == [len(TRAIN)] * 2 and [t.items for t in times] == [len(X)] * 2
    for t in times:
        assert all(c > 0 for c in t.compute) and all(r > 0 for r in t.allreduce) and len(t.compute) == 2
        assert 0 < t.slowest <= t.steps <= t.seconds
        assert set(t.per_batch()) == {"compute", "allreduce", "transport", "driver"}


class KillingLoader:
    """The training batches; at batch `at` of epoch `epoch` it kills worker
    `rank`'s process with SIGKILL (no cleanup, as a crash)."""

    def __init__(self, strategy: DataParallel, rank: int, epoch: int, at: int) -> None:
        self.strategy, self.rank, self.epoch, self.at, self.current = strategy, rank, epoch, at, 0
        self.killed: int | None = None

    def set_epoch(self, epoch: int) -> None:
        self.current = epoch + 1

    def __len__(self) -> int:
        return len(TRAIN)

    def __iter__(self):
        for i, batch in enumerate(TRAIN):
            if self.current == self.epoch and i == self.at and self.killed is None:
                self.killed = self.strategy.workers[self.rank]["pid"]
                os.kill(self.killed, signal.SIGKILL)
            yield batch


def test_a_killed_worker_is_named_and_the_checkpoint_resumes_on_one_or_two_workers(ray_instance, tmp_path, caplog,
                                                                                    capsys):
    strategy = DataParallel(2)
    loader = KillingLoader(strategy, rank=1, epoch=2, at=2)
    learner = builder(tmp_path, 3, strategy).build(make_model(), AdamConfig().init(), 0.05)
    with caplog.at_level(logging.DEBUG, logger="burnbook.train"):
        with pytest.raises(DistributedWorkerError, match=r"worker rank 1 \(pid \d+ on ") as info:
            learner.fit(loader, VALID)
        err = info.value
        assert err.rank == 1 and f"pid {loader.killed}" in str(err) and "died" in str(err)
        assert (err.pid, err.doing) == (loader.killed, "training") and err.host and "died" in err.cause
        assert str(err) == f"DataParallel: worker rank 1 (pid {err.pid} on {err.host}) failed while training: {err.cause}"
        # Ray's own notice of the dead worker (ids, IP, PID, colour codes) goes to burnbook's log, not stdout
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any("Ray's notice" in r.message for r in caplog.records):
            time.sleep(0.2)
    routed = [r.message for r in caplog.records if "Ray's notice" in r.message]
    assert routed and f"Worker PID: {loader.killed}" in routed[0] and "\x1b" not in routed[0]
    printed = capsys.readouterr()
    assert "(raylet)" not in printed.out + printed.err and "Worker PID" not in printed.out + printed.err
    checkpoints = sorted(p.name for p in (tmp_path / "checkpoint").iterdir())
    assert checkpoints == [f"{kind}-1.mpk.gz" for kind in ("model", "optim", "rng", "scheduler")]
    assert "Training stopped by DistributedWorkerError" in (tmp_path / "experiment.log").read_text()
    # the uninterrupted reference, in one process
    reference = weights(builder(tmp_path / "ref", 3).build(make_model(), AdamConfig().init(), 0.05)
                        .fit(TRAIN, VALID))
    shutil.copytree(tmp_path / "checkpoint", tmp_path / "copy" / "checkpoint")
    alone = builder(tmp_path, 3).checkpoint(1).build(make_model(), AdamConfig().init(), 0.05).fit(TRAIN, VALID)
    for name, value in weights(alone).items():
        np.testing.assert_allclose(value, reference[name], atol=1e-5, rtol=0, err_msg=name)
    both = (builder(tmp_path / "copy", 3, DataParallel(2)).checkpoint(1)
            .build(make_model(), AdamConfig().init(), 0.05).fit(TRAIN, VALID))
    for name, value in weights(both).items():
        np.testing.assert_allclose(value, reference[name], atol=1e-5, rtol=0, err_msg=name)


class StoppingLoader:
    """Asks the learner to stop (as the dashboard's stop button does) at batch 2."""

    def __init__(self, builder: LearnerBuilder) -> None:
        self.interrupter = builder.interrupter()

    def __iter__(self):
        for i, batch in enumerate(TRAIN):
            if i == 2:
                self.interrupter.stop()
            yield batch


def test_stop_ends_every_worker_and_idle_workers_serve_the_next_fit(ray_instance, tmp_path):
    strategy = DataParallel(2)
    pids: list[int] = []
    original = strategy.start

    def start(learner):
        session = original(learner)
        pids.extend(w["pid"] for w in strategy.workers)
        return session

    strategy.start = start
    b = builder(tmp_path, 2, strategy)
    loader = StoppingLoader(b)
    learner = b.build(make_model(), SgdConfig().init(), LR)
    learner.fit(loader, VALID)
    assert learner.epochs_done == [] and strategy.workers == []
    for log in ("Loss", "Worker_0_Throughput", "Worker_1_Throughput"):  # 3 steps everywhere, then nothing
        assert len((tmp_path / f"train/epoch-1/{log}.log").read_text().split()) == 3, log
    # the idle workers are reused: the same processes train the next fit, exactly
    again = builder(tmp_path / "again", 1, strategy).build(make_model(), SgdConfig().init(), LR).fit(TRAIN, VALID)
    alone = builder(tmp_path / "one", 1).build(make_model(), SgdConfig().init(), LR).fit(TRAIN, VALID)
    for name, value in weights(again).items():
        np.testing.assert_allclose(value, weights(alone)[name], atol=1e-5, rtol=0, err_msg=name)
    assert len(pids) == 4 and pids[:2] == pids[2:] and all(_alive(pid) for pid in pids)
    shutdown_workers()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in pids), "shutdown_workers left worker processes running"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie awaiting its parent's wait() has stopped too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# -- no Ray needed ---------------------------------------------------------------------
def test_rays_notices_of_own_workers_are_logged_and_others_printed(monkeypatch, caplog):
    printed = []

    class Worker:  # stands in for ray._private.worker
        @staticmethod
        def print_to_stdstream(data, ignore_prefix):
            printed.append(data["lines"])

    fake = type("ray", (), {"_private": type("private", (), {"worker": Worker})})
    monkeypatch.setattr(notices, "_OWN", set())
    assert notices.route_worker_notices(fake) and notices.route_worker_notices(fake)  # once, idempotent
    notices.own([4242, None])
    ours = "A worker died or was killed ... Worker IP address: 10.0.0.1 Worker PID: 4242 Worker exit type: SYSTEM_ERROR"
    with caplog.at_level(logging.DEBUG, logger="burnbook.train"):
        Worker.print_to_stdstream({"lines": [ours], "pid": "raylet", "is_err": False}, ignore_prefix=False)
        Worker.print_to_stdstream({"lines": [ours.replace("4242", "77")], "pid": "raylet"}, ignore_prefix=False)
        Worker.print_to_stdstream({"lines": ["hello from a task"], "pid": 4242}, ignore_prefix=False)
    assert printed == [[ours.replace("4242", "77")], ["hello from a task"]]
    assert [r.levelno for r in caplog.records] == [logging.DEBUG] and "Worker PID: 4242" in caplog.records[0].message
    assert not notices.route_worker_notices(type("ray", (), {}))  # a Ray without the listener: nothing to wrap


def test_epoch_times_per_batch_splits_the_epoch():
    t = EpochTimes(items=256, batches=2, seconds=1.0, compute=(0.3, 0.5), allreduce=(0.2, 0.0), steps=0.8,
                   slowest=0.5)
    assert t.per_batch() == pytest.approx({"compute": 200.0, "allreduce": 50.0, "transport": 150.0, "driver": 100.0})


def test_uneven_batches_are_shared_out_and_too_small_ones_refused():
    assert shard_sizes(15, 2) == [8, 7] and shard_sizes(10, 4) == [3, 3, 2, 2]
    batch = to_batch(X[:15], Y[:15])
    shards = split_batch(batch, shard_sizes(15, 2))
    assert [batch_size_of(s) for s in shards] == [8, 7]
    np.testing.assert_array_equal(np.concatenate([s.inputs.to_numpy() for s in shards]), X[:15])
    with pytest.raises(UnevenBatchError, match="a batch of 1 item.*2 workers"):
        shard_sizes(1, 2)
    odd = {"x": to_batch(X[:4], Y[:4]).inputs, "y": to_batch(X[:3], Y[:3]).targets}
    with pytest.raises(UnevenBatchError, match=r"batch\['x'\]: 4, batch\['y'\]: 3"):
        batch_size_of(odd)


def test_models_and_batches_cross_processes_intact():
    model = make_model(3)
    back = loads(dumps(model))
    assert weights(back).keys() == weights(model).keys()
    for name, value in weights(model).items():
        np.testing.assert_array_equal(weights(back)[name], value)
    assert [p.id for _, p in back.named_params()] == [p.id for _, p in model.named_params()]
    assert type(back.linear.weight.val()) is type(model.linear.weight.val())  # the same Tensor[B, 2] class
    assert back.linear.weight.val().is_require_grad()
    assert back.linear.weight.val().dims() == [4, CLASSES] and back.linear.weight.val()._B is B


def test_without_ray_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"\[distributed\].*pip install"):
        DataParallel(2)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="num_workers must be an int >= 1, got 0"):
        DataParallel(0)
    with pytest.raises(TypeError, match="not a distributed strategy"):
        LearnerBuilder("unused").distributed(2)
