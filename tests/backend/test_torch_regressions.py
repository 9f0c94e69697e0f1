"""Regressions found by the differential fuzzer (test_fuzz_torch.py), each
checked against PyTorch: values on every backend, gradients on the autodiff
ones."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from burnbook import Int, Tensor
from burnbook.tensor import activation

from .oracle import assert_tensor

torch = pytest.importorskip("torch")


def floats(backend, values):
    t = Tensor[backend, np.ndim(values)].from_data(np.asarray(values, dtype=np.float32))
    return t.require_grad() if backend.is_autodiff else t


def ints(backend, values):
    return Tensor[backend, np.ndim(values), Int].from_data(np.asarray(values, dtype=np.int64))


def leaf(values):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def assert_grad(backend, out, x, tx, tout):
    """On autodiff backends: d sum(out * w) / dx matches torch's, for a fixed
    non-symmetric weight w."""
    if not backend.is_autodiff:
        return
    w = np.arange(1, tout.numel() + 1, dtype=np.float64).reshape(tuple(tout.shape))
    grads = (out * floats(backend, w).detach()).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    assert_tensor(x.grad(grads), tx.grad.numpy())


@pytest.mark.parametrize("values, dim, index", [
    ([[1.0, 2.0], [3.0, 4.0]], 1, [[1]]),
    ([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], 1, [[0], [1]]),
    ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], 0, [[1, 0], [1, 1], [0, 1]]),
])
def test_gather_reads_by_the_index_shape(backend, values, dim, index):
    # Outside `dim` the index may be smaller than the tensor; torch reads only
    # the leading part, and the output has the index's shape.
    x, tx = floats(backend, values), leaf(values)
    out, tout = x.gather(dim, ints(backend, index)), torch.gather(tx, dim, torch.tensor(index))
    assert_tensor(out, tout.detach().numpy())
    assert_grad(backend, out, x, tx, tout)


def test_scatter_with_values_smaller_than_the_target(backend):
    target = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]
    index, values = [[2, 0], [1, 1]], [[10.0, 20.0], [30.0, 40.0]]
    x, tx = floats(backend, target), leaf(target)
    v, tv = floats(backend, values), leaf(values)
    out = x.scatter(1, ints(backend, index), v)
    tout = tx.scatter_add(1, torch.tensor(index), tv)
    assert_tensor(out, tout.detach().numpy())
    assert_grad(backend, out, v, tv, tout)


@pytest.mark.parametrize("key", [
    slice(-3, 0, -2), slice(-5, None, -1), slice(-3, -5, -1), slice(5, -9, -2), slice(None, None, -2),
])
def test_negative_step_slice_starting_before_index_0(backend, key):
    # Python's reading of the slice (NumPy's and torch's flip equivalent):
    # a start before index 0 with a negative step selects nothing.
    values = [1.0, 2.0]
    x = floats(backend, values)
    want = np.asarray(values)[key]
    out = x[key]
    assert_tensor(out, want)
    if backend.is_autodiff:
        tx = leaf(values)  # torch has no negative steps: the same picks by index
        tout = tx[torch.tensor(np.arange(len(values))[key].copy(), dtype=torch.long)]
        assert_grad(backend, out, x, tx, tout)


@pytest.mark.parametrize("op", ["max_dim", "min_dim", "argmax", "argmin", "sum_dim", "mean_dim"])
def test_reduction_over_a_non_empty_dim_of_an_empty_tensor(backend, op):
    x = floats(backend, np.zeros((0, 3)))
    t = torch.zeros(0, 3, dtype=torch.float64)
    torch_op = {"max_dim": lambda: t.amax(1, keepdim=True), "min_dim": lambda: t.amin(1, keepdim=True),
                "argmax": lambda: t.argmax(1, keepdim=True), "argmin": lambda: t.argmin(1, keepdim=True),
                "sum_dim": lambda: t.sum(1, keepdim=True), "mean_dim": lambda: t.mean(1, keepdim=True)}[op]
    assert_tensor(getattr(x, op)(1), torch_op().numpy())


@pytest.mark.parametrize("op", ["sum_dim", "mean_dim", "var", "var_bias"])
def test_sum_mean_var_over_an_empty_dim(backend, op):
    # torch: the sum of nothing is 0; the mean and the variance are NaN.
    x = floats(backend, np.zeros((0, 3)))
    t = torch.zeros(0, 3, dtype=torch.float64)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = {"sum_dim": lambda: t.sum(0, keepdim=True), "mean_dim": lambda: t.mean(0, keepdim=True),
                "var": lambda: t.var(0, keepdim=True), "var_bias": lambda: t.var(0, correction=0, keepdim=True)}[op]()
        got = getattr(x, op)(0)
    assert_tensor(got, want.numpy())


@pytest.mark.parametrize("op", ["max_dim", "min_dim", "argmax", "argmin"])
def test_extreme_over_an_empty_dim_is_an_error_naming_it(backend, op):
    with pytest.raises(ValueError, match=r"dim 0 has size 0 \(shape \[0, 3\]\)"):
        getattr(floats(backend, np.zeros((0, 3))), op)(0)
    with pytest.raises(IndexError):  # torch refuses it too
        torch.zeros(0, 3).amax(0)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_of_an_empty_tensor(backend, fn, dim):
    x = floats(backend, np.zeros((0, 3)))
    want = getattr(torch, fn)(torch.zeros(0, 3), dim)
    out = getattr(activation, fn)(x, dim)
    assert_tensor(out, want.numpy())
    assert_tensor(activation.quiet_softmax(x, dim), want.numpy())
    if backend.is_autodiff:
        grad = x.grad(out.sum().backward())
        assert grad is None or grad.dims() == [0, 3]


@pytest.mark.parametrize("beta", [1.0, 2.0, 0.5])
def test_softplus_gradient_at_zero_is_one_half(backend, beta):
    values = [0.0, -0.0, 1.5, -2.0, 25.0, -25.0]
    x, tx = floats(backend, values), leaf(values)
    out, tout = activation.softplus(x, beta), torch.nn.functional.softplus(tx, beta)
    assert_tensor(out, tout.detach().numpy())
    assert_grad(backend, out, x, tx, tout)
    if backend.is_autodiff:
        grads = activation.softplus(x, beta).sum().backward()
        assert x.grad(grads).to_numpy()[:2].tolist() == [0.5, 0.5]


def test_log_sigmoid_gradient_at_zero_is_one_half(backend):
    values = [0.0, -0.0, 1.5, -2.0, 25.0, -25.0]
    x, tx = floats(backend, values), leaf(values)
    out, tout = activation.log_sigmoid(x), torch.nn.functional.logsigmoid(tx)
    assert_tensor(out, tout.detach().numpy())
    assert_grad(backend, out, x, tx, tout)
    if backend.is_autodiff:
        grads = activation.log_sigmoid(x).sum().backward()
        assert x.grad(grads).to_numpy()[:2].tolist() == [0.5, 0.5]


def test_leaky_relu_gradient_at_zero_is_the_slope(backend):
    # As torch, and as relu's 0 there: leaky_relu with slope 0 is relu.
    values = [0.0, -0.0, 1.5, -2.0]
    x, tx = floats(backend, values), leaf(values)
    out, tout = activation.leaky_relu(x, 0.1), torch.nn.functional.leaky_relu(tx, 0.1)
    assert_tensor(out, tout.detach().numpy())
    assert_grad(backend, out, x, tx, tout)


def test_chunk_of_an_empty_dim_gives_empty_chunks(backend):
    x = floats(backend, np.zeros((2, 0)))
    chunks = x.chunk(3, 1)
    want = torch.zeros(2, 0).chunk(3, 1)
    assert [c.dims() for c in chunks] == [list(c.shape) for c in want]


def test_not_equal_elem(backend):
    x = floats(backend, [1.0, 2.0, 2.0])
    assert_tensor(x.not_equal_elem(2.0), torch.tensor([1.0, 2.0, 2.0]).ne(2.0).numpy())
