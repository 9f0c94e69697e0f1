"""`Learner.fit`: the training loop of burn-train, epoch by epoch.

For each epoch (from 1, or from the checkpoint's epoch + 1 when resuming):

1. training: for every batch, `lr = scheduler.step()`,
   `out = model.train_step(batch)`, then (every `grads_accumulation` batches
   when accumulating) `model = optim.step(lr, model, grads)`; the metrics
   read `out.item`, detached from the autodiff graph, and nothing keeps it;
2. validation on `model.valid()` with `valid_step`;
3. checkpoint (model, optimizer, scheduler), as the strategy decides;
4. early stopping, if configured.

`learner.interrupter.stop()` (another thread, a notebook's stop button)
ends `fit` after the current step: the model so far is returned and the
checkpoints of finished epochs stay as they were.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from pathlib import Path
from typing import Any

from burnbook.optim import GradientsAccumulator, GradientsParams
from ..processor import EventProcessor, LearnerItem
from ..step import TrainOutput, detach_item
from ..store import EventStore, Split
from .epoch import iterate_epoch
from .log import experiment_log
from .summary import LearnerSummary

__all__ = ["Learner", "TrainingInterrupter"]

log = logging.getLogger("burnbook.train")


class TrainingInterrupter:
    """A flag another thread sets to stop training (Burn's
    `TrainingInterrupter`). Shared by the learner, its renderer and
    whoever holds `learner.interrupter`."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def stop(self) -> None:
        """Ask the Learner to stop after the current step."""
        self._event.set()

    def should_stop(self) -> bool:
        return self._event.is_set()

    def reset(self) -> None:
        """Clear the flag (to fit again with the same learner)."""
        self._event.clear()

    def __repr__(self) -> str:
        return f"TrainingInterrupter(stopped={self.should_stop()})"


