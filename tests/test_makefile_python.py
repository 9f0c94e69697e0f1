"""`make lab` / `make test` pick an interpreter Taichi 1.7.4 supports (3.10-3.13):
`python3` when it is one, else the newest python3.13 ... python3.10 on PATH,
else they stop with one line naming the range and how to get one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None or sys.version_info[:2] > (3, 13), reason="needs make and a supported Python")


def _bin(tmp_path: Path, python3_version: str | None, others: tuple[str, ...]) -> dict:
    """A PATH holding sh, a stand-in `python3` that reports `python3_version`
    (and fails every script, as an unsupported interpreter does here), and
    links named `others` to this test's own (supported) interpreter."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sh").symlink_to(shutil.which("sh"))
    if python3_version is not None:
        stand_in = bin_dir / "python3"
        stand_in.write_text(
            "#!/bin/sh\n"
            f'if [ "$1" = --version ]; then echo "Python {python3_version}"; exit 0; fi\n'
            f'case "$2" in *version_info*) exec {sys.executable} -c "import sys; sys.exit(1)";; esac\n'
            "exit 1\n")
        stand_in.chmod(0o755)
    for name in others:
        (bin_dir / name).symlink_to(sys.executable)
    return {**os.environ, "PATH": str(bin_dir)}


def _make(env: dict, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in env.items() if k != "PYTHON" and not k.startswith("MAKE")}
    return subprocess.run([MAKE, "-s", "--no-print-directory", "-C", str(ROOT), *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_python3_unsupported_takes_the_newest_supported(tmp_path):
    env = _bin(tmp_path, "3.14.0", ("python3.10", "python3.12"))
    assert _make(env, "which-python").stdout.strip() == "python3.12"


def test_python3_supported_is_taken(tmp_path):
    env = _bin(tmp_path, None, ("python3", "python3.13"))
    assert _make(env, "which-python").stdout.strip() == "python3"


def test_no_supported_python_stops_with_one_clear_line(tmp_path):
    env = _bin(tmp_path, "3.14.0", ())
    venv = tmp_path / "venv"
    result = _make(env, "lab", f"VENV={venv}")
    assert result.returncode != 0
    assert "needs Python 3.10 to 3.13" in result.stderr and "3.14.0" in result.stderr
    assert "PYTHON=python3.12" in result.stderr
    assert not venv.exists()


def test_an_unsupported_python_named_by_hand_is_refused(tmp_path):
    env = _bin(tmp_path, "3.14.0", ("python3.12",))
    venv = tmp_path / "venv"
    result = _make(env, "install", f"VENV={venv}", "PYTHON=python3")
    assert result.returncode != 0 and "PYTHON=python3 is Python 3.14.0" in result.stderr
    assert not venv.exists()
