"""Chapter 07's checks accept the right answers and refuse the typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook import Tensor
from burnbook.backend import Autodiff, NdArray
from burnbook.book import exercises
from burnbook.tensor import Distribution, activation

ex = exercises("07")
B = Autodiff[NdArray]


def test_predict_both_gradients():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    assert ex[1].verdict((y, x)).ok
    assert "x's gradient is off" in ex[1].verdict((x, y)).message  # each its own value
    assert "x's gradient is off everywhere by the same factor" in ex[1].verdict((2 * y, x)).message
    assert "pair" in ex[1].verdict(y).message


def test_where_a_gradient_lives():
    assert ex[2].verdict(("ndarray", "autodiff<ndarray>")).ok
    assert "after backward() is not 'autodiff<ndarray>'" in ex[2].verdict(("autodiff<ndarray>", "autodiff<ndarray>")).message
    assert "create_graph=True) is not 'ndarray'" in ex[2].verdict(("ndarray", "ndarray")).message
    assert "string" in ex[2].verdict((NdArray, "autodiff<ndarray>")).message


def test_swish_and_its_gradient():
    assert ex[3].verdict(lambda t: t * activation.sigmoid(t)).ok
    assert "a detach?" in ex[3].verdict(lambda t: t.detach() * activation.sigmoid(t)).message
    assert "off" in ex[3].verdict(lambda t: activation.sigmoid(t)).message


def test_the_check_leaves_the_readers_generator_alone():
    B.seed(3)
    expected = Tensor[B, 1].random([4], Distribution.Default).to_numpy()
    B.seed(3)
    ex[3].verdict(lambda t: t * activation.sigmoid(t))
    assert np.array_equal(Tensor[B, 1].random([4], Distribution.Default).to_numpy(), expected)


def test_newton():
    roots = np.sort(np.roots([4.0, 0.0, -6.0, 1.0]).real)
    assert ex[4].verdict(float(roots[-1])).ok
    assert "not the one" in ex[4].verdict(float(roots[0])).message
    assert "not where f'(x) = 0" in ex[4].verdict(2.0).message
    assert "one x" in ex[4].verdict([1.0, 2.0]).message
