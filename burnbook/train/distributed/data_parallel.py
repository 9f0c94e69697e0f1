"""`DataParallel`: the Learner's training epochs on n model replicas, one
per Ray worker process, with gradients averaged by Gloo's all-reduce.

The process that calls `fit` drives the run (it is rank 0's host): it reads
the data loader, cuts every global batch into one shard per worker, asks
the scheduler for the learning rate, and sends each worker its shard. Each
worker computes its shard's gradients, the workers sum them, weighted by
their shard's share of the batch, with `ray.util.collective.allreduce`
(Gloo), and each applies the same optimizer step, so the replicas stay
identical. After each epoch the driver takes rank 0's model and optimizer:
it validates that model, writes the metrics and the checkpoints, and feeds
the renderer or notebook dashboard, which also plots every worker's
throughput (`Worker k Throughput`, items per second).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ..metric.base import MetricEntry, MetricMetadata
from ..metric.state import FormatOptions, NumericMetricState
from ..processor import LearnerItem
from ..store import Split
from .notices import own, route_worker_notices
from .transport import batch_size_of, dumps, loads, merge_items, shard_sizes, split_batch
from .worker import Replica

__all__ = ["DataParallel", "DistributedWorkerError", "EpochTimes", "WorkerThroughputMetric", "require_ray",
           "shutdown_workers", "start_local"]

log = logging.getLogger("burnbook.train")

INSTALL = ('pip install "burnbook[distributed]" (and torch\'s CPU build: pip install torch '
           '--index-url https://download.pytorch.org/whl/cpu)')


def require_ray() -> Any:
    """The `ray` module, or an ImportError saying how to install it."""
    try:
        import ray
    except ImportError as err:
        raise ImportError(f"DataParallel needs Ray, which is in burnbook's [distributed] extra: {INSTALL}") from err
    try:
        import torch  # noqa: F401  Ray's Gloo collective backend is built on torch.distributed
    except ImportError as err:
        raise ImportError("DataParallel's all-reduce uses Ray's Gloo backend, which runs on torch.distributed: "
                          "install torch's CPU build, pip install torch --index-url "
                          "https://download.pytorch.org/whl/cpu") from err
    return ray


class DistributedWorkerError(RuntimeError):
    """A worker process died or failed during `fit`; the message names it
    (rank, process id, host). Checkpoints of finished epochs are untouched.

    The parts of the message are attributes too: `rank`, `pid` and `host`
    (None where the worker never reported them), `doing` (what the run was
    doing: "starting", "training", ...) and `cause` (what went wrong, e.g.
    "the worker process died (...)")."""

    def __init__(self, message: str, rank: int, pid: int | None = None, host: str | None = None,
                 doing: str = "", cause: str = "") -> None:
        super().__init__(message)
        self.rank, self.pid, self.host, self.doing, self.cause = rank, pid, host, doing, cause


@dataclass(frozen=True)
class EpochTimes:
    """Where one training epoch's time went (`DataParallel.epoch_times`),
    in seconds summed over the epoch's steps.

    `compute[k]`: worker k's own work (its shard's forward and backward, the
    optimizer step, unpacking the shard and packing its outputs);
    `allreduce[k]`: worker k inside the all-reduce, waiting for the slower
    peer included; `steps`: the steps at the driver, from cutting the batch
    to having every worker's outputs; `slowest`: the slowest worker's time
    of each step. So `steps - slowest` is transport (pickling and sending
    the shards, Ray's scheduling, returning the outputs) and `seconds -
    steps` the driver's own work (reading the loader, the metrics)."""

    items: int
    batches: int
    seconds: float
    compute: tuple
    allreduce: tuple
    steps: float
    slowest: float

    def per_batch(self) -> dict:
        """Milliseconds per global batch: `compute` and `allreduce` (means
        over the workers), `transport` and `driver`."""
        n, workers = max(self.batches, 1), max(len(self.compute), 1)
        parts = (("compute", sum(self.compute) / workers), ("allreduce", sum(self.allreduce) / workers),
                 ("transport", max(0.0, self.steps - self.slowest)), ("driver", max(0.0, self.seconds - self.steps)))
        return {name: 1e3 * value / n for name, value in parts}


class WorkerThroughputMetric:
    """Items per second of one worker over its last step (its shard's size
    over the step's wall time, the all-reduce's wait included). The
    distributed Learner registers one per worker and sets `latest` before
    each update."""

    input_type = None

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.NAME = f"Worker {rank} Throughput"
        self.latest = float("nan")
        self.state = NumericMetricState()

    def name(self) -> str:
        return self.NAME

    def update(self, item: None, metadata: MetricMetadata) -> MetricEntry:
        return self.state.update(self.latest, 1, FormatOptions(self.NAME).unit("items/s").precision(1))

    def clear(self) -> None:
        self.state.reset()

    def value(self) -> float:
        return self.state.value()


class DataParallel:
    """Train on `num_workers` replicas, one per Ray worker process.

    `address=None` starts a local Ray instance sized to this machine (or
    reuses the one `ray.init` already started in this process); `"auto"`
    joins the cluster this machine belongs to (`ray start --head` on one
    machine, `ray start --address=HEAD:6379` on the others) and
    `"ray://host:10001"` a remote one through Ray Client. Every worker
    asks for `resources_per_worker` (default `{"CPU": 1}`).

    A global batch of N items gives worker k N // n items, the first
    N % n workers one more; gradients are weighted by each shard's share, so
    an uneven split still gives the whole batch's mean gradient (for a loss
    that averages over the batch). A batch with fewer items than workers is
    an `UnevenBatchError`.
    """

    def __init__(self, num_workers: int, address: str | None = None,
                 resources_per_worker: dict[str, float] | None = None) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"DataParallel: num_workers must be an int >= 1, got {num_workers!r}")
        if address is not None and not isinstance(address, str):
            raise TypeError(f"DataParallel: address must be None, 'auto' or 'ray://host:port', got {address!r}")
        resources = dict(resources_per_worker) if resources_per_worker is not None else {"CPU": 1}
        for key, value in resources.items():
            if not isinstance(key, str) or isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"DataParallel: resources_per_worker maps resource names to amounts >= 0, "
                                 f"got {key!r}: {value!r}")
        require_ray()
        self.num_workers, self.address, self.resources_per_worker = num_workers, address, resources
        self.workers: list[dict[str, Any]] = []  # rank, pid, host of the running workers (during fit)
        self.epoch_seconds: list[tuple[int, float]] = []  # (items, seconds) of every training epoch run
        self.epoch_times: list[EpochTimes] = []  # where each of those epochs' time went

    def __repr__(self) -> str:
        return f"DataParallel(num_workers={self.num_workers}, address={self.address!r})"

    def start(self, learner: Any) -> "_Session":
        """Start (or join) Ray and the workers for `learner.fit`."""
        return _Session(self, learner)

    def _connect(self) -> Any:
        ray = require_ray()
        if not ray.is_initialized():
            if self.address is None:
                start_local()
            else:
                ray.init(address=self.address, log_to_driver=False, logging_level=logging.ERROR)
        route_worker_notices(ray)
        available = ray.cluster_resources()
        for key, amount in self.resources_per_worker.items():
            needed = amount * self.num_workers
            if needed > available.get(key, 0):
                raise ValueError(f"DataParallel({self.num_workers}): the workers need {needed:g} {key} in all "
                                 f"({amount:g} each) but the Ray cluster has {available.get(key, 0):g}; use "
                                 "fewer workers, smaller resources_per_worker, or a bigger cluster")
        return ray


def start_local(num_cpus: int | None = None, attempts: int = 3, min_cpus: int = 1, **options: Any) -> Any:
    """Start a local Ray instance (`ray.init`, quiet, no web dashboard;
    `num_cpus` defaults to the CPUs Ray finds for this machine, its
    container's share inside one) and return the `ray` module.

    `min_cpus` raises that default to at least so many: Ray's CPUs are
    scheduling slots, not pinned cores, so `min_cpus=2` lets two workers of
    `{"CPU": 1}` share a container that grants one CPU (Binder's) instead of
    waiting for a second one forever. Ray gives its raylet a fixed 30 s to
    register with the cluster, which a heavily loaded machine can miss:
    that timeout is retried up to `attempts` times in all. Ray's notices of
    burnbook's own dead workers go to the log (`notices.py`)."""
    ray = require_ray()
    if ray.is_initialized():
        route_worker_notices(ray)
        return ray
    if num_cpus is None and min_cpus > 1:
        num_cpus = max(min_cpus, _detected_cpus())
    settings = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    settings.update(options)
    for attempt in range(1, attempts + 1):
        try:
            ray.init(num_cpus=num_cpus, **settings)
            route_worker_notices(ray)
            return ray
        except Exception as err:  # noqa: BLE001  Ray raises a bare Exception for this timeout
            if attempt == attempts or "timed out during startup" not in str(err):
                raise
            log.warning("Ray's local instance did not start in time (attempt %d of %d); retrying", attempt,
                        attempts)
            ray.shutdown()
    return ray


def _detected_cpus() -> int:
    """The CPUs `ray.init()` would find here: its own count (which reads a
    container's CPU quota), else the cores this process may run on."""
    quiet = logging.getLogger("ray._private.utils")  # its notes on container CPU quotas
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        from ray._private.utils import get_num_cpus

        return int(get_num_cpus(override_docker_cpu_warning=True))
    except Exception:  # noqa: BLE001  another Ray version: the affinity mask is the next best answer
        import os

        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    finally:
        quiet.setLevel(level)


class _Pool:
    """Worker processes kept between fits: starting a worker (a Python
    process importing burnbook, torch and Ray's collective module) takes
    seconds, so the workers of the last fit wait, idle, for the next fit
    with the same settings in the same Ray session. One pool at a time: a
    fit with other settings ends it first, freeing its resources."""

    current: "_Pool | None" = None

    def __init__(self, key: tuple, actors: list, where: list, group: str) -> None:
        self.key, self.actors, self.where, self.group = key, actors, where, group


def shutdown_workers() -> None:
    """End the idle worker processes kept for the next `fit` (`ray.shutdown()`
    ends them too)."""
    pool, _Pool.current = _Pool.current, None
    if pool is None:
        return
    try:
        import ray
    except ImportError:
        return
    for actor in pool.actors:
        try:
            ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001  already gone with its Ray session
            pass


class _Session:
    """One `fit`'s workers: the pool's when it matches, else new ones; on a
    failure every worker is killed, otherwise they go back to the pool."""

    JOIN_TIMEOUT_S = 300.0

    def __init__(self, strategy: DataParallel, learner: Any) -> None:
        self.strategy, self.learner = strategy, learner
        self.ray = ray = strategy._connect()
        self.busy = False
        model = learner.model
        rng = None
        try:
            rng = next(p for _, p in model.named_params()).val()._B.rng_state()
        except (StopIteration, NotImplementedError):
            pass
        state = ray.put(dumps((model, learner.optim, rng)))
        accumulation = learner.grad_accumulation or 1
        key = (strategy.num_workers, tuple(sorted(strategy.resources_per_worker.items())),
               ray.get_runtime_context().get_job_id(), ray.get_runtime_context().get_node_id())
        pool = _Pool.current
        self.actors: list = []
        self.where: list[tuple[int, str, int] | None] = [None] * strategy.num_workers
        if pool is not None and pool.key == key:
            _Pool.current = None
            self.actors, self.where, self.group = pool.actors, pool.where, pool.group
            try:
                self._gather([a.reset.remote(state, accumulation) for a in self.actors], "starting")
            except DistributedWorkerError:  # a worker of the pool died while idle: start afresh
                self.actors = []
        elif pool is not None:
            shutdown_workers()
        if not self.actors:
            self._start(state, accumulation)
        strategy.workers = [{"rank": r, "pid": pid, "host": host} for pid, host, r in self.where]
        own(pid for pid, _, _ in self.where)
        self.metrics = [WorkerThroughputMetric(rank) for rank in range(strategy.num_workers)]
        registered = learner.processor.metrics
        for metric in self.metrics:
            if metric.NAME not in registered.names(Split.Train):
                registered.register(Split.Train, metric, numeric=True)
            else:  # a second fit with the same learner: reuse the registered instances
                metric_obj = next(r.metric for r in registered.splits[Split.Train] if r.name == metric.NAME)
                self.metrics[metric.rank] = metric_obj
        self.key = key
        log.info("DataParallel: %d workers in group %s: %s", strategy.num_workers, self.group,
                 ", ".join(f"rank {r} pid {pid} on {host}" for pid, host, r in self.where))

    def _start(self, state: Any, accumulation: int) -> None:
        ray, strategy = self.ray, self.strategy
        self.group = f"burnbook-{uuid.uuid4().hex[:12]}"
        actor = ray.remote(Replica)
        options = {k: v for k, v in strategy.resources_per_worker.items() if k not in ("CPU", "GPU")}
        self.actors = [actor.options(num_cpus=strategy.resources_per_worker.get("CPU", 0),
                                     num_gpus=strategy.resources_per_worker.get("GPU", 0),
                                     resources=options or None, max_restarts=0)
                       .remote(rank, strategy.num_workers, self.group, state, accumulation)
                       for rank in range(strategy.num_workers)]
        self.where = self._gather([a.where.remote() for a in self.actors], "starting")
        self._gather([a.join.remote() for a in self.actors], "joining the Gloo group")

    def _place(self, rank: int) -> tuple[int | None, str | None]:
        """(pid, host) of worker `rank`, (None, None) before it reported them."""
        place = self.where[rank] if rank < len(self.where) else None
        return (None, None) if place is None else (place[0], place[1])

    def _name(self, rank: int) -> str:
        place = self.where[rank]
        if place is None:
            return f"worker rank {rank}"
        pid, host, _ = place
        return f"worker rank {rank} (pid {pid} on {host})"

    def _gather(self, refs: list, doing: str) -> list:
        """Every result of `refs` (one per rank); the first failure kills the
        other workers (they would wait in the all-reduce forever) and raises
        `DistributedWorkerError` naming the worker."""
        ray = self.ray
        pending = list(refs)
        deadline = time.monotonic() + self.JOIN_TIMEOUT_S if doing != "training" else None
        while pending:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            done, pending = ray.wait(pending, num_returns=1, timeout=timeout)
            if not done:
                self.close(kill=True)
                rank = refs.index(pending[0])
                cause = (f"still not ready after {self.JOIN_TIMEOUT_S:.0f} s; the cluster may lack free resources "
                         f"for {self.strategy.num_workers} workers of {self.strategy.resources_per_worker}")
                raise DistributedWorkerError(
                    f"DataParallel: {len(pending)} worker(s) still not ready after {self.JOIN_TIMEOUT_S:.0f} s of "
                    f"{doing}; the cluster may lack free resources for {self.strategy.num_workers} workers of "
                    f"{self.strategy.resources_per_worker}", rank, *self._place(rank), doing=doing, cause=cause)
            try:
                ray.get(done[0])
            except Exception as err:  # noqa: BLE001  any worker failure ends the run the same way
                rank, err = self._culprit(refs, done[0], err)
                self.close(kill=True)
                _settle(ray, refs)
                cause = _cause(err, ray)
                raise DistributedWorkerError(f"DataParallel: {self._name(rank)} failed while {doing}: {cause}",
                                             rank, *self._place(rank), doing=doing, cause=cause) from err
        return ray.get(refs)

    def _culprit(self, refs: list, failed: Any, err: BaseException) -> tuple[int, BaseException]:
        """(rank, error) of the worker to blame: when one process dies, its
        peers soon fail too (Gloo sees the connection close), and the first
        failure to arrive may be a peer's. A dead process is the cause."""
        ray = self.ray
        if isinstance(err, ray.exceptions.RayActorError):
            return refs.index(failed), err
        others = [r for r in refs if r is not failed]
        if others:
            done, _ = ray.wait(others, num_returns=len(others), timeout=3.0)
            for ref in done:
                try:
                    ray.get(ref)
                except ray.exceptions.RayActorError as died:
                    return refs.index(ref), died
                except Exception:  # noqa: BLE001  another peer's failure: not the cause
                    pass
        return refs.index(failed), err

    def train_epoch(self, loader: Any, epoch: int) -> int:
        """The epoch's training on the workers; the learner's model and
        optimizer become rank 0's afterwards. Returns the iteration count."""
        from ..learner.epoch import iterate_epoch

        learner, ray, n = self.learner, self.ray, self.strategy.num_workers
        learner.processor.start_epoch(Split.Train, epoch)
        iteration, seen, started = 0, 0, time.perf_counter()
        compute, allreduce, steps, slowest = [0.0] * n, [0.0] * n, 0.0, 0.0
        try:
            for batch, progress in iterate_epoch(loader, epoch - 1):
                iteration += 1
                step_started = time.perf_counter()
                total = batch_size_of(batch)
                seen += total
                sizes = shard_sizes(total, n)
                shards = split_batch(batch, sizes)
                lr = learner.lr_scheduler.step()
                self.busy = True  # until every worker has finished this step
                refs = [actor.step.remote(dumps(shard), lr, size / total)
                        for actor, shard, size in zip(self.actors, shards, sizes)]
                del batch, shards
                results = self._gather(refs, "training")
                self.busy = False
                items = [loads(blob) for blob, _, _ in results]
                steps += time.perf_counter() - step_started
                slowest += max(seconds for _, seconds, _ in results)
                for rank, (metric, (_, seconds, reduced), size) in enumerate(zip(self.metrics, results, sizes)):
                    metric.latest = size / seconds if seconds > 0 else float("nan")
                    compute[rank] += seconds - reduced
                    allreduce[rank] += reduced
                item = LearnerItem(merge_items(items, sizes), progress, epoch, learner.num_epochs, iteration, lr)
                learner.processor.process(Split.Train, item)
                del item, items
                if learner.interrupter.should_stop():
                    break
        except DistributedWorkerError:
            raise
        finally:
            if self.actors:
                self.pull()
        seconds = time.perf_counter() - started
        self.strategy.epoch_seconds.append((seen, seconds))
        self.strategy.epoch_times.append(EpochTimes(seen, iteration, seconds, tuple(compute), tuple(allreduce),
                                                    steps, slowest))
        learner.processor.end_epoch(Split.Train, epoch)
        return iteration

    def pull(self) -> None:
        """Make the learner's model and optimizer rank 0's."""
        model, optim = loads(self._gather([self.actors[0].state.remote()], "sending its model")[0])
        self.learner.model, self.learner.optim = model, optim

    def close(self, kill: bool = False) -> None:
        """End the fit's use of the workers: idle ones go back to the pool;
        after a failure, or when a step may still be running (an exception
        in the driver mid-step), every worker is killed."""
        if self.actors and not (kill or self.busy):
            _Pool.current = _Pool(self.key, self.actors, self.where, self.group)
        else:
            for actor in self.actors:
                try:
                    self.ray.kill(actor, no_restart=True)
                except Exception:  # noqa: BLE001  an actor that already died has nothing left to stop
                    pass
        self.actors = []
        self.strategy.workers = []


def _settle(ray: Any, refs: list) -> None:
    """Collect the results of the other workers' calls (their failures once
    the run is ended), so that Ray does not report them later as unhandled
    errors, tracebacks included, when they are garbage-collected."""
    for ref in refs:
        try:
            ray.get(ref, timeout=10)
        except Exception:  # noqa: BLE001  the failure is already reported, by name, to the caller
            pass


def _cause(err: BaseException, ray: Any) -> str:
    if isinstance(err, ray.exceptions.RayActorError):
        if getattr(err, "actor_init_failed", False):  # its __init__ raised: the last line is the exception
            lines = [line for line in str(getattr(err, "error_msg", err)).splitlines() if line.strip()]
            return lines[-1].strip() if lines else "its setup failed"
        return "the worker process died (killed, out of memory, or its machine left the cluster)"
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
