"""Random tensors: `B.seed(s)` makes them reproducible and the same on every
backend; each distribution's statistics are about right on 10k samples."""

import numpy as np
import pytest

from burnbook import Distribution, Tensor
from burnbook.backend import NdArray

N = 10_000


def sample(backend, distribution, n=N):
    return Tensor[backend, 1].random([n], distribution).to_numpy()


def test_seed_makes_random_reproducible(backend):
    backend.seed(1234)
    first = Tensor[backend, 2].random([3, 4], Distribution.Default).to_numpy()
    backend.seed(1234)
    second = Tensor[backend, 2].random([3, 4], Distribution.Default).to_numpy()
    assert first.dtype == np.float32
    np.testing.assert_array_equal(first, second)
    backend.seed(4321)
    assert not np.array_equal(first, Tensor[backend, 2].random([3, 4]).to_numpy())


@pytest.mark.parametrize("distribution", [
    Distribution.Default, Distribution.Uniform(-1.0, 3.0), Distribution.Normal(2.0, 0.5), Distribution.Bernoulli(0.3),
], ids=["default", "uniform", "normal", "bernoulli"])
def test_seeded_random_is_the_same_on_every_backend(backend, distribution):
    backend.seed(7)
    ours = Tensor[backend, 2].random([4, 5], distribution).to_numpy()
    NdArray.seed(7)
    reference = Tensor[NdArray, 2].random([4, 5], distribution).to_numpy()
    np.testing.assert_array_equal(ours, reference)


def test_random_like_and_seed(backend):
    t = Tensor[backend, 2].zeros([2, 3])
    backend.seed(3)
    a = t.random_like(Distribution.Normal(0.0, 1.0))
    backend.seed(3)
    b = t.random_like(Distribution.Normal(0.0, 1.0))
    assert a.dims() == [2, 3]
    np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())


def test_default_is_uniform_on_zero_one(backend):
    backend.seed(0)
    x = sample(backend, Distribution.Default)
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 0.02 and abs(x.var() - 1 / 12) < 0.01


def test_uniform_statistics(backend):
    backend.seed(1)
    x = sample(backend, Distribution.Uniform(-2.0, 4.0))
    assert x.min() >= -2.0 and x.max() <= 4.0
    assert abs(x.mean() - 1.0) < 0.1 and abs(x.var() - 3.0) < 0.2


def test_normal_statistics(backend):
    backend.seed(2)
    x = sample(backend, Distribution.Normal(3.0, 2.0))
    assert abs(x.mean() - 3.0) < 0.1 and abs(x.std() - 2.0) < 0.1
    assert abs(np.mean(np.abs(x - 3.0) < 2.0) - 0.6827) < 0.03


def test_bernoulli_statistics(backend):
    backend.seed(3)
    x = sample(backend, Distribution.Bernoulli(0.3))
    assert set(np.unique(x).tolist()) == {0.0, 1.0}
    assert abs(x.mean() - 0.3) < 0.02


def test_random_with_a_device_and_shape(backend, device):
    t = Tensor[backend, 3].random([2, 0, 3], Distribution.Default, device)
    assert t.dims() == [2, 0, 3]
    assert Tensor[backend, 3].random([2, 1, 3], Distribution.Default, device).device() == device


def test_rng_state_snapshot_replays_the_same_draws(backend, device):
    backend.seed(7)
    state = backend.rng_state()
    first = Tensor[backend, 2].random([3, 5], Distribution.Bernoulli(0.5), device).to_numpy()
    again_without_restore = Tensor[backend, 2].random([3, 5], Distribution.Bernoulli(0.5), device).to_numpy()
    backend.set_rng_state(state)
    replay = Tensor[backend, 2].random([3, 5], Distribution.Bernoulli(0.5), device).to_numpy()
    np.testing.assert_array_equal(first, replay)
    assert not np.array_equal(first, again_without_restore)


def test_set_rng_state_rejects_what_is_not_a_snapshot(backend):
    with pytest.raises(ValueError, match="not a generator snapshot"):
        backend.set_rng_state('{"bit_generator": "NoSuchGenerator"}')
