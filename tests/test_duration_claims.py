"""Prose that promises a duration is held to the stored outputs it describes.

A reader who is told "this takes a few seconds" and then sees an epoch line
ending in "(54.4 s)" stops believing the page. So every promise of a time in
the book's prose ("in a second", "a few seconds", "in seconds", "well under a
minute", "about 20 seconds", "3 minutes"; in Chinese 一秒, 几秒, 远不到一分钟,
约 20 秒, 3 分钟 ...) is checked against the durations that the code cells
it describes printed: the Learner's "(54.4 s)" per-epoch lines, "done in
61.0 s", "12.3 ms" ... must add up to no more than the phrase allows.

What a claim describes: the rest of the section it stands in, that is the
code cells after it up to the next heading of the same or a higher level. A
claim in a notebook's first cell (under its `# Title`) speaks for the whole
notebook ("the solutions run in seconds"). A claim whose section holds no
printed duration is not checked (nothing on the page contradicts it).

What each phrase allows (generous, but a promise has to mean something):

| phrase | at most |
| --- | --- |
| in / under / within a second, 一秒 | 2 s |
| a few seconds, 几秒, 数秒 | 10 s |
| several seconds | 30 s |
| in seconds | 60 s |
| well under a minute, 远不到一分钟 | 30 s |
| under / less than / within a minute, 不到一分钟, 一分钟内 | 60 s |
| about a minute, a minute or so, 一分钟左右 | 90 s |
| a few minutes, 几分钟 | 600 s |
| about / in / takes N seconds (or N s), 约 N 秒, N 秒 | 1.5 N s |
| under / less than / within N seconds, 不到 N 秒, N 秒内 | N s |
| the same with minutes | the same, times 60 |

Durations written in inline code or code blocks of the markdown are not
claims (they quote an output). Milliseconds and microseconds in prose ("a
few milliseconds of arithmetic", "in microseconds") describe the work, not
the reader's wait, and rates ("images per second", 每秒, 图像/秒) are not
durations: neither is a claim.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

BOOK = Path(__file__).resolve().parents[1] / "notebooks"

# -- what prose promises -------------------------------------------------------------

NUMBER = r"(\d+(?:\.\d+)?)"
# Phrases with a fixed bound, in seconds. "in a second" must not be "in a
# second loop" (the ordinal), so a following lower-case word or code span
# rules it out, unless the word carries on the sentence ("in a second and").
FIXED: list[tuple[re.Pattern, float]] = [
    (re.compile(r"\b(?:in|under|within|takes|take|took) (?:a|one) second\b"
                r"(?!\s+(?!(?:and|or|on|with|here|there|each|per|too|at|for|if|when)\b)[a-z`])", re.I), 2.0),
    (re.compile(r"\b(?:a )?few seconds\b", re.I), 10.0),
    (re.compile(r"\bseveral seconds\b", re.I), 30.0),
    (re.compile(r"\bin seconds\b", re.I), 60.0),
    (re.compile(r"\bwell under a minute\b", re.I), 30.0),
    (re.compile(r"\b(?<!well )(?:under|less than|within|in under) (?:a|one) minute\b", re.I), 60.0),
    (re.compile(r"\b(?:about|around|roughly) (?:a|one) minute\b|\ba minute or so\b", re.I), 90.0),
    (re.compile(r"\b(?:a )?few minutes\b", re.I), 600.0),
    # Chinese: 每秒 and /秒 are rates, 毫秒 and 微秒 not a wait.
    (re.compile(r"(?<![每/毫微纳])一秒"), 2.0),
    (re.compile(r"[几数]秒"), 10.0),
    (re.compile(r"远(?:不到|少于|小于)一分钟"), 30.0),
    (re.compile(r"(?<!远)(?:不到|少于|小于)一分钟|一分钟(?:之)?内"), 60.0),
    (re.compile(r"(?:约|大约|大概)一分钟|一分钟左右"), 90.0),
    (re.compile(r"几分钟"), 600.0),
]
UNIT_EN = r"(?:s|sec|secs|seconds?|(min|mins|minutes?))\b"
# "about 20 seconds", "under 2 minutes", "takes 5 s"; the qualifier says
# whether N is a ceiling (under) or an estimate (about), which gets 1.5x.
NUMERIC_EN = re.compile(
    r"\b(about|around|roughly|approximately|in|takes?|took|under|within|less than|at most)\s+"
    + NUMBER + r"\s*" + UNIT_EN + r"(?![/\w])", re.I)
NUMERIC_ZH = re.compile(r"(不到|少于|小于|约|大约|大概)?\s*" + NUMBER + r"\s*(秒|分钟)(钟)?(内|之内|以内|左右)?(?![/每])")
CEILING = {"under", "within", "less than", "at most", "不到", "少于", "小于", "内", "之内", "以内"}


@dataclass
class Claim:
    phrase: str
    bound_s: float
    at: int          # position in the cell's text, to find its section


def prose(markdown: str) -> str:
    """The markdown without code blocks and inline code (quoted outputs), each
    removed span replaced by spaces so that positions stay valid."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    markdown = re.sub(r"^(```|~~~).*?^\1[^\n]*", blank, markdown, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", blank, markdown)


def claims(markdown: str) -> list[Claim]:
    """Every promise of a duration in one markdown cell, with its bound."""
    text = prose(markdown)
    found: list[Claim] = []
    taken: list[range] = []

    def add(match: re.Match, bound: float) -> None:
        span = range(match.start(), match.end())
        if any(span.start < t.stop and t.start < span.stop for t in taken):
            return  # "well under a minute" is not also "under a minute"
        taken.append(span)
        found.append(Claim(match.group(0).strip(), bound, match.start()))

    for pattern, bound in FIXED:
        for match in pattern.finditer(text):
            add(match, bound)
    for match in NUMERIC_EN.finditer(text):
        qualifier, value, minutes = match.group(1).lower(), float(match.group(2)), match.group(3)
        seconds = value * (60.0 if minutes else 1.0)
        add(match, seconds if qualifier in CEILING else 1.5 * seconds)
    for match in NUMERIC_ZH.finditer(text):
        before, value, unit, after = match.group(1), float(match.group(2)), match.group(3), match.group(5)
        seconds = value * (60.0 if unit == "分钟" else 1.0)
        add(match, seconds if (before in CEILING or after in CEILING) else 1.5 * seconds)
    return sorted(found, key=lambda c: c.at)


# -- what the outputs show ---------------------------------------------------------------

TIME = re.compile(r"(?<![\w.])" + NUMBER + r"\s?(ms|µs|us|s|sec|seconds?|min|minutes?)\b(?![/\w])")
SCALE = {"ms": 1e-3, "µs": 1e-6, "us": 1e-6, "min": 60.0, "minute": 60.0, "minutes": 60.0}


def output_text(cell: dict) -> str:
    """What a reader sees a code cell print: its streams and plain-text results."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append("".join(out.get("text", "")))
        plain = out.get("data", {}).get("text/plain")
        if plain:
            parts.append("".join(plain))
    return "\n".join(parts)


def durations(cell: dict) -> list[float]:
    """The durations, in seconds, that a code cell's stored output shows."""
    return [float(m.group(1)) * SCALE.get(m.group(2), 1.0) for m in TIME.finditer(output_text(cell))]


# -- which outputs a claim describes -----------------------------------------------------

HEADING = re.compile(r"^(#{1,6}) ", re.M)


def headings(cell: dict) -> list[tuple[int, int]]:
    """(position, level) of each heading of a markdown cell."""
    if cell["cell_type"] != "markdown":
        return []
    return [(m.start(), len(m.group(1))) for m in HEADING.finditer(prose("".join(cell["source"])))]


def section_level(cells: list[dict], index: int, at: int) -> int:
    """The level of the heading whose section holds position `at` of cell `index`."""
    own = [level for pos, level in headings(cells[index]) if pos <= at]
    if own:
        return own[-1]
    for cell in reversed(cells[:index]):
        found = headings(cell)
        if found:
            return found[-1][1]
    return 0


def described_cells(cells: list[dict], index: int, at: int) -> list[int]:
    """The code cells a claim at position `at` of cell `index` speaks for."""
    if index == 0:
        return [i for i, c in enumerate(cells) if c["cell_type"] == "code"]
    level = section_level(cells, index, at)
    if any(pos > at and lvl <= level for pos, lvl in headings(cells[index])):
        return []
    described = []
    for i in range(index + 1, len(cells)):
        if any(lvl <= level for _, lvl in headings(cells[i])):
            break
        if cells[i]["cell_type"] == "code":
            described.append(i)
    return described


def problems(nb: dict, where: str) -> list[str]:
    """A line for each claim of `nb` that its stored outputs contradict."""
    cells = nb["cells"]
    found = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        for claim in claims("".join(cell["source"])):
            described = described_cells(cells, index, claim.at)
            shown = {i: durations(cells[i]) for i in described}
            shown = {i: d for i, d in shown.items() if d}
            total = sum(sum(d) for d in shown.values())
            if total > claim.bound_s:
                printed = "; ".join(f"cell {i}: " + " + ".join(f"{s:g} s" for s in d) for i, d in shown.items())
                found.append(f"{where} cell {index}: {claim.phrase!r} allows at most {claim.bound_s:g} s, "
                             f"but the outputs it describes took {total:.1f} s ({printed})")
    return found


# -- the book ----------------------------------------------------------------------------------


def notebooks() -> list[Path]:
    return ([BOOK / "00-index.ipynb"] + sorted((BOOK / "en").glob("*.ipynb"))
            + sorted((BOOK / "zh").glob("*.ipynb")) + sorted((BOOK / "solutions").glob("*.ipynb")))


def test_the_books_duration_claims_hold_for_its_stored_outputs() -> None:
    found = []
    for path in notebooks():
        nb = json.loads(path.read_text(encoding="utf-8"))
        found += problems(nb, f"{path.parent.name}/{path.name}" if path.parent != BOOK else path.name)
    assert not found, (
        f"{len(found)} duration claims that the stored outputs contradict (say what the outputs show: "
        "drop the duration, name the machine, or give a ratio):\n" + "\n".join(found))


def test_the_book_makes_duration_claims_the_checker_sees() -> None:
    """The checker finds the claims the book does make (so a phrase it cannot
    read does not pass silently)."""
    seen = [c.phrase for path in notebooks()
            for cell in json.loads(path.read_text(encoding="utf-8"))["cells"] if cell["cell_type"] == "markdown"
            for c in claims("".join(cell["source"]))]
    assert seen, "no duration claim found anywhere in the book: is the checker reading the prose?"


# -- the checker itself, on made-up notebooks -------------------------------------------------------


def markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def code(printed: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": "fit()", "execution_count": 1,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": printed}]}


EPOCHS = ("epoch 1/3  train: Loss 1.61  valid: Accuracy 76.00 %  (54.4 s)\n"
          "epoch 2/3  train: Loss 0.69  valid: Accuracy 79.00 %  (48.1 s)\n")


def test_checker_fails_a_chapter_that_promises_less_time_than_its_outputs_took() -> None:
    nb = {"cells": [markdown("# A chapter\n\nIntro."),
                     markdown("## Training\n\nEach run takes a few seconds:"),
                     code(EPOCHS),
                     code("INFO burnbook.train: Epoch 1/3 done in 61.0 s: train Loss 1.6\n")]}
    found = problems(nb, "made-up.ipynb")
    assert len(found) == 1, found
    assert "'a few seconds' allows at most 10 s" in found[0] and "163.5 s" in found[0], found[0]


def test_checker_reads_each_phrase_with_its_bound() -> None:
    cases = {
        "Three epochs take well under a minute.": 30.0,
        "It runs in under a minute.": 60.0,
        "The solutions run in seconds.": 60.0,
        "every idea tried in a cell that runs in a second.": 2.0,
        "Each one runs in a second and checks its own answer": 2.0,
        "This takes about 20 seconds on a 2-core machine.": 30.0,
        "Training takes under 2 minutes.": 120.0,
        "each epoch takes about 5 s here": 7.5,
        "在笔记本电脑的 CPU 上用时远不到一分钟。": 30.0,
        "使每次运行只需几秒钟。": 10.0,
        "这大约需要 20 秒。": 30.0,
        "在 3 分钟内跑完。": 180.0,
        "在一个一秒内就能跑完的单元格中尝试": 2.0,
    }
    for text, bound in cases.items():
        found = claims(text)
        assert [c.bound_s for c in found] == [bound], (text, found)


def test_checker_ignores_what_is_not_a_promise_of_time() -> None:
    for text in ("apply the bias and ReLU to `out` in a second loop.",
                 "a second `backward()` gives the second derivative",
                 "named MessagePack is a close second",
                 "with the number of items per second and the time left",
                 "Each step is a few milliseconds of arithmetic.",
                 "the best time of each variant in microseconds",
                 "the Learner prints `(54.4 s)` at the end of the line",
                 "并显示每秒处理的数据项数", "图像/秒", "只有几毫秒的计算", "单位为微秒"):
        assert claims(text) == [], text


def test_checker_reads_only_the_section_a_claim_stands_in() -> None:
    nb = {"cells": [markdown("# A chapter"),
                    markdown("## Quick\n\nThis takes a few seconds:"),
                    code("done (3.1 s)\n"),
                    markdown("More words, same section."),
                    code("done (2.0 s)\n"),
                    markdown("## Long\n\nThe full run is slower."),
                    code("(300.0 s)\n")]}
    assert problems(nb, "made-up.ipynb") == []
    nb["cells"][4] = code("done (9.0 s)\n")
    found = problems(nb, "made-up.ipynb")
    assert len(found) == 1 and "12.1 s" in found[0], found


def test_a_claim_under_the_title_speaks_for_the_whole_notebook() -> None:
    nb = {"cells": [markdown("# Solutions\n\nThey run in seconds without MNIST."),
                    markdown("## Exercise 1"), code("(40.0 s)\n"),
                    markdown("## Exercise 2"), code("(30.0 s)\n")]}
    found = problems(nb, "made-up.ipynb")
    assert len(found) == 1 and "70.0 s" in found[0], found


def test_output_durations_are_read_in_seconds_and_rates_are_not_durations() -> None:
    cell = code("epoch 1/2 (54.4 s)\nstep 12.5 ms, 250 µs\n3,814 images/s, 0.5 s/it, took 2 min\n")
    assert durations(cell) == [54.4, 0.0125, 0.00025, 120.0]
