"""`Initializer`: how a layer fills its parameters (Burn's `nn::Initializer`).

Burn's enum becomes a small family of `@config` classes under one base, so a
layer config can hold any of them and save/load it as a tagged variant
(`{"KaimingUniform": {"gain": 0.577, "fan_out_only": false}}`)::

    init = Initializer.KaimingUniform(gain=1 / math.sqrt(3), fan_out_only=False)
    weight = init.init([784, 10], device, fan_in=784, fan_out=10)   # a Param

Random variants draw through `Tensor.random`, so `B.seed(s)` makes them
reproducible.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from burnbook.config import config
from burnbook.module import Param
from burnbook.tensor import Distribution, Tensor
from .common import device_or_default, resolve_backend

__all__ = [
    "Initializer", "Constant", "Ones", "Zeros", "Uniform", "Normal",
    "KaimingUniform", "KaimingNormal", "XavierUniform", "XavierNormal",
]


@config
class Initializer:
    """Base of the initializer variants; use one of `Initializer.Constant`,
    `.Ones`, `.Zeros`, `.Uniform`, `.Normal`, `.KaimingUniform`,
    `.KaimingNormal`, `.XavierUniform`, `.XavierNormal`."""

    def init(self, shape: Sequence[int], device: Any = None, fan_in: int | None = None,
             fan_out: int | None = None, backend: type | None = None) -> Param:
        """A new trainable `Param` of `shape` filled by this initializer
        (Burn's `init`/`init_with`: the fans are needed by Kaiming and Xavier)."""
        B = resolve_backend(device, backend)
        return Param(self.init_tensor(shape, device_or_default(device, B), fan_in, fan_out, B))

    def init_tensor(self, shape: Sequence[int], device: Any, fan_in: int | None,
                    fan_out: int | None, backend: type) -> Tensor:
        """The filled tensor itself, on `backend` (no Param around it)."""
        raise NotImplementedError(
            f"{type(self).__name__} is the base class; use a variant such as Initializer.Zeros()"
        )


def _tensor_type(backend: type, shape: Sequence[int]) -> type:
    return Tensor[backend, len(shape)]


@config
class Constant(Initializer):
    """Every value set to `value`."""

    value: float

    def init_tensor(self, shape, device, fan_in, fan_out, backend) -> Tensor:
        return _tensor_type(backend, shape).full(list(shape), self.value, device)


@config
class Ones(Initializer):
    """Every value 1."""

    def init_tensor(self, shape, device, fan_in, fan_out, backend) -> Tensor:
        return _tensor_type(backend, shape).ones(list(shape), device)


@config
class Zeros(Initializer):
    """Every value 0."""

    def init_tensor(self, shape, device, fan_in, fan_out, backend) -> Tensor:
        return _tensor_type(backend, shape).zeros(list(shape), device)


@config
class Uniform(Initializer):
    """Values drawn uniformly from [min, max)."""

    min: float  # noqa: A003 - Burn's field names
    max: float  # noqa: A003

    def init_tensor(self, shape, device, fan_in, fan_out, backend) -> Tensor:
        return _uniform(backend, shape, self.min, self.max, device)


@config
class Normal(Initializer):
    """Values drawn from N(mean, std^2)."""

    mean: float
    std: float

    def init_tensor(self, shape, device, fan_in, fan_out, backend) -> Tensor:
        return _normal(backend, shape, self.mean, self.std, device)


@config
class KaimingUniform(Initializer):
    """He et al.: U(-a, a) with a = gain * sqrt(3 / fan), fan = fan_in (or
    fan_out when `fan_out_only`). gain = 1/sqrt(3) gives PyTorch's Linear
    default bound 1/sqrt(fan_in)."""

    gain: float
    fan_out_only: bool = False

    def init_tensor(self, shape, device, fan_in, fan_out, backend) -> Tensor:
        a = math.sqrt(3.0) * self.gain * _kaiming_std(self.fan_out_only, fan_in, fan_out)
        return _uniform(backend, shape, -a, a, device)


@config
class KaimingNormal(Initializer):
    """He et al.: N(0, std^2) with std = gain / sqrt(fan)."""

    gain: float
    fan_out_only: bool = False

    def init_tensor(self, shape, device, fan_in, fan_out, backend) -> Tensor:
        std = self.gain * _kaiming_std(self.fan_out_only, fan_in, fan_out)
        return _normal(backend, shape, 0.0, std, device)


@config
class XavierUniform(Initializer):
    """Glorot & Bengio: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""

    gain: float = 1.0

    def init_tensor(self, shape, device, fan_in, fan_out, backend) -> Tensor:
        a = math.sqrt(3.0) * self.gain * _xavier_std(fan_in, fan_out)
        return _uniform(backend, shape, -a, a, device)


@config
class XavierNormal(Initializer):
    """Glorot & Bengio: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""

    gain: float = 1.0

    def init_tensor(self, shape, device, fan_in, fan_out, backend) -> Tensor:
        std = self.gain * _xavier_std(fan_in, fan_out)
        return _normal(backend, shape, 0.0, std, device)


def _uniform(backend: type, shape, low: float, high: float, device) -> Tensor:
    return _tensor_type(backend, shape).random(list(shape), Distribution.Uniform(low, high), device)


def _normal(backend: type, shape, mean: float, std: float, device) -> Tensor:
    return _tensor_type(backend, shape).random(list(shape), Distribution.Normal(mean, std), device)


def _kaiming_std(fan_out_only: bool, fan_in: int | None, fan_out: int | None) -> float:
    fan = fan_out if fan_out_only else fan_in
    if fan is None:
        which = "fan_out" if fan_out_only else "fan_in"
        raise ValueError(f"Kaiming initialization needs {which}: call init(shape, device, fan_in=..., fan_out=...)")
    return 1.0 / math.sqrt(fan)


def _xavier_std(fan_in: int | None, fan_out: int | None) -> float:
    if fan_in is None or fan_out is None:
        raise ValueError("Xavier initialization needs both fan_in and fan_out: "
                         "call init(shape, device, fan_in=..., fan_out=...)")
    return math.sqrt(2.0 / (fan_in + fan_out))


# Burn's spelling of the variants: `Initializer.KaimingUniform(...)`.
for _variant in (Constant, Ones, Zeros, Uniform, Normal, KaimingUniform, KaimingNormal,
                 XavierUniform, XavierNormal):
    setattr(Initializer, _variant.__name__, _variant)
del _variant
