"""Activation layers: fieldless modules over `burnbook.tensor.activation`,
so a model can hold its activation as a field (`activation: nn.Relu`)."""

from __future__ import annotations

from typing import Any

from burnbook.config import config
from burnbook.module import Module, Param
from burnbook.tensor import Tensor, activation
from .common import check_config, resolve_backend
from .initializer import Constant

__all__ = [
    "Relu", "ReLU", "Gelu", "GELU", "Sigmoid", "Tanh", "Silu", "Mish", "Softplus",
    "LeakyRelu", "LeakyReluConfig", "PRelu", "PReluConfig",
]


class _Elementwise(Module):
    """An activation with no parameters: `[...]` -> `[...]`."""

    @classmethod
    def new(cls) -> "_Elementwise":
        """Burn's `Relu::new()` spelling."""
        return cls()


class Relu(_Elementwise):
    """max(x, 0) element-wise (torch.nn.ReLU)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return activation.relu(input)


class Gelu(_Elementwise):
    """x * Phi(x) element-wise with the exact erf (torch.nn.GELU())."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return activation.gelu(input)


class Sigmoid(_Elementwise):
    """1 / (1 + e^-x) element-wise."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return activation.sigmoid(input)


class Tanh(_Elementwise):
    """tanh(x) element-wise."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return activation.tanh(input)


class Silu(_Elementwise):
    """x * sigmoid(x) element-wise (swish)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return activation.silu(input)


class Mish(_Elementwise):
    """x * tanh(softplus(x)) element-wise."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return activation.mish(input)


class Softplus(Module):
    """log(1 + e^(beta x)) / beta element-wise."""

    beta: float = 1.0

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return activation.softplus(input, self.beta)

    def extra_repr(self) -> dict:
        return {"beta": self.beta}


# The Burn 0.12 book's names for the same layers.
ReLU = Relu
GELU = Gelu


@config
class LeakyReluConfig:
    """Settings of a `LeakyRelu`: the slope for negative inputs."""

    negative_slope: float = 0.01

    def init(self, device: Any = None, backend: type | None = None) -> "LeakyRelu":
        return LeakyRelu(negative_slope=self.negative_slope)


class LeakyRelu(Module):
    """x for x >= 0, negative_slope * x below (torch.nn.LeakyReLU)."""

    negative_slope: float = 0.01

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return activation.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> dict:
        return {"negative_slope": self.negative_slope}


@config
class PReluConfig:
    """Settings of a `PRelu`: one learned slope, or one per channel (dim 1)."""

    num_parameters: int = 1
    alpha: float = 0.25

    def __post_init__(self) -> None:
        check_config(self, sizes=("num_parameters",))

    def init(self, device: Any = None, backend: type | None = None) -> "PRelu":
        self.__post_init__()
        B = resolve_backend(device, backend)
        return PRelu(alpha=Constant(self.alpha).init([self.num_parameters], device, backend=B))

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "PRelu":
        return self.init(device, backend).load_record(record)


class PRelu(Module):
    """Leaky ReLU whose negative slope is learned (torch.nn.PReLU)."""

    alpha: Param

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[batch, channels, ...]` (or any shape with one slope) -> same shape."""
        a = self.alpha.val()
        n = a.dims()[0]
        shape = [1] * input.ndim
        if n > 1:
            if input.ndim < 2 or input.dims()[1] != n:
                raise ValueError(f"PRelu: {n} slopes need the input's dim 1 to have size {n}, got {input.dims()}")
            shape[1] = n
        slope = a.reshape(shape)
        # relu's gradient is 0 at x = 0 and clamp_max's is 1, so the slope
        # alone applies there, as in torch (two clamps would give 1 + slope).
        return activation.relu(input) + input.clamp_max(0.0) * slope

    def extra_repr(self) -> dict:
        return {"num_parameters": self.alpha.val().dims()[0]}
