"""Conv layers build their `ConvOptions` once per setting (a per-call speed-up
for imported models): a layer whose stride, dilation or padding changes after a
call must use the new values, and a bad value must raise on every call."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor, nn
from burnbook.backend import NdArray
from burnbook.tensor import module as F
from burnbook.tensor.ops import ConvOptions

torch = pytest.importorskip("torch")


def _torch_conv(layer, x: np.ndarray, **kw) -> np.ndarray:
    weight = torch.tensor(layer.weight.val().to_numpy())
    bias = torch.tensor(layer.bias.val().to_numpy())
    conv = torch.nn.functional.conv1d if x.ndim == 3 else torch.nn.functional.conv2d
    return conv(torch.tensor(x), weight, bias, **kw).numpy()


def test_conv1d_follows_changed_stride_dilation_and_padding():
    layer = nn.Conv1dConfig(2, 3, 3).init(backend=NdArray)
    x = np.random.default_rng(0).standard_normal((2, 2, 11)).astype(np.float32)
    t = Tensor[NdArray, 3].from_data(x)
    np.testing.assert_allclose(layer(t).to_numpy(), _torch_conv(layer, x), rtol=1e-5, atol=1e-5)
    layer.stride = 2
    np.testing.assert_allclose(layer(t).to_numpy(), _torch_conv(layer, x, stride=2), rtol=1e-5, atol=1e-5)
    layer.dilation = 2
    layer.padding = nn.PaddingConfig1d.Explicit(1)
    np.testing.assert_allclose(layer(t).to_numpy(), _torch_conv(layer, x, stride=2, dilation=2, padding=1),
                               rtol=1e-5, atol=1e-5)


def test_conv2d_same_padding_follows_input_size_and_stride():
    layer = nn.Conv2dConfig([2, 3], [3, 3]).with_padding(nn.PaddingConfig2d.Same).init(backend=NdArray)
    rng = np.random.default_rng(1)
    for size in (5, 8):
        x = rng.standard_normal((1, 2, size, size)).astype(np.float32)
        got = layer(Tensor[NdArray, 4].from_data(x)).to_numpy()
        np.testing.assert_allclose(got, _torch_conv(layer, x, padding=1), rtol=1e-5, atol=1e-5)
    layer.stride = [2, 1]   # Same then pads ceil((2 * 7 - 8 + 3) / 2) = 5 rows, 1 column
    got = layer(Tensor[NdArray, 4].from_data(x)).to_numpy()
    np.testing.assert_allclose(got, _torch_conv(layer, x, stride=(2, 1), padding=(5, 1)), rtol=1e-5, atol=1e-5)


def test_bad_settings_raise_on_every_call_after_good_ones():
    layer = nn.Conv1dConfig(2, 3, 3).init(backend=NdArray)
    t = Tensor[NdArray, 3].from_data(np.ones((1, 2, 8), dtype=np.float32))
    layer(t)
    layer.stride = 0
    for _ in range(2):
        with pytest.raises(ValueError, match=r"stride must be >= 1, got \[0\]"):
            layer(t)
    layer.stride = True   # equal to 1 as a key, but not a stride: refused as before
    for _ in range(2):
        with pytest.raises(TypeError):
            layer(t)
    w = Tensor[NdArray, 3].from_data(np.ones((3, 2, 3), dtype=np.float32))
    F.conv1d(t, w, None, ConvOptions(1, 1, 1, 1))
    for _ in range(2):
        with pytest.raises(ValueError, match=r"padding must be >= 0, got \[-1\]"):
            F.conv1d(t, w, None, ConvOptions(1, -1, 1, 1))
    for _ in range(2):
        with pytest.raises(ValueError, match="not divisible by groups=2"):
            F.conv1d(t, w, None, ConvOptions(1, 1, 1, 2))
