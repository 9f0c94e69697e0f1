"""Worker shutdown survives a Ctrl-C at any point of `ProcessWorkers.close()`.

A KeyboardInterrupt is injected at every line that `close()` (and the helper
doing the work) executes, one line per run, through a trace function. After
the interrupt, a second `close()`, or dropping the pool (its finaliser), must
leave no worker process behind: none running and none a zombie, which
`os.waitpid` on each pid checks independently of multiprocessing's own
bookkeeping.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from typing import Any, Callable

import pytest

from burnbook.data import DataLoaderBuilder, InMemDataset
from burnbook.data.dataloader import workers as W

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="forked workers start in milliseconds; spawn is too slow here")

_TRACED = {W.ProcessWorkers.close.__code__, W._stop_workers.__code__}


def _batch(items: list) -> list:
    return items


def _pool() -> W.ProcessWorkers:
    workers = W.ProcessWorkers(2, InMemDataset(list(range(20))), _batch, epoch=0, seed=0, start_method="fork")
    for i in range(4):
        workers.submit(i, [i])
    assert workers.next_result() == [0]  # the workers are up and answering
    return workers


def _call_interrupted_at(k: int, call: Callable[[], Any]) -> bool:
    """Run `call`, raising KeyboardInterrupt at the k-th line it executes in
    the traced functions; whether the interrupt happened (False: the call
    finished in fewer lines)."""
    seen = 0

    def local(frame, event, arg):
        nonlocal seen
        if event == "line":
            seen += 1
            if seen == k:
                raise KeyboardInterrupt(f"injected at line {k} of close()")
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code in _TRACED else None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        call()
    except KeyboardInterrupt:
        return True
    finally:
        sys.settrace(previous)
    return False


def _assert_reaped(pids: list[int]) -> None:
    for pid in pids:
        # ChildProcessError: no child of ours has this pid any more, so it was
        # reaped. A running worker answers (0, 0); a zombie would be reaped
        # here and answer (pid, status): both are failures.
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


@pytest.mark.parametrize("recover", ["close again", "garbage collection"])
def test_a_ctrl_c_at_any_line_of_close_leaves_no_worker_behind(recover: str) -> None:
    interrupted = 0
    for k in range(1, 500):
        workers = _pool()
        pids = workers.pids
        if not _call_interrupted_at(k, workers.close):
            assert workers.closed
            _assert_reaped(pids)
            break
        interrupted += 1
        if recover == "close again":
            workers.close()
            assert workers.closed
            workers.close()  # and again: a no-op
        else:
            del workers  # the last reference: its finaliser runs now, no gc.collect() needed
        _assert_reaped(pids)
    else:
        pytest.fail("close() never finished")
    # every line of close() was a landing point; there are dozens of them
    assert interrupted >= 20, interrupted


def test_the_loader_iterator_finishes_an_interrupted_close() -> None:
    loader = DataLoaderBuilder(_batch).batch_size(2).num_workers(2).build(list(range(40)))
    for k in (3, 8, 15):
        it = iter(loader)
        next(it)
        pids = it.worker_pids()
        assert len(pids) == 2
        assert _call_interrupted_at(k, it.close)
        it.close()
        assert it.worker_pids() == []
        _assert_reaped(pids)
