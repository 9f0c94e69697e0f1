"""Profiles: a benchmark run's time budget and the sizes its cases use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .measurement import Case


@dataclass(frozen=True)
class Profile:
    """A run's budget and sizes. `FULL` is `make bench`; `QUICK` is `--quick`;
    `SMOKE` is for the test suite (a second or two, numbers meaningless)."""

    name: str
    repeats: int                      # samples per framework and case (at most)
    target_s: float                   # minimum duration of one repeat (autorange)
    budget_s: float                   # soft cap on one framework's repeats of one case
    elementwise_sizes: tuple = (1 << 20, 1 << 24)
    reduction_shapes: tuple = ((1024, 1024), (4096, 4096))
    matmul_sizes: tuple = (256, 512, 1024, 2048)
    mlp: tuple = (64, 784, 256, 128, 10)   # batch, input, hidden1, hidden2, output
    tiny_repeats: int = 0             # for microsecond ops (`Case.tiny`): more, shorter
    tiny_target_s: float = 0.0        # repeats give a median robust to preemption bursts

    def repeats_for(self, case: "Case") -> int:
        return self.tiny_repeats if case.tiny and self.tiny_repeats else self.repeats

    def target_for(self, case: "Case") -> float:
        return self.tiny_target_s if case.tiny and self.tiny_target_s else self.target_s


FULL = Profile("full", repeats=11, target_s=0.05, budget_s=6.0, tiny_repeats=21, tiny_target_s=0.02)
QUICK = Profile(
    "quick", repeats=3, target_s=0.01, budget_s=1.0,
    reduction_shapes=((1024, 1024),), matmul_sizes=(256, 1024),
)
SMOKE = Profile(
    "smoke", repeats=2, target_s=0.0005, budget_s=0.05,
    elementwise_sizes=(1024,), reduction_shapes=((32, 32),), matmul_sizes=(16,),
    mlp=(4, 16, 8, 8, 4),
)
PROFILES = {p.name: p for p in (FULL, QUICK, SMOKE)}
