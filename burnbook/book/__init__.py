"""The book's own helpers: checks for each chapter's exercises.

`exercises("07")[1].check(answer)` judges a reader's answer offline, inside
the notebook (see `burnbook.book.exercises`)."""

from .exercises import Exercise, ExerciseSet, Hint, Verdict, exercises

__all__ = ["Exercise", "ExerciseSet", "Hint", "Verdict", "exercises"]
