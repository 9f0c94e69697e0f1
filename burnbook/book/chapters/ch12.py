"""Checks for chapter 12, Learner.

No check trains: the counts and rates come from closed forms, and the
renderer is driven through a made-up two-epoch run, the calls a Learner
makes, in the order it makes them."""

from __future__ import annotations

import contextlib
import io
import math

from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe
from burnbook.train import MetricsRendererBase
from burnbook.train.metric.base import MetricEntry
from burnbook.train.renderer.base import MetricState, TrainingProgress
from burnbook.train.store import Split

TITLE = "Learner"


def _lines(answer) -> str | None:
    value = as_array(answer, "your count")
    if value.size != 1:
        return f"your count has {value.size} numbers; pass one whole number, the lines of Loss.log"
    count = float(value.reshape(()))
    right = math.ceil(160 / 50)
    if count == right:
        return None
    if count == 160 // 50:
        return "the last batch, smaller than the others, is a batch too"
    if count == 160:
        return "Loss.log has one line per batch, not per item"
    return "that is not the number of training batches of one epoch"


def _rates(answer) -> str | None:
    values = as_array(answer, "your list")
    if values.ndim != 1 or values.size != 3:
        raise AnswerError(f"your list has {values.size} number(s) in shape {list(values.shape)}; "
                          "pass the first three logged rates")
    problem = compare(values, [1e-2 * 0.5 ** k for k in range(3)], "your list", rtol=1e-6, atol=1e-12)
    if problem and compare(values, [1e-2 * 0.5 ** (k + 1) for k in range(3)], rtol=1e-6, atol=1e-12) is None:
        return "your rates are decayed once too often: the first batch uses the initial rate"
    return problem


def _state(name: str, value: float) -> MetricState:
    return MetricState.Numeric(MetricEntry(name, f"{value}", f"{value}"), value)


def _renderer(answer) -> str | None:
    if not (isinstance(answer, type) and issubclass(answer, MetricsRendererBase)):
        raise AnswerError(f"your answer is {describe(answer)}; pass the class itself, a subclass of "
                          "MetricsRendererBase")
    renderer = call_reader(answer, what="building your renderer", on="with no arguments")
    losses = {1: [2.31, 1.75, 1.2], 2: [0.9, 0.61, 0.48, 0.52]}
    with contextlib.redirect_stdout(io.StringIO()):  # its printed means are not what is judged
        for epoch, values in losses.items():
            for i, value in enumerate(values):
                call_reader(renderer.update_train, _state("Loss", value), what="your update_train")
                call_reader(renderer.update_train, _state("Learning Rate", 1e-3), what="your update_train")
                call_reader(renderer.render_train, TrainingProgress(epoch=epoch, epoch_total=2, iteration=i + 1),
                            what="your render_train")
            call_reader(renderer.on_epoch_end, Split.Train, epoch, what="your on_epoch_end",
                        on="after a training epoch")
            call_reader(renderer.update_valid, _state("Loss", 9.0), what="your update_valid")
            call_reader(renderer.on_epoch_end, Split.Valid, epoch, what="your on_epoch_end",
                        on="after a validation epoch")
    kept = getattr(renderer, "losses", None)
    if not isinstance(kept, dict):
        return f"your renderer's `losses` is {describe(kept)}; keep a dict from epoch number to that epoch's losses"
    if sorted(kept) != [1, 2]:
        return (f"after a two-epoch run your renderer's `losses` has the keys {sorted(kept, key=str)}; "
                "file the values under the epochs 1 and 2 that on_epoch_end receives")
    for epoch, values in losses.items():
        got = kept[epoch]
        try:
            got = [float(v) for v in got]
        except (TypeError, ValueError):
            return f"losses[{epoch}] is {describe(kept[epoch])}, where a list of numbers is expected"
        if len(got) > len(values) and 9.0 in got:
            return f"losses[{epoch}] holds validation losses too: keep only update_train's"
        if len(got) > len(values) and 1e-3 in got:
            return f"losses[{epoch}] holds other metrics' values: keep only the entries named Loss"
        problem = compare(got, values, f"losses[{epoch}]", rtol=1e-9, atol=1e-12)
        if problem:
            return problem + " (each epoch's list must hold exactly that epoch's training losses, in order)"
    return None


EXERCISES = [
    Exercise("12", 1, "How many lines in Loss.log?", _lines,
             expects="an int, the number of lines of train/epoch-1/Loss.log",
             hints=("The metric logger writes one line per training iteration.",
                    "How many batches of at most 50 does it take to cover 160 items?")),
    Exercise("12", 2, "The logged learning rates", _rates,
             expects="a list of the first three rates in Learning_Rate.log",
             hints=("Each batch calls the scheduler's step() once and logs the rate it returns.",
                    "The first step() returns the initial rate; each later one is gamma times the one before.")),
    Exercise("12", 3, "A renderer that keeps the losses", _renderer,
             expects="your renderer class, whose instances keep `losses`, a dict {epoch: [loss values]}",
             hints=("update_train receives every training metric, named by state.name; the loss is 'Loss'.",
                    "Collect values in a list during the epoch; on_epoch_end(split, epoch) files the list "
                    "for the training split only and starts a new one.")),
]
