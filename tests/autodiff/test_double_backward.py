"""Gradients of gradients: backward(create_graph=True) records the backward
pass; Hessian-vector products checked against torch, and the clear error of an
op without a second derivative."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burnbook.autodiff import Backward, Tracked, Untracked

from .conftest import host, make

torch = pytest.importorskip("torch")


def _relu(B, x):
    return B.float_mask_fill(x, B.float_lower_equal_elem(x, 0.0), 0.0)


def _sigmoid(B, x):
    return B.float_recip(B.float_add_scalar(B.float_exp(B.float_neg(x)), 1.0))


def _gelu(B, x):
    return B.float_mul(B.float_mul_scalar(x, 0.5),
                       B.float_add_scalar(B.float_erf(B.float_div_scalar(x, math.sqrt(2.0))), 1.0))


# name: (ours(B, x, w), torch(x, w), x sampler, w shape or None)
FUNCS = {
    "cube": (lambda B, x, w: B.float_powf_scalar(x, 3.0), lambda x, w: x ** 3, (-1, 1), None),
    "tanh": (lambda B, x, w: B.float_tanh(x), lambda x, w: torch.tanh(x), (-2, 2), None),
    "sigmoid": (lambda B, x, w: _sigmoid(B, x), lambda x, w: torch.sigmoid(x), (-2, 2), None),
    "softplus": (lambda B, x, w: B.float_log1p(B.float_exp(x)), lambda x, w: torch.log1p(x.exp()), (-2, 2), None),
    "log_exp": (lambda B, x, w: B.float_log(B.float_add_scalar(B.float_mul(B.float_exp(x), B.float_mul(x, x)), 1.0)),
                lambda x, w: torch.log(x.exp() * x * x + 1), (-1, 1), None),
    "gelu": (lambda B, x, w: _gelu(B, x), lambda x, w: torch.nn.functional.gelu(x), (-2, 2), None),
    # GELU and layer norm as the one tracked op each that nn uses (`ops/layers.py`): their
    # rules' backward helpers must carry the graph under create_graph
    "gelu_op": (lambda B, x, w: B.gelu(x), lambda x, w: torch.nn.functional.gelu(x), (-2, 2), None),
    "layer_norm_op": (lambda B, x, w: B.float_mul(B.layer_norm(x, w, B.float_mul_scalar(w, 0.5), 1e-5), x),
                      lambda x, w: torch.nn.functional.layer_norm(x, (4,), w, 0.5 * w, 1e-5) * x, (-1, 1), (4,)),
    "sin_cos": (lambda B, x, w: B.float_mul(B.float_sin(x), B.float_cos(x)), lambda x, w: x.sin() * x.cos(), (-2, 2), None),
    "sqrt_recip": (lambda B, x, w: B.float_add(B.float_sqrt(x), B.float_recip(x)), lambda x, w: x.sqrt() + 1 / x, (0.5, 2), None),
    "div_abs": (lambda B, x, w: B.float_div(B.float_abs(x), B.float_add_scalar(B.float_mul(x, x), 1.0)),
                lambda x, w: x.abs() / (x * x + 1), (0.2, 1), None),
    "relu_sq": (lambda B, x, w: B.float_powf_scalar(_relu(B, x), 3.0), lambda x, w: torch.relu(x) ** 3, (-1, 1), None),
    "clamp_sq": (lambda B, x, w: B.float_mul(B.float_clamp(x, -0.5, 0.5), x), lambda x, w: x.clamp(-0.5, 0.5) * x, (-1, 1), None),
    "matmul": (lambda B, x, w: B.float_tanh(B.float_matmul(x, w)), lambda x, w: torch.tanh(x @ w), (-1, 1), (4, 2)),
    "bcast_mul": (lambda B, x, w: B.float_exp(B.float_mul(x, w)), lambda x, w: (x * w).exp(), (-1, 1), (1, 4)),
    "powf": (lambda B, x, w: B.float_powf(B.float_add_scalar(B.float_mul(x, x), 0.5), w),
             lambda x, w: (x * x + 0.5) ** w, (-1, 1), (3, 4)),
    "mean_sum": (lambda B, x, w: B.float_powf_scalar(B.float_mean_dim(B.float_mul(x, x), 1), 2.0),
                 lambda x, w: (x * x).mean(1, keepdim=True) ** 2, (-1, 1), None),
    "softmax": (lambda B, x, w: B.float_div(B.float_exp(x), B.float_sum_dim(B.float_exp(x), 1)),
                lambda x, w: torch.softmax(x, 1), (-1, 1), None),
    "max_dim": (lambda B, x, w: B.float_powf_scalar(B.float_max_dim(x, 1), 2.0),
                lambda x, w: x.max(1, keepdim=True)[0] ** 2, (-1, 1), None),
    "layout": (lambda B, x, w: B.float_powf_scalar(B.float_slice(B.float_swap_dims(x, 0, 1), (slice(1, 3, 1),)), 3.0),
               lambda x, w: x.transpose(0, 1)[1:3] ** 3, (-1, 1), None),
}


def _hvp_ours(B, fn, x, w, v, vw):
    xs = [make(B, x, np.float64, grad=True)] + ([make(B, w, np.float64, grad=True)] if w is not None else [])
    out = fn(B, xs[0], xs[1] if w is not None else None)
    grads = B.float_backward(B.float_sum(out), create_graph=True)
    assert grads.create_graph
    gs = [B.float_grad(t, grads) for t in xs]
    first = [host(B, g) for g in gs]
    vs = [make(B, v, np.float64)] + ([make(B, vw, np.float64)] if w is not None else [])
    dot = B.float_sum(B.float_mul(gs[0], vs[0]))
    for g, vv in zip(gs[1:], vs[1:]):
        dot = B.float_add(dot, B.float_sum(B.float_mul(g, vv)))
    grads2 = B.float_backward(dot)
    return first, [host(B, B.float_grad(t, grads2)) for t in xs]


def _hvp_torch(fn, x, w, v, vw):
    xs = [torch.tensor(x, requires_grad=True)] + ([torch.tensor(w, requires_grad=True)] if w is not None else [])
    out = fn(xs[0], xs[1] if w is not None else None).sum()
    gs = torch.autograd.grad(out, xs, create_graph=True)
    vs = [torch.tensor(v)] + ([torch.tensor(vw)] if w is not None else [])
    dot = sum((g * vv).sum() for g, vv in zip(gs, vs))
    return [g.detach().numpy() for g in gs], [h.numpy() for h in torch.autograd.grad(dot, xs)]


@pytest.mark.parametrize("name", list(FUNCS))
def test_hessian_vector_product_matches_torch(backend, name):
    ours, theirs, (lo, hi), wshape = FUNCS[name]
    rng = np.random.default_rng(3)
    x = rng.uniform(lo, hi, size=(3, 4))
    w = None if wshape is None else rng.uniform(0.3, 1.2, size=wshape)
    v = rng.normal(size=x.shape)
    vw = None if w is None else rng.normal(size=w.shape)
    f1, h1 = _hvp_ours(backend, ours, x, w, v, vw)
    f2, h2 = _hvp_torch(theirs, x, w, v, vw)
    for a, b in zip(f1, f2):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    for a, b in zip(h1, h2):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_second_derivative_of_cube(backend):
    B = backend
    x = make(B, [1.0, 2.0, -3.0], grad=True)
    grads = B.float_backward(B.float_sum(B.float_powf_scalar(x, 3.0)), create_graph=True)
    gx = B.float_grad(x, grads)                          # 3x^2, tracked
    assert host(B, gx).tolist() == [3.0, 12.0, 27.0]
    assert B.float_grad(x, B.float_backward(gx, retain_graph=True)) is not None
    assert host(B, B.float_grad(x, B.float_backward(B.float_sum(gx)))).tolist() == [6.0, 12.0, -18.0]


def test_third_derivative(backend):
    B = backend
    x = make(B, [0.5, 1.0], np.float64, grad=True)
    g1 = B.float_grad(x, B.float_backward(B.float_sum(B.float_exp(B.float_mul(x, x))), create_graph=True))
    g2 = B.float_grad(x, B.float_backward(B.float_sum(g1), create_graph=True))
    g3 = B.float_grad(x, B.float_backward(B.float_sum(g2)))
    xs = np.array([0.5, 1.0])
    np.testing.assert_allclose(host(B, g3), np.exp(xs ** 2) * (12 * xs + 8 * xs ** 3), rtol=1e-12)


class OpaqueSquare(Backward):
    """x^2 whose backward is opaque (as a custom kernel's would be)."""
    op = "opaque_square"

    def backward(self, ops, grads):
        B = ops.backend
        (x,) = ops.state
        grads.register(ops.parents[0], B.float_mul(grads.consume(ops.node), B.float_mul_scalar(x, 2.0)))


class TransparentSquare(OpaqueSquare):
    op = "transparent_square"
    double_backward = True


def _square(B, x, bw):
    inner = B.InnerBackend
    match bw.prepare([x.node], B).stateful():
        case Tracked() as prep:
            return prep.finish((x,), inner.float_mul(x.primitive, x.primitive))
        case Untracked() as prep:
            return prep.finish(inner.float_mul(x.primitive, x.primitive))


def test_missing_second_derivative_is_a_clear_error(backend):
    B = backend
    x = make(B, [1.0, 2.0], grad=True)
    y = B.float_sum(_square(B, x, OpaqueSquare()))
    grads = B.float_backward(y, create_graph=True)     # first order still works
    gx = B.float_grad(x, grads)
    assert host(B, gx).tolist() == [2.0, 4.0]
    with pytest.raises(NotImplementedError, match="op 'opaque_square' has no second derivative"):
        B.float_backward(B.float_sum(gx))


def test_custom_op_with_double_backward(backend):
    B = backend
    x = make(B, [1.0, 2.0], grad=True)
    y = B.float_sum(B.float_mul(_square(B, x, TransparentSquare()), x))   # x^3
    gx = B.float_grad(x, B.float_backward(y, create_graph=True))
    assert host(B, gx).tolist() == [3.0, 12.0]
    assert host(B, B.float_grad(x, B.float_backward(B.float_sum(gx)))).tolist() == [6.0, 12.0]
