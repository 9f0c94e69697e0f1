"""Chapter 05's checks accept the right answers and refuse the typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook import Tensor
from burnbook.backend import NdArray, base
from burnbook.book import exercises
from burnbook.tensor import Distribution, activation

ex = exercises("05")


def test_one_seed_two_draws_leaves_the_readers_generator_alone():
    NdArray.seed(7)
    expected = Tensor[NdArray, 1].random([3], Distribution.Default).to_numpy()
    NdArray.seed(7)
    assert ex[1].verdict((False, True)).ok
    assert np.array_equal(Tensor[NdArray, 1].random([3], Distribution.Default).to_numpy(), expected)
    assert "does the second draw restart" in ex[1].verdict((True, True)).message
    assert "where does each backend draw" in ex[1].verdict((False, False)).message
    assert "True or False" in ex[1].verdict(("no", "yes")).message


def test_which_kinds_have_exp():
    lowers = [op for op in base.ALL_OPS if op.endswith("_lower")]
    assert ex[2].verdict((["float_exp"], lowers)).ok and ex[2].verdict(({"float_exp"}, lowers[::-1])).ok
    assert "does not have" in ex[2].verdict((["float_exp", "int_exp"], lowers)).message
    assert "misses 1" in ex[2].verdict((["float_exp"], ["float_lower"])).message
    assert "does not end in _exp" in ex[2].verdict((["float_exp", "float_expand"], lowers)).message
    assert "list of operation names" in ex[2].verdict(("float_exp", lowers)).message


def _dense(relu=False, transposed=False):
    def dense_sigmoid(B, device):
        x = Tensor[B, 2].from_floats([[1.0, -2.0], [3.0, 0.5]], device)
        w = Tensor[B, 2].from_floats([[0.5, -1.0], [1.5, 2.0]], device)
        b = Tensor[B, 2].from_floats([[0.1, -0.2]], device)
        z = (w.matmul(x) if transposed else x.matmul(w)) + b
        return activation.sigmoid(activation.relu(z) if relu else z)
    return dense_sigmoid


def test_dense_sigmoid():
    assert ex[3].verdict(_dense()).ok
    assert "still applies relu" in ex[3].verdict(_dense(relu=True)).message
    assert "off at" in ex[3].verdict(_dense(transposed=True)).message
    assert "lives on ndarray" in ex[3].verdict(lambda B, device: _dense()(NdArray, NdArray.default_device())).message


def _counting(scalar_too=False, forwards=True):
    class Counting(NdArray):
        calls = 0

        @classmethod
        def float_add(cls, lhs, rhs):
            cls.calls += 1
            return super().float_add(lhs, rhs if forwards else lhs)

        if scalar_too:
            @classmethod
            def float_add_scalar(cls, lhs, rhs):
                cls.calls += 1
                return super().float_add_scalar(lhs, rhs)
    return Counting


def test_counting_backend():
    counting = _counting()
    counting.calls = 5
    assert ex[4].verdict((counting, 2)).ok and counting.calls == 5  # the reader's counter is left alone
    assert "which of + x and + 1.0" in ex[4].verdict((counting, 3)).message
    assert "only float_add's own calls" in ex[4].verdict((_counting(scalar_too=True), 3)).message
    assert "return what it returns" in ex[4].verdict((_counting(forwards=False), 2)).message
    assert "the class itself" in ex[4].verdict((counting(), 2)).message
    assert "its own float_add" in ex[4].verdict((NdArray, 2)).message
