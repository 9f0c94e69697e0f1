"""Checks for chapter 03, Getting Started."""

from __future__ import annotations

import numpy as np

from burnbook.backend import NdArray, Taichi, TaichiDevice
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe
from burnbook.tensor import Tensor

TITLE = "Getting Started"
_X = np.array([[2.0, 3.0], [4.0, 5.0]])  # x of *A first program*; y is ones_like(x)


def _predict(answer) -> str | None:
    got = as_array(answer, "your data")
    if got.shape == _X.shape and np.allclose(got, (_X + 1.0) * 2.0):
        return "your data is (x + y) * 2.0: * binds tighter than +, so only x is doubled"
    return compare(got, _X * 2.0 + np.ones_like(_X), "your data")


def _wrong_rank(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 3:
        raise AnswerError(f"your answer is {describe(answer)}; pass a triple (the exception type, "
                          "the data's rank, the expected rank), e.g. (TypeError, 3, 2)")
    kind, data_rank, expected_rank = answer
    data = [[1.0, 2.0]]
    try:
        Tensor[NdArray, 1].from_data(data, NdArray.default_device())
        raised: type | None = None
    except Exception as err:  # what the library really raises is the reference
        raised = type(err)
    name = kind if isinstance(kind, str) else getattr(kind, "__name__", None)
    if not isinstance(name, str):
        return f"the exception type is {describe(kind)}; pass the class (e.g. TypeError) or its name"
    if raised is None or name.strip() != raised.__name__:
        return f"it is not a {name.strip()} that is raised"
    return (compare(data_rank, np.ndim(data), "the data's rank")
            or compare(expected_rank, 1, "the expected rank"))


def _add_value(answer) -> str | None:
    cases = (([[2.0, 3.0], [4.0, 5.0]], 10.0), ([[1.0, -1.0, 0.5]], -2.5), ([[0.0], [7.0], [-3.0]], 0.25))
    backends = [(NdArray, NdArray.default_device()) for _ in cases] + [(Taichi, TaichiDevice.cpu())]
    for i, (B, device) in enumerate(backends):
        values, value = cases[i % len(cases)]
        on = f"on {B.name()} with values {values} and value {value}"
        got = call_reader(answer, B, device, values, value, what="your add_value", on=on, timeout=30.0)
        if not hasattr(got, "to_numpy"):
            return f"your add_value returned {describe(got)} {on}; return the tensor"
        if got.backend is not B:
            return f"your add_value's result {on} lives on {got.backend.name()}: build it on the backend B it is given"
        problem = compare(got, np.asarray(values) + value, f"your add_value's result {on}")
        if problem:
            return problem
    return None


def _add_row(answer) -> str | None:
    device = NdArray.default_device()
    cases = ([[2.0, 3.0], [4.0, 5.0]], [1.0, 1.0]), ([[1.0, 2.0], [3.0, 4.0]], [10.0, 20.0]), \
        ([[0.0, 1.0, 2.0, 3.0]] * 3, [1.0, -1.0, 0.5, 2.0]), ([[5.0], [6.0]], [-5.0])
    for i, (rows, v) in enumerate(cases):
        on = f"on x of shape {list(np.shape(rows))} and v of shape [{len(v)}]" + (" (new to you)" if i else "")
        x = Tensor[NdArray, 2].from_data(rows, device)
        got = call_reader(answer, x, Tensor[NdArray, 1].from_data(v, device), what="your add_row", on=on)
        result = as_array(got, f"your add_row's result {on}")
        a, b = np.asarray(rows), np.asarray(v)
        problem = compare(result, a + b[None, :], f"your add_row's result {on}")
        if problem and result.shape == a.shape and a.shape[0] == b.size and np.allclose(result, a + b[:, None]):
            return f"your add_row adds v down each column {on}: v must become a row, [1, n], not a column"
        if problem:
            return problem
    return None


EXERCISES = [
    Exercise("03", 1, "Predict x * 2.0 + y", _predict,
             expects="the printed data as a [2, 2] list, array or tensor",
             hints=("Multiplication comes before addition, as in arithmetic.",
                    "Every element of x doubled, then the matching element of y (a one) added.")),
    Exercise("03", 2, "The wrong rank", _wrong_rank,
             expects="a triple (the exception type, the data's rank, the rank Tensor[B, 1] expects)",
             hints=("Tensor[B, 1] promises a rank; count the brackets of [[1.0, 2.0]].",
                    "It is the same kind of error the chapter prints for x + v.")),
    Exercise("03", 3, "A generic add_value", _add_value,
             expects="a function add_value(B, device, values, value) that returns the tensor",
             hints=("Take B and device as arguments and build the tensor with Tensor[B, 2].from_data(values, device).",
                    "x.ones_like() * value (or x.full_like(value)) is a tensor of the right shape full of value.")),
    Exercise("03", 4, "Add a row to every row", _add_row,
             expects="a function add_row(x, v) for a rank-2 x [m, n] and a rank-1 v [n] that returns x with v "
                     "added to each row",
             hints=("The ranks must match before + works: give v a dimension of size 1.",
                    "unsqueeze() puts the new dimension first: [n] becomes [1, n], which broadcasts over rows.")),
]
