"""Chapter 06's checks accept the right answers and refuse the typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook import Int, Tensor
from burnbook.backend import NdArray
from burnbook.book import exercises

ex = exercises("06")
VALUES = [[11.0, 21.0, 31.0], [12.0, 22.0, 32.0]]


def test_predict_the_shapes():
    assert ex[1].verdict(([[3, 2], [2, 6], [2, 1], [2, 3]], VALUES)).ok
    assert "keeps the summed dimension" in ex[1].verdict(([[3, 2], [2, 6], [2], [2, 3]], VALUES)).message
    assert "Tensor.cat" in ex[1].verdict(([[3, 2], [4, 3], [2, 1], [2, 3]], VALUES)).message  # cat along dim 0
    assert "reshape" in ex[1].verdict(([[3, 1], [2, 6], [2, 1], [2, 3]], VALUES)).message
    assert "looks transposed" in ex[1].verdict(([[3, 2], [2, 6], [2, 1], [2, 3]], np.array(VALUES).T)).message


def test_integer_division():
    k = Tensor[NdArray, 1, Int].from_ints([-7, 7])
    assert ex[2].verdict(k / 2).ok and ex[2].verdict([-3, 3]).ok
    assert "toward minus infinity" in ex[2].verdict([-4, 3]).message
    assert "halves" in ex[2].verdict([-3.5, 3.5]).message
    assert "opposite sign" in ex[2].verdict([3, -3]).message


def test_scale_rows():
    assert ex[3].verdict(lambda x: (x - x.min_dim(1)) / (x.max_dim(1) - x.min_dim(1))).ok
    def whole(x):
        low, high = x.min().reshape([1, 1]), x.max().reshape([1, 1])
        return (x - low) / (high - low)

    assert "whole matrix" in ex[3].verdict(whole).message
    assert "each column" in ex[3].verdict(lambda x: (x - x.min_dim(0)) / (x.max_dim(0) - x.min_dim(0))).message
    assert "off" in ex[3].verdict(lambda x: (x - x.min_dim(1)) / x.max_dim(1)).message  # divides by the max only


def test_softmax():
    def stable(t, dim):
        e = (t - t.max_dim(dim)).exp()
        return e / e.sum_dim(dim)

    def naive(t, dim):
        return t.exp() / t.exp().sum_dim(dim)

    assert ex[4].verdict(stable).ok
    assert "subtract the maximum first" in ex[4].verdict(naive).message
    assert "input 2 of 5" in ex[4].verdict(lambda t, dim: stable(t, 1)).message  # ignores dim
    assert "has shape [1], where the answer has shape [2, 5]" in ex[4].verdict(lambda t, dim: stable(t, dim).sum()).message
