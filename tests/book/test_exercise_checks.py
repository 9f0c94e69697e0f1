"""The book's exercise checks (`burnbook.book.exercises`), across every chapter:

- every numbered exercise of every chapter (en, as the format test reads it)
  has a check in `burnbook/book/chapters/chNN.py`, or is named in `EXPLAINED`
  and has a folded worked answer (`<details>`) in the chapter, en and zh;
- every check answers garbage (None, a string, a wrong-shaped tensor, a
  function that raises) with "not yet" and False, never an exception;
- the solutions notebook calls each check on its solution (nbval then proves
  the check prints ✓ on it), and the chapter has a check cell for each.

Per-chapter tests (tests/book/test_chNN.py) show each check refusing the
typical wrong answers of its exercise.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from burnbook.book import exercises
from burnbook.book.exercises import Verdict

BOOK = Path(__file__).resolve().parents[2] / "notebooks"
EXERCISE = re.compile(r"^\*\*(\d+)\.\s*(★+)\s", re.MULTILINE)
CHAPTERS = sorted(p.name for p in (BOOK / "en").glob("[0-9][0-9]-*.ipynb") if int(p.name[:2]) >= 1)


def _cells(path: Path, kind: str) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == kind]


def _exercise_section(path: Path) -> str:
    markdown = "\n\n".join(_cells(path, "markdown"))
    return markdown[[m.start() for m in re.finditer(r"^## ", markdown, re.MULTILINE)][-1]:]


def _raises(*args):
    raise RuntimeError("a reader's function that fails")


def _garbage() -> list:
    from burnbook.backend import NdArray
    from burnbook.tensor import Tensor
    return [None, "an answer", 12345.0, np.zeros((7, 7, 7)), Tensor[NdArray, 3].zeros([7, 1, 5]), _raises,
            [1, [2, 3]], {"a": 1}]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_exercise_is_checked_or_explained(chapter):
    ex = exercises(chapter[:2])
    numbers = [int(n) for n, _ in EXERCISE.findall(_exercise_section(BOOK / "en" / chapter))]
    assert numbers, f"{chapter}: no exercises found"
    for n in numbers:
        assert (n in ex) != (n in ex.explained), \
            f"{chapter}: exercise {n} needs a check or an EXPLAINED entry (exactly one)"
    assert set(ex) | set(ex.explained) == set(numbers), \
        f"{chapter}: checks/explained {sorted(set(ex) | set(ex.explained))} vs exercises {numbers}"
    for lang in ("en", "zh"):
        section = _exercise_section(BOOK / lang / chapter)
        folded = section.count("<details")
        assert folded >= len(ex.explained), \
            f"{lang}/{chapter}: {len(ex.explained)} exercises answered in words, {folded} folded worked answers"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_check_answers_garbage_with_a_verdict(chapter, capsys):
    ex = exercises(chapter[:2])
    for number, check in ex.items():
        for answer in _garbage():
            verdict = check.verdict(answer)
            assert isinstance(verdict, Verdict) and not verdict.ok, \
                f"{chapter} ex[{number}] accepted {answer!r}"
            assert verdict.message.startswith("not yet:"), verdict.message
        assert check.check(None) is False
        assert "not yet" in capsys.readouterr().out


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_chapter_and_its_solutions_call_every_check(chapter):
    ex = exercises(chapter[:2])
    if not len(ex):
        return
    solutions = "\n".join(_cells(BOOK / "solutions" / chapter, "code"))
    assert f'exercises("{chapter[:2]}")' in solutions, f"solutions/{chapter} never loads its checks"
    for lang in ("en", "zh"):
        code = "\n".join(_cells(BOOK / lang / chapter, "code"))
        assert f'exercises("{chapter[:2]}")' in code, f"{lang}/{chapter} has no check cell"
        for number in ex:
            assert re.search(rf"ex\[{number}\]\.check\(", code), f"{lang}/{chapter}: no ex[{number}].check cell"
    for number in ex:
        assert re.search(rf"assert ex\[{number}\]\.check\(", solutions), \
            f"solutions/{chapter}: exercise {number}'s solution is not checked (assert ex[{number}].check(...))"


def test_hints_come_one_at_a_time_and_stop_at_the_last():
    check = exercises("07")[1]
    first, second, third = check.hint(), check.hint(), check.hint()
    assert first.startswith("hint 1 of") and second.startswith("hint 2 of") and third == second
    assert repr(first) == str(first)  # shown without quotes in a notebook


def test_unknown_chapters_and_exercises_are_named():
    with pytest.raises(ValueError, match="no chapter 99"):
        exercises("99")
    with pytest.raises(ValueError, match="chapter number"):
        exercises("autodiff")
    with pytest.raises(KeyError, match="no exercise 42"):
        exercises(7)[42]
