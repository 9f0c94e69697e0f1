"""DataLoader: batching, progress, per-epoch shuffling, resuming, workers."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from burnbook.data import (DataLoaderBuilder, DataLoaderWorkerError, InMemDataset, MapperDataset,
                           Progress, SamplerDataset, batch_info)


class ListBatcher:
    """Batches are the lists of items (module level: picklable for spawn)."""

    def batch(self, items):
        return list(items)


class PidBatcher:
    def batch(self, items):
        return os.getpid(), list(items)


def _sleepy(items):
    time.sleep(0.05)
    return list(items)


def _epochs(loader, n):
    return [[x for batch in loader for x in batch] for _ in range(n)]


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie)."""
    psutil = pytest.importorskip("psutil")
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _exists(pid: int) -> bool:
    """Exists at all, zombie included (our own children must be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_batches_len_and_progress():
    loader = DataLoaderBuilder(ListBatcher()).batch_size(3).build(InMemDataset(list(range(10))))
    assert len(loader) == 4 and loader.num_items() == 10
    assert loader.progress() == Progress(0, 10)
    it = iter(loader)
    seen = []
    for batch in it:
        seen.append(batch)
        assert it.progress().items_processed == sum(map(len, seen))
        assert it.progress().items_total == 10
    assert seen == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]  # dataset order, last batch partial
    assert loader.progress() == Progress(10, 10) and loader.progress().fraction == 1.0
    assert list(it) == []  # an exhausted epoch stays exhausted
    assert list(DataLoaderBuilder(ListBatcher()).build([])) == []


def test_builder_defaults_and_validation():
    loader = DataLoaderBuilder(lambda items: items).build([1, 2])  # a plain callable is a batcher
    assert [b for b in loader] == [[1], [2]]
    with pytest.raises(ValueError, match="batch_size"):
        DataLoaderBuilder(ListBatcher()).batch_size(0).build([1])
    with pytest.raises(ValueError, match="worker_type"):
        DataLoaderBuilder(ListBatcher()).worker_type("gpu")
    with pytest.raises(ValueError, match="seed"):
        DataLoaderBuilder(ListBatcher()).shuffle(-1).build([1])
    with pytest.raises(TypeError, match="batch"):
        DataLoaderBuilder(3).build([1])


def test_shuffle_differs_per_epoch_and_is_reproducible():
    data = InMemDataset(list(range(40)))
    a = DataLoaderBuilder(ListBatcher()).batch_size(8).shuffle(5).build(data)
    b = DataLoaderBuilder(ListBatcher()).batch_size(8).shuffle(5).build(data)
    epochs_a, epochs_b = _epochs(a, 3), _epochs(b, 3)
    assert epochs_a == epochs_b
    assert all(sorted(e) == list(range(40)) for e in epochs_a)
    assert epochs_a[0] != epochs_a[1] != epochs_a[2]
    assert epochs_a[1] == a.order(1).tolist()
    c = DataLoaderBuilder(ListBatcher()).batch_size(8).shuffle(6).build(data)
    assert _epochs(c, 1)[0] != epochs_a[0]


@pytest.mark.parametrize("workers, kind", [(1, "process"), (3, "process"), (2, "thread")])
def test_same_batches_whatever_the_workers(workers, kind):
    data = MapperDataset(InMemDataset(list(range(50))), lambda v: v * 2)
    ref = DataLoaderBuilder(ListBatcher()).batch_size(4).shuffle(9).build(data)
    par = (DataLoaderBuilder(ListBatcher()).batch_size(4).shuffle(9)
           .num_workers(workers).worker_type(kind).build(data))
    for _ in range(2):
        assert list(par) == list(ref)
    assert par.progress() == Progress(50, 50)


def test_resume_at_epoch_k_reproduces_the_data_order():
    data = SamplerDataset(InMemDataset(list(range(100))), 30, seed=1)  # redraws per epoch
    run = DataLoaderBuilder(ListBatcher()).batch_size(7).shuffle(3).build(data)
    uninterrupted = _epochs(run, 4)
    assert uninterrupted[0] != uninterrupted[1]
    state = {"epoch": 2, "seed": 3}

    data2 = SamplerDataset(InMemDataset(list(range(100))), 30, seed=1)
    resumed = DataLoaderBuilder(ListBatcher()).batch_size(7).shuffle(3).num_workers(2).build(data2)
    resumed.load_state(state)
    assert resumed.epoch == 2
    assert _epochs(resumed, 2) == uninterrupted[2:]
    assert resumed.state() == {"epoch": 4, "seed": 3}
    resumed.set_epoch(0)
    assert _epochs(resumed, 1) == uninterrupted[:1]
    with pytest.raises(ValueError, match="seed"):
        DataLoaderBuilder(ListBatcher()).shuffle(4).build(data).load_state(state)


def test_batch_info_rng_is_independent_of_workers():
    def batcher(items):
        info = batch_info()
        return info.epoch, info.index, float(info.rng.random()), items

    data = list(range(20))
    results = []
    for workers, kind in [(0, "process"), (2, "process"), (3, "thread")]:
        loader = (DataLoaderBuilder(batcher).batch_size(3).shuffle(11).num_workers(workers)
                  .worker_type(kind).build(data))
        results.append(_epochs(loader, 2))
    assert results[0] == results[1] == results[2]
    assert batch_info() is None  # outside a loader


def _timed(items):
    start = time.time()
    time.sleep(0.05)
    return [(os.getpid(), start, time.time(), list(items))]


def test_worker_processes_really_run_in_parallel():
    # Overlapping batch intervals in two processes prove concurrency without
    # timing the whole run (which a loaded machine would make flaky).
    data = list(range(48))
    spans = [s for b in DataLoaderBuilder(_timed).batch_size(4).num_workers(2).build(data) for s in b]
    assert [x for *_, items in spans for x in items] == data
    pids = {pid for pid, *_ in spans}
    assert len(pids) == 2 and os.getpid() not in pids
    overlaps = [(a, b) for a in spans for b in spans
                if a[0] != b[0] and a[1] < b[2] and b[1] < a[2]]
    assert overlaps, spans


def test_workers_are_reaped_at_the_end_of_an_epoch_and_on_break():
    loader = DataLoaderBuilder(ListBatcher()).batch_size(2).num_workers(2).build(list(range(20)))
    it = iter(loader)
    next(it)
    pids = it.worker_pids()
    assert len(pids) == 2 and all(_exists(p) for p in pids)
    for _ in it:
        pass
    assert it.worker_pids() == [] and not any(_exists(p) for p in pids)

    with iter(loader) as it:
        next(it)
        it_pids = it.worker_pids()
    assert it_pids and not any(_exists(p) for p in it_pids)
    it = iter(loader)  # as when a for loop is left early: the dropped iterator stops them
    next(it)
    dropped = it.worker_pids()
    del it
    gc.collect()
    assert not any(_exists(p) for p in dropped)


def test_worker_errors_name_the_batch_and_stop_the_workers():
    def failing(items):
        if 7 in items:
            raise KeyError("bad item 7")
        return items

    data = list(range(12))
    with pytest.raises(KeyError, match="bad item 7"):
        list(DataLoaderBuilder(failing).batch_size(2).build(data))
    loader = DataLoaderBuilder(failing).batch_size(2).num_workers(2).build(data)
    it = iter(loader)
    with pytest.raises(DataLoaderWorkerError, match="failed on batch 3") as info:
        list(it)
    assert "KeyError: 'bad item 7'" in str(info.value)
    assert isinstance(info.value.__cause__, KeyError)
    assert it.closed and it.worker_pids() == []


def test_a_dying_worker_is_reported():
    def crashing(items):
        if 5 in items:
            os._exit(3)
        return items

    loader = DataLoaderBuilder(crashing).batch_size(2).num_workers(2).build(list(range(10)))
    with pytest.raises(DataLoaderWorkerError, match="exited unexpectedly with code 3"):
        list(loader)


def test_tensors_come_back_from_worker_processes():
    from burnbook import Int, Tensor
    from burnbook.backend import Autodiff, NdArray

    B = Autodiff[NdArray]

    def batcher(items):
        images = Tensor[B, 2].from_data(np.stack([np.full(3, v, dtype=np.float32) for v in items]))
        return images, Tensor[B, 1, Int].from_ints(items)

    loader = DataLoaderBuilder(batcher).batch_size(4).num_workers(2).build(list(range(8)))
    (images, targets), _ = list(loader)
    assert images.backend is B and images.dims() == [4, 3] and targets.kind is Int
    np.testing.assert_array_equal(images.to_numpy()[:, 0], [0, 1, 2, 3])
    assert targets.to_numpy().tolist() == [0, 1, 2, 3]


def test_spawn_start_method_works_with_picklable_parts():
    loader = (DataLoaderBuilder(PidBatcher()).batch_size(5).shuffle(2).num_workers(1)
              .start_method("spawn").build(InMemDataset(list(range(10)))))
    batches = list(loader)
    assert [x for _, b in batches for x in b] == loader.order(0).tolist()
    assert batches[0][0] != os.getpid()


def test_workers_exit_when_the_loader_process_is_killed(tmp_path):
    """A training process killed mid-epoch leaves no worker behind."""
    script = textwrap.dedent("""
        import sys, time
        from burnbook.data import DataLoaderBuilder
        def slow(items):
            time.sleep(0.2)
            return items
        it = iter(DataLoaderBuilder(slow).num_workers(2).build(list(range(100))))
        next(it)
        print(*it.worker_pids(), flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def test_spawn_refuses_unpicklable_batchers_clearly():
    loader = DataLoaderBuilder(lambda items: items).num_workers(1).start_method("spawn").build([1, 2])
    with pytest.raises(TypeError, match="lambdas and closures, or worker_type\\('thread'\\)"):
        list(loader)


class Unpicklable(Exception):
    def __init__(self, a, b):  # pickles, but cannot be rebuilt from its args
        super().__init__(f"{a}-{b}")


def test_an_exception_that_does_not_unpickle_still_reports_the_traceback():
    def failing(items):
        raise Unpicklable(1, 2)

    with pytest.raises(DataLoaderWorkerError, match="Unpicklable: 1-2") as info:
        list(DataLoaderBuilder(failing).num_workers(1).build([1]))
    assert info.value.__cause__ is None
