"""Conv and pool settings are ints, on every backend: a bool (an int to
Python) or a float (1.0 == 1) is refused with a TypeError naming the setting
and the value, as PyTorch's conv2d refuses them, also after an equal int
setting was used and memoised; NumPy ints are taken and give PyTorch's result."""

import numpy as np
import pytest

from burnbook import Tensor, nn
from burnbook.tensor import module as F
from burnbook.tensor.ops import ConvOptions, ConvTransposeOptions

from .oracle import assert_tensor

torch = pytest.importorskip("torch")

# (setting, value, the text the message quotes)
BAD = [
    ("groups", True, "groups must be an int.*got True \\(bool\\)"),
    ("groups", 1.0, "groups must be an int.*got 1.0 \\(float\\)"),
    ("groups", np.True_, "groups must be an int.*got np.True_"),
    ("stride", True, "stride must be an int.*got True \\(bool\\)"),
    ("stride", (True, 1), "stride must be an int.*got \\(True, 1\\)"),
    ("stride", (1.0, 1), "stride must be an int.*got \\(1.0, 1\\)"),
    ("padding", False, "padding must be an int.*got False \\(bool\\)"),
    ("padding", [0, 1.0], "padding must be an int.*got \\[0, 1.0\\]"),
    ("dilation", (True, 1), "dilation must be an int.*got \\(True, 1\\)"),
    ("dilation", (1, True), "dilation must be an int.*got \\(1, True\\)"),
]
# PyTorch's argument parser looks only at a sequence's first item for a bool,
# so it takes these; refusing every bool is the rule here
TORCH_TAKES = {("dilation", "(1, True)")}


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((1, 2, 6, 6)).astype(np.float32), rng.standard_normal((2, 1, 3, 3)).astype(np.float32)


@pytest.mark.parametrize("name, value, message", BAD, ids=[f"{n}={v!r}" for n, v, _ in BAD])
def test_conv_options_refuse_bool_and_float_like_torch(backend, name, value, message):
    x, w = _data()
    torch_kw = {"groups": 2, name: value.item() if isinstance(value, np.generic) else value}
    if (name, repr(value)) not in TORCH_TAKES:
        with pytest.raises(TypeError):   # the oracle refuses the same setting
            torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), **torch_kw)
    xt, wt = Tensor[backend, 4].from_data(x), Tensor[backend, 4].from_data(w)
    good = {"stride": 1, "padding": 0, "dilation": 1, "groups": 2}
    F.conv2d(xt, wt, None, ConvOptions(**good))   # the equal int setting first: memos hold it
    for _ in range(2):
        with pytest.raises(TypeError, match=f"ConvOptions: {message}"):
            F.conv2d(xt, wt, None, ConvOptions(**{**good, name: value}))
    transpose = {"padding_out": 0, **good}
    with pytest.raises(TypeError, match=f"ConvTransposeOptions: {message}"):
        ConvTransposeOptions(**{**transpose, name: value})


def test_numpy_ints_are_taken_and_match_torch(backend):
    x, w = _data(1)
    opts = ConvOptions(np.int64(2), np.array([1, 0]), (np.int32(1), 2), np.int64(2))
    assert opts.groups == 2 and type(opts.groups) is int and opts.padding == (1, 0)
    got = F.conv2d(Tensor[backend, 4].from_data(x), Tensor[backend, 4].from_data(w), None, opts)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=2, padding=(1, 0),
                                      dilation=(1, 2), groups=2)
    assert_tensor(got, want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("field, value", [("groups", True), ("stride", [True, 1]), ("stride", [1, 1.0]),
                                          ("dilation", [True, True])])
def test_conv_layer_refuses_a_bool_after_the_equal_int_was_memoised(backend, field, value):
    layer = nn.Conv2dConfig([2, 2], [3, 3]).init(backend=backend)
    x = Tensor[backend, 4].from_data(_data(2)[0])
    before = layer(x).to_numpy()
    setattr(layer, field, value)
    for _ in range(2):
        with pytest.raises(TypeError, match=f"ConvOptions: {field} must be an int.*got {value!r}".replace("[", "\\[")):
            layer(x)
    setattr(layer, field, 1 if field == "groups" else [1, 1])
    np.testing.assert_array_equal(layer(x).to_numpy(), before)


def test_conv_configs_refuse_a_bool_set_in_place(backend):
    cfg = nn.Conv2dConfig([2, 2], [3, 3])
    cfg.stride[1] = True   # the field's type is checked on assignment, not an item set in place
    with pytest.raises(TypeError, match=r"Conv2dConfig: stride\[1\] must be an int.*got True \(bool\)"):
        cfg.init(backend=backend)
    cfg = nn.ConvTranspose2dConfig([2, 2], [3, 3])
    cfg.padding_out[0] = 0.0
    with pytest.raises(TypeError, match=r"ConvTranspose2dConfig: padding_out\[0\] must be an int.*got 0.0"):
        cfg.init(backend=backend)
    for config, kw in [(nn.Conv1dConfig, dict(channels_in=2, channels_out=2, kernel_size=3)),
                       (nn.ConvTranspose1dConfig, dict(channels=[2, 2], kernel_size=3))]:
        with pytest.raises(TypeError, match="groups"):
            config(**kw, groups=True)


def test_pool_settings_refuse_bool(backend):
    x = Tensor[backend, 4].from_data(_data(3)[0])
    with pytest.raises(TypeError):
        torch.nn.functional.max_pool2d(torch.from_numpy(_data(3)[0]), 2, stride=1.5)
    with pytest.raises(TypeError, match=r"max_pool2d: stride must be an int.*got 1.5"):
        F.max_pool2d(x, 2, stride=1.5)
    with pytest.raises(TypeError, match=r"avg_pool2d: kernel_size must be an int.*got \(2, True\)"):
        F.avg_pool2d(x, (2, True))
    with pytest.raises(TypeError, match=r"adaptive_avg_pool2d: output_size must be an int.*got True"):
        F.adaptive_avg_pool2d(x, True)
