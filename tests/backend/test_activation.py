"""Activation functions (burnbook.tensor.activation), on every backend:
values against NumPy formulas, stability for large inputs."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnbook import Tensor
from burnbook.tensor import activation

from .oracle import SETTINGS, assert_tensor, check_op, float_arrays, shape_and_dim, shapes

erf = np.vectorize(math.erf, otypes=[np.float64])


def np_softplus(x, beta=1.0):
    z = beta * x
    return (np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))) / beta


def np_softmax(x, d):
    e = np.exp(x - x.max(d, keepdims=True))
    return e / e.sum(d, keepdims=True)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


ELEMENTWISE = [
    ("relu", activation.relu, lambda x: np.maximum(x, 0)),
    ("sigmoid", activation.sigmoid, np_sigmoid),
    ("log_sigmoid", activation.log_sigmoid, lambda x: -np_softplus(-x)),
    ("softplus", lambda t: activation.softplus(t, 1.0), np_softplus),
    ("softplus_beta2", lambda t: activation.softplus(t, 2.0), lambda x: np_softplus(x, 2.0)),
    ("tanh", activation.tanh, np.tanh),
    ("gelu", activation.gelu, lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2)))),
    ("silu", activation.silu, lambda x: x * np_sigmoid(x)),
    ("mish", activation.mish, lambda x: x * np.tanh(np_softplus(x))),
    ("leaky_relu", activation.leaky_relu, lambda x: np.where(x < 0, 0.01 * x, x)),
    ("hard_sigmoid", activation.hard_sigmoid, lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
]

ALONG_DIM = [
    ("softmax", activation.softmax, np_softmax),
    ("log_softmax", activation.log_softmax, lambda x, d: np.log(np_softmax(x, d))),
    ("quiet_softmax", activation.quiet_softmax, lambda x, d: np.exp(x) / (1 + np.exp(x).sum(d, keepdims=True))),
]


def test_activations_by_hand(backend):
    t = Tensor[backend, 1].from_floats([-1.0, 0.0, 2.0])
    assert_tensor(activation.relu(t), np.array([0.0, 0.0, 2.0]))
    assert_tensor(activation.sigmoid(t), np.array([0.2689414214, 0.5, 0.8807970780]))
    assert_tensor(activation.gelu(t), np.array([-0.1586552539, 0.0, 1.9544997361]))
    assert_tensor(activation.softplus(t, 1.0), np.array([0.3132616875, 0.6931471806, 2.1269280110]))
    assert_tensor(activation.silu(t), np.array([-0.2689414214, 0.0, 1.7615941560]))


def test_softmax_by_hand(backend):
    t = Tensor[backend, 2].from_floats([[0.0, math.log(3.0)], [1.0, 1.0]])
    assert_tensor(activation.softmax(t, 1), np.array([[0.25, 0.75], [0.5, 0.5]]))
    assert_tensor(activation.log_softmax(t, -1), np.log(np.array([[0.25, 0.75], [0.5, 0.5]])))
    assert_tensor(activation.quiet_softmax(t, 1), np.array([[0.2, 0.6], [math.e / (1 + 2 * math.e)] * 2]))


def test_large_inputs_stay_finite(backend):
    t = Tensor[backend, 2].from_floats([[1000.0, 1000.0], [-1000.0, 0.0]])
    assert_tensor(activation.softmax(t, 1), np.array([[0.5, 0.5], [0.0, 1.0]]))
    assert_tensor(activation.log_softmax(t, 1), np.array([[-math.log(2), -math.log(2)], [-1000.0, 0.0]]))
    assert_tensor(activation.sigmoid(t), np.array([[1.0, 1.0], [0.0, 0.5]]))
    assert_tensor(activation.log_sigmoid(t), np.array([[0.0, 0.0], [-1000.0, -math.log(2)]]))
    assert_tensor(activation.softplus(t, 1.0), np.array([[1000.0, 1000.0], [0.0, math.log(2)]]))


@pytest.mark.parametrize("name, op, ref", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
@SETTINGS
@given(a=shapes().flatmap(float_arrays))
def test_elementwise_activations_match_numpy(backend, name, op, ref, a):
    check_op(backend, op, ref, a, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, op, ref", ALONG_DIM, ids=[e[0] for e in ALONG_DIM])
@SETTINGS
@given(case=shape_and_dim(), data=st.data())
def test_softmax_family_matches_numpy(backend, name, op, ref, case, data):
    shape, dim = case
    a = data.draw(float_arrays(shape, -5.0, 5.0))
    check_op(backend, lambda t: op(t, dim), lambda x: ref(x, dim), a, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [96, 8192])  # both sides of NdArray's small/large relu paths (4096)
def test_relu_and_sigmoid_match_torch_on_tails_nan_and_signed_zero(backend, n):
    """relu and sigmoid at every size agree with PyTorch: NaN stays NaN, ±inf
    saturate, sigmoid underflows to 0 far below -88 in f32 (as PyTorch's),
    and relu keeps -0.0 (PyTorch's relu zeroes only x < 0), sign bit included."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 30).astype(np.float32)
    x[:8] = [np.nan, np.inf, -np.inf, -0.0, 0.0, -100.0, -88.5, 90.0]
    x[8::5] = -0.0   # signed zeros in the SIMD body too, not just its head
    t = Tensor[backend, 1].from_data(x)
    want_relu = torch.relu(torch.from_numpy(x)).numpy()
    want_sig = torch.sigmoid(torch.from_numpy(x)).numpy()
    got_relu = activation.relu(t).to_numpy()
    got_sig = activation.sigmoid(t).to_numpy()
    np.testing.assert_array_equal(got_relu, want_relu)   # NaN == NaN here; exact: relu rounds nothing
    np.testing.assert_array_equal(np.signbit(got_relu), np.signbit(want_relu))   # -0.0 == 0.0 above
    np.testing.assert_allclose(got_sig, want_sig, rtol=1e-5, atol=1e-30)  # SPIR-V exp: ~20 ulp on the tails
    assert np.isnan(got_sig[0]) and got_sig[1] == 1.0 and got_sig[2] == 0.0


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
@pytest.mark.parametrize("n", [96, 8192])
def test_relu_keeps_signed_zero_and_nan_in_f16_and_f64(backend, dtype, n):
    """relu in the other float types, on both sides of NdArray's size switch,
    agrees with PyTorch bit for bit (-0.0 kept, NaN kept, negatives to +0.0)."""
    torch = pytest.importorskip("torch")
    # eighths below 256: exact in f16, f32 and f64, so the cast from f32 changes nothing
    x = (np.round(np.random.default_rng(n).standard_normal(n) * 240) / 8).clip(-255, 255).astype(dtype)
    x[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, -1.0]
    x[6::5] = -0.0
    t = Tensor[backend, 1].from_data(x.astype(np.float32))
    try:
        t = t.cast(dtype)
    except RuntimeError as err:   # a Vulkan device without f64
        pytest.skip(str(err))
    got = activation.relu(t).to_numpy()
    want = torch.relu(torch.from_numpy(x)).numpy()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
