"""Convolution layers: `Conv1d`, `Conv2d`, `ConvTranspose1d`, `ConvTranspose2d`.

As in Burn, every weight and bias starts from `KaimingUniform(gain=1/sqrt(3),
fan_out_only=False)` with fan_in = in/groups * kernel elements: U(-b, b) with
b = 1/sqrt(fan_in), PyTorch's default bounds. Layouts are PyTorch's: conv
weights `[out, in/groups, (kh,) kw]`, transposed-conv weights
`[in, out/groups, (kh,) kw]`, so PyTorch weights load as they are.

    conv = nn.Conv2dConfig([1, 8], [3, 3]).with_padding(nn.PaddingConfig2d.Same).init(device)
    y = conv(x)       # [batch, 1, 28, 28] -> [batch, 8, 28, 28]
"""

from __future__ import annotations

import functools

import math
from typing import Any

from burnbook.backend.module_ops import is_int
from burnbook.config import ConfigError, config
from burnbook.module import Module, Param
from burnbook.tensor import Tensor
from burnbook.tensor import module as F
from burnbook.tensor.ops import ConvOptions, ConvTransposeOptions
from .common import check_config, resolve_backend, show
from .initializer import Initializer, KaimingUniform
from .padding import PaddingConfig1d, PaddingConfig2d

__all__ = [
    "Conv1d", "Conv1dConfig", "Conv2d", "Conv2dConfig", "ConvTranspose1d", "ConvTranspose1dConfig",
    "ConvTranspose2d", "ConvTranspose2dConfig",
]


def _default_init() -> Initializer:
    return KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)


_PAIRS = ("channels", "kernel_size", "stride", "dilation")  # [in, out], [h, w]: two values each
_PADS = ("padding", "padding_out")


def _check_ints(cfg: Any, fields: tuple) -> None:
    """Every setting in `fields` (an int or a list of ints) holds ints: the
    field types are checked on assignment, but not an item set in place
    (`cfg.stride[0] = True`), and True would pass for 1 from here on."""
    for field in fields:
        value = getattr(cfg, field)
        for i, item in enumerate(value if isinstance(value, list) else [value]):
            if not is_int(item):
                where = f"{field}[{i}]" if isinstance(value, list) else field
                raise TypeError(f"{type(cfg).__name__}: {where} must be an int (bool and float are refused), "
                                f"got {item!r} ({type(item).__name__})")


def _check_groups(name: str, c_in: int, c_out: int, groups: int) -> None:
    if c_in % groups or c_out % groups:
        raise ConfigError(f"{name}: channels [{c_in}, {c_out}] must both be divisible by groups={groups}")


def _params(init: Initializer, weight_shape: list, bias_len: int, fan_in: int, fan_out: int,
            bias: bool, device: Any, backend: type) -> tuple:
    fans = dict(fan_in=fan_in, fan_out=fan_out, backend=backend)
    weight = init.init(weight_shape, device, **fans)
    return weight, init.init([bias_len], device, **fans) if bias else None


def _val(p: Param | None) -> Tensor | None:
    return None if p is None else p.val()


@functools.lru_cache(maxsize=1024, typed=True)
def _cached_options(n: int, *values: Any) -> ConvOptions:
    return ConvOptions(values[:n], values[n:2 * n], values[2 * n:3 * n], values[-1])


def _conv_options(stride: Any, pad: tuple, dilation: Any, groups: Any) -> ConvOptions:
    """The `ConvOptions` of a forward call, built once per distinct setting
    (an LRU cache keyed by the values themselves, so a layer whose stride or
    padding changes gets fresh options; a bad value is never cached and
    raises on every call).

    The cache takes every number as an argument of its own: `typed` tells
    True and 1.0 from 1 only among arguments, not among a tuple's items, and
    ConvOptions refuses bools and floats with a TypeError naming the setting."""
    try:
        s = (stride,) if type(stride) is int else tuple(stride)
        d = (dilation,) if type(dilation) is int else tuple(dilation)
        n = len(pad)
        if len(s) == n == len(d):
            return _cached_options(n, *s, *pad, *d, groups)
    except TypeError:   # not a sequence, not hashable, or refused: ConvOptions says which
        pass
    return ConvOptions(stride, pad, dilation, groups)


