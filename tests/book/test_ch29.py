"""Chapter 29's checks accept right answers and refuse the typical wrong ones."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.book import exercises
from burnbook.tensor import activation

ex = exercises("29")


def test_shape():
    assert ex[1].verdict([8, 4, 13, 13]).ok
    assert "shape has 3 sizes" in ex[1].verdict([8, 13, 13]).message          # heads forgotten
    assert "off at" in ex[1].verdict([8, 13, 13, 4]).message


def test_causal_mask():
    assert ex[2].verdict(lambda s: np.triu(np.ones((s, s), dtype=bool), k=1)).ok
    diagonal = ex[2].verdict(lambda s: np.triu(np.ones((s, s), dtype=bool))).message   # masks itself too
    assert "off at" in diagonal
    assert "off at" in ex[2].verdict(lambda s: np.tril(np.ones((s, s), dtype=bool), k=-1)).message  # transposed
    assert "int values, where bool" in ex[2].verdict(lambda s: np.triu(np.ones((s, s), dtype=int), k=1)).message


def _attention(scale=True, masked=True, dim=3):
    def attention(q, k, v, mask):
        d = q.dims()[-1]
        scores = q.matmul(k.swap_dims(2, 3))
        if scale:
            scores = scores.div_scalar(float(np.sqrt(d)))
        if masked:
            seq = mask.dims()[0]
            scores = scores.mask_fill(mask.reshape([1, 1, seq, seq]), -1.0e9)
        return activation.softmax(scores, dim).matmul(v)
    return attention


def test_attention():
    assert ex[3].verdict(_attention()).ok
    for wrong in (_attention(scale=False), _attention(masked=False), _attention(dim=2)):
        verdict = ex[3].verdict(wrong)
        assert not verdict.ok and "your attention's result" in verdict.message


@pytest.mark.parametrize("solve, words", [
    (lambda p: np.sort(p[:, :6], axis=1), None),
    (lambda p: p[:, :6][:, ::-1], "sorts"),                       # reversed, not sorted
    (lambda p: np.sort(p[:, :6], axis=1)[:, :5], "returned shape [200, 5]"),
])
def test_sort(solve, words):
    verdict = ex[5].verdict(solve)
    assert verdict.ok is (words is None)
    if words:
        assert words in verdict.message
