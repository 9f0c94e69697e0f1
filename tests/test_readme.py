"""The README's chapter table lists every chapter, en and zh, each linking a
notebook that exists; the Chinese titles follow the glossary."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| (\d\d) \| \[[^\]]+\]\((notebooks/en/[^)]+)\) \| \[([^\]]+)\]\((notebooks/zh/[^)]+)\) \|$")


def _rows() -> dict[str, tuple[str, str, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return {m[1]: (m[2], m[3], m[4]) for line in text.splitlines() if (m := ROW.match(line))}


def test_every_chapter_is_in_the_table():
    chapters = {p.name[:2] for p in (ROOT / "notebooks" / "en").glob("[0-9][0-9]-*.ipynb")}
    rows = _rows()
    assert chapters and sorted(rows) == sorted(chapters), f"README's table lacks {sorted(chapters - set(rows))}"
    for number, (en, _, zh) in rows.items():
        assert (ROOT / en).is_file() and (ROOT / zh).is_file(), f"chapter {number}: {en} or {zh} does not exist"


def test_chinese_titles_follow_the_glossary():
    glossary = (ROOT / "notebooks" / "zh" / "GLOSSARY.md").read_text(encoding="utf-8")
    block = glossary.split("```forbidden", 1)[1].split("```", 1)[0]
    rules = [line.split("=>") for line in block.strip().splitlines() if "=>" in line]
    for number, (_, title, _) in _rows().items():
        for pattern, preferred in rules:
            assert not re.search(pattern.strip(), title), f"chapter {number}'s zh title {title!r}: use {preferred.strip()}"
