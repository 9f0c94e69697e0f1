"""The op-extension API: the book's fused matmul + add + relu, with a forward
for NdArray and a Burn-style backward node (tracked and untracked paths)."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.autodiff import Autodiff, Backward, CustomOp, Tracked, Untracked, check_grad, nodes_of
from burnbook.backend.ndarray import NdArray

from .conftest import host, make

fused = CustomOp("fused_matmul_add_relu")
STATES_BUILT = []


@fused.forward(NdArray)
def _fused_ndarray(lhs, rhs, bias):
    return np.maximum(np.matmul(lhs, rhs) + bias, 0).astype(lhs.dtype, copy=False)


class FusedMatmulAddReluBackward(Backward):
    op = "fused_matmul_add_relu"

    def backward(self, ops, grads):
        B = ops.backend
        node_lhs, node_rhs, node_bias = ops.parents
        grad = grads.consume(ops.node)
        lhs, rhs, output, bias_shape = ops.state
        r = len(bias_shape)
        grad_out = B.float_mask_fill(grad, B.float_lower_equal_elem(output, 0.0), 0.0)  # relu backward
        out_shape = tuple(B.float_shape(grad_out))
        if node_lhs is not None:
            g = B.float_matmul(grad_out, B.float_swap_dims(rhs, r - 2, r - 1))
            grads.register(node_lhs, _sum_to(B, g, node_lhs.shape))
        if node_rhs is not None:
            g = B.float_matmul(B.float_swap_dims(lhs, r - 2, r - 1), grad_out)
            grads.register(node_rhs, _sum_to(B, g, node_rhs.shape))
        if node_bias is not None:
            grads.register(node_bias, _sum_to(B, grad_out, bias_shape, out_shape))


def _sum_to(B, g, shape, gshape=None):
    gshape = gshape or tuple(B.float_shape(g))
    for d, (s, gs) in enumerate(zip(shape, gshape)):
        if s == 1 and gs != 1:
            g = B.float_sum_dim(g, d)
    return g


@fused.autodiff
def _fused_autodiff(B, lhs, rhs, bias):
    forward = fused.forward_of(B.InnerBackend)
    match FusedMatmulAddReluBackward().prepare([lhs.node, rhs.node, bias.node], B).stateful():
        case Tracked() as prep:
            out = forward(lhs.primitive, rhs.primitive, bias.primitive)
            STATES_BUILT.append(1)
            bias_shape = tuple(B.InnerBackend.float_shape(bias.primitive))
            return prep.finish((lhs.primitive, rhs.primitive, out, bias_shape), out)
        case Untracked() as prep:
            return prep.finish(forward(lhs.primitive, rhs.primitive, bias.primitive))


def reference(B, lhs, rhs, bias):
    x = B.float_add(B.float_matmul(lhs, rhs), bias)
    return B.float_mask_fill(x, B.float_lower_equal_elem(x, 0.0), 0.0)


def _inputs(rng):
    return [rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 4, 5)), rng.normal(size=(1, 3, 5))]


def test_forward_on_the_plain_backend():
    rng = np.random.default_rng(0)
    a, b, c = (x.astype(np.float32) for x in _inputs(rng))
    out = fused(NdArray, a, b, c)
    np.testing.assert_allclose(out, np.maximum(a @ b + c, 0), rtol=1e-6)


def test_untracked_path_keeps_no_state():
    B = Autodiff[NdArray]
    STATES_BUILT.clear()
    xs = [make(B, x) for x in _inputs(np.random.default_rng(1))]
    out = fused(B, *xs)
    assert out.node is None and STATES_BUILT == []


def test_tracked_path_records_a_node():
    B = Autodiff[NdArray]
    STATES_BUILT.clear()
    a, b, c = _inputs(np.random.default_rng(2))
    xs = [make(B, a), make(B, b, grad=True), make(B, c)]
    out = fused(B, *xs)
    assert STATES_BUILT == [1]
    n = out.node
    assert n.op == "fused_matmul_add_relu" and n.shape == (2, 3, 5)
    assert n.parents == (None, xs[1].node, None)
    assert [m.op for m in nodes_of(out)] == ["leaf", "fused_matmul_add_relu"]


def test_fused_gradients_match_the_reference_composition():
    B = Autodiff[NdArray]
    a, b, c = _inputs(np.random.default_rng(3))
    res = check_grad(lambda *xs: fused(B, *xs), a, b, c, backend=B,
                     names=["lhs", "rhs", "bias"], reference=lambda *xs: reference(B, *xs))
    assert res.ok and len(res.inputs) == 6


def test_a_missing_forward_is_a_clear_error():
    class Other(NdArray):
        pass

    op = CustomOp("only_taichi")
    with pytest.raises(NotImplementedError, match="'only_taichi' has no forward for backend Other"):
        op(Other, np.ones(2))
    assert fused.forward_of(Other) is _fused_ndarray   # found through the base class
    with pytest.raises(NotImplementedError, match="no autodiff implementation"):
        op(Autodiff[NdArray], np.ones(2))


def test_register_on_a_foreign_node_is_an_error():
    B = Autodiff[NdArray]

    class Bad(Backward):
        def backward(self, ops, grads):
            grads.register(stranger.node, grads.consume(ops.node))

    stranger = make(B, [1.0], grad=True)
    x = make(B, [2.0], grad=True)
    y = Bad().prepare([x], B).stateful().finish(B.InnerBackend.float_mul_scalar(x.primitive, 2.0))
    with pytest.raises(ValueError, match="not a parent"):
        B.float_backward(y)
    assert host(B, y).tolist() == [4.0]