@config
class Conv2dConfig:
    """Settings of a `Conv2d`: `channels` [in, out], `kernel_size` [kh, kw]."""

    channels: list[int]
    kernel_size: list[int]
    stride: list[int] = [1, 1]
    dilation: list[int] = [1, 1]
    groups: int = 1
    padding: PaddingConfig2d = PaddingConfig2d.Valid
    bias: bool = True
    initializer: Initializer = _default_init()

    def __post_init__(self) -> None:
        _check_ints(self, _PAIRS + ("groups",))
        check_config(self, pairs=_PAIRS, sizes=_PAIRS + ("groups",))
        _check_groups("Conv2dConfig", *self.channels, self.groups)

    def init(self, device: Any = None, backend: type | None = None) -> "Conv2d":
        self.__post_init__()
        B = resolve_backend(device, backend)
        c_in, c_out = self.channels
        k = self.kernel_size[0] * self.kernel_size[1]
        weight, bias = _params(self.initializer, [c_out, c_in // self.groups, *self.kernel_size], c_out,
                               c_in // self.groups * k, c_out // self.groups * k, self.bias, device, B)
        return Conv2d(weight=weight, bias=bias, stride=list(self.stride), kernel_size=list(self.kernel_size),
                      dilation=list(self.dilation), groups=self.groups, padding=self.padding)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "Conv2d":
        return self.init(device, backend).load_record(record)


class Conv2d(Module):
    """2-D convolution over `[batch, channels_in, height, width]`."""

    weight: Param
    bias: Param | None = None
    stride: list = [1, 1]
    kernel_size: list = [1, 1]
    dilation: list = [1, 1]
    groups: int = 1
    padding: PaddingConfig2d = PaddingConfig2d.Valid

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - Burn's name
        """`[batch, channels_in, H, W]` -> `[batch, channels_out, Ho, Wo]`."""
        pad = self.padding.calculate(input.dims()[2:], self.kernel_size, self.stride, self.dilation)
        return F.conv2d(input, self.weight.val(), _val(self.bias),
                        _conv_options(self.stride, pad, self.dilation, self.groups))

    def extra_repr(self) -> dict:
        c_out, cg = self.weight.val().dims()[:2]
        return {"channels": [cg * self.groups, c_out], "kernel_size": self.kernel_size, "stride": self.stride,
                "dilation": self.dilation, "groups": self.groups, "padding": str(self.padding),
                "bias": show(self.bias is not None)}


@config
class Conv1dConfig:
    """Settings of a `Conv1d` (Burn's field names)."""

    channels_in: int
    channels_out: int
    kernel_size: int
    stride: int = 1
    dilation: int = 1
    groups: int = 1
    padding: PaddingConfig1d = PaddingConfig1d.Valid
    bias: bool = True
    initializer: Initializer = _default_init()

    def __post_init__(self) -> None:
        _check_ints(self, ("channels_in", "channels_out", "kernel_size", "stride", "dilation", "groups"))
        check_config(self, sizes=("channels_in", "channels_out", "kernel_size", "stride", "dilation",
                                  "groups"))
        _check_groups("Conv1dConfig", self.channels_in, self.channels_out, self.groups)

    def init(self, device: Any = None, backend: type | None = None) -> "Conv1d":
        self.__post_init__()
        B = resolve_backend(device, backend)
        c_in, c_out, k = self.channels_in, self.channels_out, self.kernel_size
        weight, bias = _params(self.initializer, [c_out, c_in // self.groups, k], c_out,
                               c_in // self.groups * k, c_out // self.groups * k, self.bias, device, B)
        return Conv1d(weight=weight, bias=bias, stride=self.stride, kernel_size=k, dilation=self.dilation,
                      groups=self.groups, padding=self.padding)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "Conv1d":
        return self.init(device, backend).load_record(record)


class Conv1d(Module):
    """1-D convolution over `[batch, channels_in, length]`."""

    weight: Param
    bias: Param | None = None
    stride: int = 1
    kernel_size: int = 1
    dilation: int = 1
    groups: int = 1
    padding: PaddingConfig1d = PaddingConfig1d.Valid

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[batch, channels_in, L]` -> `[batch, channels_out, Lo]`."""
        pad = self.padding.calculate(input.dims()[2:], [self.kernel_size], [self.stride], [self.dilation])
        return F.conv1d(input, self.weight.val(), _val(self.bias),
                        _conv_options(self.stride, pad, self.dilation, self.groups))

    def extra_repr(self) -> dict:
        c_out, cg = self.weight.val().dims()[:2]
        return {"channels_in": cg * self.groups, "channels_out": c_out, "kernel_size": self.kernel_size,
                "stride": self.stride, "dilation": self.dilation, "groups": self.groups,
                "padding": str(self.padding), "bias": show(self.bias is not None)}


@config
class ConvTranspose2dConfig:
    """Settings of a `ConvTranspose2d`: `channels` [in, out], `kernel_size`
    [kh, kw]; `padding_out` adds rows/columns at the bottom/right."""

    channels: list[int]
    kernel_size: list[int]
    stride: list[int] = [1, 1]
    dilation: list[int] = [1, 1]
    padding: list[int] = [0, 0]
    padding_out: list[int] = [0, 0]
    groups: int = 1
    bias: bool = True
    initializer: Initializer = _default_init()

    def __post_init__(self) -> None:
        _check_ints(self, _PAIRS + _PADS + ("groups",))
        check_config(self, pairs=_PAIRS + _PADS, sizes=_PAIRS + ("groups",), non_negative=_PADS)
        _check_groups("ConvTranspose2dConfig", *self.channels, self.groups)

    def init(self, device: Any = None, backend: type | None = None) -> "ConvTranspose2d":
        self.__post_init__()
        B = resolve_backend(device, backend)
        c_in, c_out = self.channels
        k = self.kernel_size[0] * self.kernel_size[1]
        # fan_in as Burn and PyTorch: the weight's dim 1 (out/groups) times the kernel.
        weight, bias = _params(self.initializer, [c_in, c_out // self.groups, *self.kernel_size], c_out,
                               c_out // self.groups * k, c_in // self.groups * k, self.bias, device, B)
        return ConvTranspose2d(weight=weight, bias=bias, stride=list(self.stride),
                               kernel_size=list(self.kernel_size), dilation=list(self.dilation),
                               padding=list(self.padding), padding_out=list(self.padding_out), groups=self.groups)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "ConvTranspose2d":
        return self.init(device, backend).load_record(record)


class ConvTranspose2d(Module):
    """2-D transposed convolution (PyTorch's `nn.ConvTranspose2d`)."""

    weight: Param
    bias: Param | None = None
    stride: list = [1, 1]
    kernel_size: list = [1, 1]
    dilation: list = [1, 1]
    padding: list = [0, 0]
    padding_out: list = [0, 0]
    groups: int = 1

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[batch, channels_in, H, W]` -> `[batch, channels_out, Ho, Wo]`,
        Ho = (H - 1) stride - 2 padding + dilation (kh - 1) + padding_out + 1."""
        return F.conv_transpose2d(input, self.weight.val(), _val(self.bias), ConvTransposeOptions(
            self.stride, self.padding, self.padding_out, self.dilation, self.groups))

    def extra_repr(self) -> dict:
        c_in, og = self.weight.val().dims()[:2]
        return {"channels": [c_in, og * self.groups], "kernel_size": self.kernel_size, "stride": self.stride,
                "dilation": self.dilation, "padding": self.padding, "padding_out": self.padding_out,
                "groups": self.groups, "bias": show(self.bias is not None)}


@config
class ConvTranspose1dConfig:
    """Settings of a `ConvTranspose1d`: `channels` [in, out]."""

    channels: list[int]
    kernel_size: int
    stride: int = 1
    dilation: int = 1
    padding: int = 0
    padding_out: int = 0
    groups: int = 1
    bias: bool = True
    initializer: Initializer = _default_init()

    def __post_init__(self) -> None:
        _check_ints(self, ("channels", "kernel_size", "stride", "dilation", "groups") + _PADS)
        check_config(self, pairs=("channels",), non_negative=_PADS,
                     sizes=("channels", "kernel_size", "stride", "dilation", "groups"))
        _check_groups("ConvTranspose1dConfig", *self.channels, self.groups)

    def init(self, device: Any = None, backend: type | None = None) -> "ConvTranspose1d":
        self.__post_init__()
        B = resolve_backend(device, backend)
        c_in, c_out = self.channels
        k = self.kernel_size
        weight, bias = _params(self.initializer, [c_in, c_out // self.groups, k], c_out,
                               c_out // self.groups * k, c_in // self.groups * k, self.bias, device, B)
        return ConvTranspose1d(weight=weight, bias=bias, stride=self.stride, kernel_size=k,
                               dilation=self.dilation, padding=self.padding, padding_out=self.padding_out,
                               groups=self.groups)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "ConvTranspose1d":
        return self.init(device, backend).load_record(record)


class ConvTranspose1d(Module):
    """1-D transposed convolution (PyTorch's `nn.ConvTranspose1d`)."""

    weight: Param
    bias: Param | None = None
    stride: int = 1
    kernel_size: int = 1
    dilation: int = 1
    padding: int = 0
    padding_out: int = 0
    groups: int = 1

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[batch, channels_in, L]` -> `[batch, channels_out, Lo]`."""
        return F.conv_transpose1d(input, self.weight.val(), _val(self.bias), ConvTransposeOptions(
            self.stride, self.padding, self.padding_out, self.dilation, self.groups))

    def extra_repr(self) -> dict:
        c_in, og = self.weight.val().dims()[:2]
        return {"channels": [c_in, og * self.groups], "kernel_size": self.kernel_size, "stride": self.stride,
                "dilation": self.dilation, "padding": self.padding, "padding_out": self.padding_out,
                "groups": self.groups, "bias": show(self.bias is not None)}
