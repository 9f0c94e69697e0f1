"""The autodiff methods on every backend: on a plain backend `require_grad`
does nothing and `backward` explains how to get autodiff; on `Autodiff[B]`
the reference notebook's first example gives its gradient."""

import re

import numpy as np
import pytest

from burnbook import Int, Tensor

from .oracle import assert_tensor


def test_require_grad_without_autodiff_does_nothing(backend):
    if backend.is_autodiff:
        pytest.skip("plain backends only")
    x = Tensor[backend, 1].from_floats([1.0, 2.0])
    assert x.require_grad() is x
    assert x.set_require_grad(True) is x
    assert x.is_require_grad() is False
    assert_tensor(x.detach(), np.array([1.0, 2.0]))


@pytest.mark.parametrize("op", ["backward", "grad", "grad_remove"])
def test_gradients_need_an_autodiff_backend(backend, op):
    if backend.is_autodiff:
        pytest.skip("plain backends only")
    y = Tensor[backend, 1].from_floats([1.0, 2.0]).sum()
    args = () if op == "backward" else (None,)
    with pytest.raises(TypeError, match=re.escape(f"Autodiff[{backend.__name__}]")):
        getattr(y, op)(*args)


def test_inner_needs_an_autodiff_backend(backend):
    if backend.is_autodiff:
        pytest.skip("plain backends only")
    with pytest.raises(TypeError, match="autodiff"):
        Tensor[backend, 1].from_floats([1.0]).inner()


def test_notebook_gradient_example(backend):
    if not backend.is_autodiff:
        pytest.skip("autodiff backends only")
    x = Tensor[backend, 1].from_floats([1.0, 2.0, 3.0, 4.0]).require_grad()
    assert x.is_require_grad()
    y = (x.clone() * 2.0).sum()
    assert_tensor(y, np.array([20.0]))
    grads = y.backward()
    grad = x.grad(grads)
    assert grad._B is backend.InnerBackend
    assert_tensor(grad, np.array([2.0, 2.0, 2.0, 2.0]))
    assert f'backend:  "{backend.InnerBackend.name()}"' in str(grad)


def test_grad_remove_and_untracked_tensors(backend):
    if not backend.is_autodiff:
        pytest.skip("autodiff backends only")
    x = Tensor[backend, 1].from_floats([1.0, 2.0]).require_grad()
    c = Tensor[backend, 1].from_floats([3.0, 4.0])
    grads = (x * x * c).sum().backward()
    assert c.grad(grads) is None
    assert_tensor(x.grad_remove(grads), np.array([6.0, 16.0]))
    assert x.grad(grads) is None and x.grad_remove(grads) is None


def test_backward_retain_grads_keeps_intermediate_gradients(backend):
    if not backend.is_autodiff:
        pytest.skip("autodiff backends only")
    x = Tensor[backend, 1].from_floats([1.0, 2.0]).require_grad()
    h = x * 3.0
    y = (h * h).sum()
    assert h.grad(y.backward(retain_graph=True)) is None
    grads = y.backward(retain_grads=True)
    assert_tensor(h.grad(grads), np.array([6.0, 12.0]))
    assert_tensor(x.grad(grads), np.array([18.0, 36.0]))


def test_detach_inner_and_from_inner(backend):
    if not backend.is_autodiff:
        pytest.skip("autodiff backends only")
    x = Tensor[backend, 2].from_floats([[1.0, -2.0]]).require_grad()
    assert not x.detach().is_require_grad()
    assert not x.set_require_grad(False).is_require_grad()
    inner = x.inner()
    assert inner._B is backend.InnerBackend
    back = Tensor[backend, 2].from_inner(inner)
    assert back._B is backend and not back.is_require_grad()
    assert_tensor(back, np.array([[1.0, -2.0]]))
    ints = Tensor[backend, 1, Int].from_ints([1, 2])
    assert_tensor(ints.inner(), np.array([1, 2]))
