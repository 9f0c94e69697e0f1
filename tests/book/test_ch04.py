"""Chapter 04's checks accept the right answers and refuse the typical wrong ones."""

from __future__ import annotations

import math

import numpy as np

from burnbook.book import exercises

ex = exercises("04")


def test_shapes_with_5x5_kernels():
    assert ex[1].verdict(([2, 8, 24, 24], [2, 16, 20, 20], [2, 16, 8, 8], False)).ok
    assert "3 x 3 kernels" in ex[1].verdict(([2, 8, 26, 26], [2, 16, 24, 24], [2, 16, 8, 8], False)).message
    assert "after conv2" in ex[1].verdict(([2, 8, 24, 24], [2, 16, 19, 19], [2, 16, 8, 8], False)).message
    assert "pooling layer" in ex[1].verdict(([2, 8, 24, 24], [2, 16, 20, 20], [2, 16, 5, 5], False)).message
    assert "depend on the kernels" in ex[1].verdict(([2, 8, 24, 24], [2, 16, 20, 20], [2, 16, 8, 8], True)).message


def test_parameter_count():
    def count(hidden, bias=True):
        layers = [(1 * 3 * 3, 8), (8 * 3 * 3, 16), (16 * 8 * 8, hidden), (hidden, 10)]
        return sum(d_in * d_out + (d_out if bias else 0) for d_in, d_out in layers)
    assert ex[2].verdict(count(256)).ok
    assert "hidden_size=512" in ex[2].verdict(count(512)).message
    assert "not the biases" in ex[2].verdict(count(256, bias=False)).message
    assert "off" in ex[2].verdict(count(256) + 1).message


def test_untrained_loss():
    assert ex[3].verdict(math.log(10)).ok and ex[3].verdict(2.307).ok
    assert "probability" in ex[3].verdict(0.1).message
    assert "guesses every class equally" in ex[3].verdict(math.log2(10)).message
    assert "guesses every class equally" in ex[3].verdict(0.0).message


def _confusion(transposed=False, classes=10):
    def confusion(predicted, targets):
        counts = np.zeros((classes, classes), dtype=np.int64)
        p, t = predicted.to_numpy(), targets.to_numpy()
        np.add.at(counts, (p, t) if transposed else (t, p), 1)
        return counts
    return confusion


def test_confusion_matrix():
    assert ex[4].verdict(_confusion()).ok
    assert "rows and columns swapped" in ex[4].verdict(_confusion(transposed=True)).message
    assert "shape [3, 3]" in ex[4].verdict(_confusion(classes=3)).message
    assert "raised IndexError" in ex[4].verdict(_confusion(classes=2)).message
    diagonal_only = lambda p, t: np.diag(np.bincount(t.to_numpy()[p.to_numpy() == t.to_numpy()], minlength=10))
    assert "your table on 4 digits is off" in ex[4].verdict(diagonal_only).message
