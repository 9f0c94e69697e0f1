"""Worker pools that build batches in parallel and hand them back in order.

Two kinds, chosen by `DataLoaderBuilder.worker_type`:

- `"process"` (the default): `num_workers` processes, started with `fork`
  on Linux (the dataset and batcher are inherited, nothing is pickled, a
  fork costs milliseconds) and `spawn` elsewhere (macOS, Windows: the
  dataset and batcher are pickled, so they must be importable objects, not
  lambdas). Processes run Python code in parallel whatever the GIL; batches
  come back through a pipe, pickled (tensors included, see `data/tensor_pickle.py`).
- `"thread"`: a thread pool. Nothing crosses a process boundary (any
  batcher works, Taichi tensors included), but threads only overlap where
  the batcher releases the GIL (large NumPy operations, I/O, sleeps).

Order is deterministic by construction: batch `i` goes to worker
`i % num_workers`, each worker answers its tasks in order, and the loader
reads batch `i` from worker `i % num_workers`. At most `prefetch` batches
per worker are in flight, so memory stays bounded.

Workers live for one epoch (one `iter(loader)`): they start on the first
`next()`, stop when the epoch ends, when the iterator is closed or
garbage-collected, or when the loader's process dies (each worker also
watches its parent and exits on its own). `close()` asks politely, then
terminates and joins, so no process is left behind, zombie or otherwise;
a Ctrl-C landing inside `close()` cannot change that, since `closed` turns
true only once every worker is reaped: calling `close()` again, or the
pool's finaliser (at garbage collection or interpreter exit), finishes the
steps the interrupt cut short.

Forked workers are copies of the loader's process: state made in the
parent (a dataset's arrays, an open SQLite file, which reopens itself) is
there for free, but a runtime that does not survive fork (a Taichi or GPU
context, a library's thread pool) must not be used by the batcher in a
worker. Batches built from NumPy, or tensors on `NdArray` (and
`Autodiff[NdArray]`), are fine; for Taichi tensors use threads.
"""

from __future__ import annotations

import collections
import concurrent.futures
import multiprocessing
import multiprocessing.connection
import os
import random
import signal
import sys
import time
import traceback
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from .. import tensor_pickle
from .batcher import BatchInfo, make_batch

# The loader's ends of every worker pipe of this process: a forked worker
# closes its inherited copies, so a pipe's reader sees EOF as soon as the
# loader's end really closes.
_PARENT_ENDS: "weakref.WeakSet[Any]" = weakref.WeakSet()
_PARENT_POLL_S = 2.0


class DataLoaderWorkerError(RuntimeError):
    """A worker failed to build a batch, or died; the message holds the
    worker's traceback (the original exception is the `__cause__`)."""


