"""Chapter 03's checks accept the right answers and refuse the typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook.backend import NdArray
from burnbook.book import exercises
from burnbook.tensor import Tensor

ex = exercises("03")


def test_predict_x_times_two_plus_y():
    x = np.array([[2.0, 3.0], [4.0, 5.0]])
    assert ex[1].verdict(x * 2 + 1).ok
    assert "only x is doubled" in ex[1].verdict((x + 1) * 2).message
    assert "same amount" in ex[1].verdict(x * 2).message  # forgot y
    assert "off at 2 of 4 entries" in ex[1].verdict((x * 2 + 1).T).message


def test_the_wrong_rank():
    assert ex[2].verdict((ValueError, 2, 1)).ok and ex[2].verdict(("ValueError", 2, 1)).ok
    assert "not a TypeError" in ex[2].verdict((TypeError, 2, 1)).message
    assert "data's rank is off" in ex[2].verdict((ValueError, 1, 1)).message
    assert "expected rank is off" in ex[2].verdict((ValueError, 2, 2)).message
    assert "triple" in ex[2].verdict(ValueError).message


def test_add_value():
    def add_value(B, device, values, value):
        x = Tensor[B, 2].from_data(values, device)
        return x + x.ones_like() * value

    def add_ones(B, device, values, value):
        x = Tensor[B, 2].from_data(values, device)
        return x + x.ones_like()

    def on_ndarray(B, device, values, value):
        return add_value(NdArray, NdArray.default_device(), values, value)

    assert ex[3].verdict(add_value).ok
    assert "add_value's result" in ex[3].verdict(add_ones).message
    assert "lives on ndarray" in ex[3].verdict(on_ndarray).message
    assert "return the tensor" in ex[3].verdict(lambda B, d, values, value: np.asarray(values) + value).message


def test_add_row():
    assert ex[4].verdict(lambda x, v: x + v.unsqueeze()).ok
    assert ex[4].verdict(lambda x, v: x + v.reshape([1, -1])).ok
    assert "down each column" in ex[4].verdict(lambda x, v: x + v.unsqueeze_dim(1)).message
    assert "raised ValueError" in ex[4].verdict(lambda x, v: x + v).message
    assert "new to you" in ex[4].verdict(lambda x, v: x + 1.0).message  # right only on the chapter's v
