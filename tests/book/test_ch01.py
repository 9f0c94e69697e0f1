"""Chapter 01's checks accept the right answers and refuse the typical wrong ones."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.backend import NdArray
from burnbook.book import exercises
from burnbook.tensor import Tensor

ex = exercises("01")
X = np.array([[1.0, 2.0], [3.0, 4.0]])


def test_elementwise_product():
    right = Tensor[NdArray, 2].from_floats(X.tolist()) * Tensor[NdArray, 2].from_floats(X.tolist()) + 1.0
    assert ex[1].verdict(right).ok and ex[1].verdict((X ** 2 + 1).tolist()).ok
    assert "matrix product" in ex[1].verdict(X @ X + 1).message
    assert "same amount" in ex[1].verdict(X ** 2).message  # forgot the + 1.0
    assert "arranged differently" in ex[1].verdict([[2.0, 5.0, 10.0, 17.0]]).message  # one row of four


def test_row_times_its_transpose():
    row = np.array([[1.0, 2.0, 3.0]])
    assert ex[2].verdict((row @ row.T, [3, 3])).ok
    assert ex[2].verdict((Tensor[NdArray, 2].from_floats([[14.0]]), (3, 3))).ok
    assert "[1, 1] matrix" in ex[2].verdict((14.0, [3, 3])).message  # a number, not a matrix
    assert "off" in ex[2].verdict(([[6.0]], [3, 3])).message  # summed the row instead of its squares
    assert "shape of row.transpose().matmul(row)" in ex[2].verdict(([[14.0]], [1, 1])).message
    assert "pair" in ex[2].verdict([[14.0]]).message


@pytest.mark.parametrize("wrong, words", [
    ({"device"}, "one more line"),
    ({"device", "backend", "data"}, "data print the same"),
    ({"backend", "dtype"}, "dtype print the same"),
    ({"device", "colour"}, "not a line"),
    ("device backend", "set of line names"),
])
def test_the_lines_that_change_on_taichi(wrong, words):
    assert ex[3].verdict({"device", "backend"}).ok and ex[3].verdict(["backend", "device:"]).ok
    verdict = ex[3].verdict(wrong)
    assert not verdict.ok and words in verdict.message, verdict.message
