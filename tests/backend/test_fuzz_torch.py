"""Differential fuzzing against PyTorch: seeded random op chains (see
fuzz_programs.py) agree with torch on every backend, forward and, on the
autodiff backends, gradients. A failure prints the program that disagrees.

More programs by hand: `.venv/bin/python -m tests.backend.fuzz_programs --seeds 5 --programs 400`.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from .fuzz_programs import run  # noqa: E402 - needs torch

PROGRAMS = 30  # per seed and backend: 360 programs a run


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_programs_agree_with_torch(backend, seed):
    failures = run(backend, 1000 + seed, PROGRAMS)
    assert not failures, f"{len(failures)}/{PROGRAMS} programs disagree with torch:\n" + "\n".join(failures[:3])
