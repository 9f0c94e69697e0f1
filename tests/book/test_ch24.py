"""Chapter 24's checks accept right answers and refuse the typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook.book import exercises

ex = exercises("24")


def stats(compiled=1, executed=1, fused_ops=0, lanes=0):
    return {"compiled": compiled, "executed": executed, "fused_ops": fused_ops, "lanes": lanes}


def test_who_gets_written():
    assert ex[1].verdict(({"z"}, {"a", "z"})).ok
    assert ex[1].verdict((["z"], ("z", "a"))).ok
    assert "'y' is not written" in ex[1].verdict(({"z", "y"}, {"a", "z"})).message
    assert "missing" in ex[1].verdict(({"z"}, {"z"})).message
    assert "set of variable names" in ex[1].verdict(("z", {"a", "z"})).message


def test_the_48_operation_limit():
    assert ex[2].verdict((stats(fused_ops=48), 12)).ok
    assert ex[2].verdict((stats(compiled=0, fused_ops=48), 12)).ok          # the kernel was cached already
    assert "executed" in ex[2].verdict((stats(executed=0, compiled=0), 60)).message  # nothing runs until read
    assert "fused_ops" in ex[2].verdict((stats(fused_ops=60), 0)).message
    assert "recorded additions" in ex[2].verdict((stats(fused_ops=48), 60)).message
    assert "keys" in ex[2].verdict(({"executed": 1}, 12)).message
    assert ex[2].verdict(({**stats(fused_ops=48), "rows": 0}, 12)).ok             # a later counter is ignored


def test_count_the_work():
    assert ex[3].verdict((stats(fused_ops=11, lanes=1), 11)).ok
    assert "fused_ops" in ex[3].verdict((stats(fused_ops=10, lanes=1), 11)).message  # the sum left out
    assert "lanes" in ex[3].verdict((stats(fused_ops=11, lanes=0), 11)).message
    assert "executed" in ex[3].verdict((stats(executed=2, fused_ops=11, lanes=1), 11)).message
    assert "unfused passes" in ex[3].verdict((stats(fused_ops=11, lanes=1), 1)).message
    assert "unfused passes" in ex[3].verdict((stats(fused_ops=11, lanes=1), 10)).message


def test_an_error_in_the_middle():
    h = np.exp(np.arange(6, dtype=np.float32).reshape(2, 3) / 6 * np.array([[0.5, -1.0, 2.0]], np.float32))
    error = ValueError("mul: shapes [2, 3] and [3, 2] do not broadcast")
    quiet = stats(compiled=0, executed=0)
    assert ex[4].verdict((error, quiet, h)).ok
    assert "TypeError" in ex[4].verdict((TypeError("[2, 3] and [3, 2]"), quiet, h)).message
    assert "counters moved" in ex[4].verdict((error, stats(), h)).message        # h read in between
    assert "counters moved" in ex[4].verdict((error, {**quiet, "rows": 1}, h)).message
    assert "your h" in ex[4].verdict((error, quiet, h * np.ones([2, 3]) * 2)).message
    assert "both shapes" in ex[4].verdict((ValueError("something else"), quiet, h)).message
