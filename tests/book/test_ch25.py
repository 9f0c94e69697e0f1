"""Chapter 25's checks accept right answers and refuse the typical wrong ones
(no Ray: models are small modules, the error is built directly)."""

from __future__ import annotations

import numpy as np

from burnbook import nn
from burnbook.backend import NdArray
from burnbook.book import exercises
from burnbook.train.distributed import UnevenBatchError

ex = exercises("25")


def models():
    NdArray.seed(25)
    a = nn.LinearConfig(4, 3).init(NdArray.default_device(), NdArray)
    near = a.map_params(lambda _, p: p.with_value(p.val() + 1e-7))     # equal to 1e-5: float noise only
    far = a.map_params(lambda _, p: p.with_value(p.val() * 1.01))
    return a, near, far


def test_three_workers():
    a, near, far = models()
    assert ex[1].verdict(([43, 43, 42], a, near)).ok
    assert "shard sizes" in ex[1].verdict(([42, 42, 42], a, near)).message        # the 2 left-over items dropped
    assert "shard sizes" in ex[1].verdict(([42, 43, 43], a, near)).message
    assert "differs" in ex[1].verdict(([43, 43, 42], a, far)).message
    assert "same object" in ex[1].verdict(([43, 43, 42], a, a)).message


def test_a_batch_of_one():
    error = UnevenBatchError("DataParallel: a batch of 1 item(s) cannot feed 3 workers (each needs at least one)")
    assert ex[2].verdict(error).ok
    assert "RuntimeError" in ex[2].verdict(RuntimeError("a batch of 1 item(s) cannot feed 3 workers")).message
    other = UnevenBatchError("DataParallel: a batch of 2 item(s) cannot feed 3 workers")
    assert "not about a batch of 1" in ex[2].verdict(other).message


def test_the_mean():
    mean = np.array([5.5, 11.0, 16.5])
    assert ex[3].verdict([mean, mean.astype(np.float32)]).ok
    assert "factor" in ex[3].verdict([2 * mean, 2 * mean]).message                 # the sum, not divided
    assert "process 1" in ex[3].verdict([mean, np.array([10.0, 20.0, 30.0])]).message
    assert "list of the values" in ex[3].verdict([mean]).message


def test_resume_on_two_workers():
    a, near, far = models()
    assert ex[4].verdict((a, near)).ok
    assert "checkpoint of epoch 1" in ex[4].verdict((a, far)).message
