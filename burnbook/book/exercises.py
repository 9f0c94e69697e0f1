"""Checks for the book's exercises, offline, inside the notebook.

    from burnbook.book import exercises
    ex = exercises("07")        # the checks of chapter 07, by exercise number
    ex[1].check(answer)         # prints "✓ ..." or "not yet: ...", returns True/False
    ex[1].hint()                # the next hint, one more each call

Each chapter's checks live in `burnbook/book/chapters/chNN.py` as a list
`EXERCISES` of `Exercise`; an exercise answered in words is named in
`EXPLAINED` instead (its worked answer sits folded under it in the chapter).
A check never raises for a wrong answer: None, a string, a wrong shape, a
function that raises or loops all get a verdict in words and False.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .judge import AnswerError, describe

__all__ = ["Exercise", "ExerciseSet", "Hint", "Verdict", "exercises"]


class Hint(str):
    """A hint: a str that a notebook shows as plain text (no quotes)."""

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class Verdict:
    """What a check found: `ok`, and the sentence the reader sees."""

    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return self.message


class Exercise:
    """One exercise's check.

    `judge(answer)` returns None when the answer is right, else what is wrong
    in words (it may raise AnswerError with that sentence); `expects` says what
    to pass ("a function f(x) -> tensor"); `hints` go from the idea towards
    the method, never to the answer itself."""

    def __init__(self, chapter: str, number: int, title: str, judge: Callable[[Any], str | None], *,
                 expects: str, hints: tuple[str, ...] | list[str] = ()) -> None:
        if not hints:
            raise ValueError(f"exercise {chapter}.{number} ({title!r}) needs at least one hint")
        self.chapter, self.number, self.title = chapter, number, title
        self.expects, self.hints = expects, tuple(hints)
        self._judge = judge
        self._hints_given = 0

    def verdict(self, answer: Any) -> Verdict:
        """Judge `answer` without printing: a Verdict whose message starts with
        "✓" or "not yet:"."""
        if answer is None or answer is Ellipsis:
            return Verdict(False, f"not yet: there is no answer yet. Pass {self.expects}.")
        try:
            problem = self._judge(answer)
        except AnswerError as err:
            problem = str(err)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as err:  # the checker met an answer it did not foresee
            problem = (f"your answer ({describe(answer)}) could not be checked: "
                       f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}. "
                       f"Pass {self.expects}.")
        if problem is None:
            return Verdict(True, f"✓ {self.chapter}.{self.number} {self.title}: right.")
        problem = problem.rstrip()
        stop = "" if problem.endswith(("?", ".", "!")) else "."
        return Verdict(False, f"not yet: {problem}{stop}\n  hint: {self.hints[0]}"
                       + ("" if len(self.hints) == 1 else f" (ex[{self.number}].hint() for more)"))

    def check(self, answer: Any) -> bool:
        """Print the verdict on `answer` and return whether it is right."""
        verdict = self.verdict(answer)
        print(verdict.message)
        return verdict.ok

    def hint(self) -> Hint:
        """The next hint (the last one again once all are given)."""
        text = self.hints[min(self._hints_given, len(self.hints) - 1)]
        self._hints_given += 1
        return Hint(f"hint {min(self._hints_given, len(self.hints))} of {len(self.hints)}: {text}")

    def __repr__(self) -> str:
        return f"Exercise({self.chapter}.{self.number} {self.title!r}; pass {self.expects})"


class ExerciseSet(Mapping[int, Exercise]):
    """A chapter's checks by exercise number; `explained` names the exercises
    answered in words (their worked answers are folded in the chapter)."""

    def __init__(self, chapter: str, title: str, checks: list[Exercise], explained: Mapping[int, str]) -> None:
        self.chapter, self.title = chapter, title
        self._checks = {e.number: e for e in checks}
        self.explained = dict(explained)

    def __getitem__(self, number: int) -> Exercise:
        if number in self._checks:
            return self._checks[number]
        if number in self.explained:
            raise KeyError(f"exercise {number} of chapter {self.chapter} ({self.explained[number]!r}) is answered "
                           "in words: its worked answer is folded under it in the chapter")
        raise KeyError(f"chapter {self.chapter} has no exercise {number!r}; its checks are "
                       f"{sorted(self._checks)}" + (f", and {sorted(self.explained)} are answered in words"
                                                   if self.explained else ""))

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self._checks))

    def __len__(self) -> int:
        return len(self._checks)

    def __repr__(self) -> str:
        lines = [f"Exercises of chapter {self.chapter} ({self.title}):"]
        for number in sorted({*self._checks, *self.explained}):
            if number in self._checks:
                e = self._checks[number]
                lines.append(f"  ex[{number}] {e.title}: pass {e.expects}")
            else:
                lines.append(f"  {number}. {self.explained[number]}: answered in words (worked answer in the chapter)")
        return "\n".join(lines)


def exercises(chapter: str | int) -> ExerciseSet:
    """The checks of a chapter, by number: `exercises("07")`, `exercises(7)` or
    `exercises("07-autodiff")`."""
    text = str(chapter).strip()
    digits = text.split("-", 1)[0]
    if not digits.isdigit():
        raise ValueError(f"exercises() takes a chapter number such as '07' or 7, not {chapter!r}")
    key = f"{int(digits):02d}"
    try:
        module = importlib.import_module(f"burnbook.book.chapters.ch{key}")
    except ModuleNotFoundError as err:
        if err.name != f"burnbook.book.chapters.ch{key}":
            raise
        raise ValueError(f"there is no chapter {key} with exercises (chapters are numbered 01, 02, ...)") from None
    return ExerciseSet(key, module.TITLE, list(module.EXERCISES), getattr(module, "EXPLAINED", {}))
