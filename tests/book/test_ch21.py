"""Chapter 21's checks accept right answers and refuse the typical wrong ones."""

from __future__ import annotations

import numpy as np

from burnbook.autodiff import Backward, CustomOp, Tracked, Untracked
from burnbook.backend import NdArray
from burnbook.book import exercises
from burnbook.tensor import activation

ex = exercises("21")


def chapter_mask(bias_shape):
    rng = np.random.default_rng(1)
    lhs, rhs, bias = (rng.normal(size=s).astype(np.float32) for s in ([2, 2, 3], [2, 3, 2], bias_shape))
    return (lhs @ rhs + bias > 0).astype(np.float32)


def test_predict_the_bias_gradient():
    broadcast, full = chapter_mask([1, 2, 2]), chapter_mask([2, 2, 2])
    assert ex[1].verdict((broadcast.sum(0, keepdims=True), full)).ok
    assert ex[1].verdict((broadcast.sum(0, keepdims=True).tolist(), full.tolist())).ok
    assert "broadcast over the batch" in ex[1].verdict((broadcast, full)).message     # not summed
    assert "off" in ex[1].verdict((np.full([1, 2, 2], 2.0), full)).message             # the ReLU forgotten
    assert "shape" in ex[1].verdict((broadcast.sum(0), full)).message                  # summed without keepdims
    assert "not yet" in ex[1].verdict((broadcast.sum(0, keepdims=True), np.ones([2, 2, 2]))).message


def test_break_the_backward():
    positive = (np.ones([2, 2, 3]), np.ones([2, 3, 2]), np.full([1, 2, 2], 0.5))
    assert ex[2].verdict(({"lhs", "rhs", "bias"}, False, positive)).ok
    assert "not only those" in ex[2].verdict(({"bias"}, False, positive)).message
    assert "finite differences" in ex[2].verdict(({"lhs", "rhs", "bias"}, True, positive)).message
    rng = np.random.default_rng(1)
    chapter = tuple(rng.normal(size=s) for s in ([2, 2, 3], [2, 3, 2], [1, 2, 2]))
    assert "clamped" in ex[2].verdict(({"lhs", "rhs", "bias"}, False, chapter)).message
    assert "shapes" in ex[2].verdict(({"lhs", "rhs", "bias"}, False, (np.ones([2, 3]),) * 3)).message


def sum_to(B, g, shape):
    for d, (n, m) in enumerate(zip(shape, B.float_shape(g))):
        if n == 1 and m != 1:
            g = B.float_sum_dim(g, d)
    return g


def make_leaky(forward_slope=0.1, backward_slope=0.1, reduce_bias=True):
    op = CustomOp(f"leaky_{forward_slope}_{backward_slope}_{reduce_bias}")

    @op.forward(NdArray)
    def _(lhs, rhs, bias):
        z = np.matmul(lhs, rhs) + bias
        return np.where(z > 0, z, np.float32(forward_slope) * z)

    class LeakyBackward(Backward):
        op = "leaky"

        def backward(self, ops, grads):
            B = ops.backend
            node_lhs, node_rhs, node_bias = ops.parents
            grad = grads.consume(ops.node)
            lhs, rhs, out, bias_shape = ops.state
            not_positive = B.float_lower_equal_elem(out, 0.0)
            grad = B.float_mask_where(grad, not_positive, B.float_mul_scalar(grad, backward_slope))
            if node_lhs is not None:
                grads.register(node_lhs, B.float_matmul(grad, B.float_swap_dims(rhs, 1, 2)))
            if node_rhs is not None:
                grads.register(node_rhs, B.float_matmul(B.float_swap_dims(lhs, 1, 2), grad))
            if node_bias is not None:
                grads.register(node_bias, sum_to(B, grad, bias_shape) if reduce_bias else grad)

    @op.autodiff
    def _(B, lhs, rhs, bias):
        forward = op.forward_of(B.InnerBackend)
        match LeakyBackward().prepare([lhs.node, rhs.node, bias.node], B).stateful():
            case Tracked() as prep:
                out = forward(lhs.primitive, rhs.primitive, bias.primitive)
                return prep.finish((lhs.primitive, rhs.primitive, out, B.InnerBackend.float_shape(bias.primitive)), out)
            case Untracked() as prep:
                return prep.finish(forward(lhs.primitive, rhs.primitive, bias.primitive))
    return op.apply


def test_a_leaky_variant():
    assert ex[3].verdict(make_leaky()).ok
    assert ex[3].verdict(lambda l, r, b: activation.leaky_relu(l.matmul(r) + b, 0.1)).ok  # the reference composition
    assert "scaled by 0.1" in ex[3].verdict(make_leaky(backward_slope=0.0)).message       # the ReLU's mask kept
    assert "your output" in ex[3].verdict(make_leaky(forward_slope=0.0)).message
    assert "gradient of bias" in ex[3].verdict(make_leaky(reduce_bias=False)).message     # broadcast not undone
    assert "raised" in ex[3].verdict(lambda l, r, b: l.matmul(b)).message


def make_silu(derivative):
    op = CustomOp("silu_" + derivative.__name__)

    @op.forward(NdArray)
    def _(x):
        return x / (1.0 + np.exp(-x))

    class SiluBackward(Backward):
        op = "silu"

        def backward(self, ops, grads):
            B = ops.backend
            (node_x,) = ops.parents
            grads.register(node_x, B.float_mul(grads.consume(ops.node), derivative(B, ops.state)))

    @op.autodiff
    def _(B, x):
        forward = op.forward_of(B.InnerBackend)
        match SiluBackward().prepare([x.node], B).stateful():
            case Tracked() as prep:
                return prep.finish(x.primitive, forward(x.primitive))
            case Untracked() as prep:
                return prep.finish(forward(x.primitive))
    return op.apply


def right(B, x):
    s = B.float_sigmoid(x)
    return B.float_add(s, B.float_mul(x, B.float_mul(s, B.float_add_scalar(B.float_neg(s), 1.0))))


def no_one_minus(B, x):
    s = B.float_sigmoid(x)
    return B.float_add(s, B.float_mul(x, s))


def sigmoid_only(B, x):
    return B.float_sigmoid(x)


def test_a_new_operation():
    assert ex[4].verdict(make_silu(right)).ok
    assert "gradient of x" in ex[4].verdict(make_silu(no_one_minus)).message
    assert "gradient of x" in ex[4].verdict(make_silu(sigmoid_only)).message
    assert "NdArray output" in ex[4].verdict(activation.sigmoid).message
