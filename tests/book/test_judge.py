"""The judge's words for typical wrong answers: a missing factor, an
off-by-one, a transposed matrix, NaN, the wrong kind of number, a function
that raises or never returns."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.book.judge import AnswerError, as_array, call_reader, compare, compare_function


def test_right_answers_pass_in_any_container():
    from burnbook.backend import NdArray
    from burnbook.tensor import Tensor
    assert compare([1.0, 2.0], [1.0, 2.0]) is None
    assert compare(np.array([1.0, 2.0]), [1.0, 2.0]) is None
    assert compare(Tensor[NdArray, 1].from_floats([1.0, 2.0], NdArray.default_device()), [1.0, 2.0]) is None
    assert compare(3.0, [3.0]) is None


@pytest.mark.parametrize("got, words", [
    ([2.0, 4.0, 6.0], "same factor"),
    ([2.0, 3.0, 4.0], "same amount"),
    ([-1.0, -2.0, -3.0], "opposite sign"),
    ([1.0, 2.0, 9.0], "off at 1 of 3 entries (the first at index [2])"),
    ([1.0, 2.0], "shape [2], where the answer has shape [3]"),
    ([1.0, float("nan"), 3.0], "NaN"),
])
def test_wrong_answers_are_described_without_the_answer(got, words):
    problem = compare(got, [1.0, 2.0, 3.0])
    assert words in problem
    assert "1.0, 2.0, 3.0" not in problem


def test_transposed_and_kind():
    assert "transposed" in compare(np.ones((3, 2)), np.ones((2, 3)))
    assert "float values, where int" in compare([1.0, 2.0], np.array([1, 2]), kind="int")


def test_non_numbers_are_named():
    with pytest.raises(AnswerError, match="a str"):
        as_array("seven")
    with pytest.raises(AnswerError, match="regular grid"):
        as_array([1, [2, 3]])


def test_reader_functions_that_fail():
    with pytest.raises(AnswerError, match="raised ZeroDivisionError"):
        call_reader(lambda: 1 / 0)
    with pytest.raises(AnswerError, match="should be a function"):
        call_reader(3)

    def forever():
        while True:
            pass
    with pytest.raises(AnswerError, match="ran for over 0.2 s"):
        call_reader(forever, timeout=0.2)


def test_functions_are_tried_on_inputs_the_reader_did_not_see():
    inputs = [(np.array([1.0, 2.0]),), (np.array([-1.0, 5.0]),)]
    problem = compare_function(lambda x: np.abs(x), lambda x: x, inputs, what="f")
    assert "input 2 of 2" in problem
    assert compare_function(lambda x: x * 1.0, lambda x: x, inputs) is None


def test_kept_random_state_puts_the_readers_generator_back():
    from burnbook.backend import Autodiff, NdArray
    from burnbook.book.judge import kept_random_state
    from burnbook.tensor import Distribution, Tensor
    B = Autodiff[NdArray]
    B.seed(5)
    expected = Tensor[B, 1].random([3], Distribution.Default).to_numpy()
    B.seed(5)
    with kept_random_state(NdArray):
        Tensor[B, 1].random([4], Distribution.Default)  # advances the reader's generator in place
        B.seed(0)
        Tensor[B, 1].random([4], Distribution.Default)
    assert np.array_equal(Tensor[B, 1].random([3], Distribution.Default).to_numpy(), expected)
