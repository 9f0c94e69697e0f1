"""The helper thread that runs the second half of split work (burnbook/_helper_thread.py)."""

from __future__ import annotations

import multiprocessing
import threading

import pytest

from burnbook import _helper_thread


def test_both_runs_the_second_half_on_the_helper_and_returns_both() -> None:
    names = {}
    got = _helper_thread.both(lambda: names.setdefault("first", threading.current_thread().name) and 1,
                     lambda: names.setdefault("second", threading.current_thread().name) and 2)
    assert got == (1, 2)
    assert names["first"] == threading.current_thread().name and names["second"].startswith("burnbook-half")


def test_an_error_in_either_half_is_raised_after_both_finished() -> None:
    done = []

    def slow_ok():
        threading.Event().wait(0.05)
        done.append("second")

    with pytest.raises(ZeroDivisionError):
        _helper_thread.both(lambda: 1 / 0, slow_ok)
    assert done == ["second"]
    with pytest.raises(KeyError):
        _helper_thread.both(lambda: None, lambda: {}["missing"])


def test_halves_cover_the_range_once() -> None:
    seen = []
    _helper_thread.halves(seen.append, 7)
    covered = sorted(i for part in seen for i in range(7)[part])
    assert covered == list(range(7)) and len(seen) == (2 if _helper_thread.TWO_CORES else 1)
    one = []
    _helper_thread.halves(one.append, 1)
    assert one == [slice(None)]


def _child(queue) -> None:
    queue.put(_helper_thread.both(lambda: "first", lambda: "second"))


def test_a_forked_child_gets_its_own_helper() -> None:
    """The parent's helper thread does not exist in a forked child; split
    work there must not wait on it forever."""
    _helper_thread.both(lambda: None, lambda: None)  # the parent's helper is running
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung on the parent's helper thread")
    assert child.exitcode == 0 and queue.get(timeout=5) == ("first", "second")
