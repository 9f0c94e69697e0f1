"""The helpers generated models call (`burnbook.importer.onnx.runtime`):
forward values and gradients, checked against PyTorch where it has the same
operation and against finite differences otherwise. (The node test cases in
test_onnx_conformance.py check their forward values against ONNX's.)"""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor
from burnbook.autodiff import Autodiff
from burnbook.autodiff.check import check_grad
from burnbook.backend import NdArray
from burnbook.importer.onnx import runtime as R
from burnbook.tensor import module as F
from burnbook.tensor.ops import ConvOptions

B = Autodiff[NdArray]


def _data(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_max_pool_with_asymmetric_pads_matches_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF

    x, w = _data((2, 3, 5, 6)), _data((2, 3, 5, 3), 1)
    tx = torch.from_numpy(x).requires_grad_()
    # ONNX pads [top, left, bottom, right] = [1, 0, 0, 2]; torch's pad order is (left, right, top, bottom)
    ty = TF.max_pool2d(TF.pad(tx, (0, 2, 1, 0), value=float("-inf")), (2, 3), (1, 2))
    (ty * torch.from_numpy(w)).sum().backward()
    bx = Tensor[B, 4].from_data(x).require_grad()
    by = R.pool(bx, "max", [2, 3], [1, 2], [1, 0, 0, 2], [1, 1])
    np.testing.assert_array_equal(by.to_numpy(), ty.detach().numpy())
    grads = (by * Tensor[B, 4].from_data(w)).sum().backward()
    np.testing.assert_allclose(bx.grad(grads).to_numpy(), tx.grad.numpy(), atol=1e-6)


def test_pad_then_conv_matches_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF

    x, k = _data((1, 3, 4, 5)), _data((4, 3, 2, 2), 2)
    tx = torch.from_numpy(x).requires_grad_()
    ty = TF.conv2d(TF.pad(tx, (1, 0, 0, 2)), torch.from_numpy(k))
    (ty ** 2).sum().backward()
    bx = Tensor[B, 4].from_data(x).require_grad()
    by = F.conv2d(R.pad(bx, [0, 1, 2, 0]), Tensor[B, 4].from_data(k), None, ConvOptions(1, 0, 1, 1))
    np.testing.assert_allclose(by.to_numpy(), ty.detach().numpy(), atol=1e-5)
    grads = (by * by).sum().backward()
    np.testing.assert_allclose(bx.grad(grads).to_numpy(), tx.grad.numpy(), atol=1e-4)


@pytest.mark.parametrize("pads, ceil, include", [([0, 1, 1, 0], True, False), ([1, 2, 2, 1], False, True)])
def test_average_pool_gradients(pads, ceil, include):
    # average pooling is linear, so a large step gives exact finite differences in f32
    x = Tensor[B, 4].from_data(_data((1, 2, 5, 4))).require_grad()
    check_grad(lambda t: R.pool(t, "avg", [2, 3], [2, 1], pads, [1, 1], ceil, include), x, eps=0.1)


def test_average_pool_values():
    """count_include_pad=False divides each window by the values it covers."""
    x = Tensor[NdArray, 4].from_data(np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3))
    out = R.pool(x, "avg", [2, 2], [2, 2], [1, 1, 0, 0], [1, 1], False, False).to_numpy()
    # windows: [1], [2, 3], [4, 7], [5, 6, 8, 9]
    np.testing.assert_allclose(out.reshape(-1), [1.0, 2.5, 5.5, 7.0])
    included = R.pool(x, "avg", [2, 2], [2, 2], [1, 1, 0, 0], [1, 1], False, True).to_numpy()
    np.testing.assert_allclose(included.reshape(-1), [0.25, 1.25, 2.75, 7.0])


def test_gather_with_negative_and_nested_indices():
    x = Tensor[B, 3].from_data(_data((2, 3, 4))).require_grad()
    out = R.gather(x, 1, [[2, -1], [0, 0]], 2)
    assert out.dims() == [2, 2, 2, 4]
    np.testing.assert_array_equal(out.to_numpy(), x.to_numpy()[:, [[2, 2], [0, 0]], :])
    check_grad(lambda t: R.gather(t, 1, [[2, -1], [0, 0]], 2), x, eps=0.1)


