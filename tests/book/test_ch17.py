"""Chapter 17's checks accept the right answers and refuse typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook import nn
from burnbook.backend import Autodiff, NdArray
from burnbook.book import exercises
from burnbook.examples.guide import ModelConfig

ex = exercises("17")
B = Autodiff[NdArray]


def test_count_the_steps():
    micro = -(-2000 // 24)
    assert ex[1].verdict((micro, 2000 - 24 * (micro - 1), micro // 5, 3 * 24 + 8)).ok
    assert "shorter micro-batch" in ex[1].verdict((83, 8, 16, 80)).message
    assert "never make one" in ex[1].verdict((84, 8, 17, 0)).message
    assert "as full" in ex[1].verdict((84, 8, 16, 96)).message


def shifted(model, scale):
    """`model` with every parameter moved by `scale` times a fixed pattern."""
    return model.map_params(lambda name, p: p.with_value(p.val().add_scalar(scale)))


def test_accumulation_with_sgd():
    B.seed(0)
    start = nn.LinearConfig(3, 2).init(B.default_device())
    step = shifted(start, 0.01)
    assert ex[2].verdict((start, step, shifted(start, 0.01 + 1e-8))).ok
    assert "4 times" in ex[2].verdict((start, step, shifted(start, 0.04))).message
    assert "start model" in ex[2].verdict((start, start, start)).message
    assert "differ at" in ex[2].verdict((start, step, shifted(start, 0.02))).message


def learner_class(weighted=True, percent=True, valid=True):
    cross_entropy = nn.CrossEntropyLoss.new(None)

    class SimpleLearner:
        def __init__(self, model, optim, lr):
            self.model, self.optim, self.lr = model, optim, lr

        def evaluate(self, loader):
            model = self.model.valid() if valid else self.model
            losses, sizes, correct = [], [], 0
            for batch in loader:
                output = model.forward(batch.images)
                size = batch.targets.dims()[0]
                losses.append(cross_entropy.forward(output, batch.targets).into_scalar())
                sizes.append(size)
                correct += int(output.argmax(1).reshape([-1]).equal(batch.targets).int().sum().into_scalar())
            loss = np.average(losses, weights=sizes) if weighted else np.mean(losses)
            return loss, (100.0 if percent else 1.0) * correct / sum(sizes)
    return SimpleLearner


def test_evaluate():
    assert ex[3].verdict(learner_class()).ok
    assert "mean of the batch means" in ex[3].verdict(learner_class(weighted=False)).message
    assert "different backends" in ex[3].verdict(learner_class(valid=False)).message  # no valid()
    assert "percent" in ex[3].verdict(learner_class(percent=False)).message


def test_train_only_the_head():
    B.seed(42)
    model = ModelConfig(num_classes=10, hidden_size=8).init(B.default_device())
    head = model.map_params(lambda name, p: p.with_value(p.val().add_scalar(0.1)) if name.startswith("linear") else p)
    everything = model.map_params(lambda name, p: p.with_value(p.val().add_scalar(0.1)))
    assert ex[4].verdict((model, head)).ok
    assert "convolutions changed" in ex[4].verdict((model, everything)).message
    assert "did not change" in ex[4].verdict((model, model)).message
