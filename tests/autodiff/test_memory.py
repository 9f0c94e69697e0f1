"""A long loop of forward/backward steps keeps memory flat: backward() frees
what the graph kept, and dropping the tensors frees the rest (no cycles)."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np

from .conftest import make


def _step(B, w, x, target):
    # one tiny regression step: loss = mean((tanh(x @ w) - t)^2), then an update
    w = B.float_require_grad(w)
    y = B.float_tanh(B.float_matmul(x, w))
    loss = B.float_mean_dim(B.float_powf_scalar(B.float_sub(y, target), 2.0), 0)
    grads = B.float_backward(loss)
    g = B.float_from_inner(B.float_grad(w, grads))
    return B.float_detach(B.float_sub(w, B.float_mul_scalar(g, 0.1)))


def test_traced_memory_is_flat(nd):
    """tracemalloc sees every Python allocation: no growth over 2,000 steps."""
    B = nd
    w = make(B, np.full((3, 1), 0.1))
    x = make(B, np.arange(6.0).reshape(2, 3) / 6)
    t = make(B, [[0.5], [-0.5]])
    for _ in range(200):                           # warm caches and free lists
        w = _step(B, w, x, t)
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(500):
            w = _step(B, w, x, t)
        start, _ = tracemalloc.get_traced_memory()
        for _ in range(2000):
            w = _step(B, w, x, t)
        end, _ = tracemalloc.get_traced_memory()
        collected = gc.collect()
    finally:
        tracemalloc.stop()
    assert end - start < 8 * 1024, f"memory grew by {end - start} bytes over 2,000 steps"
    assert collected == 0, "the graph made reference cycles"


def test_ten_thousand_steps_keep_resident_memory_flat(nd):
    psutil = __import__("pytest").importorskip("psutil")
    B = nd
    proc = psutil.Process()
    w = make(B, np.full((16, 1), 0.1))
    x = make(B, np.ones((8, 16)))
    t = make(B, np.zeros((8, 1)))
    for _ in range(500):
        w = _step(B, w, x, t)
    before = proc.memory_info().rss
    for _ in range(10_000):
        w = _step(B, w, x, t)
    grown = proc.memory_info().rss - before
    assert grown < 2 * 1024 * 1024, f"resident memory grew by {grown} bytes"


def test_tensor_level_descent_loop_is_flat(nd):
    """The notebook's gradient descent through the Tensor API, 3,000 steps."""
    import pytest
    Tensor = pytest.importorskip("burnbook.tensor").Tensor
    x_val = 0.0

    def step(x_val):
        x = Tensor[nd, 1].from_floats([x_val]).require_grad()
        grads = ((x - 3.0).powf_scalar(2.0)).backward()
        assert x in grads
        return x_val - 0.1 * x.grad(grads).into_scalar()

    for _ in range(200):
        x_val = step(x_val)
    gc.collect()
    tracemalloc.start()
    try:
        for _ in range(300):
            x_val = step(x_val)
        start, _ = tracemalloc.get_traced_memory()
        for _ in range(2700):
            x_val = step(x_val)
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert end - start < 8 * 1024, f"memory grew by {end - start} bytes"
    assert abs(x_val - 3.0) < 1e-4
