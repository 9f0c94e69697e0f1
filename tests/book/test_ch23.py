"""Chapter 23's checks accept right answers and refuse the typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook import Int, Tensor
from burnbook.backend import Autodiff, NdArray
from burnbook.book import exercises
from burnbook.examples.guide import ModelConfig
from burnbook.widgets import GradientView

ex = exercises("23")
B = Autodiff[NdArray]


def test_skip_the_normalisation():
    black = (0.0 - 0.1307) / 0.3081
    assert ex[1].verdict((0, 255, black)).ok
    assert "raw maximum" in ex[1].verdict((0.0, 1.0, black)).message          # the scaled range
    assert "normalised minimum" in ex[1].verdict((0, 255, 0.0)).message       # normalisation forgotten
    assert "normalised minimum" in ex[1].verdict((0, 255, -0.1307)).message   # the division by std left out


def views():
    B.seed(3)
    model = ModelConfig(num_classes=10, hidden_size=512).init(B.default_device())
    rng = np.random.default_rng(3)
    images = Tensor[B, 3].from_data(rng.normal(size=(8, 28, 28)).astype(np.float32))
    targets = Tensor[B, 1, Int].from_data(rng.integers(0, 10, size=8))

    def grads(scale):
        return (model.forward_classification(images, targets).loss * scale).backward()
    loud = GradientView(model, grads(1e6))
    norms = loud.norms()
    linear = [norms["linear1.weight"], norms["linear2.weight"]]
    others = max(v for k, v in norms.items() if k not in ("linear1.weight", "linear2.weight"))
    assert others < min(linear)
    return model, grads, loud, float(np.sqrt(others * min(linear)))


def test_make_it_explode():
    model, grads, loud, threshold = views()
    assert ex[2].verdict((loud, GradientView(model, grads(1e6), exploding=threshold))).ok
    quiet = GradientView(model, grads(1.0))
    assert "flags" in ex[2].verdict((quiet, GradientView(model, grads(1e6), exploding=threshold))).message
    assert "only the two linear weights" in ex[2].verdict((loud, GradientView(model, grads(1e6)))).message
    assert "not of the size" in ex[2].verdict((loud, GradientView(model, grads(1e3), exploding=1.0))).message


def test_a_graph_you_can_count():
    assert ex[3].verdict((6, {"w", "b"})).ok
    assert ex[3].verdict((6, ["b", "w"])).ok
    assert "node count" in ex[3].verdict((7, {"w", "b"})).message            # x counted as a node
    assert "node count" in ex[3].verdict((4, {"w", "b"})).message            # the leaves forgotten
    assert "leaves only" in ex[3].verdict((6, {"x", "w", "b"})).message
    assert "missing" in ex[3].verdict((6, {"w"})).message


def test_what_did_training_change():
    rng = np.random.default_rng(4)
    before = rng.normal(size=(8, 1, 3, 3)).astype(np.float32)
    step = rng.uniform(-1e-3, 1e-3, size=(8, 1, 3, 3)).astype(np.float32)
    step[5] *= 3
    after = before + step
    most = int(np.linalg.norm((after.astype(np.float64) - before).reshape(8, -1), axis=1).argmax())
    assert most == 5 and ex[4].verdict((before, after, most)).ok
    least = int(np.linalg.norm(step.reshape(8, -1), axis=1).argmin())
    assert "least" in ex[4].verdict((before, after, least)).message
    flat = int(np.abs(step).argmax())                                          # an index into all 72 weights
    assert "not yet" in ex[4].verdict((before, after, flat)).message
    assert "did not move" in ex[4].verdict((before, before, 0)).message
    assert "shapes" in ex[4].verdict((before[:, 0], after[:, 0], most)).message
