"""How contended the machine is while a case runs: other processes' CPU share
and the hypervisor's steal time (`Contention`), and what two processes get
out of it right now (`scaling_probe`). The data-loader case reports both."""

from __future__ import annotations

import os
import time
from typing import Callable


class Contention:
    """Other processes' share of the machine while a loader case runs: the
    system's busy CPU time minus this process's and its reaped children's
    (the worker processes), over wall time x cores, from the case's set-up to
    its last epoch; and the hypervisor's steal time (this is a VM: the host
    may run other guests on our cores, which no process here sees)."""

    def __init__(self) -> None:
        self.start = self._read()
        self.end = self.start

    @staticmethod
    def _read():
        try:
            import psutil

            t = psutil.cpu_times()
            steal = getattr(t, "steal", 0.0)
            busy = sum(t) - t.idle - getattr(t, "iowait", 0.0) - steal - getattr(t, "guest", 0.0) \
                - getattr(t, "guest_nice", 0.0)
        except Exception:
            busy = steal = None
        own = os.times()
        return time.perf_counter(), busy, own.user + own.system + own.children_user + own.children_system, steal

    def mark(self) -> None:
        self.end = self._read()

    def percents(self) -> tuple[float, float] | None:
        """(other processes, steal), in percent of the machine's CPU time."""
        (t0, b0, o0, s0), (t1, b1, o1, s1) = self.start, self.end
        wall = (t1 - t0) * (os.cpu_count() or 1)
        if b0 is None or b1 is None or wall <= 0:
            return None
        return max(0.0, 100.0 * ((b1 - b0) - (o1 - o0)) / wall), 100.0 * (s1 - s0) / wall


def _probe_child(work: Callable[[int, int], float], batches: int, offset: int, barrier, conn) -> None:
    barrier.wait()
    conn.send(work(batches, offset))
    conn.close()


def scaling_probe(work: Callable[[int, int], float], batches: int) -> float | None:
    """What two processes get out of this machine right now on the loader's own
    work (`work(batches, offset)` builds that many batches and returns the
    seconds it took): `batches` batches built in this process, then the same work split
    over two forked processes that start together (after a barrier, so the
    fork is not timed); the ratio of the times. The loader's speed-up with 2
    workers cannot beat it (on an idle 2-core machine it is near 2; when the
    host or a neighbour takes a core it falls towards 1)."""
    import multiprocessing

    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:
        return None
    half = max(1, batches // 2)
    work(1, 0)   # warm
    one = work(2 * half, 0)
    barrier = ctx.Barrier(2)
    pipes = [ctx.Pipe(duplex=False) for _ in range(2)]
    procs = [ctx.Process(target=_probe_child, args=(work, half, k * half, barrier, pipes[k][1]), daemon=True)
             for k in range(2)]
    try:
        for proc in procs:
            proc.start()
        times = [reader.recv() for reader, _ in pipes]
    except Exception:
        return None
    finally:
        for proc in procs:
            proc.join(5.0)
            if proc.is_alive():
                proc.kill()
                proc.join()
    return one / max(times) if max(times) > 0 else None
