"""Static checks of the book's notebooks (nbval re-runs them separately):
stored outputs present and error-free, cells executed in order, no absolute
paths, seeds set up front, and each Chinese chapter's code equal to its
English twin."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "notebooks"
EN = sorted((BOOK / "en").glob("*.ipynb"))
ZH = sorted((BOOK / "zh").glob("*.ipynb"))
ABSOLUTE = re.compile(r"(/work/|/home/|/root/|/tmp/[\w.-]+/|[A-Z]:\\\\)")


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb: dict) -> list:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


@pytest.mark.parametrize("path", EN + ZH, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stored_outputs_are_complete_and_in_order(path: Path) -> None:
    cells = [c for c in code_cells(load(path)) if source(c).strip()]
    assert cells, f"{path.name} has no code"
    counts = [c.get("execution_count") for c in cells]
    assert None not in counts, f"{path.name}: a code cell was never executed"
    assert counts == sorted(counts) and len(set(counts)) == len(counts), (
        f"{path.name}: cells were not run top to bottom ({counts})")
    for cell in cells:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", f"{path.name}: stored error in cell {counts[cells.index(cell)]}"


@pytest.mark.parametrize("path", EN + ZH, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_absolute_paths(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    hit = ABSOLUTE.search(text)
    assert hit is None, f"{path.name} holds an absolute path near {text[max(0, hit.start() - 40):hit.end() + 40]!r}"


@pytest.mark.parametrize("path", EN + ZH, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_first_code_cell_seeds_the_random_sources(path: Path) -> None:
    first = source(code_cells(load(path))[0])
    uses_random = any("random" in source(c) or "Distribution" in source(c) or "shuffle" in source(c)
                      for c in code_cells(load(path)))
    if uses_random:
        assert ".seed(" in first, f"{path.name}: the setup cell must seed every random source"


@pytest.mark.parametrize("zh", ZH, ids=lambda p: p.name)
def test_chinese_chapter_has_the_english_code(zh: Path) -> None:
    en = BOOK / "en" / zh.name
    assert en.exists(), f"{zh.name} has no English twin"
    assert [source(c) for c in code_cells(load(zh))] == [source(c) for c in code_cells(load(en))]


SYNCED = ("outputs", "execution_count", "metadata")


@pytest.mark.parametrize("zh", ZH, ids=lambda p: p.name)
def test_chinese_chapter_stores_the_english_outputs(zh: Path) -> None:
    """make test re-runs the English chapters only: a Chinese chapter is
    validated by holding, cell for cell, the code and the stored outputs of
    its English twin (what tools/sync_zh.py copies), so re-running it would
    run the same code on the same inputs a second time."""
    en_nb, zh_nb = load(BOOK / "en" / zh.name), load(zh)
    pairs = list(zip(code_cells(en_nb), code_cells(zh_nb)))
    for i, (a, b) in enumerate(pairs):
        for key in SYNCED:
            assert a.get(key) == b.get(key), (
                f"{zh.name}: code cell {i} differs from the English chapter's in its {key}; "
                f"run .venv/bin/python tools/sync_zh.py {zh.name}")
    assert en_nb["metadata"] == zh_nb["metadata"], f"{zh.name}: notebook metadata differs from the English chapter's"
