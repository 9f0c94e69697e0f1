"""Chapter 12's checks accept the right answers and refuse typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook.book import exercises
from burnbook.train import MetricsRendererBase

ex = exercises("12")


def test_lines_of_the_loss_log():
    assert ex[1].verdict(-(-160 // 50)).ok
    assert "smaller than the others" in ex[1].verdict(3).message
    assert "per batch" in ex[1].verdict(160).message
    assert not ex[1].verdict(5).ok


def test_logged_rates():
    assert ex[2].verdict([0.01, 0.005, 0.0025]).ok
    assert "once too often" in ex[2].verdict([0.005, 0.0025, 0.00125]).message
    assert "off at" in ex[2].verdict([0.01, 0.01, 0.01]).message
    assert not ex[2].verdict([0.01, 0.005]).ok


def renderer(keep_valid=False, keep_all=False, key=lambda split, epoch: epoch):
    class Keeper(MetricsRendererBase):
        def __init__(self):
            self.losses, self.current = {}, []

        def update_train(self, state):
            if keep_all or state.name == "Loss":
                self.current.append(state.value)

        def update_valid(self, state):
            if keep_valid:
                self.current.append(state.value)

        def on_epoch_end(self, split, epoch):
            if str(split) == "train":
                self.losses[key(split, epoch)], self.current = self.current, []
                print("mean", np.mean(self.losses[key(split, epoch)]))
    return Keeper


def test_renderer_that_keeps_the_losses(capsys):
    assert ex[3].verdict(renderer()).ok
    assert capsys.readouterr().out == ""  # the renderer's prints stay inside the check
    assert "validation losses" in ex[3].verdict(renderer(keep_valid=True)).message
    assert "other metrics" in ex[3].verdict(renderer(keep_all=True)).message
    assert "the keys [0, 1]" in ex[3].verdict(renderer(key=lambda s, e: e - 1)).message
    assert "subclass of MetricsRendererBase" in ex[3].verdict(renderer()()).message
