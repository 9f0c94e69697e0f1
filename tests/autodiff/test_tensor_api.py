"""Autodiff through the Tensor API: the reference notebook's numbers, the
gradient-descent iterates, activations checked by finite differences, and
gradients of gradients via `backward(create_graph=True)`."""

from __future__ import annotations

import numpy as np
import pytest

tensor = pytest.importorskip("burnbook.tensor")
Tensor = tensor.Tensor
activation = tensor.activation

from burnbook.autodiff import Gradients, check_grad  # noqa: E402


def test_require_grad_backward_grad(backend):
    B = backend
    y = Tensor[B, 1].from_floats([1.0, 2.0, 3.0, 4.0]).require_grad()
    assert y.is_require_grad()
    result = (y.clone() * 2.0).sum()
    assert result.to_numpy().tolist() == [20.0]
    grads = result.backward()
    assert isinstance(grads, Gradients)
    g = y.grad(grads)
    assert g.to_numpy().tolist() == [2.0, 2.0, 2.0, 2.0]
    assert "backend:  \"%s\"" % B.InnerBackend.name() in repr(g)


def test_square(backend):
    x = Tensor[backend, 1].from_floats([1.0, 2.0, 3.0, 4.0]).require_grad()
    y = x.clone().powf_scalar(2.0)
    grads = y.clone().sum().backward()
    assert x.grad(grads).to_numpy().tolist() == [2.0, 4.0, 6.0, 8.0]


def test_chain_rule_prints_the_notebook_numbers(backend):
    x = Tensor[backend, 1].from_floats([0.0, 1.0, 2.0, 3.0]).require_grad()
    y = x.clone().powf_scalar(2.0).sin()
    grads = y.clone().sum().backward()
    g = x.grad(grads)
    assert "[0.0, 1.0806046, -2.6145744, -5.4667816]" in repr(g)
    expected = x.clone().powf_scalar(2.0).cos() * (x.clone() * 2.0)
    assert "[0.0, 1.0806046, -2.6145744, -5.4667816]" in repr(expected)


def test_gradient_descent_iterates(backend):
    x_val = np.float32(0.0)
    lr = np.float32(0.1)
    lines = []
    for i in range(20):
        x = Tensor[backend, 1].from_floats([float(x_val)]).require_grad()
        loss = (x.clone() - 3.0).powf_scalar(2.0)
        loss_scalar = loss.clone().into_scalar()
        lines.append(f"Iteration {i}: x = {x_val:.4f}, loss = {loss_scalar:.4f}")
        grads = loss.backward()
        grad_val = np.float32(x.grad(grads).into_scalar())
        x_val = np.float32(x_val - grad_val * lr)
    assert lines[:4] == [
        "Iteration 0: x = 0.0000, loss = 9.0000",
        "Iteration 1: x = 0.6000, loss = 5.7600",
        "Iteration 2: x = 1.0800, loss = 3.6864",
        "Iteration 3: x = 1.4640, loss = 2.3593",
    ]
    assert lines[19] == "Iteration 19: x = 2.9568, loss = 0.0019"
    assert f"{x_val:.4f}" == "2.9654"


def test_grad_remove_inner_and_untracked(backend):
    B = backend
    x = Tensor[B, 2].from_floats([[1.0, 2.0], [3.0, 4.0]]).require_grad()
    w = Tensor[B, 2].from_floats([[0.5], [0.25]])            # not tracked
    grads = x.matmul(w).sum().backward()
    assert w.grad(grads) is None
    assert x.grad_remove(grads).to_numpy().tolist() == [[0.5, 0.25], [0.5, 0.25]]
    assert x.grad(grads) is None and len(grads) == 0
    inner = x.inner()
    assert (inner + 5).to_numpy().tolist() == [[6.0, 7.0], [8.0, 9.0]]
    back = Tensor[B, 2].from_inner(inner)
    assert not back.is_require_grad()


ACTIVATIONS = {
    "relu": lambda t: activation.relu(t),
    "leaky_relu": lambda t: activation.leaky_relu(t, 0.1),
    "sigmoid": lambda t: activation.sigmoid(t),
    "log_sigmoid": lambda t: activation.log_sigmoid(t),
    "softplus": lambda t: activation.softplus(t, 2.0),
    "tanh": lambda t: activation.tanh(t),
    "gelu": lambda t: activation.gelu(t),
    "silu": lambda t: activation.silu(t),
    "mish": lambda t: activation.mish(t),
    "softmax": lambda t: activation.softmax(t, 1),
    "log_softmax": lambda t: activation.log_softmax(t, 1),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_gradients(backend, name):
    rng = np.random.default_rng(11)
    values = rng.uniform(0.2, 2.0, size=(3, 4)) * rng.choice([-1.0, 1.0], size=(3, 4))
    x = Tensor[backend, 2].from_data(values.astype(np.float64))
    assert check_grad(ACTIVATIONS[name], x, names=[name]).ok


COMPOSITES = {
    "var": lambda t: t.var(1),
    "var_bias": lambda t: t.var_bias(0),
    "stack": lambda t: Tensor.stack([t, t * 2.0], 0),
    "repeat": lambda t: t.repeat(0, 2),
    "triu": lambda t: t.triu(0),
    "index": lambda t: t[0:2, 1],
    "mean": lambda t: t.mean(),
    "powi": lambda t: t.powi_scalar(3),
    "transpose": lambda t: t.transpose(),
    "flatten": lambda t: t.flatten(0, 1),
    "unsqueeze_dim": lambda t: t.unsqueeze_dim(1),
    "narrow": lambda t: t.narrow(1, 1, 2),
    "gram": lambda t: t.matmul(t.transpose()),
    "rdiv": lambda t: 1.0 / (t * t + 1.0),
    "pow_operator": lambda t: (t * t + 1.0) ** 1.5,
}


@pytest.mark.parametrize("name", list(COMPOSITES))
def test_composite_gradients(backend, name):
    """Tensor-layer compositions get their backward from the primitives."""
    values = np.random.default_rng(5).normal(size=(3, 4))
    x = Tensor[backend, 2].from_data(values)
    assert check_grad(COMPOSITES[name], x, names=[name]).ok


def test_double_backward_through_tensors(backend):
    x = Tensor[backend, 1].from_floats([0.5, -1.0, 2.0]).require_grad()
    y = activation.tanh(x).sum()
    grads = y.backward(create_graph=True)
    assert grads.create_graph
    g = Tensor[backend, 1].from_primitive(backend.float_grad(x.into_primitive(), grads))
    g2 = x.grad(g.sum().backward())
    t = np.tanh(np.array([0.5, -1.0, 2.0], dtype=np.float32))
    np.testing.assert_allclose(g2.to_numpy(), -2 * t * (1 - t * t), rtol=1e-5)


def test_grad_of_create_graph_gradients_is_differentiable(backend):
    """With create_graph, `x.grad(grads)` is a tensor of the autodiff backend."""
    x = Tensor[backend, 1].from_floats([1.0, 2.0]).require_grad()
    grads = (x * x * x).sum().backward(create_graph=True)
    g = x.grad(grads)
    assert g.backend is backend
    assert g.to_numpy().tolist() == [3.0, 12.0]
    assert x.grad(g.sum().backward()).to_numpy().tolist() == [6.0, 12.0]
