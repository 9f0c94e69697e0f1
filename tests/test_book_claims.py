"""Claims the book's prose makes about itself, checked against the files:
chapter 01's reading order names every chapter; each chapter's title is the
one the index gives it; no reader-visible code carries test-harness markers;
no chapter changes into a language-specific folder; no stored output shows
the Taichi banner chapter 05 says burnbook suppresses; and the chapters that
prose sends the reader to for a topic do show it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "notebooks"
INDEX_ROW = re.compile(r"^\| (\d\d) \| \[([^\]]+)\]\((en/[^)]+)\) \| \[([^\]]+)\]\((zh/[^)]+)\) \|", re.M)
HEADINGS = {"en": "## How the book is organised", "zh": "## 本书的组织方式"}


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def chapters(lang: str) -> list[Path]:
    return sorted((BOOK / lang).glob("[0-9][0-9]-*.ipynb"))


def every_chapter() -> list[Path]:
    return chapters("en") + chapters("zh")


def index_titles() -> dict[str, tuple[str, str]]:
    """Chapter number -> (English title, Chinese title) as the index lists them."""
    text = "\n".join("".join(c["source"]) for c in cells(BOOK / "00-index.ipynb") if c["cell_type"] == "markdown")
    return {m.group(1): (m.group(2), m.group(4)) for m in INDEX_ROW.finditer(text)}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reading_order_names_every_chapter(lang: str) -> None:
    """Chapter 01 says in which order to read the book: every chapter file
    that exists, in either language, has its number in that list."""
    overview = next(p for p in chapters(lang) if p.name.startswith("01-"))
    section = [("".join(c["source"])) for c in cells(overview)
               if c["cell_type"] == "markdown" and "".join(c["source"]).startswith(HEADINGS[lang])]
    assert len(section) == 1, f"{lang}/{overview.name}: no cell starting with {HEADINGS[lang]!r}"
    named = set(re.findall(r"[(（](\d\d)[)）]", section[0]))
    existing = {p.name[:2] for p in every_chapter()}
    missing = sorted(existing - named)
    assert not missing, f"{lang}/{overview.name}'s reading order does not name chapters {missing}"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_chapter_titles_match_the_index(lang: str) -> None:
    titles = index_titles()
    wrong = []
    for path in chapters(lang):
        first = "".join(cells(path)[0]["source"]).splitlines()[0]
        expected = titles.get(path.name[:2], (None, None))[0 if lang == "en" else 1]
        if first != f"# {expected}":
            wrong.append(f"{lang}/{path.name}: {first!r}, index: {expected!r}")
    assert not wrong, "chapter titles differ from notebooks/00-index.ipynb:\n" + "\n".join(wrong)


def test_no_test_markers_in_reader_code() -> None:
    """nbval's directives go in cell tags (`nbval-ignore-output`), where a
    reader does not see them, not in comments inside the code."""
    marker = re.compile(r"^\s*#\s*(NBVAL_[A-Z_]+|PYTEST_VALIDATE_IGNORE_OUTPUT)\b", re.M)
    found = [f"{p.parent.name}/{p.name} cell {i}: {m.group(1)}"
             for p in every_chapter() + sorted((BOOK / "solutions").glob("*.ipynb")) for i, c in enumerate(cells(p))
             if c["cell_type"] == "code" for m in marker.finditer("".join(c["source"]))]
    assert not found, "test markers in reader code; use the cell's tags instead:\n" + "\n".join(found)


def test_no_chapter_changes_into_one_language_folder() -> None:
    """The zh chapters run the en code cells, so code that names `en` or `zh`
    as a folder would send a Chinese reader into the English book."""
    pattern = re.compile(r"""chdir\([^)]*["'](en|zh)["']""")
    found = [f"{p.parent.name}/{p.name} cell {i}"
             for p in every_chapter() for i, c in enumerate(cells(p))
             if c["cell_type"] == "code" and pattern.search("".join(c["source"]))]
    assert not found, f"chapters change into a language folder: {found}"


def outputs_text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append("".join(out.get("text", "")))
        parts += ["".join(v) if isinstance(v, list) else str(v) for v in out.get("data", {}).values()]
    return "\n".join(parts)


def test_taichi_banner_is_never_shown() -> None:
    """Chapter 05 says burnbook imports Taichi without its version banner and
    hides `ti.init`'s arch line, so a cell shows only what its code prints."""
    shown = [f"{p.parent.name}/{p.name} cell {i}"
             for p in every_chapter() for i, c in enumerate(cells(p)) if c["cell_type"] == "code"
             if re.search(r"\[Taichi\] (version|Starting on arch)", outputs_text(c))]
    assert not shown, f"Taichi's banner appears in stored outputs: {shown}"


def code_of(number: str) -> str:
    path = next(p for p in chapters("en") if p.name.startswith(f"{number}-"))
    return "\n".join("".join(c["source"]) for c in cells(path) if c["cell_type"] == "code")


def test_chapters_show_what_the_learner_chapter_defers_to_them() -> None:
    """Chapter 12 sends the reader to the custom-training-loop chapter (17)
    for what gradient accumulation does underneath: chapter 17 runs it."""
    assert "GradientsAccumulator" in code_of("17")


def test_relu_is_one_graph_node_as_chapter_07_says() -> None:
    """Chapter 07 says `relu` is a backend operation (one node) and `mean` is
    composed of `sum` and `div_scalar`: its stored graph shows exactly that."""
    path = next(p for p in chapters("en") if p.name.startswith("07-"))
    graph = next(outputs_text(c) for c in cells(path)
                 if c["cell_type"] == "code" and "show_graph(loss)" in "".join(c["source"]))
    ops = re.findall(r"= (\w+)\(", graph)
    assert "relu" in ops and "mask_fill" not in ops, ops
    assert ops[-2:] == ["sum", "div_scalar"], ops


def heading_levels(path: Path) -> list[int]:
    text = "\n".join("".join(c["source"]) for c in cells(path) if c["cell_type"] == "markdown")
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)
    return [len(m.group(1)) for m in re.finditer(r"^(#{1,6}) ", text, re.M)]


