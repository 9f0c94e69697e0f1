"""Data-parallel training on Ray (issue 18): `DataParallel(1)` vs
`DataParallel(2)` on this machine, with its parallel ceiling beside them.

One call is a pair of training epochs back to back, one on 1 worker and
one on 2 (the order alternates from call to call), of the chapter's MLP
(`burnbook.examples.data_parallel`: 784 -> 64 -> 10, SGD) over 4,096 seeded
random 28x28 images in batches of 128 (32 global batches). Each epoch's
time is the Learner's training loop as `DataParallel.epoch_seconds` records
it: sharding, sending, every worker's step and all-reduce, the metrics;
starting worker processes is not in it (switching between 1 and 2 workers
restarts them, outside the timing). The row is the time of a whole call.
The INFO lines give each setting's images/s (median over the pairs, the
first, cold, one left out), the 2-worker speed-up, each worker's own
images/s, the in-process Learner step's images/s for scale, and the
machine's ceiling: the same MLP step's NumPy arithmetic in one process, then
split over two forked processes that start together; their ratio is what
two workers could at best gain here. The check: the 2-worker run's weights
equal a single-process Learner's to 1e-4.
The smoke profile (the test suite's) has no such case: Ray starts in tens
of seconds.
"""

from __future__ import annotations

import multiprocessing
import tempfile
import time
from pathlib import Path

import numpy as np

from ..profiles import Profile

FAMILY = "distributed"
TITLE = "Data-parallel training on Ray"
INTRO = (
    "`data_parallel_epoch`: one training epoch of a 784-64-10 MLP (SGD, batch 128) over 4,096 28x28 "
    "images with `DataParallel(1)` and with `DataParallel(2)` (local Ray instance, Gloo all-reduce), back "
    "to back; the row is one call (both epochs and restarting the workers between them). The INFO lines "
    "give images/s per setting and per worker, the speed-up, and the machine's parallel ceiling measured "
    "beside it. The check: the 2-worker weights equal a single-process Learner's."
)

ITEMS, BATCH, SEED, LR = 4096, 128, 7, 0.1
PAIRS: dict = {}      # items -> [(seconds on 1 worker, seconds on 2 workers), ...]
PER_WORKER: dict = {}  # items -> [[images/s of each worker of the 2-worker epoch], ...]
CEILING: dict = {}    # items -> ratio from `ceiling()`
IN_PROCESS: dict = {}  # items -> images/s of the Learner's step in this process


def _batches(backend):
    from burnbook import Int, Tensor
    from burnbook.examples.guide.data import MnistBatch

    rng = np.random.default_rng(SEED)
    images = rng.standard_normal((ITEMS, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, ITEMS)
    return [MnistBatch(Tensor[backend, 3].from_data(images[i:i + BATCH]),
                       Tensor[backend, 1, Int].from_data(labels[i:i + BATCH])) for i in range(0, ITEMS, BATCH)]


def _learner(folder: Path, workers: int):
    from burnbook.examples.data_parallel import make_model
    from burnbook.optim import SgdConfig
    from burnbook.train import LearnerBuilder, MetricsRendererBase
    from burnbook.train.distributed import DataParallel

    builder = LearnerBuilder(folder).renderer(MetricsRendererBase()).with_file_checkpointer(None).log_to_file(False)
    if workers:
        builder = builder.distributed(DataParallel(workers))
    return builder.build(make_model(seed=SEED), SgdConfig().init(), LR)


def _weights(model) -> np.ndarray:
    return np.concatenate([p.val().to_numpy().ravel() for p in model.params()])[:64].astype(np.float32)


def _numpy_step(x: np.ndarray, y: np.ndarray, w1, w2) -> None:
    """The MLP's forward and backward arithmetic in NumPy (the ceiling's work)."""
    h = np.maximum(x @ w1, 0)
    logits = h @ w2
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(y)), y] -= 1
    dh = (p @ w2.T) * (h > 0)
    _ = h.T @ p, x.T @ dh


def _numpy_epoch(batches: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, 784)).astype(np.float32)
    y = rng.integers(0, 10, BATCH)
    w1, w2 = rng.standard_normal((784, 64)).astype(np.float32), rng.standard_normal((64, 10)).astype(np.float32)
    start = time.perf_counter()
    for _ in range(batches):
        _numpy_step(x, y, w1, w2)
    return time.perf_counter() - start


def _child(batches: int, barrier, conn) -> None:
    barrier.wait()
    conn.send(_numpy_epoch(batches, 1))
    conn.close()


