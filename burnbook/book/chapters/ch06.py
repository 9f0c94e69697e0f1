"""Checks for chapter 06, Tensor."""

from __future__ import annotations

import numpy as np

from burnbook import Tensor
from burnbook.backend import NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, compare_function, describe

TITLE = "Tensor"
_X = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])  # x of *Operations*, [2, 3]


def _shapes(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair (the four shapes, col + row's values)")
    shapes, values = answer
    if isinstance(shapes, str) or not isinstance(shapes, (list, tuple)) or len(shapes) != 4:
        return ("the first of your pair should list four shapes: reshape, cat, sum_dim and col + row; "
                f"it is {describe(shapes)}")
    col, row = np.array([[1.0], [2.0]]), np.array([[10.0, 20.0, 30.0]])
    expected = [_X.reshape(3, -1).shape, np.concatenate([_X, _X], 1).shape, _X.sum(1, keepdims=True).shape,
                (col + row).shape]
    names = ("x.reshape([3, -1])", "Tensor.cat([x, y], 1)", "x.sum_dim(1)", "col + row")
    for given, right, name in zip(shapes, expected, names):
        got = as_array(given, f"the shape of {name}")
        if name == "x.sum_dim(1)" and got.shape == (1,) and got[0] == right[0]:
            return "the shape of x.sum_dim(1): sum_dim keeps the summed dimension, with size 1"
        problem = compare(got, list(right), f"the shape of {name}", kind="int")
        if problem:
            return problem
    return compare(values, col + row, "the values of col + row")


def _int_division(answer) -> str | None:
    got = as_array(answer, "your k / 2")
    k = np.array([-7, 7])
    if got.shape == k.shape and np.allclose(got, k / 2):
        return "your k / 2 has halves: k is an Int tensor, and Int division gives integers"
    if got.shape == k.shape and np.array_equal(got, k // 2):
        return "your k / 2 rounds as Python's //, toward minus infinity; burnbook divides Ints the Rust way"
    return compare(got, np.trunc(k / 2), "your k / 2")


def _tensor(values: np.ndarray):
    def build():
        return (Tensor[NdArray, len(values.shape)].from_floats(values.tolist()),)
    return build


def _scale_rows(answer) -> str | None:
    rng = np.random.default_rng(6)
    inputs = [_X, rng.normal(size=(4, 5)), np.array([[0.5, 2.0, -1.0, 4.0]]), rng.uniform(-3, 3, size=(3, 2))]

    def reference(x):
        a = x.to_numpy().astype(np.float64)
        low, high = a.min(1, keepdims=True), a.max(1, keepdims=True)
        return (a - low) / (high - low)

    problem = compare_function(answer, reference, [_tensor(v) for v in inputs], what="your scale_rows",
                               rtol=1e-4, atol=1e-5)
    if problem:
        got = as_array(call_reader(answer, _tensor(_X)()[0], what="your scale_rows"))
        whole = (_X - _X.min()) / (_X.max() - _X.min())
        if got.shape == _X.shape and np.allclose(got, whole, atol=1e-5):
            return "your scale_rows scales with the whole matrix's min and max, not each row's"
        by_column = (_X - _X.min(0)) / (_X.max(0) - _X.min(0))
        if got.shape == _X.shape and np.allclose(got, by_column, atol=1e-5):
            return "your scale_rows scales each column (min_dim(0)), not each row"
    return problem


def _softmax(answer) -> str | None:
    rng = np.random.default_rng(16)
    cases = [(np.array([[-2.0, -0.5, 0.0, 0.5, 2.0], [1000.0, 1001.0, 1002.0, 0.0, 0.0]]), 1),
             (rng.normal(size=(3, 4)), 0), (rng.normal(size=(2, 3, 4)) * 5.0, 2), (rng.normal(size=(2, 3, 4)), 1),
             (np.array([[-1000.0, -1001.0], [0.0, 3.0]]), 1)]

    def reference(t, dim):
        a = t.to_numpy().astype(np.float64)
        e = np.exp(a - a.max(dim, keepdims=True))
        return e / e.sum(dim, keepdims=True)

    def build(values, dim):
        return lambda: (_tensor(values)()[0], dim)

    problem = compare_function(answer, reference, [build(v, d) for v, d in cases], what="your softmax",
                               rtol=1e-4, atol=1e-6)
    return problem and (problem + (" (exp of 1000 overflows: subtract the maximum first)" if "NaN" in problem else ""))


EXERCISES = [
    Exercise("06", 1, "Predict the shapes", _shapes,
             expects="a pair ([the four shapes, each a list], the values of col + row)",
             hints=("reshape keeps the number of elements; cat adds sizes along its dim; sum_dim keeps its dim.",
                    "Broadcasting stretches each dimension of size 1 to the other tensor's size.")),
    Exercise("06", 2, "Integer division", _int_division,
             expects="the values of k / 2, a list, array or Int tensor",
             hints=("Int / Int stays an Int: the result has to be rounded one way or another.",
                    "burnbook follows Rust here, and Rust's integer division rounds toward zero.")),
    Exercise("06", 3, "Scale each row to [0, 1]", _scale_rows,
             expects="a function scale_rows(x) for a rank-2 x that returns each row scaled to [0, 1]",
             hints=("min_dim(1) and max_dim(1) give one number per row, as a [rows, 1] column.",
                    "A [rows, 1] column broadcasts over the columns: (x - low) / (high - low).")),
    Exercise("06", 4, "Softmax from primitives", _softmax,
             expects="a function softmax(t, dim) for a tensor t of any rank",
             hints=("softmax(t) = exp(t) / sum(exp(t)) along dim; sum_dim keeps the dimension, so it broadcasts.",
                    "Subtract max_dim(dim) before exp: it cancels in the division and keeps exp finite.")),
]