def test_layer_norm_over_several_dims():
    x = _data((2, 3, 4))
    scale = np.linspace(0.5, 1.5, 12, dtype=np.float32).reshape(3, 4)
    y, mean, inv = R.layer_norm(Tensor[NdArray, 3].from_data(x), 1, 1e-5, Tensor[NdArray, 2].from_data(scale))
    flat = x.reshape(2, -1)
    mu, var = flat.mean(1), flat.var(1)
    expected = ((x - mu[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)) * scale
    np.testing.assert_allclose(y.to_numpy(), expected, atol=1e-5)
    np.testing.assert_allclose(mean.to_numpy().reshape(-1), mu, atol=1e-6)
    np.testing.assert_allclose(inv.to_numpy().reshape(-1), 1 / np.sqrt(var + 1e-5), rtol=1e-5)
    t = Tensor[B, 3].from_data(x).require_grad()
    check_grad(lambda v: R.layer_norm(v, 1, 1e-5)[0], t)


def test_rounding_casts_round_values_and_pass_gradients_through():
    values = np.array([1.0001, 3.14159, 70000.0, -1e-8], np.float32)
    x = Tensor[B, 1].from_data(values).require_grad()
    y = R.round_float(x, "float16")
    # 70000 is beyond float16's range: inf, as ONNX Cast gives
    np.testing.assert_array_equal(y.to_numpy(), [np.float16(1.0001), np.float16(3.14159), np.inf, np.float16(-1e-8)])
    grads = (y * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad(grads).to_numpy(), [3.0, 3.0, 0.0, 3.0])
    # float8 casts saturate by default: out-of-range values become the largest finite one
    big = Tensor[NdArray, 1].from_data(np.array([1e6, -np.inf], np.float32))
    np.testing.assert_array_equal(R.round_float(big, "float8_e4m3fn").to_numpy(), [448.0, -448.0])


def test_dropout_is_the_identity_unless_training():
    x = Tensor[NdArray, 2].from_data(np.ones((20, 50), np.float32))
    y, mask = R.dropout(x, 0.5, False)
    assert y is x and bool(mask.to_numpy().all())
    NdArray.seed(3)
    y, mask = R.dropout(x, 0.5, True)
    kept = mask.to_numpy()
    assert 0.4 < kept.mean() < 0.6
    np.testing.assert_array_equal(y.to_numpy(), np.where(kept, 2.0, 0.0))


def test_without_the_onnx_package_the_error_says_how_to_install_it(monkeypatch, tmp_path):
    import sys

    from burnbook.importer import ModelGen

    monkeypatch.setitem(sys.modules, "onnx", None)  # as if it were not installed
    with pytest.raises(ImportError, match=r"pip install 'burnbook\[onnx\]'"):
        ModelGen().input(tmp_path / "model.onnx").out_dir(tmp_path).run()


def test_e8m0_casts_round_the_exponent():
    """float8_e8m0fnu holds powers of two only; `round_mode` picks the one."""
    x = Tensor[NdArray, 1].from_data(np.array([0.0, 0.124, 1.1, 1.6, 3e38, np.inf, -1.0], np.float32))
    up = R.round_float(x, "float8_e8m0fnu", round_mode="up").to_numpy()
    np.testing.assert_array_equal(up, np.float32([2.0 ** -127, 0.125, 2, 2, 2.0 ** 127, 2.0 ** 127, np.nan]))
    down = R.round_float(x, "float8_e8m0fnu", round_mode="down").to_numpy()
    np.testing.assert_array_equal(down[1:4], np.float32([0.0625, 1, 1]))
    nearest = R.round_float(x, "float8_e8m0fnu", saturate=False, round_mode="nearest").to_numpy()
    np.testing.assert_array_equal(nearest[1:6], np.float32([0.125, 1, 2, np.nan, np.nan]))