def test_zh_chapters_have_the_english_sections() -> None:
    """A translation that lost a section (or kept one the English dropped)
    shows as a different sequence of heading levels."""
    differ = []
    for zh in chapters("zh"):
        en = BOOK / "en" / zh.name
        if en.exists() and heading_levels(en) != heading_levels(zh):
            differ.append(f"{zh.name}: en {heading_levels(en)}, zh {heading_levels(zh)}")
    assert not differ, "zh chapters whose sections differ from the English:\n" + "\n".join(differ)


def test_momentum_first_step_as_chapter_10_says() -> None:
    """Chapter 10: the first step sets v1 = g1 (no dampening), so momentum's
    first step equals plain SGD's, and later steps follow
    v_t = mu v_{t-1} + (1 - d) g_t. Replayed here on w^2 from w = 1 with
    lr 0.1 and Burn's defaults, against the chapter's stored trajectories."""
    path = next(p for p in chapters("en") if p.name.startswith("10-"))
    rows = {}
    for c in cells(path):
        if c["cell_type"] == "code":
            for line in outputs_text(c).splitlines():
                name, _, values = line.partition("  ")
                if name.strip() in ("sgd", "momentum") and values.split():
                    rows[name.strip()] = [float(v) for v in values.split()]
    assert {"sgd", "momentum"} <= set(rows), f"{path.name}: no sgd/momentum trajectories in the outputs"
    lr, mu, d, w, v = 0.1, 0.9, 0.1, 1.0, None
    expected = []
    for _ in range(len(rows["momentum"])):
        g = 2.0 * w
        v = g if v is None else mu * v + (1.0 - d) * g
        w -= lr * v
        expected.append(w)
    assert rows["momentum"][0] == rows["sgd"][0]
    assert rows["momentum"] == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reading_order_follows_the_index(lang: str) -> None:
    """Chapter 01's reading order and the index list the chapters they share
    in the same order (the index is the table of contents)."""
    overview = next(p for p in chapters(lang) if p.name.startswith("01-"))
    section = next("".join(c["source"]) for c in cells(overview)
                   if c["cell_type"] == "markdown" and "".join(c["source"]).startswith(HEADINGS[lang]))
    text = "\n".join("".join(c["source"]) for c in cells(BOOK / "00-index.ipynb") if c["cell_type"] == "markdown")
    index_order = [m.group(1) for m in INDEX_ROW.finditer(text)]
    overview_order = list(dict.fromkeys(re.findall(r"[(（](\d\d)[)）]", section)))
    shared = set(index_order) & set(overview_order)
    assert [n for n in overview_order if n in shared] == [n for n in index_order if n in shared], (
        f"{lang}/{overview.name} reads {overview_order}, the index {index_order}")
