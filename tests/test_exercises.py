"""Every chapter ends with graded exercises, and every exercise has a solution
that runs.

The format a chapter follows (en and zh alike):

- its last `## ` heading is `## Exercises` (zh: `## 练习`), in a markdown cell;
- that section holds 3 to 6 exercises, each starting on its own line with a
  bold number and a grade, e.g. `**1. ★ Predict the shape.**`, where the grade
  is ★ (change this and predict), ★★ (modify) or ★★★ (a small build);
- it links its solutions notebook, `../solutions/NN-<chapter>.ipynb`, which
  exists, has been executed (every code cell carries its stored outputs; nbval
  checks them in `make test`) and names each exercise by its number.

All chapters are checked at once and every problem is reported together, so
a run lists whatever is still missing across the book.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

BOOK = Path(__file__).resolve().parents[1] / "notebooks"
SOLUTIONS = BOOK / "solutions"
HEADING = {"en": "## Exercises", "zh": "## 练习"}
EXERCISE = re.compile(r"^\*\*(\d+)\.\s*(★+)\s", re.MULTILINE)
SECTION = re.compile(r"^## ", re.MULTILINE)


def chapters(lang: str) -> list[Path]:
    return sorted(p for p in (BOOK / lang).glob("[0-9][0-9]-*.ipynb") if int(p.name[:2]) >= 1)


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def exercise_section(nb: dict) -> str | None:
    """The text after the chapter's last `## ` heading, heading included."""
    markdown = "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    starts = [m.start() for m in SECTION.finditer(markdown)]
    return markdown[starts[-1]:] if starts else None


def chapter_problems(path: Path, lang: str) -> list[str]:
    where = f"{lang}/{path.name}"
    section = exercise_section(load(path))
    heading = HEADING[lang]
    if section is None or section.splitlines()[0].strip() != heading:
        last = section.splitlines()[0].strip() if section else "no `## ` heading"
        return [f"{where}: does not end with {heading!r} (its last section is {last!r})"]
    problems = []
    found = EXERCISE.findall(section)
    numbers = [int(n) for n, _ in found]
    if not 3 <= len(found) <= 6:
        problems.append(f"{where}: {heading} holds {len(found)} exercises, not 3-6 "
                        "(each starts with a line like `**1. ★ ...`)")
    elif numbers != list(range(1, len(found) + 1)):
        problems.append(f"{where}: exercises are numbered {numbers}, not 1..{len(found)}")
    bad = [n for n, stars in found if len(stars) > 3]
    if bad:
        problems.append(f"{where}: exercises {bad} are graded above ★★★")
    link = f"../solutions/{path.name}"
    if f"]({link})" not in section:
        problems.append(f"{where}: {heading} does not link its solutions notebook {link}")
    return problems


def solution_problems(name: str, count: int) -> list[str]:
    path = SOLUTIONS / name
    if not path.is_file():
        return [f"solutions/{name}: missing"]
    nb = load(path)
    problems = []
    unrun = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
             and c["source"] and c.get("execution_count") is None]
    if unrun:
        problems.append(f"solutions/{name}: code cells {unrun} have no stored outputs (execute it)")
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    missing = [n for n in range(1, count + 1) if not re.search(rf"^#+ .*\b{n}\b", text, re.MULTILINE)]
    if missing:
        problems.append(f"solutions/{name}: no heading for exercises {missing}")
    return problems


def test_every_chapter_ends_with_graded_exercises_linking_a_run_solutions_notebook() -> None:
    problems = []
    for lang in HEADING:
        for path in chapters(lang):
            problems += chapter_problems(path, lang)
    for path in chapters("en"):
        section = exercise_section(load(path)) or ""
        problems += solution_problems(path.name, max(len(EXERCISE.findall(section)), 1))
    assert not problems, f"{len(problems)} exercise problems:\n" + "\n".join(problems)


def test_en_and_zh_chapters_pose_the_same_exercises() -> None:
    mismatched = []
    for path in chapters("zh"):
        en = BOOK / "en" / path.name
        if not en.is_file():
            continue
        grades = {lang: [s for _, s in EXERCISE.findall(exercise_section(load(p)) or "")]
                  for lang, p in (("en", en), ("zh", path))}
        if grades["en"] != grades["zh"]:
            mismatched.append(f"{path.name}: en grades {grades['en']}, zh grades {grades['zh']}")
    assert not mismatched, "zh exercises differ from en:\n" + "\n".join(mismatched)
