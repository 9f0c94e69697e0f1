"""The Chinese edition speaks one vocabulary: notebooks/zh/GLOSSARY.md lists
the book's terms with one Chinese rendering each, its "forbidden variants"
block maps the renderings it replaces to the preferred one, and every zh
chapter's markdown avoids those variants and follows the glossary's spacing
rule (one space between Han and Latin text, none next to full-width
punctuation). Code, math and link targets are not prose and are not checked."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import pytest

ZH = Path(__file__).resolve().parents[1] / "notebooks" / "zh"
GLOSSARY = ZH / "GLOSSARY.md"

HAN = r"[\u3400-\u4dbf\u4e00-\u9fff]"
LATIN = r"[A-Za-z0-9`$]"
FULL_WIDTH = "，。：；！？、（）“”"
FENCE = re.compile(r"^(```|~~~)[^\n]*\n.*?^\1[^\n]*$", re.S | re.M)
INLINE_CODE = re.compile(r"(`+).+?\1", re.S)
MATH = re.compile(r"\$\$.+?\$\$|\$(?!\$)[^$]+?\$", re.S)
LINK_TARGET = re.compile(r"\]\([^)]*\)")
HTML_TAG = re.compile(r"<[A-Za-z/][^>]*>")
URL = re.compile(r"https?://[^\s)）]+")
GLOSS = re.compile(rf"(?<={HAN})（[A-Za-z][A-Za-z .\-]*）")  # 学习器（Learner）: an explicit English gloss


def prose(markdown: str) -> str:
    """The markdown with code, math, link targets, tags and URLs reduced to
    placeholders that keep their edges (`x`, $x$), so spacing around them
    can still be checked."""
    text = FENCE.sub("", markdown)
    text = INLINE_CODE.sub("`x`", text)
    text = MATH.sub("$x$", text)
    text = LINK_TARGET.sub("]", text)
    text = HTML_TAG.sub("", text)
    return URL.sub("url", text)


def glossary_rows() -> list[tuple[str, str, str]]:
    text = GLOSSARY.read_text(encoding="utf-8")
    section = text.split("## 术语", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 3 and cells[0] not in ("English", "---"):
            rows.append((cells[0], cells[1], cells[2]))
    return rows


def forbidden() -> list[tuple[re.Pattern, str]]:
    text = GLOSSARY.read_text(encoding="utf-8")
    block = re.search(r"```forbidden\n(.*?)```", text, re.S)
    assert block, f"{GLOSSARY.name} has no ```forbidden block"
    rules = []
    for line in block.group(1).splitlines():
        if line.strip():
            pattern, _, preferred = line.rpartition(" => ")
            assert pattern and preferred, f"{GLOSSARY.name}: not 'regex => preferred': {line!r}"
            rules.append((re.compile(pattern), preferred.strip()))
    return rules


@lru_cache(maxsize=1)
def zh_markdown() -> tuple[tuple[str, int, str], ...]:
    """(file, cell index, markdown) for every zh chapter; a .md chapter is one cell."""
    cells = []
    for path in sorted(ZH.glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        cells += [(path.name, i, "".join(c["source"]))
                  for i, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown"]
    cells += [(p.name, 0, p.read_text(encoding="utf-8")) for p in sorted(ZH.glob("*.md")) if p != GLOSSARY]
    return tuple(cells)


def excerpt(text: str, start: int, end: int) -> str:
    return text[max(0, start - 12):end + 12].replace("\n", " ")


def variant_problems(name: str, cell: int, markdown: str, rules: list[tuple[re.Pattern, str]]) -> list[str]:
    text = GLOSS.sub("", prose(markdown))
    return [f"{name} cell {cell}: {m.group(0)!r} in {excerpt(text, m.start(), m.end())!r}; write {preferred!r}"
            for pattern, preferred in rules for m in pattern.finditer(text)]


def spacing_problems(name: str, cell: int, markdown: str) -> list[str]:
    text = prose(markdown)
    problems = []
    # emphasis markers are not characters: **burnbook** 在 is spaced correctly
    bare = text.replace("*", "")
    for m in re.finditer(rf"{HAN}{LATIN}|[A-Za-z0-9`$%]{HAN}", bare):
        problems.append(f"{name} cell {cell}: no space in {excerpt(bare, m.start(), m.end())!r} "
                        "(one space between Han and Latin text)")
    for m in re.finditer(rf"[{FULL_WIDTH}] +{LATIN}|[A-Za-z0-9`$%] +[{FULL_WIDTH}]", text):
        problems.append(f"{name} cell {cell}: space next to full-width punctuation in "
                        f"{excerpt(text, m.start(), m.end())!r}")
    # between two CJK characters nothing, not even a soft line break, which renders as a space
    cjk = rf"(?:{HAN}|[{FULL_WIDTH}])"
    for m in re.finditer(rf"{cjk}(?: +|[ ]*\n[ ]*){cjk}", text):
        line = text[:m.start()].rsplit("\n", 1)[-1].lstrip()
        if not line.startswith(("#", "|")):
            problems.append(f"{name} cell {cell}: a space or line break between CJK characters in "
                            f"{excerpt(text, m.start(), m.end())!r} (join the lines)")
    return problems


def test_glossary_has_forty_terms_with_one_rendering_each() -> None:
    rows = glossary_rows()
    assert len(rows) >= 40, f"{GLOSSARY.name} has {len(rows)} terms; the book wants at least 40"
    english = [r[0] for r in rows]
    assert len(set(english)) == len(english), f"terms listed twice: {sorted({e for e in english if english.count(e) > 1})}"
    empty = [r[0] for r in rows if not r[1]]
    assert not empty, f"terms without a Chinese rendering: {empty}"


def test_every_preferred_term_is_in_the_table() -> None:
    renderings = " ".join(r[1] for r in glossary_rows())
    missing = sorted({p for _, p in forbidden() if p not in renderings})
    assert not missing, f"{GLOSSARY.name}: forbidden variants point at terms not in the table: {missing}"


def test_forbidden_patterns_catch_what_they_name() -> None:
    """Each rule flags its own variant and leaves the preferred word alone."""
    rules = forbidden()
    for sample, bad in [("每个epoch打印一行", True), ("每个轮次打印一行", False),
                        ("在笔记本电脑上", False), ("在笔记本中", True),
                        ("重启 Jupyter 内核", False), ("Taichi 内核", True),
                        ("512 个隐藏单元", False), ("64 个单元", False), ("设置单元", True),
                        ("`Learner`", False), ("学习器（Learner）", False), ("Learner 在训练", True)]:
        found = variant_problems("sample", 0, sample, rules)
        assert bool(found) == bad, (sample, found)


def test_spacing_check_catches_what_it_names() -> None:
    assert spacing_problems("s", 0, "在Python中")
    assert spacing_problems("s", 0, "调用`backward()`之后")
    assert spacing_problems("s", 0, "训练3个轮次")
    assert spacing_problems("s", 0, "， Python")
    assert spacing_problems("s", 0, "每个进程\n一个接一个")
    assert spacing_problems("s", 0, "每个 轮次")
    assert not spacing_problems("s", 0, "## 标题\n正文")
    assert not spacing_problems("s", 0, "**burnbook** 在 Python 中训练 3 个轮次，调用 `backward()` 之后（`f16` 浮点数）")
    assert not spacing_problems("s", 0, "```\nmake lab\n```\n代码块不检查")


@pytest.mark.parametrize("check", ["variants", "spacing"])
def test_zh_chapters_follow_the_glossary(check: str) -> None:
    rules = forbidden()
    problems = []
    for name, cell, markdown in zh_markdown():
        if check == "variants":
            problems += variant_problems(name, cell, markdown, rules)
        else:
            problems += spacing_problems(name, cell, markdown)
    shown = "\n".join(problems[:40]) + (f"\n... and {len(problems) - 40} more" if len(problems) > 40 else "")
    assert not problems, f"{len(problems)} places in notebooks/zh do not follow {GLOSSARY.name}:\n{shown}"
