"""Checkpoints (Burn's `burn_train::checkpoint`): saving the model,
optimizer and scheduler records after each epoch, and the strategies that
decide which epochs to keep.

    <artifact_dir>/checkpoint/model-3.mpk.gz
    <artifact_dir>/checkpoint/optim-3.mpk.gz
    <artifact_dir>/checkpoint/scheduler-3.mpk.gz
    <artifact_dir>/checkpoint/rng-3.mpk.gz

The `rng-N` file is burnbook's addition to Burn's layout: the state of the
model backend's random generator, so a resumed run draws the same dropout
masks as an uninterrupted one.
The extension is the recorder's (`.mpk.gz` for `NamedMpkGzFileRecorder`,
the Learner's default; `.mpk` for the book's `CompactRecorder`). Every file
is written atomically by the recorder. A strategy returns actions: `SAVE`
this epoch, `Delete(k)` an older one. The default keeps the last two epochs
and the one with the lowest validation loss, as Burn 0.13 does.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .metric.base import metric_name
from .store import Aggregate, Direction, EventStore, Split

__all__ = [
    "FileCheckpointer", "CheckpointingAction", "Save", "Delete", "CheckpointingStrategy", "KeepLastNCheckpoints",
    "MetricCheckpointingStrategy", "ComposedCheckpointingStrategy", "default_checkpointing_strategy",
    "LearnerCheckpointer",
]

log = logging.getLogger("burnbook.train")


class FileCheckpointer:
    """Saves and restores the records named `<name>-<epoch>` in `directory`
    with `recorder` (Burn's `FileCheckpointer`)."""

    def __init__(self, recorder: Any, directory: str | os.PathLike, name: str) -> None:
        self.recorder, self.directory, self.name = recorder, Path(directory), name

    def path_for_epoch(self, epoch: int) -> Path:
        """The path without the extension (the recorder adds it)."""
        return self.directory / f"{self.name}-{epoch}"

    def file_for_epoch(self, epoch: int) -> Path:
        return Path(self.recorder.file_path(self.path_for_epoch(epoch)))

    def save(self, epoch: int, record: Any) -> Path:
        path = self.recorder.record(record, self.path_for_epoch(epoch))
        log.info("Saved checkpoint %s", path)
        return path

    def restore(self, epoch: int) -> Any:
        path = self.file_for_epoch(epoch)
        if not path.exists():
            kept = sorted(p.name for p in self.directory.glob(f"{self.name}-*")) if self.directory.is_dir() else []
            raise FileNotFoundError(f"no {self.name} checkpoint for epoch {epoch}: {path} does not exist "
                                    f"(found: {', '.join(kept) or 'none'})")
        log.info("Restoring checkpoint %s", path)
        return self.recorder.load(path)

    def delete(self, epoch: int) -> None:
        path = self.file_for_epoch(epoch)
        if path.exists():
            path.unlink()
            log.info("Removed checkpoint %s", path)


@dataclass(frozen=True)
class Save:
    """Save the current epoch."""


@dataclass(frozen=True)
class Delete:
    """Delete the checkpoint of `epoch`."""

    epoch: int


CheckpointingAction = Save | Delete
SAVE = Save()


@runtime_checkable
class CheckpointingStrategy(Protocol):
    """Decides, after each epoch, what to save and what to delete."""

    def checkpointing(self, epoch: int, store: EventStore) -> list[CheckpointingAction]:
        ...


class KeepLastNCheckpoints:
    """Save every epoch and keep only the last `num_keep`."""

    def __init__(self, num_keep: int) -> None:
        if isinstance(num_keep, bool) or not isinstance(num_keep, int) or num_keep < 1:
            raise ValueError(f"KeepLastNCheckpoints: num_keep must be an int >= 1, got {num_keep!r}")
        self.num_keep = num_keep

    def checkpointing(self, epoch: int, store: EventStore) -> list[CheckpointingAction]:
        actions: list[CheckpointingAction] = [SAVE]
        if epoch - self.num_keep > 0:
            actions.append(Delete(epoch - self.num_keep))
        return actions

    def __repr__(self) -> str:
        return f"KeepLastNCheckpoints({self.num_keep})"


class MetricCheckpointingStrategy:
    """Keep only the best epoch by a numeric metric's epoch aggregate
    (`metric`: a metric, its class, or its name)."""

    def __init__(self, metric: Any, aggregate: Aggregate = Aggregate.Mean,
                 direction: Direction = Direction.Lowest, split: Split = Split.Valid) -> None:
        self.name = metric_name(metric)
        self.aggregate, self.direction, self.split = aggregate, direction, split
        self.current: int | None = None

    def checkpointing(self, epoch: int, store: EventStore) -> list[CheckpointingAction]:
        best = store.find_epoch(self.name, self.aggregate, self.direction, self.split) or epoch
        actions: list[CheckpointingAction] = []
        if self.current is not None and self.current != best:
            actions.append(Delete(self.current))
        if best == epoch:
            actions.append(SAVE)
        self.current = best
        return actions

    def __repr__(self) -> str:
        return f"MetricCheckpointingStrategy({self.name!r}, {self.direction.name}, {self.split})"


class ComposedCheckpointingStrategy:
    """Several strategies at once: save when any saves, delete an epoch once
    every strategy has let it go."""

    def __init__(self, *strategies: Any) -> None:
        if not strategies:
            raise ValueError("ComposedCheckpointingStrategy needs at least one strategy")
        self.strategies = list(strategies)
        self._deleted: list[set[int]] = [set() for _ in strategies]

    def checkpointing(self, epoch: int, store: EventStore) -> list[CheckpointingAction]:
        saved = False
        candidates: list[int] = []
        for i, strategy in enumerate(self.strategies):
            actions = strategy.checkpointing(epoch, store)
            if not actions:  # this strategy does not want the epoch at all
                self._deleted[i].add(epoch)
            for action in actions:
                if isinstance(action, Delete):
                    self._deleted[i].add(action.epoch)
                    candidates.append(action.epoch)
                else:
                    saved = True
        out: list[CheckpointingAction] = [SAVE] if saved else []
        for old in dict.fromkeys(candidates):
            if all(old in deleted for deleted in self._deleted):
                out.append(Delete(old))
                for deleted in self._deleted:
                    deleted.discard(old)
        return out

    def __repr__(self) -> str:
        return f"ComposedCheckpointingStrategy({', '.join(map(repr, self.strategies))})"


def default_checkpointing_strategy() -> ComposedCheckpointingStrategy:
    """Burn 0.13's default: the last 2 epochs plus the best validation loss."""
    return ComposedCheckpointingStrategy(KeepLastNCheckpoints(2),
                                         MetricCheckpointingStrategy("Loss", Aggregate.Mean, Direction.Lowest,
                                                                     Split.Valid))


class LearnerCheckpointer:
    """The checkpointers (model, optim, scheduler, random generator) and the strategy."""

    def __init__(self, recorder: Any, directory: str | os.PathLike, strategy: Any) -> None:
        directory = Path(directory)
        self.model = FileCheckpointer(recorder, directory, "model")
        self.optim = FileCheckpointer(recorder, directory, "optim")
        self.scheduler = FileCheckpointer(recorder, directory, "scheduler")
        self.rng = FileCheckpointer(recorder, directory, "rng")
        self.strategy = strategy

    def checkpoint(self, model: Any, optim: Any, scheduler: Any, epoch: int, store: EventStore) -> None:
        for action in self.strategy.checkpointing(epoch, store):
            if isinstance(action, Delete):
                for checkpointer in (self.model, self.optim, self.scheduler, self.rng):
                    checkpointer.delete(action.epoch)
            else:
                self.model.save(epoch, model.into_record())
                self.optim.save(epoch, optim.to_record())
                self.scheduler.save(epoch, scheduler.to_record())
                backend = _backend_of(model)
                if backend is not None:
                    self.rng.save(epoch, {"backend": backend.name(), "state": backend.rng_state()})

    def load_checkpoint(self, model: Any, optim: Any, scheduler: Any, epoch: int) -> tuple[Any, Any, Any]:
        model = model.load_record(self.model.restore(epoch))
        optim = optim.load_record(self.optim.restore(epoch)) or optim
        scheduler = scheduler.load_record(self.scheduler.restore(epoch)) or scheduler
        backend = _backend_of(model)
        if backend is not None:
            if self.rng.file_for_epoch(epoch).exists():
                record = self.rng.restore(epoch)
                if record.get("backend") != backend.name():
                    raise ValueError(f"checkpoint {self.rng.file_for_epoch(epoch)} holds the random state of "
                                     f"backend {record.get('backend')!r}, but the model runs on {backend.name()!r}")
                backend.set_rng_state(record["state"])
            else:
                log.warning("No random-generator checkpoint for epoch %d: dropout masks will differ from the "
                            "uninterrupted run", epoch)
        return model, optim, scheduler


def _backend_of(model: Any) -> type | None:
    """The backend of the model's first parameter, if it keeps a host generator."""
    for param in model.params():
        backend = type(param.val())._B
        try:
            backend.rng_state()
        except NotImplementedError:
            return None
        return backend
    return None
