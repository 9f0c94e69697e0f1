"""Iterating a data loader for the Learner: the epoch's batches with the
loader's progress, in the same order when an epoch is run again.

Any iterable of batches works (a list, a generator function's result, the
`burnbook.data` DataLoader). When the loader has `set_epoch(k)`, the Learner
calls it with the 0-based epoch index before iterating, so a shuffling
loader gives epoch k the same order whether the run went straight through
or resumed from a checkpoint. Progress comes from the loader's iterator
(`progress()` or a `progress` attribute with `items_processed` and
`items_total`), else from the loader itself, else counts batches.
"""

from __future__ import annotations

from typing import Any, Iterator

from ..metric.base import Progress

__all__ = ["iterate_epoch", "progress_of"]


def iterate_epoch(loader: Any, epoch_index: int) -> Iterator[tuple[Any, Progress]]:
    """(batch, progress after it) for every batch of `loader`'s epoch `epoch_index`."""
    set_epoch = getattr(loader, "set_epoch", None)
    if callable(set_epoch):
        set_epoch(epoch_index)
    try:
        total = len(loader)
    except TypeError:
        total = 0
    iterator = iter(loader)
    count = 0
    for batch in iterator:
        count += 1
        yield batch, progress_of(iterator, loader) or Progress(count, max(total, count))


def progress_of(*sources: Any) -> Progress | None:
    """The first progress one of `sources` reports, as a `Progress`."""
    for source in sources:
        report = getattr(source, "progress", None)
        if callable(report):
            try:
                report = report()
            except TypeError:
                continue
        if report is None:
            continue
        done = getattr(report, "items_processed", None)
        total = getattr(report, "items_total", None)
        if isinstance(done, int) and isinstance(total, int):
            return Progress(done, total)
        if isinstance(report, tuple) and len(report) == 2:
            return Progress(int(report[0]), int(report[1]))
    return None
