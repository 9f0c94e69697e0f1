"""A training process killed in epoch 3 (SIGKILL, no cleanup) resumes from
the checkpoint of epoch 2 and ends with exactly the weights of a run that
was never interrupted: model, Adam state, scheduler, data order and the
backend's random generator (the model has dropout) restored."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, expect_ok: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "tests.train.resume_script", *args], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    if expect_ok:
        assert result.returncode == 0, result.stderr[-3000:]
    return result


def logs(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): p.read_text() for p in sorted(directory.rglob("*.log"))
            if p.name != "experiment.log"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("resume")
    full, crashed = base / "full", base / "crashed"
    run(str(full), str(base / "full.npz"), "full")
    killed = run(str(crashed), str(base / "crash.npz"), "crash", expect_ok=False)
    assert killed.returncode != 0, "the crash run should have been killed"
    state = {"full": full, "crashed": crashed, "base": base,
             "after_kill": sorted(p.name for p in (crashed / "checkpoint").iterdir())}
    no_rng = base / "no-rng"
    shutil.copytree(crashed, no_rng)
    (no_rng / "checkpoint" / "rng-2.mpk.gz").unlink()
    run(str(crashed), str(base / "resumed.npz"), "resume", "2")
    run(str(no_rng), str(base / "no-rng.npz"), "resume", "2")
    return state


def test_the_killed_run_left_epoch_2_checkpoints_only(runs):
    assert runs["after_kill"] == ["model-1.mpk.gz", "model-2.mpk.gz", "optim-1.mpk.gz", "optim-2.mpk.gz",
                                  "rng-1.mpk.gz", "rng-2.mpk.gz", "scheduler-1.mpk.gz", "scheduler-2.mpk.gz"]
    assert not (runs["base"] / "crash.npz").exists()


def test_resumed_weights_equal_the_uninterrupted_run_bit_for_bit(runs):
    full, resumed = np.load(runs["base"] / "full.npz"), np.load(runs["base"] / "resumed.npz")
    assert sorted(full.files) == sorted(resumed.files)
    for name in full.files:
        assert np.array_equal(full[name], resumed[name]), name


def test_resumed_logs_and_checkpoints_match_the_uninterrupted_run(runs):
    full, resumed = logs(runs["full"]), logs(runs["crashed"])
    assert full.keys() == resumed.keys()
    for key in full:  # epochs 1-2 from the killed run, 3-4 from the resumed one (epoch 3 rewritten)
        assert full[key] == resumed[key], key
    names = sorted(p.name for p in (runs["crashed"] / "checkpoint").iterdir())
    assert names == sorted(p.name for p in (runs["full"] / "checkpoint").iterdir())
    text = (runs["crashed"] / "experiment.log").read_text()
    assert "Resumed from the checkpoint of epoch 2" in text


def test_without_the_random_state_the_dropout_masks_differ(runs):
    """The control: the same resume without rng-2 draws other dropout masks,
    so the exact match above is due to the restored generator."""
    full, resumed = np.load(runs["base"] / "full.npz"), np.load(runs["base"] / "no-rng.npz")
    assert any(not np.array_equal(full[name], resumed[name]) for name in full.files)
    assert "No random-generator checkpoint for epoch 2" in (runs["base"] / "no-rng" / "experiment.log").read_text()
