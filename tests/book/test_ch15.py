"""Chapter 15's checks accept the right answers and refuse typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook.book import exercises
from burnbook.record import RecordError

ex = exercises("15")


def test_file_sizes():
    params = 10 * 128 + 128 + 128 * 2 + 2
    assert ex[1].verdict((params, 4 * params + 336, 2 * params + 336)).ok
    assert ex[1].verdict((params, 7000, 3668)).ok  # "about": within a few bytes of overhead
    assert "biases" in ex[1].verdict((10 * 128 + 128 * 2, 7000, 3668)).message
    assert "values only" in ex[1].verdict((params, 4 * params, 2 * params)).message
    assert "about 2 bytes" in ex[1].verdict((params, 4 * params + 336, 4 * params + 336)).message


def test_half_precision_bound():
    assert ex[2].verdict(lambda w: np.abs(w).max() * 2.0 ** -11).ok
    assert "f32" in ex[2].verdict(lambda w: np.abs(w).max() * 2.0 ** -24).message
    assert "not 10" in ex[2].verdict(lambda w: np.abs(w).max() * 2.0 ** -10).message
    assert "mean" in ex[2].verdict(lambda w: np.abs(w).mean() * 2.0 ** -11).message
    assert "has shape [10, 64]" in ex[2].verdict(lambda w: np.abs(w) * 2.0 ** -11).message  # one bound per entry


def test_edit_a_json_record():
    assert ex[3].verdict((RecordError, 1.5)).ok and ex[3].verdict(("RecordError", 1.5)).ok
    assert "does not load" in ex[3].verdict(("none", 1.5)).message
    assert "own error" in ex[3].verdict((ValueError, 1.5)).message
    assert "weight[0, 0]" in ex[3].verdict((RecordError, 0.25)).message


def record_diff(a, b, skip_shapes=False, relative=False, only_weights=False):
    left, right = a.flatten(), b.flatten()
    out = {}
    for path in sorted(set(left) | set(right)):
        if only_weights and not path.endswith("weight"):
            continue
        x, y = left[path].data.to_numpy(), right[path].data.to_numpy()
        if x.shape != y.shape:
            if not skip_shapes:
                out[path] = None
        elif not np.array_equal(x, y):
            d = np.abs(x.astype(np.float64) - y)
            out[path] = float((d / np.abs(y).max()).max() if relative else d.max())
    return out


def test_record_diff():
    assert ex[4].verdict(record_diff).ok
    assert "misses" in ex[4].verdict(lambda a, b: record_diff(a, b, skip_shapes=True)).message
    assert "misses" in ex[4].verdict(lambda a, b: record_diff(a, b, only_weights=True)).message
    assert "largest absolute" in ex[4].verdict(lambda a, b: record_diff(a, b, relative=True)).message
    assert "return a dict" in ex[4].verdict(lambda a, b: list(record_diff(a, b))).message
