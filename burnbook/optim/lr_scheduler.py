"""Learning-rate schedulers (Burn's `lr_scheduler` module).

A scheduler gives the learning rate of each training iteration:
`lr = scheduler.step()`, then `model = optim.step(lr, model, grads)`. A plain
float means a constant rate (`as_lr_scheduler(1e-3)` is `ConstantLr(1e-3)`),
which is what the Learner accepts in place of a scheduler.

**The first `step()` returns the initial learning rate**, the k-th returns
the rate of iteration k-1, so the values line up with PyTorch's
`torch.optim.lr_scheduler` (the rate in use before its k-th `step()`). This
is Burn's behaviour since 0.15 (tracel-ai/burn#2337, which fixed issue #1198:
in Burn 0.13 the linear, exponential and cosine schedulers skipped their
initial value on the first call). `StepLr` comes from Burn 0.16 and always
behaved so; `Noam` is unchanged (its first call is step 1 of the formula).

| scheduler | k-th `step()` (t = k - 1) | PyTorch |
| --- | --- | --- |
| `ConstantLr(lr)` | `lr` | `ConstantLR(factor=1)` |
| `LinearLrSchedulerConfig(initial_lr, final_lr, num_iters)` | `initial + (final - initial) * min(t, n) / n` | `LinearLR(start_factor=1, end_factor=final/initial, total_iters=n)` |
| `ExponentialLrSchedulerConfig(initial_lr, gamma)` | `initial * gamma**t` | `ExponentialLR(gamma)` |
| `StepLrSchedulerConfig(initial_lr, step_size, gamma=0.1)` | `initial * gamma**(t // step_size)` | `StepLR(step_size, gamma)` |
| `CosineAnnealingLrSchedulerConfig(initial_lr, num_iters, min_lr=0)` | `min + (initial - min) * (1 + cos(pi * i / n)) / 2`, `i = t mod (n + 1)` (restarts) | `CosineAnnealingLR(T_max=n, eta_min=min)` for `t <= n` |
| `NoamLrSchedulerConfig(init_lr, warmup_steps=4000, model_size=512)` | `init_lr * model_size**-0.5 * min(k**-0.5, k * warmup**-1.5)` | none |

Every scheduler's state is one counter: `to_record()` gives
`Record(scheduler=<name>, iteration=<calls so far>)` and `load_record`
restores it, so a resumed run continues the sequence.
"""

from __future__ import annotations

import abc
import math
from numbers import Real
from typing import Any

from burnbook.config import config, is_config
from burnbook.record import Record, RecordError

__all__ = [
    "LrScheduler", "ConstantLr", "as_lr_scheduler",
    "LinearLrSchedulerConfig", "LinearLrScheduler",
    "ExponentialLrSchedulerConfig", "ExponentialLrScheduler",
    "StepLrSchedulerConfig", "StepLrScheduler",
    "CosineAnnealingLrSchedulerConfig", "CosineAnnealingLrScheduler",
    "NoamLrSchedulerConfig", "NoamLrScheduler",
]


class LrScheduler(abc.ABC):
    """Base of the schedulers (Burn's `LrScheduler` trait): `step()` advances
    one iteration and returns its learning rate."""

    def __init__(self) -> None:
        self.iteration = 0  # how many times step() was called

    @abc.abstractmethod
    def lr_at(self, t: int) -> float:
        """The learning rate of iteration `t` (0 for the first)."""

    def step(self) -> float:
        lr = self.lr_at(self.iteration)
        self.iteration += 1
        return lr

    def to_record(self) -> Record:
        return Record(scheduler=type(self).__name__, iteration=self.iteration)

    def load_record(self, record: Any) -> "LrScheduler":
        """Continue from `record`'s iteration; returns the scheduler."""
        name = type(self).__name__
        if not isinstance(record, Record):
            try:
                record = Record(record)
            except TypeError as err:
                raise RecordError(f"{name}: cannot read the record: {err}") from None
        if record.get("scheduler") != name:
            raise RecordError(f"{name}: the record belongs to {record.get('scheduler', 'no scheduler')!r}")
        iteration = record.get("iteration")
        if isinstance(iteration, bool) or not isinstance(iteration, int) or iteration < 0:
            raise RecordError(f"{name}: the record's iteration must be an int >= 0, got {iteration!r}")
        self.iteration = iteration
        return self

    def __repr__(self) -> str:
        settings = ", ".join(f"{k}={v}" for k, v in vars(self).items() if k != "iteration")
        return f"{type(self).__name__}({settings}, iteration={self.iteration})"


class ConstantLr(LrScheduler):
    """The same learning rate every iteration (what a float means)."""

    def __init__(self, lr: float) -> None:
        super().__init__()
        self.lr = _number("ConstantLr", "lr", lr)

    def lr_at(self, t: int) -> float:
        return self.lr


def as_lr_scheduler(lr: float | LrScheduler) -> LrScheduler:
    """A scheduler from a scheduler (returned as is) or a float (constant)."""
    if isinstance(lr, LrScheduler):
        return lr
    if is_config(lr):
        raise TypeError(f"expected a learning-rate scheduler, got the config {type(lr).__name__}: call .init()")
    return ConstantLr(lr)


# ---------------------------------------------------------------------------


