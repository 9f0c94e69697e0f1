"""Pooling layers: `MaxPool1d/2d`, `AvgPool1d/2d`, `AdaptiveAvgPool1d/2d`.

They have no parameters; configs and fields follow Burn 0.13, where the
stride of a pool defaults to 1 (PyTorch's defaults to the kernel size: pass
`strides=[2, 2]` for the usual halving 2x2 pool) and the 2-D configs call it
`strides`. `ceil_mode` on the max pools is PyTorch's, an addition to Burn.

    pool = nn.MaxPool2dConfig([2, 2]).with_strides([2, 2]).init()
    y = pool(x)       # [batch, 8, 28, 28] -> [batch, 8, 14, 14]
"""

from __future__ import annotations

from typing import Any

from burnbook.config import config
from burnbook.module import Module
from burnbook.tensor import Tensor
from burnbook.tensor import module as F
from .common import check_config, show
from .padding import PaddingConfig1d, PaddingConfig2d

__all__ = [
    "MaxPool1d", "MaxPool1dConfig", "MaxPool2d", "MaxPool2dConfig", "AvgPool1d", "AvgPool1dConfig",
    "AvgPool2d", "AvgPool2dConfig", "AdaptiveAvgPool1d", "AdaptiveAvgPool1dConfig",
    "AdaptiveAvgPool2d", "AdaptiveAvgPool2dConfig",
]


@config
class MaxPool2dConfig:
    """Settings of a `MaxPool2d`: window `kernel_size` [kh, kw]."""

    kernel_size: list[int]
    strides: list[int] = [1, 1]
    padding: PaddingConfig2d = PaddingConfig2d.Valid
    dilation: list[int] = [1, 1]
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        fields = ("kernel_size", "strides", "dilation")
        check_config(self, pairs=fields, sizes=fields)

    def init(self, device: Any = None, backend: type | None = None) -> "MaxPool2d":
        """A new `MaxPool2d` (no tensors: the arguments are accepted so every
        config can be called the same way)."""
        self.__post_init__()
        return MaxPool2d(kernel_size=list(self.kernel_size), strides=list(self.strides), padding=self.padding,
                         dilation=list(self.dilation), ceil_mode=self.ceil_mode)


class MaxPool2d(Module):
    """Max over each window of `[batch, channels, height, width]`."""

    kernel_size: list = [2, 2]
    strides: list = [1, 1]
    padding: PaddingConfig2d = PaddingConfig2d.Valid
    dilation: list = [1, 1]
    ceil_mode: bool = False

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[batch, channels, H, W]` -> `[batch, channels, Ho, Wo]`."""
        pad = self.padding.calculate(input.dims()[2:], self.kernel_size, self.strides, self.dilation)
        return F.max_pool2d(input, self.kernel_size, self.strides, pad, self.dilation, self.ceil_mode)

    def extra_repr(self) -> dict:
        return {"kernel_size": self.kernel_size, "strides": self.strides, "padding": str(self.padding),
                "dilation": self.dilation, "ceil_mode": show(self.ceil_mode)}


@config
class MaxPool1dConfig:
    """Settings of a `MaxPool1d`."""

    kernel_size: int
    stride: int = 1
    padding: PaddingConfig1d = PaddingConfig1d.Valid
    dilation: int = 1
    ceil_mode: bool = False

    def __post_init__(self) -> None:
        check_config(self, sizes=("kernel_size", "stride", "dilation"))

    def init(self, device: Any = None, backend: type | None = None) -> "MaxPool1d":
        self.__post_init__()
        return MaxPool1d(kernel_size=self.kernel_size, stride=self.stride, padding=self.padding,
                         dilation=self.dilation, ceil_mode=self.ceil_mode)


class MaxPool1d(Module):
    """Max over each window of `[batch, channels, length]`."""

    kernel_size: int = 2
    stride: int = 1
    padding: PaddingConfig1d = PaddingConfig1d.Valid
    dilation: int = 1
    ceil_mode: bool = False

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[batch, channels, L]` -> `[batch, channels, Lo]`."""
        pad = self.padding.calculate(input.dims()[2:], [self.kernel_size], [self.stride], [self.dilation])
        return F.max_pool1d(input, self.kernel_size, self.stride, pad, self.dilation, self.ceil_mode)

    def extra_repr(self) -> dict:
        return {"kernel_size": self.kernel_size, "stride": self.stride, "padding": str(self.padding),
                "dilation": self.dilation, "ceil_mode": show(self.ceil_mode)}


@config
class AvgPool2dConfig:
    """Settings of an `AvgPool2d`; `count_include_pad` divides by the whole
    window even where it covers padding (PyTorch's and Burn's default)."""

    kernel_size: list[int]
    strides: list[int] = [1, 1]
    padding: PaddingConfig2d = PaddingConfig2d.Valid
    count_include_pad: bool = True

    def __post_init__(self) -> None:
        check_config(self, pairs=("kernel_size", "strides"), sizes=("kernel_size", "strides"))

    def init(self, device: Any = None, backend: type | None = None) -> "AvgPool2d":
        self.__post_init__()
        return AvgPool2d(kernel_size=list(self.kernel_size), strides=list(self.strides), padding=self.padding,
                         count_include_pad=self.count_include_pad)


class AvgPool2d(Module):
    """Mean over each window of `[batch, channels, height, width]`."""

    kernel_size: list = [2, 2]
    strides: list = [1, 1]
    padding: PaddingConfig2d = PaddingConfig2d.Valid
    count_include_pad: bool = True

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[batch, channels, H, W]` -> `[batch, channels, Ho, Wo]`."""
        pad = self.padding.calculate(input.dims()[2:], self.kernel_size, self.strides, [1, 1])
        return F.avg_pool2d(input, self.kernel_size, self.strides, pad, self.count_include_pad)

    def extra_repr(self) -> dict:
        return {"kernel_size": self.kernel_size, "strides": self.strides, "padding": str(self.padding),
                "count_include_pad": show(self.count_include_pad)}


