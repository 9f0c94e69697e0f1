"""The distribution installs `burnbook.kernels` and `burnbook.widgets` from a
wheel (not only from the editable checkout), and never a bare `kernels`."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True, capture_output=True, text=True,
    )
    (whl,) = out.glob("burnbook-*.whl")
    return whl


def test_wheel_maps_kernels_and_widgets_under_burnbook(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "burnbook/kernels/__init__.py" in names
    assert "burnbook/widgets/__init__.py" in names
    assert not any(n.startswith(("kernels/", "widgets/")) for n in names)


def test_wheel_holds_every_subpackage(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for init in (ROOT / "burnbook").rglob("__init__.py"):
        rel = init.relative_to(ROOT).as_posix()
        assert rel in names, f"{rel} is missing from the wheel: add it to pyproject's packages"


def test_wheel_imports_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
        check=True, capture_output=True, text=True,
    )
    code = (
        "import burnbook, burnbook.kernels, burnbook.widgets;"
        "print(burnbook.__file__); print(burnbook.kernels.__file__)"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True)
    for line in res.stdout.split():
        assert line.startswith(str(site)), res.stdout
