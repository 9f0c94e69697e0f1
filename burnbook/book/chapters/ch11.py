"""Checks for chapter 11, Learning-rate schedulers.

The expected rates come from each schedule's closed form, written out here,
never from burnbook's schedulers."""

from __future__ import annotations

import math

from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe
from burnbook.optim.lr_scheduler import LrScheduler

TITLE = "Learning-rate schedulers"


def _rates(answer, expected: list[float], alternatives: dict[str, list[float]]) -> str | None:
    values = as_array(answer, "your list")
    if values.ndim != 1 or values.size != len(expected):
        raise AnswerError(f"your list has {values.size} number(s) in shape {list(values.shape)}; "
                          f"pass the {len(expected)} rates that step() returns, in order")
    problem = compare(values, expected, "your list", rtol=1e-6, atol=1e-9)
    if problem:
        for says, rates in alternatives.items():
            if compare(values, rates, rtol=1e-6, atol=1e-9) is None:
                return says
    return problem


def _step_schedule(answer) -> str | None:
    return _rates(answer, [0.1 * 0.1 ** (t // 2) for t in range(6)], {
        "your rates fall one iteration early: the first step_size iterations keep the initial rate":
            [0.1 * 0.1 ** ((t + 1) // 2) for t in range(6)],
        "your rates fall every iteration": [0.1 * 0.1 ** t for t in range(6)]})


def _cosine(answer) -> str | None:
    def cosine(t: int, period: int) -> float:
        return 0.05 * (1 + math.cos(math.pi * (t % period) / 2))
    return _rates(answer, [cosine(t, 3) for t in range(4)], {
        "your rates stay at the bottom: the cosine schedule starts again after num_iters":
            [cosine(min(t, 2), 99) for t in range(4)],
        "your cosine restarts one iteration early: it reaches 0 at t = num_iters first":
            [cosine(t, 2) for t in range(4)]})


def _exponential(answer) -> str | None:
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise AnswerError(f"your answer is {describe(answer)}; pass a pair (gamma, the rate of the 60th epoch)")
    gamma, last = answer
    g = as_array(gamma, "your gamma")
    if g.size != 1 or not any(abs(float(g.reshape(())) - c) < 1e-9 for c in (0.95, 0.5)):
        return "your gamma is not one of the two the exercise tries, 0.95 and 0.5"
    if abs(float(g.reshape(())) - 0.95) > 1e-9:
        return "the schedule with that gamma is not the one that reaches the noise floor"
    problem = compare(last, 0.2 * 0.95 ** 59, "the rate of the 60th epoch", rtol=1e-4, atol=0.0)
    if problem and compare(last, 0.2 * 0.95 ** 60, rtol=1e-4, atol=0.0) is None:
        return "your rate is one decay too far: the first epoch uses the initial rate, undecayed"
    return problem


def _warmup_cosine_rate(t: int, peak: float, warmup: int, num_iters: int) -> float:
    if t < warmup:
        return peak * (t + 1) / warmup
    return 0.5 * peak * (1 + math.cos(math.pi * (t - warmup) / num_iters))


def _scheduler(answer) -> str | None:
    if not (isinstance(answer, type) and issubclass(answer, LrScheduler)):
        raise AnswerError(f"your answer is {describe(answer)}; pass the class itself, a subclass of LrScheduler")
    for peak, warmup, num_iters in ((0.2, 4, 4), (1.0, 3, 10), (0.5, 1, 5)):
        on = f"for WarmupCosine({peak}, {warmup}, {num_iters})"
        made = call_reader(answer, peak, warmup, num_iters, what="building your scheduler", on=on)
        n = warmup + num_iters + 1
        got = [call_reader(made.step, what="its step()", on=on) for _ in range(n)]
        problem = compare(got, [_warmup_cosine_rate(t, peak, warmup, num_iters) for t in range(n)],
                          f"its first {n} rates {on}", rtol=1e-6, atol=1e-9)
        if problem:
            return problem
    first = answer(0.2, 4, 4)
    for _ in range(5):
        first.step()
    record = call_reader(first.to_record, what="its to_record()")
    resumed = call_reader(answer(0.2, 4, 4).load_record, record, what="its load_record(record)")
    if not isinstance(resumed, LrScheduler):
        return f"load_record returned {describe(resumed)}, where the scheduler itself is expected"
    if abs(resumed.step() - first.step()) > 1e-12:
        return "a scheduler resumed from to_record() does not continue where the first one stopped"
    return None


EXERCISES = [
    Exercise("11", 1, "A step schedule", _step_schedule,
             expects="a list of the first six rates",
             hints=("StepLrScheduler multiplies the rate by gamma (0.1 unless given) every step_size iterations.",
                    "The rate of iteration t is initial_lr * gamma ** (t // step_size), t counting from 0.")),
    Exercise("11", 2, "A cosine of two iterations", _cosine,
             expects="a list of the first four rates",
             hints=("The cosine runs from the initial rate at t = 0 down to min_lr at t = num_iters.",
                    "After reaching min_lr it starts again from the top: what is the rate at t = 3?")),
    Exercise("11", 3, "Exponential decay in the loop", _exponential,
             expects="a pair (the gamma that reaches the noise floor, the rate that schedule gives in the 60th epoch)",
             hints=("Add up how far each schedule can still move the weights: the sum of its rates.",
                    "The rate of epoch k (counting from 1) is 0.2 * gamma ** (k - 1).")),
    Exercise("11", 4, "Your own scheduler", _scheduler,
             expects="the class WarmupCosine(peak_lr, warmup, num_iters), a subclass of LrScheduler",
             hints=("Only lr_at(t) is yours to write: step(), to_record() and load_record() come from LrScheduler.",
                    "Two branches: t < warmup rises linearly; after it, the cosine of (t - warmup) / num_iters.")),
]