class Learner:
    """Built by `LearnerBuilder.build(model, optim, lr_scheduler)`; its one
    job is `fit(dataloader_train, dataloader_valid) -> trained model`."""

    def __init__(self, *, model: Any, optim: Any, lr_scheduler: Any, directory: Path, num_epochs: int,
                 checkpoint: int | None, grad_accumulation: int | None, devices: list, checkpointer: Any,
                 processor: EventProcessor, store: EventStore, interrupter: TrainingInterrupter,
                 early_stopping: Any, summary_metrics: list[str] | None, log_to_file: bool,
                 distributed: Any = None) -> None:
        self.model, self.optim, self.lr_scheduler = model, optim, lr_scheduler
        self.directory = directory
        self.num_epochs, self.checkpoint, self.grad_accumulation = num_epochs, checkpoint, grad_accumulation
        self.devices, self.checkpointer = devices, checkpointer
        self.processor, self.store, self.interrupter = processor, store, interrupter
        self.early_stopping, self.summary_metrics, self.log_to_file = early_stopping, summary_metrics, log_to_file
        self.epochs_done: list[int] = []  # epochs trained by the last fit, in order
        self.distributed = distributed  # e.g. DataParallel(2): training epochs run on its workers
        self._session: Any = None

    @property
    def renderer(self) -> Any:
        return self.processor.renderer

    # -- the loop ----------------------------------------------------------------------
    def fit(self, dataloader_train: Any, dataloader_valid: Any) -> Any:
        """Train for the configured epochs and return the trained model.

        Call it once per learner (Burn's `fit` consumes the learner): the
        strategies and the metric loggers keep the run's state. When the
        interrupter stops it during training, the unfinished epoch is
        neither validated nor checkpointed; during validation, the epoch's
        training is complete, so it is checkpointed (its validation metrics
        are partial). Call `interrupter.reset()` before fitting again.
        """
        with experiment_log(self.directory / "experiment.log", self.log_to_file):
            try:
                self._fit(dataloader_train, dataloader_valid)
            except BaseException as err:
                log.error("Training stopped by %s: %s", type(err).__name__, err)
                raise
            finally:
                self.store.flush()
                hook = getattr(self.renderer, "on_fit_end", None)
                if callable(hook):
                    hook()
        if self.summary_metrics is not None:
            last = max(self.epochs_done, default=self.checkpoint or 0)
            summary = LearnerSummary.from_store(self.store, self.summary_metrics, last)
            print(summary.with_model(repr(self.model)).with_params(self.model))
        return self.model

    def _fit(self, dataloader_train: Any, dataloader_valid: Any) -> None:
        log.info("Fitting %s", self.model)
        self.epochs_done = []
        if self.devices:
            self.model = self.model.fork(self.devices[0])
        start = 1
        if self.checkpoint is not None:
            if self.checkpointer is None:
                raise ValueError("checkpoint(epoch) needs a checkpointer to load from: keep the default one or "
                                 "call with_file_checkpointer(recorder)")
            self.model, self.optim, self.lr_scheduler = self.checkpointer.load_checkpoint(
                self.model, self.optim, self.lr_scheduler, self.checkpoint)
            if self.devices:
                self.model = self.model.fork(self.devices[0])
            self._replay(self.checkpoint)
            start = self.checkpoint + 1
            log.info("Resumed from the checkpoint of epoch %d", self.checkpoint)
        if self.distributed is not None:
            self._session = self.distributed.start(self)
        try:
            self._epochs(dataloader_train, dataloader_valid, start)
        finally:
            if self._session is not None:
                self._session.close()
                self._session = None

    def _epochs(self, dataloader_train: Any, dataloader_valid: Any, start: int) -> None:
        for epoch in range(start, self.num_epochs + 1):
            started = time.monotonic()
            self._train_epoch(dataloader_train, epoch)
            if self.interrupter.should_stop():
                log.info("Training interrupted during epoch %d (training); epoch not checkpointed", epoch)
                break
            self._valid_epoch(dataloader_valid, epoch)
            if self.checkpointer is not None:
                self.checkpointer.checkpoint(self.model, self.optim, self.lr_scheduler, epoch, self.store.until(epoch))
            self.epochs_done.append(epoch)
            log.info("Epoch %d/%d done in %.1f s: %s", epoch, self.num_epochs, time.monotonic() - started,
                     self._epoch_means(epoch))
            if self.interrupter.should_stop():
                log.info("Training interrupted during epoch %d (validation)", epoch)
                break
            if self.early_stopping is not None and self.early_stopping.should_stop(epoch, self.store.until(epoch)):
                log.info("Early stopping after epoch %d", epoch)
                break

    def _replay(self, last: int) -> None:
        """Bring the checkpointing and early-stopping strategies to the state
        they had after epoch `last` in the interrupted run, by showing them
        epochs 1..last again as the store saw them then (their actions are
        not executed: those files were already saved or deleted)."""
        logger = logging.getLogger("burnbook.train")
        disabled, logger.disabled = logger.disabled, True
        try:
            for epoch in range(1, last + 1):
                view = self.store.until(epoch)
                if self.checkpointer is not None:
                    self.checkpointer.strategy.checkpointing(epoch, view)
                if self.early_stopping is not None:
                    self.early_stopping.should_stop(epoch, view)
        finally:
            logger.disabled = disabled

    def _train_epoch(self, loader: Any, epoch: int) -> None:
        log.info("Executing training step for epoch %d", epoch)
        if self._session is not None:
            iteration = self._session.train_epoch(loader, epoch)
            if iteration == 0 and not self.interrupter.should_stop():
                raise ValueError(f"the training data loader gave no batch in epoch {epoch}")
            return
        self.processor.start_epoch(Split.Train, epoch)
        accumulation = (self.grad_accumulation or 1) * max(len(self.devices), 1)
        accumulator, pending = GradientsAccumulator(), 0
        iteration = 0
        for batch, progress in iterate_epoch(loader, epoch - 1):
            iteration += 1
            lr = self.lr_scheduler.step()
            model = self.model
            if len(self.devices) > 1:  # data parallel in turn: batch i on device i mod n
                model = model.fork(self.devices[(iteration - 1) % len(self.devices)])
            out = _call_step(model, "train_step", batch)
            grads = _grads_of(out, model)
            if len(self.devices) > 1:
                grads = grads.to_device(self.devices[0], self.model)
            if accumulation > 1:
                accumulator.accumulate(self.model, grads)
                pending += 1
                if pending >= accumulation:
                    self.model = self._optimize(lr, accumulator.grads())
                    pending = 0
            else:
                self.model = self._optimize(lr, grads)
            item = LearnerItem(detach_item(out.item), progress, epoch, self.num_epochs, iteration, lr)
            del out, grads, batch, model  # nothing of the step's graph outlives it
            self.processor.process(Split.Train, item)
            del item
            if self.interrupter.should_stop():
                break
        if iteration == 0 and not self.interrupter.should_stop():
            raise ValueError(f"the training data loader gave no batch in epoch {epoch}: pass a re-iterable "
                             "loader (a DataLoader or a list of batches), not a one-shot generator")
        self.processor.end_epoch(Split.Train, epoch)

    def _valid_epoch(self, loader: Any, epoch: int) -> None:
        log.info("Executing validation step for epoch %d", epoch)
        self.processor.start_epoch(Split.Valid, epoch)
        model = self.model.valid()
        iteration = 0
        for batch, progress in iterate_epoch(loader, epoch - 1):
            iteration += 1
            item = detach_item(_call_step(model, "valid_step", batch))
            self.processor.process(Split.Valid, LearnerItem(item, progress, epoch, self.num_epochs, iteration))
            del item, batch
            if self.interrupter.should_stop():
                break
        if iteration == 0:
            log.warning("The validation data loader gave no batch in epoch %d", epoch)
        self.processor.end_epoch(Split.Valid, epoch)

    def _optimize(self, lr: float, grads: GradientsParams) -> Any:
        """Burn's `TrainStep::optimize`: the model's own `optimize(optim, lr,
        grads)` when it defines one, else `optim.step(lr, model, grads)`."""
        optimize = getattr(self.model, "optimize", None)
        if callable(optimize):
            return optimize(self.optim, lr, grads)
        return self.optim.step(lr, self.model, grads)

    def _epoch_means(self, epoch: int) -> str:
        parts = []
        for split in (Split.Train, Split.Valid):
            for name in self.processor.metrics.names(split, numeric_only=True):
                value = self.store.find_metric(name, epoch, split=split)
                if value is not None and not math.isnan(value):
                    parts.append(f"{split} {name} {value:.6g}")
        return ", ".join(parts) or "no numeric metrics"

    def __repr__(self) -> str:
        return (f"Learner(model={type(self.model).__name__}, epochs={self.num_epochs}, "
                f"directory={str(self.directory)!r})")


def _call_step(model: Any, method: str, batch: Any) -> Any:
    step = getattr(model, method, None)
    if not callable(step):
        trait = "TrainStep" if method == "train_step" else "ValidStep"
        raise TypeError(f"{type(model).__name__} has no {method}(batch) method; the Learner needs it "
                        f"(Burn's {trait}). See burnbook.train.step")
    return step(batch)


def _grads_of(out: Any, model: Any) -> GradientsParams:
    if isinstance(out, TrainOutput) or (hasattr(out, "grads") and hasattr(out, "item")):
        grads = out.grads
        return grads if isinstance(grads, GradientsParams) else GradientsParams.from_grads(grads, model)
    raise TypeError(f"train_step returned a {type(out).__name__}; it must return "
                    "TrainOutput(self, loss.backward(), item)")
