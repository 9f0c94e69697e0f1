"""Checks for chapter 13, Metric.

Accuracies are recounted from the scores with NumPy; a reader's metric is
fed batches of different sizes it has not seen, and its batch value and
epoch mean are compared with NumPy's."""

from __future__ import annotations

import numpy as np

from burnbook import Int, Tensor
from burnbook.backend import NdArray
from burnbook.book.exercises import Exercise
from burnbook.book.judge import AnswerError, as_array, call_reader, compare, describe
from burnbook.train import AccuracyInput, MetricMetadata, RegressionOutput
from burnbook.train.metric import NumericMetricState, adapt

TITLE = "Metric"

# The chapter's four rows of scores (classes 0, 1, 2).
_SCORES = np.array([[0.1, 2.0, 0.3], [1.5, 0.2, 0.1], [0.1, 0.2, 0.9], [0.3, 0.8, 0.1]])


def _numbers(answer, count: int, names: str) -> np.ndarray:
    if not isinstance(answer, (tuple, list)) or len(answer) != count:
        raise AnswerError(f"your answer is {describe(answer)}; pass {count} numbers: {names}")
    values = as_array(list(answer), "your answer")
    if values.ndim != 1:
        raise AnswerError(f"your answer is not {count} plain numbers; pass {names}")
    return values.astype(np.float64)


def _accuracy(answer) -> str | None:
    got = _numbers(answer, 3, "(the first batch's accuracy, the epoch accuracy after both batches, value())")
    hits = _SCORES.argmax(axis=1) == 0
    first, second = 100 * hits.mean(), 100 * hits[:2].mean()
    epoch = 100 * (hits.sum() + hits[:2].sum()) / 6
    if np.allclose(got, [first / 100, epoch / 100, second / 100], atol=1e-3):
        return "the metric reports percent, not fractions"
    if abs(got[1] - (first + second) / 2) < 0.01:
        return "your epoch accuracy is the mean of the two batch values; the epoch counts every item once"
    if abs(got[2] - epoch) < 0.01:
        return "your value() is the epoch's; value() is the last batch's value, as in Burn"
    return compare(got, [first, epoch, second], "your three numbers", rtol=0, atol=0.01)


def _top_k(answer) -> str | None:
    got = _numbers(answer, 3, "(top-1 accuracy, top-3 accuracy, the smallest k that always gives 100 %)")
    targets = np.array([1, 0, 1, 1])
    ranked = np.argsort(-_SCORES, axis=1)
    top = [100 * (ranked[:, :k] == targets[:, None]).any(axis=1).mean() for k in (1, 3)]
    if abs(got[2] - _SCORES.shape[0]) < 1e-9 and _SCORES.shape[0] != _SCORES.shape[1]:
        return "your k is the number of rows; top-k ranks the classes of each row"
    return compare(got, [*top, _SCORES.shape[1]], "your three numbers", rtol=0, atol=0.01)


def _batches(shapes, seed: int, classes: int = 3):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(n, classes)).astype(np.float32), rng.integers(0, classes, n)) for n in shapes]


def _state_of(metric) -> NumericMetricState | None:
    return next((v for v in vars(metric).values() if isinstance(v, NumericMetricState)), None)


def _epoch_and_batch(cls, what: str, build_input, epochs, batch_value, all_items_value) -> str | None:
    if not isinstance(cls, type):
        raise AnswerError(f"your answer is {describe(cls)}; pass the class {what} itself")
    metric = call_reader(cls, what=f"building {what}", on="with no arguments")
    for name in ("update", "value", "clear"):
        if not callable(getattr(metric, name, None)):
            return f"{what} has no {name}() method; a numeric metric needs update, value and clear"
    state = _state_of(metric)
    if state is None:
        return f"{what} keeps no NumericMetricState: keep one for the epoch's running mean"
    for batches in epochs:  # two epochs: clear() must start the second afresh
        for i, batch in enumerate(batches):
            item = build_input(batch)
            call_reader(metric.update, item, MetricMetadata.fake(), what=f"{what}.update",
                        on=f"on a batch of {len(batch[0])} items")
            problem = compare(call_reader(metric.value, what=f"{what}.value"), batch_value(batch),
                              f"value() after batch {i + 1}", rtol=1e-4, atol=1e-4)
            if problem:
                return problem + " (value() is the last batch's value)"
        state = _state_of(metric)
        if state is None:
            return f"{what} lost its NumericMetricState after clear(): reset it instead"
        running = state.running()
        expected = all_items_value(batches)
        if abs(running - expected) > 1e-4 * max(1.0, abs(expected)):
            mean_of_means = float(np.mean([batch_value(b) for b in batches]))
            if abs(running - mean_of_means) < 1e-4 * max(1.0, abs(mean_of_means)):
                return "the epoch value is the mean of the batch values: weight each batch by its size"
            return (f"the epoch value of {what} after batches of {[len(b[0]) for b in batches]} items "
                    "is not the mean over all the items (after clear(), is the state reset?)")
        call_reader(metric.clear, what=f"{what}.clear")
    return None