def _number(owner: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise TypeError(f"{owner}: {name} must be a finite number, got {value!r}")
    return float(value)


def _check(owner: str, ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(f"{owner}: {message}")


@config
class LinearLrSchedulerConfig:
    """From `initial_lr` to `final_lr` in `num_iters` equal steps, then constant."""

    initial_lr: float
    final_lr: float
    num_iters: int

    def init(self) -> "LinearLrScheduler":
        name = type(self).__name__
        _check(name, 0 < self.initial_lr <= 1, f"initial_lr must be in (0, 1], got {self.initial_lr}")
        _check(name, 0 <= self.final_lr <= 1, f"final_lr must be in [0, 1], got {self.final_lr}")
        _check(name, self.num_iters > 0, f"num_iters must be at least 1, got {self.num_iters}")
        return LinearLrScheduler(self.initial_lr, self.final_lr, self.num_iters)


class LinearLrScheduler(LrScheduler):
    def __init__(self, initial_lr: float, final_lr: float, num_iters: int) -> None:
        super().__init__()
        self.initial_lr, self.final_lr, self.num_iters = initial_lr, final_lr, num_iters

    def lr_at(self, t: int) -> float:
        if t >= self.num_iters:
            return self.final_lr
        return self.initial_lr + (self.final_lr - self.initial_lr) * t / self.num_iters


@config
class ExponentialLrSchedulerConfig:
    """`initial_lr` multiplied by `gamma` every iteration."""

    initial_lr: float
    gamma: float

    def init(self) -> "ExponentialLrScheduler":
        name = type(self).__name__
        _check(name, 0 < self.initial_lr <= 1, f"initial_lr must be in (0, 1], got {self.initial_lr}")
        _check(name, 0 < self.gamma <= 1, f"gamma must be in (0, 1], got {self.gamma}")
        return ExponentialLrScheduler(self.initial_lr, self.gamma)


class ExponentialLrScheduler(LrScheduler):
    def __init__(self, initial_lr: float, gamma: float) -> None:
        super().__init__()
        self.initial_lr, self.gamma = initial_lr, gamma

    def lr_at(self, t: int) -> float:
        return self.initial_lr * self.gamma**t


@config
class StepLrSchedulerConfig:
    """`initial_lr` multiplied by `gamma` every `step_size` iterations."""

    initial_lr: float
    step_size: int
    gamma: float = 0.1

    def init(self) -> "StepLrScheduler":
        _check(type(self).__name__, self.step_size > 0, f"step_size must be at least 1, got {self.step_size}")
        return StepLrScheduler(self.initial_lr, self.step_size, self.gamma)


class StepLrScheduler(LrScheduler):
    def __init__(self, initial_lr: float, step_size: int, gamma: float = 0.1) -> None:
        super().__init__()
        self.initial_lr, self.step_size, self.gamma = initial_lr, step_size, gamma

    def lr_at(self, t: int) -> float:
        return self.initial_lr * self.gamma ** (t // self.step_size)


@config
class CosineAnnealingLrSchedulerConfig:
    """Half a cosine from `initial_lr` down to `min_lr` over `num_iters`
    iterations, then a restart at `initial_lr` (SGDR without growth)."""

    initial_lr: float
    num_iters: int
    min_lr: float = 0.0

    def init(self) -> "CosineAnnealingLrScheduler":
        name = type(self).__name__
        _check(name, 0 < self.initial_lr <= 1, f"initial_lr must be in (0, 1], got {self.initial_lr}")
        _check(name, 0 <= self.min_lr <= self.initial_lr,
               f"min_lr must be in [0, initial_lr={self.initial_lr}], got {self.min_lr}")
        _check(name, self.num_iters > 0, f"num_iters must be at least 1, got {self.num_iters}")
        return CosineAnnealingLrScheduler(self.initial_lr, self.num_iters, self.min_lr)


class CosineAnnealingLrScheduler(LrScheduler):
    def __init__(self, initial_lr: float, num_iters: int, min_lr: float = 0.0) -> None:
        super().__init__()
        self.initial_lr, self.num_iters, self.min_lr = initial_lr, num_iters, min_lr

    def lr_at(self, t: int) -> float:
        i = t % (self.num_iters + 1)
        cos = math.cos(math.pi * i / self.num_iters)
        return self.min_lr + 0.5 * (self.initial_lr - self.min_lr) * (1.0 + cos)


@config
class NoamLrSchedulerConfig:
    """The Transformer paper's schedule: linear warm-up for `warmup_steps`,
    then decay as 1/sqrt(step), scaled by `init_lr / sqrt(model_size)`."""

    init_lr: float
    warmup_steps: int = 4000
    model_size: int = 512

    def init(self) -> "NoamLrScheduler":
        name = type(self).__name__
        _check(name, self.warmup_steps > 0, f"warmup_steps must be at least 1, got {self.warmup_steps}")
        _check(name, self.model_size > 0, f"model_size must be at least 1, got {self.model_size}")
        return NoamLrScheduler(self.init_lr, self.warmup_steps, self.model_size)


class NoamLrScheduler(LrScheduler):
    def __init__(self, init_lr: float, warmup_steps: int = 4000, model_size: int = 512) -> None:
        super().__init__()
        self.init_lr, self.warmup_steps, self.model_size = init_lr, warmup_steps, model_size

    def lr_at(self, t: int) -> float:
        k = t + 1
        return self.init_lr * self.model_size**-0.5 * min(k**-0.5, k * self.warmup_steps**-1.5)