def ceiling(batches: int = 400) -> float | None:
    """Time `batches` NumPy MLP steps in this process, then half of them in
    each of two forked processes started together: one / max(two)."""
    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:
        return None
    _numpy_epoch(10, 0)
    one = _numpy_epoch(batches, 0)
    barrier = ctx.Barrier(2)
    pipes = [ctx.Pipe(duplex=False) for _ in range(2)]
    procs = [ctx.Process(target=_child, args=(batches // 2, barrier, pipes[k][1]), daemon=True) for k in range(2)]
    try:
        for proc in procs:
            proc.start()
        times = [reader.recv() for reader, _ in pipes]
    finally:
        for proc in procs:
            proc.join(5.0)
    return one / max(times) if max(times) > 0 else None


def _in_process_rate(batches) -> float:
    from burnbook.examples.data_parallel import make_model
    from burnbook.optim import SgdConfig

    model, optim = make_model(seed=SEED), SgdConfig().init()
    best = 0.0
    for _ in range(2):
        start = time.perf_counter()
        for batch in batches:
            model = optim.step(LR, model, model.train_step(batch).grads)
        best = max(best, ITEMS / (time.perf_counter() - start))
    return best


def _setup(fw, ns):
    import ray

    from burnbook import Tensor
    from burnbook.backend import Autodiff, NdArray

    if not ray.is_initialized():
        import logging

        ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    train = _batches(Autodiff[NdArray])
    valid = _batches(NdArray)[:2]
    CEILING[ITEMS] = ceiling()
    IN_PROCESS[ITEMS] = _in_process_rate(train)
    pairs = PAIRS[ITEMS] = []
    per_worker = PER_WORKER[ITEMS] = []
    root = Path(tempfile.mkdtemp(prefix="bb-distributed-bench-"))

    def epoch(workers: int):
        learner = _learner(root / f"w{workers}-{len(pairs)}", workers)
        model = learner.fit(train, valid)
        _, seconds = learner.distributed.epoch_seconds[-1]
        return model, seconds, learner

    def pair():
        order = (1, 2) if len(pairs) % 2 == 0 else (2, 1)
        took, models = {}, {}
        for workers in order:
            models[workers], took[workers], learner = epoch(workers)
            if workers == 2:
                per_worker.append(_worker_rates(learner))
        pairs.append((took[1], took[2]))
        return Tensor[fw.backend, 1].from_data(_weights(models[2]), fw.device)

    ns["pair"] = pair


def _worker_rates(learner) -> list:
    """Each worker's mean images/s over the epoch, from its throughput metric's log."""
    folder = learner.directory / "train" / "epoch-1"
    return [float(np.mean(np.loadtxt(folder / f"Worker_{k}_Throughput.log"))) for k in range(2)]


def _reference(fw, ns):
    from burnbook.backend import Autodiff, NdArray

    model = _learner(Path(tempfile.mkdtemp(prefix="bb-distributed-ref-")), 0).fit(
        _batches(Autodiff[NdArray]), _batches(NdArray)[:2])
    values = _weights(model)
    ns["pair"] = lambda: values


def cases(profile: Profile) -> list:
    from ..measurement import Case

    if profile.name == "smoke":
        return []
    try:
        import ray  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return []
    return [Case(FAMILY, "data_parallel_epoch", str(ITEMS), lambda rng: {}, {"*": "pair()"},
                 ratio="time", tol=1e-4, frameworks=("ndarray",),
                 setup={"numpy": _reference, "burnbook": _setup})]


def info_lines(res) -> list:
    pairs = PAIRS.get(int(res.case.size), [])[1:] or PAIRS.get(int(res.case.size), [])
    if not pairs:
        return []
    one = ITEMS / float(np.median([a for a, _ in pairs]))
    two = ITEMS / float(np.median([b for _, b in pairs]))
    workers = PER_WORKER.get(ITEMS, [])[1:] or PER_WORKER.get(ITEMS, [])
    each = np.median(np.array(workers), axis=0) if workers else []
    lines = [f"INFO    data_parallel_epoch ({ITEMS} images, batch {BATCH}): DataParallel(1) {one:,.0f} images/s, "
             f"DataParallel(2) {two:,.0f} images/s ({two / one:.2f}x; medians of {len(pairs)} back-to-back "
             f"pairs); each of the 2 workers on its shard: {', '.join(f'{r:,.0f}' for r in each)} images/s; "
             f"the same step in this process, no Ray: {IN_PROCESS.get(ITEMS, float('nan')):,.0f} images/s"]
    ceiling_ratio = CEILING.get(ITEMS)
    if ceiling_ratio is not None:
        lines.append(f"INFO    data_parallel_epoch ceiling: two processes doing the MLP step's NumPy arithmetic "
                     f"side by side run {ceiling_ratio:.2f}x as fast as one (measured at the case's start)")
    return lines