def _error_rate(answer) -> str | None:
    if isinstance(answer, type) and getattr(answer, "input_type", None) is not AccuracyInput:
        return "ErrorRateMetric.input_type must be AccuracyInput, the input the accuracy reads"

    def build(batch):
        scores, targets = batch
        return AccuracyInput(Tensor[NdArray, 2].from_floats(scores.tolist()),
                             Tensor[NdArray, 1, Int].from_ints(targets.tolist()))

    def wrong(batch):
        return 100.0 * (batch[0].argmax(axis=1) != batch[1]).mean()

    def all_wrong(batches):
        return 100.0 * np.concatenate([b[0].argmax(axis=1) != b[1] for b in batches]).mean()

    return _epoch_and_batch(answer, "ErrorRateMetric", build, [_batches((4, 2), 0), _batches((7, 3), 1)],
                            wrong, all_wrong)


def _mae(answer) -> str | None:
    if not isinstance(answer, type):
        raise AnswerError(f"your answer is {describe(answer)}; pass the class MeanAbsoluteErrorMetric itself")
    target_type = getattr(answer, "input_type", None)
    if not isinstance(target_type, type):
        return "MeanAbsoluteErrorMetric needs input_type, the class AbsErrorInput"
    rng = np.random.default_rng(3)
    batches = [(rng.normal(size=(n, 1)).astype(np.float32), rng.normal(size=(n, 1)).astype(np.float32))
               for n in (6, 2, 5, 3)]
    loss = Tensor[NdArray, 1].from_floats([0.0])

    def build(batch):
        output = RegressionOutput(loss, Tensor[NdArray, 2].from_data(batch[0]), Tensor[NdArray, 2].from_data(batch[1]))
        try:
            return adapt(output, target_type)
        except Exception as err:
            raise AnswerError(f"a RegressionOutput does not adapt to {target_type.__name__} "
                              f"({type(err).__name__}): register @adaptor(RegressionOutput, "
                              f"{target_type.__name__})") from None

    return _epoch_and_batch(answer, "MeanAbsoluteErrorMetric", build, [batches[:2], batches[2:]],
                            lambda b: float(np.abs(b[0] - b[1]).mean()),
                            lambda bs: float(np.concatenate([np.abs(p - t) for p, t in bs]).mean()))


EXERCISES = [
    Exercise("13", 1, "Predict the accuracy", _accuracy,
             expects="for targets [0, 0, 0, 0], three numbers (the first batch's accuracy, "
                     "the epoch accuracy after both batches, value())",
             hints=("Find each row's highest score first: that is the predicted class.",
                    "The epoch value counts every item of both batches once; value() is the last batch's.")),
    Exercise("13", 2, "Top-1 is accuracy", _top_k,
             expects="three numbers (top-1 accuracy, top-3 accuracy, the smallest k that always gives 100 %)",
             hints=("Top-1 asks whether the target has the highest score: the accuracy's question.",
                    "Top-k looks among the k highest of each row's scores; how many scores does a row have?")),
    Exercise("13", 3, "A numeric error rate", _error_rate,
             expects="the class ErrorRateMetric",
             hints=("Count the rows whose argmax differs from the target; report percent.",
                    "NumericMetricState.update(value, batch_size, format) weights the epoch mean by batch size.")),
    Exercise("13", 4, "A metric for regression", _mae,
             expects="the class MeanAbsoluteErrorMetric (its adaptor registered)",
             hints=("input_type names the class the Learner adapts a RegressionOutput to; @adaptor makes the link.",
                    "Update the NumericMetricState with the batch's mean error and the batch size as its weight.")),
]
