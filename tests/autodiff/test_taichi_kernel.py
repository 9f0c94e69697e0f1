"""`taichi_op`: a `@ti.kernel` as a trainable op whose backward is Taichi's
`kernel.grad`. The book's fused matmul + add + relu is checked against its
composition with `check_grad`, and a kernel that breaks Taichi's autodiff
rules is shown to give silently wrong gradients that `check_grad` catches.

Kernels live in this file (Taichi reads kernel source from files), which is
why it has no `from __future__ import annotations`: Taichi reads the
parameter annotations as objects.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest

from burnbook import Tensor
from burnbook.autodiff import (Autodiff, GradCheckError, TaichiKernelOp, check_grad, nodes_of,
                               taichi_op)
from burnbook.backend.ndarray import NdArray
from burnbook.tensor import activation


def _start_taichi():
    try:
        from burnbook.backend.taichi import Taichi
        Taichi.float_from_data(np.zeros(1, np.float32), Taichi.default_device())
    except Exception as e:  # noqa: BLE001 - no Taichi runtime here: skip the module
        pytest.skip(f"Taichi cannot start here ({e})", allow_module_level=True)
    return Taichi


Taichi = _start_taichi()
import taichi as ti  # noqa: E402 - after the runtime check

from burnbook.kernels import custom  # noqa: E402
from burnbook.kernels.examples import fused_matmul_add_relu as fk  # noqa: E402

AT = Autodiff[Taichi]
AN = Autodiff[NdArray]
NAMES = ["lhs", "rhs", "bias"]


# -- kernels of these tests ---------------------------------------------------------
@ti.kernel
def scaled_square(x: ti.types.ndarray(ndim=2), out: ti.types.ndarray(ndim=2), scale: ti.f64,
                  dtype: ti.template()):
    for i, j in out:
        out[i, j] = ti.cast(scale, dtype) * x[i, j] * x[i, j]


@ti.kernel
def times(x: ti.types.ndarray(ndim=1), c: ti.types.ndarray(ndim=1), out: ti.types.ndarray(ndim=1)):
    for i in out:
        out[i] = x[i] * c[i]


@ti.kernel
def row_sums(x: ti.types.ndarray(ndim=2), out: ti.types.ndarray(ndim=1)):
    for i, j in x:
        out[i] += x[i, j]  # accumulation with += only: allowed


@ti.kernel
def square_then_add(x: ti.types.ndarray(ndim=1), out: ti.types.ndarray(ndim=1)):
    for i in x:
        out[i] = x[i] * x[i]      # a plain store first,
    for i in x:
        out[i] += 2 * x[i]        # then only accumulation: allowed


@ti.kernel
def square_then_clear_input(x: ti.types.ndarray(ndim=1), out: ti.types.ndarray(ndim=1)):
    for i in x:
        out[i] = x[i] * x[i]
    for i in x:
        x[i] = 0                  # writes an input: breaks rule 3, silently


@ti.kernel
def square_with_a_top_level_statement(x: ti.types.ndarray(ndim=1), out: ti.types.ndarray(ndim=1)):
    n = x.shape[0]                # a statement outside any loop: breaks rule 4, loudly
    for i in range(n):
        out[i] = x[i] * x[i]


def matmul_add_relu_reference(lhs, rhs, bias):
    return activation.relu(lhs.matmul(rhs) + bias)


fused = taichi_op(fk.fused_matmul_add_relu, fk.output_shape, reference=matmul_add_relu_reference)
broken = taichi_op(fk.fused_matmul_add_relu_in_place, fk.output_shape,
                   reference=matmul_add_relu_reference)
square = taichi_op(scaled_square, lambda shape, scale: shape,
                   reference=lambda x, scale: x * x * scale)


def _arrays(seed, shapes=((2, 3, 4), (2, 4, 5), (1, 3, 5)), dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s).astype(dtype) for s in shapes]


def _tensors(B, arrays, grad=False):
    ts = [Tensor[B, a.ndim].from_data(a) for a in arrays]
    return [t.require_grad() for t in ts] if grad else ts


def _expected(a, b, c, w):
    """relu(a @ b + c) and the gradients of sum(out * w), in NumPy (float64)."""
    a, b, c, w = (np.asarray(x, np.float64) for x in (a, b, c, w))
    z = a @ b + c
    go = w * (z > 0)
    ga = go @ np.swapaxes(b, -1, -2)
    gb = np.swapaxes(a, -1, -2) @ go
    return np.maximum(z, 0), [_sum_to(ga, a.shape), _sum_to(gb, b.shape), _sum_to(go, c.shape)]


def _sum_to(g, shape):
    for d, s in enumerate(shape):
        if s == 1 and g.shape[d] != 1:
            g = g.sum(axis=d, keepdims=True)
    return g


# -- the op object ----------------------------------------------------------------
def test_the_op_reads_the_kernel_signature():
    assert isinstance(fused, TaichiKernelOp)
    assert fused.name == "fused_matmul_add_relu"
    assert fused.inputs == ("lhs", "rhs", "bias") and fused.output_name == "out"
    assert fused.params == ("dtype",) and fused.differentiable == (True, True, True)
    assert square.params == ("scale", "dtype")
    assert repr(fused).startswith("TaichiKernelOp('fused_matmul_add_relu'")


def test_the_core_imports_no_taichi():
    code = "import sys, burnbook, burnbook.autodiff; print('taichi' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- forward ------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 4, 5), (1, 3, 5)),
                                    ((1, 3, 4), (3, 4, 2), (3, 1, 2)),
                                    ((2, 1, 6), (1, 6, 3), (2, 1, 3))])
def test_forward_on_taichi_matches_numpy(shapes):
    a, b, c = _arrays(0, shapes)
    out = fused.apply(*_tensors(Taichi, [a, b, c]))
    assert out.dims() == list(fk.output_shape(a.shape, b.shape, c.shape))
    assert str(out.dtype) == "f32"
    np.testing.assert_allclose(out.to_numpy(), np.maximum(a @ b + c, 0), rtol=1e-5, atol=1e-6)


def test_forward_on_primitives_in_float64():
    a, b, c = _arrays(1, dtype=np.float64)
    dev = Taichi.default_device()
    out = fused(Taichi, *[Taichi.float_from_data(x, dev) for x in (a, b, c)])
    assert np.dtype(Taichi.float_dtype(out)) == np.float64
    np.testing.assert_allclose(Taichi.float_into_data(out), np.maximum(a @ b + c, 0), rtol=1e-12)


def test_strided_inputs_are_made_contiguous():
    a, b, c = _arrays(2)
    at = Tensor[Taichi, 3].from_data(np.ascontiguousarray(np.swapaxes(a, 1, 2))).swap_dims(1, 2)
    out = fused.apply(at, *_tensors(Taichi, [b, c]))
    np.testing.assert_allclose(out.to_numpy(), np.maximum(a @ b + c, 0), rtol=1e-5, atol=1e-6)


def test_bad_shapes_are_clear_errors():
    a, b, c = _tensors(Taichi, _arrays(3))
    with pytest.raises(ValueError, match=r"cannot multiply \[2, 3, 4\] by \[2, 3, 4\]"):
        fused.apply(a, a, c)
    with pytest.raises(TypeError, match=r"takes 3 input tensor\(s\) \(lhs, rhs, bias\), got 2"):
        fused.apply(a, b)
    with pytest.raises(TypeError, match=r"unknown keyword argument\(s\) \['alpha'\]"):
        fused.apply(a, b, c, alpha=0.1)
    with pytest.raises(TypeError, match=r"missing keyword argument\(s\) 'scale'"):
        square.apply(Tensor[Taichi, 2].ones([2, 2]))


def test_signature_errors():
    with pytest.raises(TypeError, match="is not a @ti.kernel"):
        taichi_op(lambda x, out: None, lambda s: s)
    with pytest.raises(ValueError, match="'weights' is not an input"):
        taichi_op(times, lambda a, b: a, differentiable=["weights"])
    with pytest.raises(ValueError, match="no input #5"):
        taichi_op(times, lambda a, b: a, differentiable=[5])


# -- backward -------------------------------------------------------------------------
@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 4, 5), (1, 3, 5)),
                                    ((1, 3, 4), (3, 4, 2), (3, 1, 2))])
def test_fused_gradients_match_the_composition(shapes):
    ts = _tensors(AT, _arrays(4, shapes))
    res = check_grad(lambda *t: fused.apply(*t), *ts, names=NAMES, reference=matmul_add_relu_reference)
    assert res.ok and res.forward is None and len(res.inputs) == 6


def test_fused_gradients_in_float64_on_primitives():
    a, b, c = _arrays(5, dtype=np.float64)
    res = check_grad(lambda *xs: fused(AT, *xs), a, b, c, backend=AT, names=NAMES,
                     reference=lambda *xs: matmul_add_relu_reference(
                         *[Tensor[AT, 3].from_primitive(x) for x in xs]).into_primitive())
    assert res.ok and res.rtol == 1e-6


def test_gradients_match_numpy_with_a_random_cotangent():
    a, b, c = _arrays(6)
    w = np.random.default_rng(7).normal(size=(2, 3, 5)).astype(np.float32)
    ts = _tensors(AT, [a, b, c], grad=True)
    out = fused.apply(*ts)
    grads = (out * Tensor[AT, 3].from_data(w)).sum().backward()
    want_out, want = _expected(a, b, c, w)
    np.testing.assert_allclose(out.to_numpy(), want_out, rtol=1e-5, atol=1e-6)
    for t, g in zip(ts, want):
        got = t.grad(grads)
        assert got.into_primitive().__class__.__name__ == "TaichiTensor"  # a Taichi primitive
        np.testing.assert_allclose(got.to_numpy(), g, rtol=1e-4, atol=1e-5)


def test_only_tracked_inputs_get_gradients():
    a, b, c = _arrays(8)
    lhs, rhs, bias = _tensors(AT, [a, b, c])
    rhs = rhs.require_grad()
    grads = fused.apply(lhs, rhs, bias).sum().backward()
    assert lhs.grad(grads) is None and bias.grad(grads) is None
    np.testing.assert_allclose(rhs.grad(grads).to_numpy(), _expected(a, b, c, np.ones((2, 3, 5)))[1][1],
                               rtol=1e-4, atol=1e-5)


def test_an_input_used_twice_accumulates_and_grad_views_are_materialised():
    x = Tensor[AT, 2].from_data(np.arange(6.0, dtype=np.float32).reshape(2, 3)).require_grad()
    xt = x.swap_dims(0, 1)                     # a strided view as the input
    y = square.apply(xt, scale=0.5) + square.apply(xt, scale=1.5)
    grads = y.sum().backward()                 # the seed arrives as a broadcast view
    np.testing.assert_allclose(x.grad(grads).to_numpy(), 4.0 * np.arange(6.0).reshape(2, 3))


def test_params_reach_the_kernel_and_the_reference():
    x = Tensor[AT, 2].from_data(_arrays(9, [(3, 4)])[0])
    res = check_grad(lambda t: square.apply(t, scale=-2.5), x,
                     reference=lambda t: t * t * -2.5, names=["x"])
    assert res.ok


def test_accumulating_kernels_are_fine():
    sums = taichi_op(row_sums, lambda s: s[:1], reference=lambda x: x.sum_dim(1).reshape([-1]))
    x = Tensor[AT, 2].from_data(_arrays(10, [(4, 5)])[0])
    assert check_grad(lambda t: sums.apply(t), x, reference=lambda t: t.sum_dim(1).reshape([-1])).ok


def test_non_differentiable_inputs_are_constants():
    op = taichi_op(times, lambda a, b: a, differentiable=["x"])
    assert op.differentiable == (True, False)
    x = Tensor[AT, 1].from_floats([1.0, 2.0, 3.0]).require_grad()
    c = Tensor[AT, 1].from_floats([4.0, 5.0, 6.0]).require_grad()
    grads = op.apply(x, c).sum().backward()
    assert x.grad(grads).to_numpy().tolist() == [4.0, 5.0, 6.0]
    assert c.grad(grads) is None


def test_untracked_path_keeps_no_state_and_allocates_no_grads(monkeypatch):
    made = []
    real = ti.ndarray

    def recording(dtype, shape, needs_grad=False, **kw):
        made.append(needs_grad)
        return real(dtype, shape, needs_grad=needs_grad, **kw)

    monkeypatch.setattr(ti, "ndarray", recording)
    ts = _tensors(AT, _arrays(11))
    out = fused(AT, *[t.into_primitive() for t in ts])
    assert out.node is None and made == [False] * 4

    made.clear()
    ts[2] = ts[2].require_grad()
    out = fused(AT, *[t.into_primitive() for t in ts])
    assert made == [True] * 4                   # differentiable inputs and the output
    node = out.node
    assert node.op == "fused_matmul_add_relu" and node.shape == (2, 3, 5)
    assert node.parents == (None, None, ts[2].into_primitive().node)
    assert [n.op for n in nodes_of(out)] == ["leaf", "fused_matmul_add_relu"]
    (state,) = node.args
    assert state.output.grad is not None and all(x.grad is not None for x in state.inputs)


def test_a_training_loop_learns_through_the_kernel():
    rng = np.random.default_rng(12)
    x = rng.normal(size=(1, 16, 3)).astype(np.float32)
    w_true = rng.normal(size=(1, 3, 2)).astype(np.float32)
    target = Tensor[AT, 3].from_data(np.maximum(x @ w_true + 0.5, 0))
    xs = Tensor[AT, 3].from_data(x)
    w = Tensor[AT, 3].from_data(np.zeros((1, 3, 2), np.float32) + 0.1).require_grad()
    b = Tensor[AT, 3].from_data(np.full((1, 1, 2), 0.1, np.float32)).require_grad()
    losses = []
    for _ in range(60):
        err = fused.apply(xs, w, b) - target
        loss = (err * err).mean()
        grads = loss.backward()
        losses.append(float(loss.into_scalar()))
        w = Tensor[AT, 3].from_inner(w.inner() - w.grad(grads) * 0.3).require_grad()
        b = Tensor[AT, 3].from_inner(b.inner() - b.grad(grads) * 0.3).require_grad()
    assert losses[-1] < 0.1 * losses[0]


def test_no_second_derivative_is_a_clear_error():
    x = Tensor[AT, 2].from_data(_arrays(13, [(2, 2)])[0]).require_grad()
    grads = square.apply(x, scale=1.0).sum().backward(create_graph=True)
    gx = x.grad(grads)
    with pytest.raises(NotImplementedError, match="'scaled_square' has no second derivative"):
        gx.sum().backward()


# -- zero-size tensors --------------------------------------------------------------
def test_zero_size_output_gives_zero_gradients():
    lhs = Tensor[AT, 3].zeros([2, 0, 4]).require_grad()
    rhs = Tensor[AT, 3].ones([2, 4, 5]).require_grad()
    bias = Tensor[AT, 3].ones([1, 1, 5]).require_grad()
    out = fused.apply(lhs, rhs, bias)
    assert out.dims() == [2, 0, 5]
    grads = out.sum().backward()
    assert lhs.grad(grads).dims() == [2, 0, 4]
    assert rhs.grad(grads).to_numpy().tolist() == np.zeros((2, 4, 5)).tolist()


def test_an_empty_input_is_a_clear_error():
    with pytest.raises(ValueError, match="input 'lhs' of shape \\[2, 3, 0\\] has no element"):
        fused.apply(Tensor[Taichi, 3].zeros([2, 3, 0]), Tensor[Taichi, 3].zeros([2, 0, 5]),
                    Tensor[Taichi, 3].zeros([1, 1, 5]))


# -- other backends -------------------------------------------------------------------
def test_other_backends_run_the_reference_composition():
    a, b, c = _arrays(14)
    out = fused.apply(*_tensors(NdArray, [a, b, c]))
    np.testing.assert_allclose(out.to_numpy(), np.maximum(a @ b + c, 0), rtol=1e-5, atol=1e-6)
    ts = _tensors(AN, [a, b, c])
    assert check_grad(lambda *t: fused.apply(*t), *ts, names=NAMES).ok
    out = fused.apply(*[t.require_grad() for t in ts])
    assert "fused_matmul_add_relu" not in [n.op for n in nodes_of(out.into_primitive())]


def test_without_a_reference_other_backends_are_refused():
    op = taichi_op(times, lambda a, b: a)
    x = Tensor[NdArray, 1].from_floats([1.0])
    with pytest.raises(NotImplementedError, match="runs on the Taichi backend only; 'ndarray' needs"):
        op.apply(x, x)
    y = Tensor[AN, 1].from_floats([1.0])
    with pytest.raises(NotImplementedError, match="'autodiff<ndarray>' needs a reference"):
        op.apply(y, y)


def test_a_registered_forward_takes_precedence():
    op = taichi_op(times, lambda a, b: a)

    @op.forward(NdArray)
    def _(x, c):
        return x * c * 10

    x = Tensor[NdArray, 1].from_floats([1.0, 2.0])
    assert op.apply(x, x).to_numpy().tolist() == [10.0, 40.0]


# -- the silent failure ------------------------------------------------------------------
def test_the_in_place_kernel_is_silently_wrong():
    """kernel.grad of a kernel that reads an output element and then overwrites
    it compiles and runs without an error or a warning, its forward is right,
    and its gradients are wrong: the adjoint recomputes the relu mask from the
    overwritten value relu(z) + bias instead of z + bias."""
    a, b, c = _arrays(15, ((2, 3, 4), (2, 4, 5), (2, 3, 5)))
    ts = _tensors(AT, [a, b, c], grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = broken.apply(*ts)
        grads = out.sum().backward()
    want_out, want = _expected(a, b, c, np.ones((2, 3, 5)))
    np.testing.assert_allclose(out.to_numpy(), want_out, rtol=1e-5, atol=1e-6)   # forward: right
    got = [t.grad(grads).to_numpy() for t in ts]
    assert all(np.abs(g - w).max() > 0.5 for g, w in zip(got, want))           # gradients: wrong
    z = a @ b + c
    stale = (np.maximum(z, 0) + c > 0).astype(np.float64)                        # what it computed
    np.testing.assert_allclose(got[2], stale)
    np.testing.assert_allclose(got[0], stale @ np.swapaxes(b, 1, 2), rtol=1e-4, atol=1e-5)


def test_check_grad_catches_the_in_place_kernel():
    ts = _tensors(AT, _arrays(16))
    with pytest.raises(GradCheckError) as err:
        check_grad(lambda *t: broken.apply(*t), *ts, names=NAMES, reference=matmul_add_relu_reference)
    report = str(err.value)
    assert "FAILED" in report and "FAIL forward" not in report     # only the gradients are wrong
    for name in NAMES:
        assert f"FAIL {name} vs reference" in report and f"FAIL {name} [" in report
    res = check_grad(lambda *t: broken.apply(*t), *ts, names=NAMES, raise_error=False)
    assert not res.ok                                              # finite differences alone catch it too


def test_the_copy_kernels_round_trip():
    x = Tensor[Taichi, 3].from_data(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    p = x.into_primitive()
    nd = ti.ndarray(ti.f32, (2, 3, 4))
    custom.flat_to_nd(p.buf, p.offset, nd)
    np.testing.assert_array_equal(nd.to_numpy(), np.arange(24).reshape(2, 3, 4))
    back = Taichi.float_empty((2, 3, 4), p.device)
    custom.nd_to_flat(nd, back.buf, back.offset)
    np.testing.assert_array_equal(Taichi.float_into_data(back), np.arange(24).reshape(2, 3, 4))


def test_a_store_followed_by_accumulation_is_right():
    op = taichi_op(square_then_add, lambda s: s)
    x = Tensor[AT, 1].from_floats([1.0, -2.0, 3.0, 0.5])
    assert check_grad(lambda t: op.apply(t), x, reference=lambda t: t * t + t * 2.0).ok


def test_check_grad_catches_a_kernel_that_writes_its_input():
    op = taichi_op(square_then_clear_input, lambda s: s)
    x = Tensor[AT, 1].from_floats([1.0, -2.0, 3.0, 0.5])
    y = op.apply(x)
    assert y.to_numpy().tolist() == [1.0, 4.0, 9.0, 0.25]        # forward right
    g = x.require_grad()
    grads = op.apply(g).sum().backward()
    assert g.grad(grads).to_numpy().tolist() == [0.0] * 4         # gradients silently zero
    with pytest.raises(GradCheckError, match="FAIL input 0"):
        check_grad(lambda t: op.apply(t), x, reference=lambda t: t * t)


def test_a_top_level_statement_fails_loudly_at_the_first_backward():
    op = taichi_op(square_with_a_top_level_statement, lambda s: s)
    x = Tensor[AT, 1].from_floats([1.0, 2.0]).require_grad()
    y = op.apply(x)                                               # the forward runs
    assert y.to_numpy().tolist() == [1.0, 4.0]
    with pytest.raises(RuntimeError, match="Mixed usage of for-loops and statements without looping"):
        y.sum().backward()
