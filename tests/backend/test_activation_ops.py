"""Activations that are one backend op (`ModuleOps.hard_sigmoid`, `gelu`):
NdArray's in-place versions against the protocol composites they replace,
and the composites' gradients on Autodiff."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor
from burnbook.backend import Autodiff, NdArray, module_layers
from burnbook.tensor import activation


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("alpha, beta", [(0.2, 0.5), (1 / 6, 0.5), (-0.3, 0.1)])
def test_ndarray_hard_sigmoid_is_the_composite_bit_for_bit(dtype, alpha, beta):
    x = np.concatenate([np.random.default_rng(1).standard_normal(500) * 6, [np.nan, np.inf, -np.inf, 0.0, -0.0]])
    x = x.astype(dtype)
    got = NdArray.hard_sigmoid(x, alpha, beta)
    want = module_layers.hard_sigmoid(NdArray, x, alpha, beta)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[500]) and got[501] == (1.0 if alpha > 0 else 0.0)


def test_hard_sigmoid_gradient_on_autodiff_is_alpha_inside_and_zero_outside():
    x = np.array([-10.0, -1.0, 0.0, 1.0, 10.0], np.float32)
    t = Tensor[Autodiff[NdArray], 1].from_data(x).require_grad()
    grads = activation.hard_sigmoid(t, 0.2, 0.5).sum().backward()
    np.testing.assert_allclose(t.grad(grads).to_numpy(), [0.0, 0.2, 0.2, 0.2, 0.0])


def test_gelu_gradient_on_autodiff_is_phi_plus_x_density():
    import math

    x = np.linspace(-4, 4, 17).astype(np.float32)
    t = Tensor[Autodiff[NdArray], 1].from_data(x).require_grad()
    grads = activation.gelu(t).sum().backward()
    want = [0.5 * math.erfc(-v / math.sqrt(2)) + v * math.exp(-v * v / 2) / math.sqrt(2 * math.pi) for v in x]
    np.testing.assert_allclose(t.grad(grads).to_numpy(), want, rtol=1e-5, atol=1e-6)
