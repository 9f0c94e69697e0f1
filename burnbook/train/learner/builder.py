"""`LearnerBuilder` (Burn's `LearnerBuilder`): every option of the book's
Learner table, then `build(model, optim, lr_or_scheduler) -> Learner`.

    learner = (LearnerBuilder(artifact_dir)
               .metric_train_numeric(AccuracyMetric())
               .metric_valid_numeric(AccuracyMetric())
               .metric_train_numeric(LossMetric())
               .metric_valid_numeric(LossMetric())
               .with_file_checkpointer(CompactRecorder())
               .devices([device])
               .num_epochs(config.num_epochs)
               .build(model, optim, config.learning_rate))
    model_trained = learner.fit(dataloader_train, dataloader_valid)

| book option | method |
| --- | --- |
| Training / Validation Metric | `metric_train(m)`, `metric_valid(m)` |
| Training / Validation Metric Plot | `metric_train_numeric(m)`, `metric_valid_numeric(m)` |
| Metric Logger | `metric_loggers(train, valid)` (default: files under train/ and valid/) |
| Renderer | `renderer(r)` (default: terminal bars, or the notebook dashboard) |
| Grad Accumulation | `grads_accumulation(n)` |
| File Checkpointer | `with_file_checkpointer(recorder)` |
| Num Epochs | `num_epochs(n)` (default 1) |
| Devices | `devices([device, ...])` |
| Checkpoint | `checkpoint(epoch)`: resume after that epoch |

and, from burn-train 0.13: `early_stopping(strategy)`, `summary()`,
`interrupter()`, `log_to_file(flag)`, `with_checkpointing_strategy(s)`,
plus `with_checkpoint_retention(k)` (keep the last k checkpoints only) and
`distributed(DataParallel(n))` (n replicas on Ray, `burnbook.train.distributed`).

Checkpoints: unlike Burn, which saves none until `with_file_checkpointer`
is called, the builder checkpoints by default with `NamedMpkGzFileRecorder`
(full precision), giving the book's `checkpoint/model-N.mpk.gz` layout and
bit-exact resumption; `with_file_checkpointer(recorder)` picks another
recorder, `with_file_checkpointer(None)` turns checkpoints off. Default
retention is Burn's: the last 2 epochs plus the best validation loss.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from burnbook.optim.lr_scheduler import as_lr_scheduler
from ..checkpoint import KeepLastNCheckpoints, LearnerCheckpointer, default_checkpointing_strategy
from ..logger import FileMetricLogger
from ..processor import EventProcessor, Metrics
from ..renderer import default_renderer
from ..store import EventStore, Split
from .base import Learner, TrainingInterrupter

__all__ = ["LearnerBuilder"]

_DEFAULT = object()


def _positive_int(owner: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"LearnerBuilder.{owner}: expected an int >= {minimum}, got {value!r}")
    return value


class LearnerBuilder:
    """Configures a `Learner`; each option returns the builder."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        self._metrics = Metrics()
        self._loggers: list[tuple[Any, Any]] = []
        self._renderer: Any = None
        self._grad_accumulation: int | None = None
        self._recorder: Any = _DEFAULT
        self._strategy: Any = None
        self._num_epochs = 1
        self._devices: list = []
        self._checkpoint: int | None = None
        self._early_stopping: Any = None
        self._summary = False
        self._log_to_file = True
        self._interrupter = TrainingInterrupter()
        self._distributed: Any = None

    # -- metrics -------------------------------------------------------------------------
    def metric_train(self, metric: Any) -> "LearnerBuilder":
        """Register a training metric (logged and shown as text)."""
        self._metrics.register(Split.Train, metric, numeric=False)
        return self

    def metric_valid(self, metric: Any) -> "LearnerBuilder":
        """Register a validation metric."""
        self._metrics.register(Split.Valid, metric, numeric=False)
        return self

    def metric_train_numeric(self, metric: Any) -> "LearnerBuilder":
        """Register a numeric training metric: plotted by dashboards, averaged
        per epoch (early stopping, checkpoint selection, summary)."""
        self._metrics.register(Split.Train, metric, numeric=True)
        return self

    def metric_valid_numeric(self, metric: Any) -> "LearnerBuilder":
        self._metrics.register(Split.Valid, metric, numeric=True)
        return self

    # Burn 0.12 names
    metric_train_plot = metric_train_numeric
    metric_valid_plot = metric_valid_numeric

    def metric_loggers(self, logger_train: Any, logger_valid: Any) -> "LearnerBuilder":
        """Log metrics with these loggers instead of the default files (call
        again to add more pairs)."""
        for logger in (logger_train, logger_valid):
            missing = [m for m in ("log", "end_epoch", "read_numeric") if not callable(getattr(logger, m, None))]
            if missing:
                raise TypeError(f"{type(logger).__name__} is not a MetricLogger (no {', '.join(missing)})")
        self._loggers.append((logger_train, logger_valid))
        return self

    def renderer(self, renderer: Any) -> "LearnerBuilder":
        missing = [m for m in ("update_train", "update_valid", "render_train", "render_valid")
                   if not callable(getattr(renderer, m, None))]
        if missing:
            raise TypeError(f"{type(renderer).__name__} is not a MetricsRenderer (no {', '.join(missing)})")
        self._renderer = renderer
        return self

    # -- the loop ------------------------------------------------------------------------
    def grads_accumulation(self, accumulation: int) -> "LearnerBuilder":
        """Sum the gradients of `accumulation` batches before each optimizer
        step (similar to a batch that many times bigger with a learning rate
        that many times bigger: lower the learning rate to compensate)."""
        self._grad_accumulation = _positive_int("grads_accumulation", accumulation)
        return self

    def num_epochs(self, num_epochs: int) -> "LearnerBuilder":
        self._num_epochs = _positive_int("num_epochs", num_epochs)
        return self

    def devices(self, devices: list) -> "LearnerBuilder":
        """The devices to train on: the model is forked to the first; with
        several, batches take turns and their gradients are summed on the
        first device before each step (so n devices act as n-fold gradient
        accumulation, as in burn-train)."""
        devices = list(devices)
        if not devices:
            raise ValueError("LearnerBuilder.devices: give at least one device")
        self._devices = devices
        return self

    def distributed(self, strategy: Any) -> "LearnerBuilder":
        """Train on several worker processes, e.g. `DataParallel(2)` from
        `burnbook.train.distributed` (one model replica per Ray worker,
        gradients averaged by an all-reduce); validation, metrics and
        checkpoints stay in this process."""
        if not callable(getattr(strategy, "start", None)):
            raise TypeError(f"{type(strategy).__name__} is not a distributed strategy (no start(learner)); "
                            "use burnbook.train.distributed.DataParallel(num_workers)")
        self._distributed = strategy
        return self

    def checkpoint(self, epoch: int) -> "LearnerBuilder":
        """Resume from the checkpoint of `epoch`: training continues at epoch + 1."""
        self._checkpoint = _positive_int("checkpoint", epoch)
        return self

    def early_stopping(self, strategy: Any) -> "LearnerBuilder":
        if not callable(getattr(strategy, "should_stop", None)):
            raise TypeError(f"{type(strategy).__name__} is not an early stopping strategy (no should_stop)")
        self._early_stopping = strategy
        return self

    def interrupter(self) -> TrainingInterrupter:
        """The flag that stops the learner built by this builder."""
        return self._interrupter

    def summary(self) -> "LearnerBuilder":
        """Print a summary of the numeric metrics after `fit`."""
        self._summary = True
        return self

    def log_to_file(self, enabled: bool) -> "LearnerBuilder":
        """Write `experiment.log` (default True)."""
        self._log_to_file = bool(enabled)
        return self

    # -- checkpoints ---------------------------------------------------------------------
    def with_file_checkpointer(self, recorder: Any) -> "LearnerBuilder":
        """Save model, optimizer and scheduler after each epoch with
        `recorder` (its extension names the files); None: no checkpoints."""
        if recorder is not None and not callable(getattr(recorder, "record", None)):
            raise TypeError(f"with_file_checkpointer: {recorder!r} is not a file recorder")
        if isinstance(recorder, type):
            raise TypeError(f"with_file_checkpointer: pass a recorder instance, e.g. {recorder.__name__}()")
        self._recorder = recorder
        return self

    def with_checkpointing_strategy(self, strategy: Any) -> "LearnerBuilder":
        if not callable(getattr(strategy, "checkpointing", None)):
            raise TypeError(f"{type(strategy).__name__} is not a checkpointing strategy (no checkpointing)")
        self._strategy = strategy
        return self

    def with_checkpoint_retention(self, num_keep: int) -> "LearnerBuilder":
        """Keep only the checkpoints of the last `num_keep` epochs."""
        return self.with_checkpointing_strategy(KeepLastNCheckpoints(num_keep))

    # -- build ---------------------------------------------------------------------------
    def build(self, model: Any, optim: Any, lr_scheduler: Any) -> Learner:
        """The Learner for `model`, `optim` and a scheduler or a constant
        learning rate (a float)."""
        if not callable(getattr(model, "train_step", None)):
            raise TypeError(f"{type(model).__name__} has no train_step(batch) method: the Learner trains models "
                            "that return TrainOutput(self, loss.backward(), item) from train_step (see "
                            "burnbook.train.step)")
        if not callable(getattr(optim, "step", None)):
            raise TypeError(f"build: {type(optim).__name__} is not an optimizer: did you pass the config? "
                            "Call .init() on it")
        _check_trainable(model)
        if self._distributed is not None and len(self._devices) > 1:
            raise ValueError(f"build: devices({len(self._devices)} devices) takes turns in one process and "
                             f"{self._distributed!r} runs one replica per worker; choose one of them")
        scheduler = as_lr_scheduler(lr_scheduler)
        self.directory.mkdir(parents=True, exist_ok=True)
        store = EventStore()
        loggers = self._loggers or [(FileMetricLogger(self.directory / "train"),
                                     FileMetricLogger(self.directory / "valid"))]
        for train, valid in loggers:
            store.register_logger_train(train)
            store.register_logger_valid(valid)
        renderer = self._renderer if self._renderer is not None else default_renderer(self._interrupter,
                                                                                       self._checkpoint)
        recorder = self._recorder
        if recorder is _DEFAULT:
            from burnbook.record import FullPrecisionSettings, NamedMpkGzFileRecorder

            recorder = NamedMpkGzFileRecorder(FullPrecisionSettings)
        checkpointer = None
        if recorder is not None:
            strategy = self._strategy if self._strategy is not None else default_checkpointing_strategy()
            checkpointer = LearnerCheckpointer(recorder, self.directory / "checkpoint", strategy)
        summary = None
        if self._summary:
            summary = list(dict.fromkeys(self._metrics.names(Split.Train, True) + self._metrics.names(Split.Valid, True)))
        return Learner(model=model, optim=optim, lr_scheduler=scheduler, directory=self.directory,
                       num_epochs=self._num_epochs, checkpoint=self._checkpoint,
                       grad_accumulation=self._grad_accumulation, devices=self._devices, checkpointer=checkpointer,
                       processor=EventProcessor(self._metrics, renderer, store), store=store,
                       interrupter=self._interrupter, early_stopping=self._early_stopping, summary_metrics=summary,
                       log_to_file=self._log_to_file, distributed=self._distributed)


def _check_trainable(model: Any) -> None:
    """Refuse a model the optimizer could not change: not a `Module`, or
    without a single parameter that autodiff tracks (every epoch would run
    and train nothing)."""
    from burnbook.optim.grads import trainable_params

    if not callable(getattr(model, "named_params", None)):
        raise TypeError(f"build: {type(model).__name__} is not a Module (burnbook.module.Module), so it has no "
                        "parameters to train")
    params = [p for _, p in trainable_params(model, "build")]
    if any(p.is_require_grad() and p.val().is_require_grad() for p in params):
        return
    if not params:
        why = "it has no float parameter (declare its layers as annotated fields, or assign them in __init__)"
    elif not any(p.val()._B.is_autodiff for p in params):
        why = (f"its parameters are on {params[0].val()._B.name()!r}, which has no autodiff; build the model "
               "on Autodiff[...] (model.valid() is for validation only)")
    else:
        why = f"its {len(params)} float parameter(s) are all frozen (no_grad() or require_grad=False)"
    raise ValueError(f"build: {type(model).__name__} has no trainable parameters, so training would change "
                     f"nothing: {why}")
