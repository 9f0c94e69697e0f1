"""Every notebook stores the metadata a kernel reports on opening, so
JupyterLab does not mark a chapter unsaved the moment it opens it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").rglob("*.ipynb"))
# What ipykernel reports in its kernel_info reply (language_info), version aside.
LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                 "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                 "pygments_lexer": "ipython3"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_metadata_is_complete(path):
    meta = json.loads(path.read_text(encoding="utf-8"))["metadata"]
    info = meta.get("language_info", {})
    missing = {k: v for k, v in LANGUAGE_INFO.items() if info.get(k) != v}
    assert not missing, f"{path.name}: language_info lacks or differs in {sorted(missing)}"
    assert str(info.get("version", "")).startswith("3."), f"{path.name}: language_info has no Python version"
    assert meta.get("kernelspec", {}).get("name") == "python3", f"{path.name}: kernelspec is not python3"


def test_there_are_notebooks():
    assert len(NOTEBOOKS) > 50
