"""Chapter 13's checks accept the right answers and refuse typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook.book import exercises
from burnbook.train import AccuracyInput, RegressionOutput, adaptor
from burnbook.train.metric import FormatOptions, NumericMetricState

ex = exercises("13")


def test_predict_the_accuracy():
    # Only row 2 predicts class 0: 1 of 4, then 1 of 2, and 2 of 6 over the epoch.
    assert ex[1].verdict((25.0, 100 * 2 / 6, 50.0)).ok
    assert "percent" in ex[1].verdict((0.25, 2 / 6, 0.5)).message
    assert "mean of the two batch values" in ex[1].verdict((25.0, 37.5, 50.0)).message
    assert "last batch" in ex[1].verdict((25.0, 100 * 2 / 6, 100 * 2 / 6)).message
    assert not ex[1].verdict((25.0, 33.33)).ok


def test_top_k():
    assert ex[2].verdict((75.0, 100.0, 3)).ok
    assert "number of rows" in ex[2].verdict((75.0, 100.0, 4)).message
    assert "off at" in ex[2].verdict((100.0, 100.0, 3)).message


def numeric_metric(input_type, batch_value, weight=lambda n: n, reset=True):
    class Numeric:
        def __init__(self):
            self.state = NumericMetricState()

        def update(self, item, metadata):
            value, n = batch_value(item)
            return self.state.update(value, weight(n), FormatOptions("M").precision(4))

        def clear(self):
            if reset:
                self.state.reset()

        def value(self):
            return self.state.value()
    Numeric.input_type = input_type
    return Numeric


def error_rate(item):
    wrong = item.outputs.to_numpy().argmax(axis=1) != item.targets.to_numpy()
    return 100.0 * wrong.mean(), len(wrong)


def test_error_rate():
    assert ex[3].verdict(numeric_metric(AccuracyInput, error_rate)).ok
    accuracy = numeric_metric(AccuracyInput, lambda item: (100 - error_rate(item)[0], error_rate(item)[1]))
    assert "value() after batch 1" in ex[3].verdict(accuracy).message
    unweighted = numeric_metric(AccuracyInput, error_rate, weight=lambda n: 1)
    assert "weight each batch" in ex[3].verdict(unweighted).message
    assert "is the state reset" in ex[3].verdict(numeric_metric(AccuracyInput, error_rate, reset=False)).message
    assert "AccuracyInput" in ex[3].verdict(numeric_metric(object, error_rate)).message


class AbsErrorInputForTest:
    def __init__(self, predictions, targets):
        self.predictions, self.targets = predictions, targets


@adaptor(RegressionOutput, AbsErrorInputForTest)
def _to_abs(output):
    return AbsErrorInputForTest(output.output, output.targets)


def mae(item):
    error = np.abs(item.predictions.to_numpy() - item.targets.to_numpy())
    return float(error.mean()), error.shape[0]


def test_mae():
    assert ex[4].verdict(numeric_metric(AbsErrorInputForTest, mae)).ok
    assert "weight each batch" in ex[4].verdict(numeric_metric(AbsErrorInputForTest, mae, weight=lambda n: 1)).message

    class NotAdapted:
        pass
    assert "does not adapt" in ex[4].verdict(numeric_metric(NotAdapted, mae)).message
    squared = numeric_metric(AbsErrorInputForTest, lambda item: (
        float(((item.predictions.to_numpy() - item.targets.to_numpy()) ** 2).mean()), 1))
    assert "value() after batch 1" in ex[4].verdict(squared).message
