"""What a check does with a reader's answer: turn it into numbers, call the
reader's function safely, and say in words how it differs from the expected
one, without ever printing the expected value itself.

Every helper here returns a *problem* (a sentence, str) or None when the
answer is right; none lets an exception escape for a wrong answer, so a check
never shows the reader a traceback from the checker.
"""

from __future__ import annotations

import copy
import math
import signal
import threading
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["AnswerError", "as_array", "call_reader", "compare", "compare_function", "describe", "kept_random_state"]


class AnswerError(Exception):
    """An answer that cannot be read as what the exercise asks for; its message
    is the verdict the reader sees."""


def describe(value: Any) -> str:
    """A short name for what the reader passed: `a str`, `a tensor [2, 3] float32`."""
    if value is None:
        return "None"
    if hasattr(value, "to_numpy") and hasattr(value, "dims"):
        return f"a tensor {list(value.dims())} {value.dtype}"
    if isinstance(value, np.ndarray):
        return f"an array {list(value.shape)} {value.dtype}"
    if callable(value):
        return f"a function ({getattr(value, '__name__', type(value).__name__)})"
    text, kind = repr(value), type(value).__name__
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} ({text[:40]}{'...' if len(text) > 40 else ''})"


def as_array(value: Any, what: str = "your answer") -> np.ndarray:
    """`value` (a number, bool, list, NumPy array, burnbook tensor or its
    TensorData) as a NumPy array; AnswerError in words when it is none of them."""
    if hasattr(value, "to_numpy"):
        try:
            return np.asarray(value.to_numpy())
        except Exception as err:  # a tensor whose read fails: say so, keep going
            raise AnswerError(f"{what} could not be read back as numbers ({type(err).__name__}: {err})") from None
    if isinstance(value, (bool, int, float, np.number, np.bool_, np.ndarray)):
        return np.asarray(value)
    if isinstance(value, (list, tuple)):
        try:
            array = np.asarray([as_array(v, what) for v in value])
        except (AnswerError, ValueError):
            raise AnswerError(f"{what} is a {type(value).__name__} that is not a regular grid of numbers "
                              "(every row the same length)") from None
        if array.dtype == object:
            raise AnswerError(f"{what} is a {type(value).__name__} that is not a grid of numbers")
        return array
    raise AnswerError(f"{what} is {describe(value)}, where numbers are expected "
                      "(a number, a list, a NumPy array or a tensor)")


def compare(got: Any, expected: Any, what: str = "your answer", *, rtol: float = 1e-5,
            atol: float = 1e-6, kind: str | None = None) -> str | None:
    """None when `got` equals `expected` within `atol + rtol * |expected|`, else
    what differs: the shape (and whether it is transposed), the kind of number
    when `kind` ("float", "int" or "bool") is asked for, NaN, a constant factor
    or offset, or the first wrong index. The expected values are never shown."""
    try:
        a = as_array(got, what)
    except AnswerError as err:
        return str(err)
    b = np.asarray(expected)
    if a.shape != b.shape:
        if a.size == b.size == 1:
            a = a.reshape(b.shape)  # 3.0 against [3.0]: one number either way
        else:
            hint = ""
            if a.ndim == b.ndim == 2 and a.shape == b.shape[::-1]:
                hint = " (it looks transposed)"
            elif a.size == b.size:
                hint = " (the same number of entries, arranged differently)"
            return f"{what} has shape {list(a.shape)}, where the answer has shape {list(b.shape)}{hint}"
    if kind is not None:
        got_kind = "bool" if a.dtype == np.bool_ else "int" if np.issubdtype(a.dtype, np.integer) else \
            "float" if np.issubdtype(a.dtype, np.floating) else str(a.dtype)
        if got_kind != kind:
            return f"{what} holds {got_kind} values, where {kind} values are expected"
    if a.dtype == np.bool_ or b.dtype == np.bool_:
        wrong = np.asarray(a != b)
    else:
        try:
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
        except (TypeError, ValueError):
            return f"{what} holds {a.dtype} values, where numbers are expected"
        if np.isnan(a64).any() and not np.isnan(b64).any():
            return f"{what} holds NaN (at {_index(np.argwhere(np.isnan(a64))[0])}): a 0/0, log of a negative or inf - inf?"
        wrong = ~np.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True)
        if wrong.any() and wrong.size > 1:
            pattern = _pattern(a64, b64)
            if pattern:
                return f"{what} is off everywhere by {pattern}"
    if not np.asarray(wrong).any():
        return None
    wrong = np.atleast_1d(wrong)
    first = np.argwhere(wrong)[0]
    where = "" if a.ndim == 0 else f" (the first at index {_index(first)})"
    return f"{what} is off at {int(wrong.sum())} of {wrong.size} entries{where}"


