"""Learning-rate schedulers against torch.optim.lr_scheduler (the rate in use
at each of the first iterations), Noam against hand-computed numbers, and
their records."""

from __future__ import annotations

import math

import pytest

from burnbook.optim import (
    ConstantLr, CosineAnnealingLrSchedulerConfig, ExponentialLrSchedulerConfig, LinearLrSchedulerConfig,
    LrScheduler, NoamLrSchedulerConfig, StepLrSchedulerConfig, as_lr_scheduler,
)
from burnbook.record import NamedMpkFileRecorder, Record, RecordError

torch = pytest.importorskip("torch")


def torch_lrs(make, n: int, lr: float) -> list[float]:
    """The learning rate PyTorch uses at each of `n` iterations."""
    optim = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    sched = make(optim)
    out = []
    for _ in range(n):
        out.append(optim.param_groups[0]["lr"])
        optim.step()
        sched.step()
    return out


def ours(scheduler: LrScheduler, n: int) -> list[float]:
    return [scheduler.step() for _ in range(n)]


def test_linear_matches_torch() -> None:
    got = ours(LinearLrSchedulerConfig(0.1, 0.01, 5).init(), 9)
    want = torch_lrs(lambda o: torch.optim.lr_scheduler.LinearLR(o, 1.0, 0.1, total_iters=5), 9, 0.1)
    assert got == pytest.approx(want, rel=1e-12)
    assert got[0] == 0.1 and got[5:] == [0.01] * 4


def test_exponential_matches_torch() -> None:
    got = ours(ExponentialLrSchedulerConfig(0.5, 0.9).init(), 10)
    want = torch_lrs(lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.9), 10, 0.5)
    assert got == pytest.approx(want, rel=1e-12) and got[0] == 0.5


def test_step_matches_torch() -> None:
    got = ours(StepLrSchedulerConfig(0.5, 3).init(), 10)
    want = torch_lrs(lambda o: torch.optim.lr_scheduler.StepLR(o, 3, gamma=0.1), 10, 0.5)
    assert got == pytest.approx(want, rel=1e-12)
    assert got[:4] == pytest.approx([0.5, 0.5, 0.5, 0.05])
    # Burn's own test sequence for an increasing rate.
    assert ours(StepLrSchedulerConfig(0.1, 2, 2.0).init(), 6) == pytest.approx([0.1, 0.1, 0.2, 0.2, 0.4, 0.4])


def test_cosine_matches_torch_then_restarts() -> None:
    n = 6
    got = ours(CosineAnnealingLrSchedulerConfig(0.1, n, min_lr=0.02).init(), 2 * (n + 1))
    want = torch_lrs(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=n, eta_min=0.02), n + 1, 0.1)
    assert got[: n + 1] == pytest.approx(want, rel=1e-12)
    assert got[0] == pytest.approx(0.1) and got[n] == pytest.approx(0.02)
    assert got[n + 1:] == pytest.approx(got[: n + 1])  # Burn's schedule restarts after num_iters


def test_noam_hand_computed() -> None:
    got = ours(NoamLrSchedulerConfig(2.0, warmup_steps=4, model_size=16).init(), 6)
    # 2 / sqrt(16) * min(k^-0.5, k * 4^-1.5), k = 1, 2, ...
    want = [0.5 * min(k**-0.5, k / 8) for k in range(1, 7)]
    assert want[:4] == pytest.approx([0.0625, 0.125, 0.1875, 0.25])
    assert want[4] == pytest.approx(0.5 / math.sqrt(5))
    assert got == pytest.approx(want, rel=1e-12)
    default = NoamLrSchedulerConfig(1.0)
    assert (default.warmup_steps, default.model_size) == (4000, 512)


def test_float_means_constant() -> None:
    s = as_lr_scheduler(3e-4)
    assert isinstance(s, ConstantLr) and ours(s, 3) == [3e-4] * 3
    assert as_lr_scheduler(s) is s
    with pytest.raises(TypeError, match=r"call .init\(\)"):
        as_lr_scheduler(ExponentialLrSchedulerConfig(0.1, 0.5))
    with pytest.raises(TypeError, match="finite number"):
        as_lr_scheduler("fast")


CONFIGS = [
    LinearLrSchedulerConfig(0.1, 0.0, 4),
    ExponentialLrSchedulerConfig(0.1, 0.5),
    StepLrSchedulerConfig(0.1, 2),
    CosineAnnealingLrSchedulerConfig(0.1, 3),
    NoamLrSchedulerConfig(1.0, 3, 8),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: type(c).__name__)
def test_record_round_trip_resumes_the_sequence(config, tmp_path) -> None:
    straight = ours(config.init(), 10)
    first = config.init()
    head = ours(first, 4)
    path = NamedMpkFileRecorder().record(first.to_record(), tmp_path / "sched")
    resumed = config.init().load_record(NamedMpkFileRecorder().load(path))
    assert head + ours(resumed, 6) == straight
    assert config.init().load_record(first.to_record()).iteration == 4


def test_record_errors() -> None:
    record = ExponentialLrSchedulerConfig(0.1, 0.5).init().to_record()
    with pytest.raises(RecordError, match="belongs to 'ExponentialLrScheduler'"):
        StepLrSchedulerConfig(0.1, 2).init().load_record(record)
    with pytest.raises(RecordError, match="iteration must be an int"):
        ConstantLr(0.1).load_record(Record(scheduler="ConstantLr", iteration=-1))


@pytest.mark.parametrize("config, message", [
    (LinearLrSchedulerConfig(0.0, 0.1, 3), "initial_lr must be in"),
    (LinearLrSchedulerConfig(0.1, 0.01, 0), "num_iters must be at least 1"),
    (ExponentialLrSchedulerConfig(0.1, 1.5), "gamma must be in"),
    (StepLrSchedulerConfig(0.1, 0), "step_size must be at least 1"),
    (CosineAnnealingLrSchedulerConfig(0.1, 5, min_lr=0.2), "min_lr must be in"),
    (NoamLrSchedulerConfig(1.0, warmup_steps=0), "warmup_steps must be at least 1"),
])
def test_invalid_settings(config, message) -> None:
    with pytest.raises(ValueError, match=message):
        config.init()


def test_configs_save_and_load(tmp_path) -> None:
    for config in CONFIGS:
        path = tmp_path / f"{type(config).__name__}.json"
        config.save(path)
        assert type(config).load(path) == config
