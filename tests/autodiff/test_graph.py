"""The decorator, the graph and the Gradients container: accumulation,
several roots, grad_remove, untracked ops keeping no state, release."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from burnbook.autodiff import Autodiff, AutodiffTensor, Gradients, Node, edges_of, keep_values, nodes_of
from burnbook.backend.base import Backend
from burnbook.backend.ndarray import NdArray

from .conftest import host, make


def grad_of(B, x, grads):
    g = B.float_grad(x, grads)
    return None if g is None else host(B, g)


# -- the decorator ----------------------------------------------------------------

def test_decorator_identity(backend):
    B = backend
    inner = B.InnerBackend
    assert issubclass(B, Backend) and issubclass(B, Autodiff)
    assert B.is_autodiff and not inner.is_autodiff
    assert Autodiff[inner] is B
    assert B.name() == f"autodiff<{inner.name()}>"
    assert B.Device is inner.Device
    assert B.default_device() == inner.default_device()
    assert B.missing_ops() == []
    assert repr(B) == f"Autodiff[{inner.__name__}]"


def test_ndarray_name():
    assert Autodiff[NdArray].name() == "autodiff<ndarray>"


def test_nested_autodiff_is_a_type_error():
    with pytest.raises(TypeError, match="already differentiable.*create_graph"):
        Autodiff[Autodiff[NdArray]]
    with pytest.raises(TypeError, match="backend class"):
        Autodiff[3]


def test_seed_delegates(backend):
    from burnbook.tensor.distribution import Distribution
    B = backend
    backend.seed(5)
    a = host(B, B.float_random((3,), Distribution.Default, B.default_device()))
    backend.seed(5)
    b = host(B, B.float_random((3,), Distribution.Default, B.default_device()))
    np.testing.assert_array_equal(a, b)


def test_int_bool_prims_are_the_inner_ones(backend):
    B = backend
    x = make(B, [1.5, -2.7, 3.0], grad=True)
    i = B.float_into_int(x)
    assert not isinstance(i, AutodiffTensor)
    assert host(B.InnerBackend, i).tolist() == [1, -2, 3]
    m = B.float_greater_elem(x, 0.0)
    assert not isinstance(m, AutodiffTensor)
    assert B.bool_into_data(B.bool_not(m)).tolist() == [False, True, False]
    f = B.int_into_float(i)
    assert isinstance(f, AutodiffTensor) and f.node is None
    assert isinstance(B.bool_into_float(m), AutodiffTensor)
    assert isinstance(B.float_argmax(x, 0), type(i))


# -- the graph ----------------------------------------------------------------------

def test_untracked_ops_keep_no_state(backend):
    B = backend
    x = make(B, [1.0, 2.0])
    y = B.float_exp(B.float_mul(x, x))
    assert x.node is None and y.node is None
    assert nodes_of(y) == []
    g = B.float_backward(B.float_sum(y))
    assert len(g) == 0


def test_tracked_ops_record_label_parents_shape(backend):
    B = backend
    x = make(B, [[1.0, 2.0, 3.0]], grad=True)
    c = make(B, [[2.0], [3.0]])
    y = B.float_sum(B.float_mul(x, c))
    ns = nodes_of(y)
    assert [n.op for n in ns] == ["leaf", "mul", "sum"]
    leaf, mul, s = ns
    assert mul.parents == (leaf, None) and s.parents == (mul,)
    assert mul.shape == (2, 3) and s.shape == (1,) and leaf.shape == (1, 3)
    assert leaf.is_leaf and leaf.requires_grad and not mul.requires_grad
    assert edges_of(y) == [(leaf, mul), (mul, s)]
    assert "mul" in repr(mul) and f"#{leaf.id}" in repr(mul)


def test_keep_values_for_drawing(backend):
    B = backend
    x = make(B, [1.0, 2.0])
    with keep_values():
        x = B.float_require_grad(x)
        y = B.float_sum(B.float_mul_scalar(x, 3.0))
    z = B.float_exp(y)
    g = B.float_backward(z, retain_grads=True)
    leaf, mul, s, e = nodes_of(z)
    assert host(B.InnerBackend, leaf.value).tolist() == [1.0, 2.0]
    assert host(B.InnerBackend, mul.value).tolist() == [3.0, 6.0]
    assert host(B.InnerBackend, s.value).tolist() == [9.0]
    assert e.value is None                      # made outside the block
    assert len(g) == 4
    np.testing.assert_allclose(host(B.InnerBackend, g.get(mul)), [np.exp(9.0)] * 2, rtol=1e-6)


def test_leaf_id_is_stable(backend):
    B = backend
    x = make(B, [1.0, 2.0], grad=True)
    first = x.node.id
    for _ in range(3):
        g = B.float_backward(B.float_sum(B.float_mul_scalar(x, 3.0)))
        assert x.node.id == first and first in g and x in g


def test_require_grad_flags(backend):
    B = backend
    x = make(B, [1.0, 2.0])
    assert not B.float_is_require_grad(x)
    x = B.float_require_grad(x)
    assert B.float_is_require_grad(x)
    y = B.float_mul_scalar(x, 2.0)
    assert not B.float_is_require_grad(y)  # tracked, but not a leaf (as Burn)
    assert B.float_require_grad(x) is x
    z = B.float_set_require_grad(x, False)
    assert z.node is None and not B.float_is_require_grad(z)
    assert B.float_is_require_grad(B.float_set_require_grad(z, True))
    d = B.float_detach(y)
    assert d.node is None and host(B, d).tolist() == [2.0, 4.0]


def test_backward_seeds_ones_for_non_scalar(backend):
    B = backend
    x = make(B, [[1.0, 2.0], [3.0, 4.0]], grad=True)
    g = B.float_backward(B.float_mul(x, x))
    assert grad_of(B, x, g).tolist() == [[2.0, 4.0], [6.0, 8.0]]


def test_reference_notebook_numbers(backend):
    B = backend
    y = make(B, [1.0, 2.0, 3.0, 4.0], grad=True)
    g = B.float_backward(B.float_sum(B.float_mul_scalar(y, 2.0)))
    assert grad_of(B, y, g).tolist() == [2.0, 2.0, 2.0, 2.0]
    assert B.InnerBackend.float_dtype(B.float_grad(y, g)) == np.float32
    x = make(B, [1.0, 2.0, 3.0, 4.0], grad=True)
    g = B.float_backward(B.float_sum(B.float_powf_scalar(x, 2.0)))
    assert grad_of(B, x, g).tolist() == [2.0, 4.0, 6.0, 8.0]
    x = make(B, [0.0, 1.0, 2.0, 3.0], grad=True)
    g = B.float_backward(B.float_sum(B.float_sin(B.float_powf_scalar(x, 2.0))))
    assert [repr(v) for v in grad_of(B, x, g).tolist()] == [
        repr(float(np.float32(v))) for v in (0.0, 1.0806046, -2.6145744, -5.4667816)]


def test_a_tensor_used_twice_accumulates(backend):
    B = backend
    x = make(B, [1.0, -2.0, 3.0], grad=True)
    y = B.float_add(B.float_mul(x, x), B.float_mul_scalar(x, 3.0))   # x^2 + 3x
    g = B.float_backward(B.float_sum(y))
    assert grad_of(B, x, g).tolist() == [5.0, -1.0, 9.0]


def test_broadcast_gradient_is_summed_to_the_input_shape(backend):
    B = backend
    x = make(B, [[1.0], [2.0]], grad=True)        # [2, 1]
    b = make(B, [[1.0, 2.0, 3.0]], grad=True)     # [1, 3]
    g = B.float_backward(B.float_mul(x, b))
    assert grad_of(B, x, g).tolist() == [[6.0], [6.0]]
    assert grad_of(B, b, g).tolist() == [[3.0, 3.0, 3.0]]


def test_several_roots_over_a_shared_graph(backend):
    B = backend
    x = make(B, [0.5, 1.0], grad=True)
    h = B.float_mul(x, x)                  # shared intermediate, dropped below
    a = B.float_sum(B.float_mul_scalar(h, 3.0))
    b = B.float_sum(B.float_exp(h))
    del h
    ga = B.float_backward(a)
    gb = B.float_backward(b)
    np.testing.assert_allclose(grad_of(B, x, ga), [3.0, 6.0])
    np.testing.assert_allclose(grad_of(B, x, gb), 2 * np.array([0.5, 1.0]) * np.exp([0.25, 1.0]), rtol=1e-6)


def test_a_held_intermediate_can_be_differentiated_later(backend):
    B = backend
    x = make(B, [1.0, 2.0], grad=True)
    h = B.float_mul(x, x)
    B.float_backward(B.float_sum(h))
    g = B.float_backward(B.float_sum(B.float_mul(h, h)))     # d x^4 = 4x^3
    assert grad_of(B, x, g).tolist() == [4.0, 32.0]


def test_backward_twice_on_a_root_is_a_clear_error(backend):
    B = backend
    x = make(B, [1.0, 2.0], grad=True)
    y = B.float_sum(B.float_mul(x, x))
    B.float_backward(y)
    assert y.node.released and y.node.op == "sum"   # drawable after release
    with pytest.raises(RuntimeError, match="op 'sum'.*freed.*retain_graph=True"):
        B.float_backward(y)
    y = B.float_sum(B.float_mul(x, x))
    g1 = B.float_backward(y, retain_graph=True)
    g2 = B.float_backward(y)
    assert grad_of(B, x, g1).tolist() == grad_of(B, x, g2).tolist() == [2.0, 4.0]


def test_retain_graph_false_frees_everything_visited(backend):
    B = backend
    x = make(B, [1.0, 2.0], grad=True)
    h = B.float_exp(x)
    B.float_backward(B.float_sum(h), retain_graph=False)
    assert h.node.released
    with pytest.raises(RuntimeError, match="'exp'"):
        B.float_backward(h)


def test_backward_frees_state_nothing_can_reach(backend):
    B = backend
    x = make(B, [1.0, 2.0], grad=True)
    y = B.float_sum(B.float_exp(B.float_mul(x, x)))
    B.float_backward(y)
    ns = nodes_of(y)
    assert [n.op for n in ns] == ["leaf", "mul", "exp", "sum"]
    assert all(n.released for n in ns[1:])
    assert all(n.saved == () for n in ns[1:])


def test_a_dropped_side_computation_does_not_pin_the_graph(backend):
    B = backend
    x = make(B, [[1.0, 2.0]], grad=True)
    logits = B.float_exp(B.float_mul(x, x))
    B.float_detach(B.float_max_dim(logits, 1))   # a tracked child, dropped at once
    loss = B.float_sum(B.float_log(logits))
    del logits
    B.float_backward(loss)
    assert all(n.released for n in nodes_of(loss)[1:])


def test_grad_remove_and_replace(backend):
    B = backend
    x = make(B, [1.0, 2.0], grad=True)
    w = make(B, [3.0, 4.0], grad=True)
    g = B.float_backward(B.float_sum(B.float_mul(x, w)))
    assert len(g) == 2 and x in g and w in g
    assert host(B, B.float_grad_remove(x, g)).tolist() == [3.0, 4.0]
    assert B.float_grad(x, g) is None and B.float_grad_remove(x, g) is None
    assert len(g) == 1 and x not in g
    B.float_grad_replace(w, g, B.float_inner(make(B, [9.0, 9.0])))
    assert grad_of(B, w, g).tolist() == [9.0, 9.0]
    assert B.float_grad(make(B, [1.0]), g) is None   # untracked


def test_gradients_container(backend):
    B = backend
    x = make(B, [1.0, 2.0], grad=True)
    g = B.float_backward(B.float_sum(x))
    assert isinstance(g, Gradients) and not g.create_graph
    r = repr(g)
    assert r.startswith(f"Gradients<{B.InnerBackend.name()}>") and f"#{x.node.id} (leaf): [2] f32" in r
    g.register(x.node, B.float_inner(make(B, [1.0, 1.0])))
    assert grad_of(B, x, g).tolist() == [2.0, 2.0]
    assert host(B.InnerBackend, g.consume(x.node.id)).tolist() == [2.0, 2.0]
    with pytest.raises(KeyError, match="no gradient"):
        g.consume(x)
    assert repr(g) == f"Gradients<{B.InnerBackend.name()}> {{}}"


def test_only_leaves_are_returned_and_retain_grads(backend):
    B = backend
    x = make(B, [1.0, 2.0], grad=True)
    h = B.float_mul_scalar(x, 3.0)
    y = B.float_sum(B.float_mul(h, h))
    g = B.float_backward(y, retain_graph=True)
    assert g.ids() == [x.node.id]
    g = B.float_backward(y, retain_graph=True, retain_grads=True)
    assert len(g) == 4 and grad_of(B, h, g).tolist() == [6.0, 12.0]
    B.float_require_grad(h)          # on an op's output: PyTorch's retain_grad
    g = B.float_backward(y)
    assert set(g.ids()) == {x.node.id, h.node.id}


def test_inner_and_from_inner(backend):
    B = backend
    x = make(B, [1.0, 2.0], grad=True)
    i = B.float_inner(x)
    assert not isinstance(i, AutodiffTensor)
    back = B.float_from_inner(i)
    assert back.node is None and host(B, back).tolist() == [1.0, 2.0]


def test_deep_chain_has_no_recursion_limit(backend):
    B = backend
    x = make(B, [1.0], grad=True)
    y = x
    for _ in range(5000):
        y = B.float_add_scalar(y, 0.0)
    assert len(nodes_of(y)) == 5001
    assert grad_of(B, x, B.float_backward(y)).tolist() == [1.0]


def test_dropping_the_output_frees_the_graph(nd):
    import weakref
    B = nd
    x = make(B, np.ones(3), grad=True)
    h = B.float_mul(x, x)
    y = B.float_sin(h)                     # sin's node saves h's array
    kept = weakref.ref(h.primitive)
    del h
    gc.collect()
    assert kept() is not None
    del y
    assert kept() is None                  # no cycles: freed without the gc


def test_node_api_is_public():
    assert {"id", "op", "parents", "shape", "requires_grad"} <= set(Node.__slots__)


def test_nodes_of_accepts_a_tensor_and_names_bad_input():
    from burnbook import Tensor
    from burnbook.autodiff import Autodiff, nodes_of
    from burnbook.backend import NdArray

    B = Autodiff[NdArray]
    x = Tensor[B, 1].from_floats([1.0, 2.0]).require_grad()
    y = x.exp().sum()
    assert [n.op for n in nodes_of(y)][-2:] == ["exp", "sum"]
    with pytest.raises(TypeError, match="Autodiff"):
        nodes_of(Tensor[NdArray, 1].from_floats([1.0]))
