"""`make lab` and `make test` install burnbook quietly under `pip -q` (issue 31).

setuptools' editable backend warns "Editable installation. ... Please be
careful with folders in your working directory ..." on every editable
install of a project laid out as this one (kernels/ and widgets/ installed
as burnbook.kernels and burnbook.widgets, through a meta path finder), and
pip 26 shows a build backend's warnings even with -q. The Makefile's
PIP_EDITABLE runs pip with a Python warning filter for that one message
(PYTHONWARNINGS, which pip hands to the backend's process).

The check builds an editable wheel of a copy of the project's layout (its
pyproject.toml, empty packages) with setuptools in a fresh process that
records warnings as pip's hook runner does, first without the filter (the
banner must show, or the check proves nothing), then with the Makefile's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("setuptools", reason="setuptools is not installed in this environment")
try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]

# What pyproject_hooks' in-process runner does around a hook: record the
# warnings (under the filters PYTHONWARNINGS set), keep the UserWarnings.
PROBE = """
import json, sys, warnings
from setuptools import build_meta
with warnings.catch_warnings(record=True) as caught:
    build_meta.build_editable(sys.argv[1])
print(json.dumps([str(w.message) for w in caught if issubclass(w.category, UserWarning)]))
"""


def makefile_filter() -> str:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(r'^PIP_EDITABLE\s*=\s*PYTHONWARNINGS="[^"]*?(ignore:[^"]+)"\s*\$\(PIP\) install -q -e\s*$',
                      text, re.MULTILINE)
    assert match, "the Makefile defines no PIP_EDITABLE with a PYTHONWARNINGS filter"
    editable = re.findall(r"^\t.*\binstall\b.*\s-e\s.*$", text, re.MULTILINE)
    unfiltered = [line.strip() for line in editable if "$(PIP_EDITABLE)" not in line]
    assert not unfiltered, f"editable installs without PIP_EDITABLE: {unfiltered}"
    return match.group(1)


def project_copy(tmp_path: Path) -> Path:
    """pyproject.toml and README.md, and every package it lists, empty."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    dirs = config.get("package-dir", {})
    for package in config["packages"]:
        parts = package.split(".")
        for i in range(len(parts), 0, -1):   # the longest mapped prefix decides the folder
            if ".".join(parts[:i]) in dirs:
                folder = Path(dirs[".".join(parts[:i])], *parts[i:])
                break
        else:
            folder = Path(*parts)
        (project / folder).mkdir(parents=True, exist_ok=True)
        (project / folder / "__init__.py").touch()
    return project


def editable_warnings(project: Path, wheels: Path, pythonwarnings: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    if pythonwarnings:
        env["PYTHONWARNINGS"] = pythonwarnings
    wheels.mkdir()
    result = subprocess.run([sys.executable, "-c", PROBE, str(wheels)], cwd=project, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_an_editable_install_shows_no_setuptools_banner(tmp_path):
    project = project_copy(tmp_path)
    banner = [w for w in editable_warnings(project, tmp_path / "plain", None) if "Editable installation" in w]
    assert banner, "setuptools no longer warns on an editable install: PIP_EDITABLE's filter may go"
    quiet = editable_warnings(project, tmp_path / "filtered", makefile_filter())
    assert quiet == [], f"the Makefile's filter leaves these backend warnings: {quiet}"