def default_start_method() -> str:
    """'fork' on Linux, 'spawn' elsewhere (fork is unsafe on macOS)."""
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def _worker_main(worker_id: int, num_workers: int, payload: Any, conn: Any, epoch: int,
                 seed: int, forked: bool) -> None:
    """Loop of one worker process: receive (index, item indices), send the batch."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the loader's to handle
    if forked:
        for other in list(_PARENT_ENDS):
            try:
                other.close()
            except OSError:
                pass
    dataset, batch_fn = tensor_pickle.loads(payload) if isinstance(payload, bytes) else payload
    # Different global RNG streams per worker (fork copies the parent's state).
    state = np.random.SeedSequence([seed, epoch, worker_id, 0x5EED]).generate_state(2)
    np.random.seed(int(state[0]))
    random.seed(int(state[1]))
    parent = multiprocessing.parent_process()
    parent_pid = os.getppid()
    watch = [conn] + ([parent.sentinel] if parent is not None else [])
    while True:
        ready = multiprocessing.connection.wait(watch, timeout=_PARENT_POLL_S)
        if not ready:
            if os.getppid() != parent_pid:
                break  # the loader's process is gone
            continue
        if conn not in ready:
            break  # parent sentinel: the loader's process exited
        try:
            task = conn.recv()
        except (EOFError, OSError):
            break
        if task is None:
            break
        index, indices = task
        try:
            info = BatchInfo(epoch, index, worker_id, num_workers, seed)
            message = tensor_pickle.dumps(("ok", make_batch(dataset, batch_fn, indices, info)))
        except BaseException as err:  # noqa: BLE001 - everything goes back to the loader
            text = traceback.format_exc()
            try:  # the exception travels on its own: it may not unpickle in the loader
                original = tensor_pickle.dumps(err)
            except Exception:
                original = None
            message = tensor_pickle.dumps(("error", original, text))
        try:
            conn.send_bytes(message)
        except (BrokenPipeError, OSError):
            break
    conn.close()


class ProcessWorkers:
    """`n` worker processes for one epoch; `submit` in order, `next_result` in order."""

    def __init__(self, n: int, dataset: Any, batch_fn: Callable, epoch: int, seed: int,
                 start_method: str | None = None) -> None:
        method = start_method or default_start_method()
        ctx = multiprocessing.get_context(method)
        forked = method == "fork"
        if forked:
            payload: Any = (dataset, batch_fn)
        else:
            try:
                payload = tensor_pickle.dumps((dataset, batch_fn))
            except Exception as err:
                raise TypeError(
                    f"worker processes started with {method!r} receive the dataset and the batcher "
                    f"pickled, and these cannot be ({type(err).__name__}: {err}); use module-level "
                    "functions and classes instead of lambdas and closures, or worker_type('thread')"
                ) from err
        self.n = n
        self.conns: list[Any] = []
        self.processes: list[Any] = []
        # Processes not yet reaped; shared with the finaliser, which must not
        # hold `self`, so both finish whatever the other left undone.
        self._unreaped: list[Any] = []
        self._queue: collections.deque = collections.deque()
        self._closing = False
        self.closed = False
        self._finalizer = weakref.finalize(self, _stop_workers, self.conns, self._unreaped, 2.0)
        try:
            for wid in range(n):
                parent_end, child_end = ctx.Pipe(duplex=True)
                self.conns.append(parent_end)
                _PARENT_ENDS.add(parent_end)
                process = ctx.Process(
                    target=_worker_main, name=f"burnbook-data-worker-{wid}", daemon=True,
                    args=(wid, n, payload, child_end, epoch, seed, forked))
                # Listed before it starts, so no interrupt can start one unlisted.
                self.processes.append(process)
                self._unreaped.append(process)
                try:
                    process.start()
                finally:
                    child_end.close()
        except BaseException:
            self.close()
            raise

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def submit(self, index: int, indices: Sequence[int]) -> None:
        if self._closing:
            raise RuntimeError("these data loader workers are closed; start a new epoch")
        wid = index % self.n
        try:
            self.conns[wid].send((index, indices))
        except (BrokenPipeError, OSError):
            # The worker is gone; report it the same way next_result does.
            process = self.processes[wid]
            process.join(1.0)
            raise DataLoaderWorkerError(
                f"data loader worker {wid} (pid {process.pid}) exited unexpectedly with code "
                f"{process.exitcode} before batch {index}") from None
        self._queue.append((index, wid))

    def pending(self) -> int:
        return len(self._queue)

    def next_result(self) -> Any:
        index, wid = self._queue.popleft()
        conn, process = self.conns[wid], self.processes[wid]
        ready = multiprocessing.connection.wait([conn, process.sentinel])
        data = None
        if conn in ready:
            try:
                data = conn.recv_bytes()
            except (EOFError, OSError):  # EOF, or a reset when it died with tasks unread
                data = None
        if data is None:
            process.join(1.0)
            raise DataLoaderWorkerError(
                f"data loader worker {wid} (pid {process.pid}) exited unexpectedly with code "
                f"{process.exitcode} while building batch {index}")
        status, *rest = tensor_pickle.loads(data)
        if status == "ok":
            return rest[0]
        original, text = rest
        try:
            err = tensor_pickle.loads(original) if original is not None else None
        except Exception:
            err = None
        raise DataLoaderWorkerError(
            f"data loader worker {wid} failed on batch {index}:\n{text}") from err

    def close(self, timeout: float = 2.0) -> None:
        """Stop every worker and reap it (terminate, then kill, if it lingers).

        Idempotent, and safe to interrupt: an exception (a Ctrl-C) part way
        leaves `closed` false, and the next call picks up where it stopped.
        """
        if self.closed:
            return
        self._closing = True
        self._queue.clear()
        _stop_workers(self.conns, self._unreaped, timeout)
        self.closed = True
        self._finalizer.detach()


def _stop_workers(conns: list[Any], unreaped: list[Any], timeout: float) -> None:
    """Ask each worker to stop, wait up to `timeout` s, then terminate, kill
    and reap what is left. Every step skips what an earlier, interrupted call
    already did (closed pipes, reaped processes), so calling it again
    finishes the job; a process leaves `unreaped` only once it is reaped."""
    for conn in conns:
        if conn.closed:
            continue
        try:
            conn.send(None)
        except (OSError, ValueError):
            pass
        conn.close()
    deadline = time.monotonic() + timeout
    for process in list(unreaped):
        if process.pid is not None and process.exitcode is None:
            process.join(max(0.0, deadline - time.monotonic()))
    while unreaped:
        process = unreaped[0]
        if process.pid is not None:  # None: it never started
            if process.exitcode is None:
                process.terminate()
                process.join(timeout)
            if process.exitcode is None:
                process.kill()
                process.join()
        unreaped.pop(0)  # reaped: popped before close(), which makes pid and exitcode raise
        process.close()


class ThreadWorkers:
    """`n` worker threads; same interface as `ProcessWorkers`."""

    def __init__(self, n: int, dataset: Any, batch_fn: Callable, epoch: int, seed: int) -> None:
        self.n = n
        self.dataset, self.batch_fn, self.epoch, self.seed = dataset, batch_fn, epoch, seed
        self.executor = concurrent.futures.ThreadPoolExecutor(n, thread_name_prefix="burnbook-data")
        self._queue: collections.deque = collections.deque()
        self.closed = False

    @property
    def pids(self) -> list[int]:
        return []

    def submit(self, index: int, indices: Sequence[int]) -> None:
        info = BatchInfo(self.epoch, index, index % self.n, self.n, self.seed)
        future = self.executor.submit(make_batch, self.dataset, self.batch_fn, indices, info)
        self._queue.append((index, future))

    def pending(self) -> int:
        return len(self._queue)

    def next_result(self) -> Any:
        index, future = self._queue.popleft()
        try:
            return future.result()
        except Exception as err:
            raise DataLoaderWorkerError(
                f"data loader thread failed on batch {index}: {type(err).__name__}: {err}") from err

    def close(self, timeout: float = 2.0) -> None:
        """Cancel what has not started and wait for the threads (idempotent;
        `closed` turns true only once they are done, as for processes)."""
        if self.closed:
            return
        self._queue.clear()
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.closed = True
