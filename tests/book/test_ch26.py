"""Chapter 26's checks accept right answers and refuse the typical wrong ones."""

from __future__ import annotations

import itertools
import math

from burnbook.book import exercises

ex = exercises("26")


def test_predict_a_permutation():
    assert ex[1].verdict(([12, 4, 1], [1, 12, 4], 9)).ok
    assert ex[1].verdict(((12, 4, 1), (1, 12, 4), 9)).ok
    assert "row-major" in ex[1].verdict(([1, 2, 6], [1, 12, 4], 9)).message          # column-major strides
    assert "permute" in ex[1].verdict(([12, 4, 1], [4, 1, 12], 9)).message            # the inverse permutation
    assert "storage cell" in ex[1].verdict(([12, 4, 1], [1, 12, 4], 14)).message      # [1, 0, 2] of the original


def test_predict_a_slice():
    assert ex[2].verdict(([2, 2], [4, 3], 4, [4, 7, 8, 11])).ok
    assert "a step multiplies" in ex[2].verdict(([2, 2], [4, 1], 4, [4, 5, 8, 9])).message
    assert "offset" in ex[2].verdict(([2, 2], [4, 3], 0, [4, 7, 8, 11])).message
    assert "shape" in ex[2].verdict(([2, 1], [4, 3], 4, [4, 8])).message
    assert "row-major" in ex[2].verdict(([2, 2], [4, 3], 4, [4, 8, 7, 11])).message   # column by column


def test_copy_or_view():
    assert ex[3].verdict([12, 12, 12, 6, 6]).ok
    assert "x[1:3].reshape([4, 2]) is not a copy" in ex[3].verdict([12, 12, 8, 6, 6]).message  # the offset misread
    assert "x[:, 1:3].reshape([6]) is not a view" in ex[3].verdict([12, 12, 12, 6, 12]).message
    assert "5 storage sizes" in ex[3].verdict([12, 12, 12]).message


def offsets(shape, strides, offset):
    return [offset + sum(i * s for i, s in zip(index, strides))
            for index in itertools.product(*(range(n) for n in shape))]


def contiguous(shape, strides):
    expected, step = [], 1
    for n in reversed(shape):
        expected.append(step)
        step *= n
    return math.prod(shape) == 0 or all(s == e for s, e, n in zip(strides, reversed(expected), shape) if n != 1)


def column_major(shape, strides, offset):
    return [offset + sum(i * s for i, s in zip(index[::-1], strides[::-1]))
            for index in itertools.product(*(range(n) for n in shape[::-1]))]


def strict(shape, strides):  # size-1 dimensions not skipped
    expected, step = [], 1
    for n in reversed(shape):
        expected.append(step)
        step *= n
    return list(strides) == expected[::-1]


def test_the_offsets_by_hand():
    assert ex[4].verdict((offsets, contiguous)).ok
    assert "row-major" in ex[4].verdict((column_major, contiguous)).message
    assert "offset included" in ex[4].verdict((lambda sh, st, off: offsets(sh, st, 0), contiguous)).message
    assert "size-1 dimension" in ex[4].verdict((offsets, strict)).message
    assert "True or False" in ex[4].verdict((offsets, lambda sh, st: 1)).message
