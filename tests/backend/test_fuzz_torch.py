"""Differential fuzzing against PyTorch: seeded random op chains (see
fuzz_programs.py) agree with torch on every backend, forward and, on the
autodiff backends, gradients. A failure prints the program that disagrees.

More programs by hand: `.venv/bin/python -m tests.backend.fuzz_programs --seeds 5 --programs 400`.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from .fuzz_programs import run  # noqa: E402 - needs torch

PROGRAMS = 30  # per seed and backend
# Autodiff[Fusion[Taichi]] compiles a fused kernel for nearly every new
# backward stream, so its programs cost seconds each in a cold cache; fewer
# of them keep make test short (the by-hand command above runs more).
PROGRAMS_AUTODIFF_FUSION = 10


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_programs_agree_with_torch(backend, seed):
    programs = PROGRAMS_AUTODIFF_FUSION if repr(backend).startswith("Autodiff[Fusion[") else PROGRAMS
    failures = run(backend, 1000 + seed, programs)
    assert not failures, f"{len(failures)}/{programs} programs disagree with torch:\n" + "\n".join(failures[:3])
