"""The book's table of contents, notebooks/00-index.ipynb: it links every
English chapter, its links point at files that exist (a Chinese chapter not
translated yet is the one allowed gap), chapters appear in reading order with
English and Chinese side by side, and every Chinese chapter has an English
twin. The chapters' own contents are checked by tests/test_notebooks.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

BOOK = Path(__file__).resolve().parents[1] / "notebooks"
INDEX = BOOK / "00-index.ipynb"
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
ROW = re.compile(r"^\|.*\|\s*$", re.MULTILINE)


def index_markdown() -> str:
    nb = json.loads(INDEX.read_text(encoding="utf-8"))
    return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def file_links() -> list[str]:
    """Every link target of the index that is not a web address, in order."""
    return [target for _, target in LINK.findall(index_markdown())
            if not re.match(r"[a-z]+://", target) and not target.startswith("#")]


def chapters(lang: str) -> list[Path]:
    return sorted((BOOK / lang).glob("*.ipynb"))


def test_index_links_every_english_chapter() -> None:
    linked = {(INDEX.parent / target).resolve() for target in file_links()}
    missing = [p.name for p in chapters("en") if p.resolve() not in linked]
    assert not missing, f"{INDEX.name} does not link these English chapters: {missing}"


def test_every_index_link_resolves() -> None:
    broken = []
    for target in file_links():
        path = (INDEX.parent / target).resolve()
        if path.is_file():
            continue
        parts = Path(target).parts
        # A Chinese chapter may be linked before it is translated, but only
        # under the name of an English chapter that exists.
        if len(parts) == 2 and parts[0] == "zh" and (BOOK / "en" / parts[1]).is_file():
            continue
        broken.append(target)
    assert not broken, f"{INDEX.name} links files that do not exist: {broken}"


def test_index_rows_pair_each_english_chapter_with_its_chinese_twin_in_reading_order() -> None:
    rows = [row for row in ROW.findall(index_markdown()) if LINK.search(row)]
    assert rows, f"{INDEX.name} has no table rows with links"
    stems = []
    for row in rows:
        targets = [t for _, t in LINK.findall(row)]
        langs = [Path(t).parts[0] for t in targets]
        names = {Path(t).name for t in targets}
        assert langs == ["en", "zh"] and len(names) == 1, (
            f"{INDEX.name}: row {row.strip()!r} should link en/<chapter> then zh/<same chapter>")
        stems.append(names.pop())
    numbers = [int(stem.split("-", 1)[0]) for stem in stems]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), (
        f"{INDEX.name}: chapters are not listed once each in reading order: {stems}")


def test_every_chinese_chapter_has_an_english_twin_and_is_linked() -> None:
    links = set(file_links())
    orphans = [p.name for p in chapters("zh") if not (BOOK / "en" / p.name).is_file()]
    assert not orphans, f"Chinese chapters without an English twin in notebooks/en/: {orphans}"
    unlinked = [p.name for p in chapters("zh") if f"zh/{p.name}" not in links]
    assert not unlinked, f"{INDEX.name} does not link these Chinese chapters: {unlinked}"
