"""Conv and pooling layers against PyTorch with the same weights: outputs and
gradients (inputs and parameters), default initialisation, padding configs,
configs and records, printing, and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burnbook import Tensor, nn
from burnbook.autodiff import Autodiff
from burnbook.backend import NdArray

from .helpers import B, assert_close, assert_match, run_burn, run_torch, seeded, set_param

torch = pytest.importorskip("torch")
tnn = torch.nn


def copy_conv(ours, ref) -> dict:
    """Our conv's weight/bias into torch's (same layout); param_map entries."""
    set_param(ref.weight, ours.weight.val().to_numpy())
    params = {"weight": lambda: ref.weight.grad.numpy()}
    if ours.bias is not None:
        set_param(ref.bias, ours.bias.val().to_numpy())
        params["bias"] = lambda: ref.bias.grad.numpy()
    return params


CONV2D = [  # (our config, torch module, input shape)
    (nn.Conv2dConfig([3, 4], [3, 3]), lambda: tnn.Conv2d(3, 4, 3), [2, 3, 7, 6]),
    (nn.Conv2dConfig([4, 6], [3, 2], stride=[2, 1], dilation=[1, 2], groups=2,
                     padding=nn.PaddingConfig2d.Explicit(1, 2)),
     lambda: tnn.Conv2d(4, 6, (3, 2), (2, 1), (1, 2), (1, 2), 2), [2, 4, 8, 7]),
    (nn.Conv2dConfig([2, 3], [3, 5], padding=nn.PaddingConfig2d.Same, bias=False),
     lambda: tnn.Conv2d(2, 3, (3, 5), padding="same", bias=False), [1, 2, 6, 9]),
    (nn.Conv2dConfig([2, 2], [3, 3], dilation=[2, 2], padding=nn.PaddingConfig2d.Same),
     lambda: tnn.Conv2d(2, 2, 3, padding="same", dilation=2), [1, 2, 7, 7]),
]


@pytest.mark.parametrize("i", range(len(CONV2D)))
def test_conv2d_matches_torch(i):
    cfg, make_ref, shape = CONV2D[i]
    B.seed(i)
    layer = cfg.init(backend=B)
    ref = make_ref().double()
    params = copy_conv(layer, ref)
    x = seeded(shape, 1)
    assert_match(run_burn(layer, lambda m, x: m(x), x), run_torch(ref, x), params)


CONV_OTHERS = [
    (nn.Conv1dConfig(4, 6, 3, stride=2, dilation=2, groups=2, padding=nn.PaddingConfig1d.Explicit(1)),
     lambda: tnn.Conv1d(4, 6, 3, 2, 1, 2, 2), [2, 4, 11]),
    (nn.Conv1dConfig(3, 2, 5, padding=nn.PaddingConfig1d.Same), lambda: tnn.Conv1d(3, 2, 5, padding="same"), [2, 3, 9]),
    (nn.ConvTranspose2dConfig([4, 6], [3, 2], stride=[2, 3], padding=[1, 0], padding_out=[1, 2], groups=2),
     lambda: tnn.ConvTranspose2d(4, 6, (3, 2), (2, 3), (1, 0), (1, 2), 2), [2, 4, 4, 3]),
    (nn.ConvTranspose2dConfig([3, 2], [2, 2], dilation=[2, 1], bias=False),
     lambda: tnn.ConvTranspose2d(3, 2, 2, bias=False, dilation=(2, 1)), [1, 3, 5, 4]),
    (nn.ConvTranspose1dConfig([2, 4], 3, stride=2, padding=1, padding_out=1, groups=2),
     lambda: tnn.ConvTranspose1d(2, 4, 3, 2, 1, 1, 2), [2, 2, 6]),
]


@pytest.mark.parametrize("i", range(len(CONV_OTHERS)))
def test_conv1d_and_transposed_match_torch(i):
    cfg, make_ref, shape = CONV_OTHERS[i]
    B.seed(10 + i)
    layer = cfg.init(backend=B)
    ref = make_ref().double()
    params = copy_conv(layer, ref)
    x = seeded(shape, 2)
    assert_match(run_burn(layer, lambda m, x: m(x), x), run_torch(ref, x), params)


POOLS = [
    (nn.MaxPool2dConfig([3, 2], strides=[2, 1], padding=nn.PaddingConfig2d.Explicit(1, 1), dilation=[1, 2],
                        ceil_mode=True),
     tnn.MaxPool2d((3, 2), (2, 1), 1, (1, 2), ceil_mode=True), [2, 3, 7, 8]),
    (nn.MaxPool2dConfig([2, 2], strides=[2, 2]), tnn.MaxPool2d(2), [1, 2, 6, 6]),
    (nn.MaxPool1dConfig(3, stride=2, padding=nn.PaddingConfig1d.Explicit(1)), tnn.MaxPool1d(3, 2, 1), [2, 2, 9]),
    (nn.AvgPool2dConfig([3, 3], strides=[2, 2], padding=nn.PaddingConfig2d.Explicit(1, 1), count_include_pad=False),
     tnn.AvgPool2d(3, 2, 1, count_include_pad=False), [2, 2, 7, 6]),
    (nn.AvgPool2dConfig([2, 3]), tnn.AvgPool2d((2, 3), 1), [1, 2, 5, 5]),
    (nn.AvgPool1dConfig(2, stride=2, padding=nn.PaddingConfig1d.Explicit(1)), tnn.AvgPool1d(2, 2, 1), [2, 3, 7]),
    (nn.AdaptiveAvgPool2dConfig([3, 4]), tnn.AdaptiveAvgPool2d((3, 4)), [2, 2, 7, 9]),
    (nn.AdaptiveAvgPool1dConfig(4), tnn.AdaptiveAvgPool1d(4), [2, 3, 10]),
]


@pytest.mark.parametrize("i", range(len(POOLS)))
def test_pools_match_torch(i):
    cfg, ref, shape = POOLS[i]
    layer = cfg.init()
    x = seeded(shape, 3)
    assert_match(run_burn(layer, lambda m, x: m(x), x), run_torch(ref, x), {})
    assert layer.num_params() == 0


def test_guide_cnn_matches_torch():
    """The book's guide model (without dropout): conv, conv, relu, adaptive
    pool, two linears, on the same weights."""
    from burnbook.tensor import activation

    B.seed(5)
    conv1, conv2 = nn.Conv2dConfig([1, 8], [3, 3]).init(), nn.Conv2dConfig([8, 16], [3, 3]).init()
    pool, linear = nn.AdaptiveAvgPool2dConfig([8, 8]).init(), nn.LinearConfig(1024, 10).init()
    refs = [tnn.Conv2d(1, 8, 3).double(), tnn.Conv2d(8, 16, 3).double(), tnn.Linear(1024, 10).double()]
    copy_conv(conv1, refs[0])
    copy_conv(conv2, refs[1])
    set_param(refs[2].weight, linear.weight.val().to_numpy().T)
    set_param(refs[2].bias, linear.bias.val().to_numpy())
    x = seeded([4, 1, 28, 28], 4)
    ours = linear(pool(activation.relu(conv2(conv1(Tensor[B, 4].from_data(x))))).reshape([4, 1024]))
    features = torch.relu(refs[1](refs[0](torch.tensor(x, dtype=torch.float64))))
    theirs = refs[2](tnn.functional.adaptive_avg_pool2d(features, (8, 8)).reshape(4, 1024))
    assert_close(ours.to_numpy(), theirs.detach().numpy())
    grads = ours.sum().backward()
    theirs.sum().backward()
    assert_close(conv1.weight.val().grad(grads).to_numpy(), refs[0].weight.grad.numpy())
    assert_close(conv2.bias.val().grad(grads).to_numpy(), refs[1].bias.grad.numpy())


def test_conv2d_on_taichi_matches_ndarray():
    pytest.importorskip("taichi")
    from burnbook.backend import Taichi

    T = Autodiff[Taichi]
    B.seed(6)
    layer = nn.Conv2dConfig([2, 2], [2, 2], padding=nn.PaddingConfig2d.Explicit(1, 0)).init(backend=B)
    on_taichi = nn.Conv2dConfig([2, 2], [2, 2], padding=nn.PaddingConfig2d.Explicit(1, 0)).init(backend=T)
    on_taichi = on_taichi.load_record(layer.into_record())
    x = seeded([1, 2, 3, 3], 7)
    y_nd = layer(Tensor[B, 4].from_data(x))
    y_ti = nn.MaxPool2dConfig([2, 2]).init()(on_taichi(Tensor[T, 4].from_data(x).require_grad()))
    grads = y_ti.sum().backward()
    y_nd = nn.MaxPool2dConfig([2, 2]).init()(y_nd)
    nd_grads = y_nd.sum().backward()
    assert_close(y_ti.to_numpy(), y_nd.to_numpy())
    assert_close(on_taichi.weight.val().grad(grads).to_numpy(), layer.weight.val().grad(nd_grads).to_numpy())


# -- initialisation, padding, configs, records, printing ------------------------------------------

@pytest.mark.parametrize("cfg, fan_in", [
    (nn.Conv2dConfig([6, 8], [3, 3], groups=2), 3 * 9),
    (nn.Conv1dConfig(4, 4, 5), 4 * 5),
    (nn.ConvTranspose2dConfig([4, 6], [2, 2], groups=2), 3 * 4),
])
def test_default_init_uses_pytorch_bounds(cfg, fan_in):
    B.seed(8)
    layer = cfg.init()
    bound = 1.0 / math.sqrt(fan_in)
    for p in (layer.weight, layer.bias):
        v = p.val().to_numpy()
        assert np.abs(v).max() <= bound + 1e-7
    assert np.abs(layer.weight.val().to_numpy()).max() > 0.7 * bound
    assert layer.weight.is_require_grad()


def test_weight_layouts_are_pytorchs():
    assert nn.Conv2dConfig([6, 8], [3, 2], groups=2).init().weight.val().dims() == [8, 3, 3, 2]
    assert nn.ConvTranspose2dConfig([6, 8], [3, 2], groups=2).init().weight.val().dims() == [6, 4, 3, 2]
    assert nn.Conv1dConfig(4, 6, 3).init().weight.val().dims() == [6, 4, 3]
    assert nn.ConvTranspose1dConfig([4, 6], 3).init().weight.val().dims() == [4, 6, 3]


def test_same_padding_keeps_the_size():
    x = Tensor[B, 4].from_data(seeded([1, 2, 9, 8], 9))
    for k, d in ((3, 1), (5, 1), (3, 2)):
        conv = nn.Conv2dConfig([2, 3], [k, k], dilation=[d, d], padding=nn.PaddingConfig2d.Same).init()
        assert conv(x).dims() == [1, 3, 9, 8]
    assert nn.MaxPool2dConfig([3, 3], padding=nn.PaddingConfig2d.Same).init()(x).dims() == [1, 2, 9, 8]
    assert nn.PaddingConfig2d.Valid() == nn.PaddingConfig2d.Valid


def test_configs_save_and_load(tmp_path):
    cfg = nn.Conv2dConfig([2, 4], [3, 3], stride=[2, 2], padding=nn.PaddingConfig2d.Explicit(1, 2))
    cfg.save(tmp_path / "conv.json")
    assert nn.Conv2dConfig.load(tmp_path / "conv.json") == cfg
    assert '"Explicit"' in (tmp_path / "conv.json").read_text()
    pool = nn.MaxPool1dConfig(3, padding=nn.PaddingConfig1d.Same)
    assert nn.MaxPool1dConfig.from_json(pool.to_json()) == pool
    assert nn.AvgPool2dConfig.from_json(nn.AvgPool2dConfig([2, 2]).to_json()).padding == nn.PaddingConfig2d.Valid


def test_record_round_trip_and_valid():
    B.seed(11)
    conv = nn.Conv2dConfig([2, 4], [3, 3]).init()
    record = conv.into_record()
    assert list(record.weight.shape) == [4, 2, 3, 3] and list(record.bias.shape) == [4]
    other = nn.Conv2dConfig([2, 4], [3, 3]).init().load_record(record)
    x = seeded([1, 2, 5, 5], 12)
    xb = Tensor[B, 4].from_data(x)
    np.testing.assert_array_equal(conv(xb).to_numpy(), other(xb).to_numpy())
    inner = conv.valid()
    assert inner.weight.val()._B is NdArray
    assert_close(inner(Tensor[NdArray, 4].from_data(x)).to_numpy(), conv(Tensor[B, 4].from_data(x)).to_numpy())


def test_repr():
    assert repr(nn.Conv2dConfig([1, 8], [3, 3]).init()) == (
        "Conv2d {channels: [1, 8], kernel_size: [3, 3], stride: [1, 1], dilation: [1, 1], groups: 1, "
        "padding: Valid, bias: true, params: 80}")
    assert repr(nn.MaxPool2dConfig([2, 2]).with_strides([2, 2]).init()) == (
        "MaxPool2d {kernel_size: [2, 2], strides: [2, 2], padding: Valid, dilation: [1, 1], ceil_mode: false, "
        "params: 0}")
    assert repr(nn.AdaptiveAvgPool2dConfig([8, 8]).init()) == "AdaptiveAvgPool2d {output_size: [8, 8], params: 0}"
    assert "padding: Explicit(1, 0)" in repr(
        nn.Conv2dConfig([2, 2], [3, 3], padding=nn.PaddingConfig2d.Explicit(1, 0)).init())


def test_errors():
    with pytest.raises(ValueError, match=r"channels \[3, 4\] must both be divisible by groups=2"):
        nn.Conv2dConfig([3, 4], [3, 3], groups=2).init()
    conv = nn.Conv2dConfig([3, 4], [3, 3]).init()
    with pytest.raises(ValueError, match=r"x \[1, 2, 5, 5\] has 2 channels, but weight \[4, 3, 3, 3\]"):
        conv(Tensor[B, 4].zeros([1, 2, 5, 5]))
    with pytest.raises(ValueError, match="x must have rank 4"):
        conv(Tensor[B, 3].zeros([3, 5, 5]))