@config
class AvgPool1dConfig:
    """Settings of an `AvgPool1d`."""

    kernel_size: int
    stride: int = 1
    padding: PaddingConfig1d = PaddingConfig1d.Valid
    count_include_pad: bool = True

    def __post_init__(self) -> None:
        check_config(self, sizes=("kernel_size", "stride"))

    def init(self, device: Any = None, backend: type | None = None) -> "AvgPool1d":
        self.__post_init__()
        return AvgPool1d(kernel_size=self.kernel_size, stride=self.stride, padding=self.padding,
                         count_include_pad=self.count_include_pad)


class AvgPool1d(Module):
    """Mean over each window of `[batch, channels, length]`."""

    kernel_size: int = 2
    stride: int = 1
    padding: PaddingConfig1d = PaddingConfig1d.Valid
    count_include_pad: bool = True

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[batch, channels, L]` -> `[batch, channels, Lo]`."""
        pad = self.padding.calculate(input.dims()[2:], [self.kernel_size], [self.stride], [1])
        return F.avg_pool1d(input, self.kernel_size, self.stride, pad, self.count_include_pad)

    def extra_repr(self) -> dict:
        return {"kernel_size": self.kernel_size, "stride": self.stride, "padding": str(self.padding),
                "count_include_pad": show(self.count_include_pad)}


@config
class AdaptiveAvgPool2dConfig:
    """Settings of an `AdaptiveAvgPool2d`: the `output_size` [h, w] wanted."""

    output_size: list[int]

    def __post_init__(self) -> None:
        check_config(self, pairs=("output_size",), sizes=("output_size",))

    def init(self, device: Any = None, backend: type | None = None) -> "AdaptiveAvgPool2d":
        self.__post_init__()
        return AdaptiveAvgPool2d(output_size=list(self.output_size))


class AdaptiveAvgPool2d(Module):
    """Averages `[batch, channels, H, W]` down to a fixed `output_size`,
    whatever H and W (PyTorch's bins)."""

    output_size: list = [1, 1]

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[batch, channels, H, W]` -> `[batch, channels, *output_size]`."""
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> dict:
        return {"output_size": self.output_size}


@config
class AdaptiveAvgPool1dConfig:
    """Settings of an `AdaptiveAvgPool1d`: the `output_size` wanted."""

    output_size: int

    def __post_init__(self) -> None:
        check_config(self, sizes=("output_size",))

    def init(self, device: Any = None, backend: type | None = None) -> "AdaptiveAvgPool1d":
        self.__post_init__()
        return AdaptiveAvgPool1d(output_size=self.output_size)


class AdaptiveAvgPool1d(Module):
    """Averages `[batch, channels, L]` down to `[batch, channels, output_size]`."""

    output_size: int = 1

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self) -> dict:
        return {"output_size": self.output_size}