def _index(index: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def _pattern(a: np.ndarray, b: np.ndarray) -> str | None:
    """'the same factor' or 'the same amount' when a wrong answer is the right
    one scaled or shifted: a missing factor or an off-by-one."""
    finite = np.isfinite(a) & np.isfinite(b)
    if finite.sum() < 2:
        return None
    a, b = a[finite], b[finite]
    if np.allclose(a, -b, rtol=1e-4, atol=1e-9) and np.abs(b).max() > 1e-9:
        return "its sign (every entry has the opposite sign)"
    nonzero = np.abs(b) > 1e-12
    if nonzero.sum() >= 2:
        ratio = a[nonzero] / b[nonzero]
        if np.allclose(ratio, ratio[0], rtol=1e-4) and not math.isclose(ratio[0], 1.0, rel_tol=1e-4) \
                and np.allclose(a[~nonzero], 0, atol=1e-9):
            return "the same factor (every entry is the answer's times one number: a missing or extra factor?)"
    shift = a - b
    if np.allclose(shift, shift[0], rtol=1e-4, atol=1e-9) and abs(shift[0]) > 1e-9:
        return "the same amount (every entry is shifted by one number: an off-by-one or a missing term?)"
    return None


class _TimedOut(Exception):
    pass


@contextmanager
def _time_limit(seconds: float):
    """Interrupt the reader's code after `seconds` (SIGALRM, on the main thread
    of a Unix process, which is where a notebook runs a cell); elsewhere no limit."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def alarm(signum, frame):
        raise _TimedOut

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def call_reader(fn: Any, *args: Any, what: str = "your function", on: str = "", timeout: float = 5.0) -> Any:
    """`fn(*args)`, or AnswerError saying what went wrong: not a function, it
    raised (type and message), or it ran past `timeout` seconds. `on` names the
    input in words for the verdict ("on a [2, 3] input")."""
    if not callable(fn):
        raise AnswerError(f"{what} should be a function, and it is {describe(fn)}")
    suffix = f" {on}" if on else ""
    try:
        with _time_limit(timeout):
            return fn(*args)
    except _TimedOut:
        raise AnswerError(f"{what} ran for over {timeout:g} s{suffix}: a loop that never ends?") from None
    except AnswerError:
        raise
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as err:
        message = str(err).splitlines()[0] if str(err) else ""
        raise AnswerError(f"{what} raised {type(err).__name__}{suffix}: {message}".rstrip(": ")) from None


def compare_function(fn: Any, reference: Callable[..., Any], inputs: Sequence[Any], *,
                     what: str = "your function", rtol: float = 1e-5, atol: float = 1e-6,
                     kind: str | None = None, timeout: float = 5.0) -> str | None:
    """Call the reader's `fn` and `reference` on each input and compare.

    Each input is a tuple of arguments, or a zero-argument callable that builds
    one (fresh tensors for every call, so a function that changes its argument
    cannot spoil the reference). The first inputs are the ones the chapter
    showed; later ones are new to the reader, and the verdict says so."""
    for i, item in enumerate(inputs):
        args = item() if callable(item) else item
        args = args if isinstance(args, tuple) else (args,)
        shapes = ", ".join(_shape_text(a) for a in args)
        on = f"on the input {shapes}" + ("" if i == 0 else f" (input {i + 1} of {len(inputs)})")
        try:
            got = call_reader(fn, *args, what=what, on=on, timeout=timeout)
        except AnswerError as err:
            return str(err)
        fresh = item() if callable(item) else item
        expected = reference(*(fresh if isinstance(fresh, tuple) else (fresh,)))
        problem = compare(got, as_array(expected), f"{what}'s result {on}", rtol=rtol, atol=atol, kind=kind)
        if problem:
            return problem
    return None


def _shape_text(value: Any) -> str:
    if hasattr(value, "dims"):
        return f"of shape {list(value.dims())}"
    if isinstance(value, np.ndarray):
        return f"of shape {list(value.shape)}"
    return repr(value)[:30]


@contextmanager
def kept_random_state(*backends: Any):
    """Run a check's own draws (`B.seed(...)`, `random(...)`) without moving
    the reader's random generators: each backend's host generator (`_rng`,
    see `Backend.rng_state`) is put back as it was on the way out, so the
    cells after a check draw what they would have drawn without it."""
    saved = [(b, copy.deepcopy(getattr(b, "_rng", None))) for b in backends]  # a draw advances it in place
    try:
        yield
    finally:
        for backend, rng in saved:
            backend._rng = rng
