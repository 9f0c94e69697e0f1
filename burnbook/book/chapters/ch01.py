"""Checks for chapter 01, Overview."""

from __future__ import annotations

import numpy as np

from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, compare, describe

TITLE = "Overview"
_X = np.array([[1.0, 2.0], [3.0, 4.0]])  # the chapter's first tensor
_ROW = np.array([[1.0, 2.0, 3.0]])
# The lines a printed tensor shows, in order (burnbook prints as Burn does).
_LINES = ("data", "shape", "device", "backend", "kind", "dtype")


def _elementwise(answer) -> str | None:
    got = as_array(answer, "your data")
    if got.shape == _X.shape and np.allclose(got, _X @ _X + 1.0):
        return "your data is x.matmul(x) + 1.0, the matrix product; * multiplies element by element"
    return compare(got, _X * _X + 1.0, "your data")


def _row_products(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair (row.matmul(row.transpose()) "
                          "as a [1, 1] matrix, the shape of row.transpose().matmul(row))")
    inner, outer_shape = answer
    inner_value = as_array(inner, "the product row.matmul(row.transpose())")
    if inner_value.ndim != 2:
        return (f"the product row.matmul(row.transpose()) has {inner_value.ndim} dimension(s) as you give it; "
                "a matmul of two matrices is a matrix: pass it as a [1, 1] matrix, e.g. [[...]]")
    problem = compare(inner_value, _ROW @ _ROW.T, "the product row.matmul(row.transpose())")
    if problem:
        return problem
    shape = as_array(outer_shape, "the shape of row.transpose().matmul(row)")
    expected = np.array((_ROW.T @ _ROW).shape)
    problem = compare(shape, expected, "the shape of row.transpose().matmul(row)", kind="int")
    if problem and shape.shape == (2,) and not np.allclose(shape.astype(np.float64), expected):
        return (f"the shape of row.transpose().matmul(row) is not {shape.tolist()}: "
                "which of the two matrices' sizes does a matmul keep?")
    return problem


def _changed_lines(answer) -> str | None:
    if isinstance(answer, str) or not isinstance(answer, (set, frozenset, list, tuple)):
        raise AnswerError(f"your answer is {describe(answer)}; pass a set of line names such as "
                          "{\"shape\", \"kind\"}")
    names = set()
    for name in answer:
        if not isinstance(name, str) or name.strip().strip(":") not in _LINES:
            return f"{name!r} is not a line of a printed tensor; the lines are {', '.join(_LINES)}"
        names.add(name.strip().strip(":"))
    # What the backend decides: where the numbers live and who computes them.
    changed = {"device", "backend"}
    if names == changed:
        return None
    stays = sorted(names - changed)
    if stays:
        return f"the line(s) {', '.join(stays)} print the same on both backends"
    return "one more line names something that depends on the backend"


EXERCISES = [
    Exercise("01", 1, "Element-wise, not matrix", _elementwise,
             expects="the four numbers of `data` as a [2, 2] list, array or tensor",
             hints=("`*` multiplies matching elements; `matmul` sums products of rows and columns.",
                    "Each entry of the result depends on one entry of x only.")),
    Exercise("01", 2, "A row times its transpose", _row_products,
             expects="a pair (row.matmul(row.transpose()) as a [1, 1] matrix, the shape of "
                     "row.transpose().matmul(row) as a list)",
             hints=("A [m, k] matrix times a [k, n] one is [m, n].",
                    "[1, 3] times [3, 1] sums three products; [3, 1] times [1, 3] makes every pairwise product.")),
    Exercise("01", 3, "The same cell on Taichi", _changed_lines,
             expects='a set of the printed line names that change, from {"data", "shape", "device", '
                     '"backend", "kind", "dtype"}',
             hints=("The numbers, their shape and their type are the tensor's; which lines name the machinery?",
                    "Two lines say where the tensor lives and which backend computes it.")),
]
