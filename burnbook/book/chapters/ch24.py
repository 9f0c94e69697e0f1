"""Checks for chapter 24, Fusion and Autotune.

Nothing here compiles or runs a kernel: the expected counters follow from
the stream's rules (a value is written only if something outside still
refers to it; a stream runs when it reaches `MAX_NODES` operations; the
sum runs in lanes of 8 on dense data whose length is a multiple of 8), and
the chain's operations are counted with `explain`, which only records."""

from __future__ import annotations

import numpy as np

from burnbook import Tensor
from burnbook.backend import Fusion, Taichi
from burnbook.backend.fusion import explain
from burnbook.backend.fusion.stream import MAX_NODES
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, compare, describe

TITLE = "Fusion and Autotune"
_B = Fusion[Taichi]
_COUNTERS = ("compiled", "executed", "fused_ops", "lanes")
# The chapter's x and bias.
_X = np.arange(6, dtype=np.float32).reshape(2, 3) / 6
_BIAS = np.array([[0.5, -1.0, 2.0]], np.float32)


def _parts(answer, names: tuple[str, ...]) -> tuple:
    if not isinstance(answer, (tuple, list)) or len(answer) != len(names):
        raise AnswerError(f"your answer is {describe(answer)}; pass a {len(names)}-tuple ({', '.join(names)})")
    return tuple(answer)


def _names(value, what: str) -> set[str]:
    if isinstance(value, str) or not isinstance(value, (set, frozenset, list, tuple)):
        raise AnswerError(f"{what} is {describe(value)}; pass a set of variable names such as {{'z'}}")
    return {str(v) for v in value}


def _who_is_written(answer) -> str | None:
    deleted, kept = _parts(answer, ("the names written after del y", "the names written with a kept"))
    # What the kernel stores: the result z, and every value a live variable still refers to.
    for given, alive, when in ((deleted, {"z"}, "after del y"), (kept, {"z", "a"}, "with a = x * bias kept")):
        got = _names(given, f"your names {when}")
        if got != alive:
            if got - alive:
                return (f"{when}, {sorted(got - alive)[0]!r} is not written: nothing outside the stream refers to "
                        "it any more")
            return f"{when}, a value that a variable still refers to is missing from your set"
    return None


def _counters(value, what: str) -> dict[str, int]:
    # B.stats() may hold more counters than these four (later ones are not part of the exercises)
    if not isinstance(value, dict) or not set(_COUNTERS) <= set(value):
        raise AnswerError(f"{what} is {describe(value)}; pass a dict with (at least) the keys {list(_COUNTERS)}, "
                          "the change of each of B.stats()'s counters")
    return value


def _compare_counters(got: dict, expected: dict, what: str) -> str | None:
    """`compiled` may be 0 when this process already compiled the same kernel; the rest must match."""
    if got["compiled"] not in (0, 1):
        return f"{what}: compiled changed by {got['compiled']}; one new kernel at most (0 if it was cached already)"
    for key in ("executed", "fused_ops", "lanes"):
        problem = compare(got[key], expected[key], f"{what}'s {key}", rtol=0, atol=0)
        if problem:
            return problem
    return None


def _limit(answer) -> str | None:
    change, pending = _parts(answer, ("the change of B.stats()", "the number of additions explain(w) still lists"))
    adds = 60
    executed = adds // MAX_NODES  # a stream that reaches MAX_NODES operations runs at once
    problem = _compare_counters(_counters(change, "your change of B.stats()"),
                                {"executed": executed, "fused_ops": executed * MAX_NODES, "lanes": 0},
                                "your change of B.stats()")
    if problem:
        return problem + " (does the stream wait for a read, or does it run when it is full?)"
    problem = compare(pending, adds - executed * MAX_NODES, "your number of recorded additions", rtol=0, atol=0)
    return problem and problem + " (after a full stream runs, what stays recorded?)"


def _chain_ops(n: int) -> int:
    """The operations the chapter's chain fuses on vectors of `n` floats, the final sum included
    (recorded with `explain`, never run)."""
    x = Tensor[_B, 1].from_data(np.ones(n, np.float32))
    y = Tensor[_B, 1].from_data(np.ones(n, np.float32))
    z = x * y + 1
    z = (-z).exp() * x
    z = z - y * 0.5
    z = z.clamp_min(0)
    # .sum() would run the stream at once (a reduction ends it and joins its kernel): count up to it, plus one
    return sum(1 for line in explain(z * z + x).stream if " = " in line) + 1


def _benchmark_chain(answer) -> str | None:
    change, passes = _parts(answer, ("the change of B.stats()", "the number of passes the unfused Taichi makes"))
    n = 1000
    ops = _chain_ops(n)
    problem = _compare_counters(_counters(change, "your change of B.stats()"),
                                {"executed": 1, "fused_ops": ops, "lanes": int(n % 8 == 0)},
                                "your change of B.stats()")
    if problem:
        return problem + " (count the chain's operations, the sum included; into_scalar reads the result once)"
    problem = compare(passes, ops, "your number of unfused passes", rtol=0, atol=0)
    return problem and problem + " (unfused, every operation is a kernel of its own, the sum too)"


def _error_in_the_middle(answer) -> str | None:
    error, change, h = _parts(answer, ("the error you caught", "the change of B.stats()", "h"))
    if not isinstance(error, BaseException):
        return f"the first item is {describe(error)}; pass the exception you caught (`except ... as err`)"
    if not isinstance(error, ValueError):
        return f"the error is a {type(error).__name__}: the multiplication's shapes are checked as it is recorded"
    if "[2, 3]" not in str(error) or "[3, 2]" not in str(error):
        return "the error you passed does not name both shapes: is it the one from h * ones([3, 2])?"
    change = _counters(change, "your change of B.stats()")
    if any(v != 0 for v in change.values()):
        return ("your counters moved: did something read h (or another tensor) between the two B.stats()? "
                "A refused operation runs nothing")
    problem = compare(as_array(h, "your h"), np.exp(_X.astype(np.float64) * _BIAS), "your h", rtol=1e-5, atol=1e-6)
    return problem and problem + " (h is (x * bias).exp(), its stream untouched by the mistake)"


EXERCISES = [
    Exercise("24", 1, "Who gets written?", _who_is_written,
             expects="a pair (the set of names the kernel writes after del y, the set with a = x * bias kept), "
                     "names among 'a', 'y', 'z'",
             hints=("A kernel stores a value only if something outside the stream still refers to it.",
                    "After del y, which of the stream's values does a Python variable still hold?")),
    Exercise("24", 2, "The 48-operation limit", _limit,
             expects="a pair (the change of each of B.stats()'s four counters as a dict, the number of additions "
                     "explain(w) still lists)",
             hints=("A stream does not grow without end: at a fixed number of operations it runs.",
                    "When the stream is full it runs as one kernel; what is recorded after it waits for a read.")),
    Exercise("24", 3, "Count the work of the benchmark chain", _benchmark_chain,
             expects="a pair (the change of B.stats()'s four counters as a dict, the number of passes over memory "
                     "the unfused Taichi backend makes)",
             hints=("The whole chain, sum included, is one stream and one kernel; count its operations.",
                    "The sum runs in lanes when the data is dense and its length a multiple of 8.")),
    Exercise("24", 4, "An error in the middle", _error_in_the_middle,
             expects="a triple (the error you caught, the change of B.stats() around it as a dict, h)",
             hints=("Shapes are checked when an operation is recorded, not when the stream runs.",
                    "Nothing ran, so the counters did not move, and h's stream still gives exp(x * bias).")),
]
