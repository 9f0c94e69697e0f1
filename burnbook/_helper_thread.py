"""One helper thread for work split in two halves: the calling thread runs
one half while the helper runs the other (NumPy's BLAS calls and random
draws release the GIL, so the halves use both cores). A forked child makes
its own helper: the parent's thread does not exist there."""

from __future__ import annotations

import concurrent.futures
import functools
import os
from typing import Any, Callable

__all__ = ["TWO_CORES", "both", "halves", "helper"]

TWO_CORES = (os.cpu_count() or 1) >= 2
"""Whether splitting work in two can use a second core at all."""


@functools.cache
def helper() -> concurrent.futures.ThreadPoolExecutor:
    return concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="burnbook-half")


os.register_at_fork(after_in_child=helper.cache_clear)


def both(first: Callable[[], Any], second: Callable[[], Any]) -> tuple[Any, Any]:
    """(first(), second()), with `second` run on the helper thread meanwhile.
    An exception in either is raised once both have finished."""
    pending = helper().submit(second)
    try:
        a = first()
    finally:
        b = pending.result()
    return a, b


def halves(work: Callable[[slice], Any], n: int) -> None:
    """`work(part)` over range(n): the two halves at once where there are two
    cores and n >= 2, else `work(slice(None))`."""
    if n < 2 or not TWO_CORES:
        work(slice(None))
        return
    both(lambda: work(slice(0, n // 2)), lambda: work(slice(n // 2, None)))
