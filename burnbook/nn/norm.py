"""Normalisation layers: `BatchNorm`, `LayerNorm`, `GroupNorm`, `RmsNorm`.

All four divide by sqrt(var + epsilon), as PyTorch does. (Burn 0.13's
LayerNorm and GroupNorm divide by sqrt(var) + epsilon, which later Burn
releases changed to PyTorch's form; the two differ by about epsilon.)
"""

from __future__ import annotations

from typing import Any

from burnbook.config import ConfigError, config
from burnbook.module import Module, Param, RunningState
from burnbook.tensor import Tensor
from burnbook.tensor import module as F
from .common import check_config, resolve_backend, show
from .initializer import Ones, Zeros

__all__ = [
    "BatchNorm", "BatchNormConfig", "LayerNorm", "LayerNormConfig",
    "GroupNorm", "GroupNormConfig", "RmsNorm", "RmsNormConfig",
]


def _channel_shape(rank: int, channels: int) -> list[int]:
    """[1, channels, 1, ...] of `rank` dims, to broadcast per-channel values."""
    shape = [1] * rank
    shape[1] = channels
    return shape


@config
class BatchNormConfig:
    """Settings of a `BatchNorm` over `num_features` channels."""

    num_features: int
    epsilon: float = 1e-5
    momentum: float = 0.1

    def __post_init__(self) -> None:
        check_config(self, sizes=("num_features",), non_negative=("epsilon",), probabilities=("momentum",))

    def init(self, device: Any = None, backend: type | None = None) -> "BatchNorm":
        self.__post_init__()
        B = resolve_backend(device, backend)
        n = [self.num_features]
        running_mean = Zeros().init(n, device, backend=B)
        running_var = Ones().init(n, device, backend=B)
        return BatchNorm(
            gamma=Ones().init(n, device, backend=B),
            beta=Zeros().init(n, device, backend=B),
            running_mean=RunningState(running_mean.val(), running_mean.id),
            running_var=RunningState(running_var.val(), running_var.id),
            momentum=self.momentum,
            epsilon=self.epsilon,
        )

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "BatchNorm":
        return self.init(device, backend).load_record(record)


class BatchNorm(Module):
    """Batch normalisation over dim 1 of `[batch, channels, ...]` (PyTorch's
    BatchNorm1d/2d/3d in one layer; Burn's `BatchNorm<B, D>` for any D).

    On an autodiff backend (training) it normalises with the batch's mean and
    biased variance and updates the running statistics in place, as PyTorch:
    `running = (1 - momentum) * running + momentum * stat`, with the unbiased
    variance for `running_var`. (Burn 0.13 puts the biased variance there; we
    follow PyTorch so a model trained here evaluates like its PyTorch twin.)
    On a plain backend (`model.valid()`) it uses the running statistics. They
    are `RunningState`s, so records carry them, `num_params` leaves them out
    and optimizers leave them alone.
    """

    gamma: Param
    beta: Param
    running_mean: RunningState
    running_var: RunningState
    momentum: float = 0.1
    epsilon: float = 1e-5

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[batch, channels, ...]` -> the same shape."""
        dims = input.dims()
        channels = self.gamma.val().dims()[0]
        if input.ndim < 2 or dims[1] != channels:
            raise ValueError(f"BatchNorm: expects [batch, {channels}, ...], got {dims}")
        shape = _channel_shape(input.ndim, channels)
        if input._B.is_autodiff:
            mean, var = self._batch_stats(input)
        else:
            mean = self.running_mean.val().reshape(shape)
            var = self.running_var.val().reshape(shape)
        x = input.sub(mean).div(var.add_scalar(self.epsilon).sqrt())
        return x.mul(self.gamma.val().reshape(shape)).add(self.beta.val().reshape(shape))

    def _batch_stats(self, input: Tensor) -> tuple[Tensor, Tensor]:
        """Mean and biased variance per channel, shaped to broadcast; updates
        the running statistics (Burn's `RunningState`, done by rebinding)."""
        dims = input.dims()
        channels = dims[1]
        count = input.num_elements() // channels
        shape = _channel_shape(input.ndim, channels)
        # [channels, everything else] so one mean_dim gives every statistic.
        flat = input.swap_dims(0, 1).reshape([channels, count])
        mean = flat.mean_dim(1)
        centred = flat.sub(mean)
        var = centred.mul(centred).mean_dim(1)
        unbiased = var.detach().mul_scalar(count / max(count - 1, 1))
        m = self.momentum
        new_mean = self.running_mean.val().mul_scalar(1.0 - m).add(mean.detach().reshape([channels]).mul_scalar(m))
        new_var = self.running_var.val().mul_scalar(1.0 - m).add(unbiased.reshape([channels]).mul_scalar(m))
        # A module is a value elsewhere, but running statistics are state that
        # training mutates (Burn keeps them behind a lock for the same reason).
        self.running_mean = RunningState(new_mean.detach(), self.running_mean.id)
        self.running_var = RunningState(new_var.detach(), self.running_var.id)
        return mean.reshape(shape), var.reshape(shape)

    def extra_repr(self) -> dict:
        return {"num_features": self.gamma.val().dims()[0], "momentum": self.momentum,
                "epsilon": self.epsilon}


@config
class LayerNormConfig:
    """Settings of a `LayerNorm` over the last dim of size `d_model`."""

    d_model: int
    epsilon: float = 1e-5

    def __post_init__(self) -> None:
        check_config(self, sizes=("d_model",), non_negative=("epsilon",))

    def init(self, device: Any = None, backend: type | None = None) -> "LayerNorm":
        self.__post_init__()
        B = resolve_backend(device, backend)
        return LayerNorm(gamma=Ones().init([self.d_model], device, backend=B),
                         beta=Zeros().init([self.d_model], device, backend=B),
                         epsilon=self.epsilon)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "LayerNorm":
        return self.init(device, backend).load_record(record)


class LayerNorm(Module):
    """(x - mean) / sqrt(var + eps) * gamma + beta over the last dim (torch.nn.LayerNorm)."""

    gamma: Param
    beta: Param
    epsilon: float = 1e-5

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[..., d_model]` -> the same shape."""
        return F.layer_norm(input, self.gamma.val(), self.beta.val(), self.epsilon)

    def extra_repr(self) -> dict:
        return {"d_model": self.gamma.val().dims()[0], "epsilon": self.epsilon}


@config
class GroupNormConfig:
    """Settings of a `GroupNorm`: `num_channels` split into `num_groups`."""

    num_groups: int
    num_channels: int
    epsilon: float = 1e-5
    affine: bool = True

    def __post_init__(self) -> None:
        check_config(self, sizes=("num_groups", "num_channels"), non_negative=("epsilon",))
        if self.num_channels % self.num_groups:
            raise ConfigError(f"GroupNormConfig: num_channels ({self.num_channels}) must be a multiple "
                              f"of num_groups ({self.num_groups})")

    def init(self, device: Any = None, backend: type | None = None) -> "GroupNorm":
        self.__post_init__()
        B = resolve_backend(device, backend)
        gamma = beta = None
        if self.affine:
            gamma = Ones().init([self.num_channels], device, backend=B)
            beta = Zeros().init([self.num_channels], device, backend=B)
        return GroupNorm(gamma=gamma, beta=beta, num_groups=self.num_groups,
                         num_channels=self.num_channels, epsilon=self.epsilon, affine=self.affine)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "GroupNorm":
        return self.init(device, backend).load_record(record)


class GroupNorm(Module):
    """Normalises each group of channels of `[batch, channels, ...]` over the
    group's channels and positions (torch.nn.GroupNorm)."""

    gamma: Param | None
    beta: Param | None
    num_groups: int
    num_channels: int
    epsilon: float = 1e-5
    affine: bool = True

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[batch, num_channels, ...]` (rank >= 3) -> the same shape."""
        dims = input.dims()
        if input.ndim < 3 or dims[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expects [batch, {self.num_channels}, ...] of rank >= 3, got {dims}")
        grouped = input.reshape([dims[0], self.num_groups, -1])
        var, mean = grouped.var_mean_bias(2)
        x = grouped.sub(mean).div(var.add_scalar(self.epsilon).sqrt()).reshape(dims)
        if not self.affine:
            return x
        shape = _channel_shape(input.ndim, self.num_channels)
        return x.mul(self.gamma.val().reshape(shape)).add(self.beta.val().reshape(shape))

    def extra_repr(self) -> dict:
        return {"num_groups": self.num_groups, "num_channels": self.num_channels,
                "epsilon": self.epsilon, "affine": show(self.affine)}


@config
class RmsNormConfig:
    """Settings of an `RmsNorm` over the last dim of size `d_model`;
    `epsilon` must be > 0 (Burn's check: with 0 an all-zero row is 0 / 0)."""

    d_model: int
    epsilon: float = 1e-5

    def __post_init__(self) -> None:
        check_config(self, sizes=("d_model",), non_negative=("epsilon",))
        if not self.epsilon > 0.0:
            raise ConfigError(f"RmsNormConfig: epsilon must be > 0, got {self.epsilon}")

    def init(self, device: Any = None, backend: type | None = None) -> "RmsNorm":
        self.__post_init__()
        B = resolve_backend(device, backend)
        return RmsNorm(gamma=Ones().init([self.d_model], device, backend=B), epsilon=self.epsilon)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "RmsNorm":
        return self.init(device, backend).load_record(record)


class RmsNorm(Module):
    """Root-mean-square normalisation over the last dim (Burn's `RmsNorm`,
    torch.nn.RMSNorm; Zhang & Sennrich 2019, used by Llama):
    `y = x / sqrt(mean(x^2) + epsilon) * gamma`. Unlike `LayerNorm` it
    neither centres nor shifts: no mean subtracted, no `beta`.

        norm = nn.RmsNormConfig(64).init(device)
        y = norm.forward(x)          # x [batch, seq, 64] -> y [batch, seq, 64]
    """

    gamma: Param
    epsilon: float = 1e-5

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[..., d_model]` -> the same shape."""
        d_model = self.gamma.val().dims()[0]
        if input.ndim < 1 or input.dims()[-1] != d_model:
            raise ValueError(f"RmsNorm: expects [..., {d_model}], got {input.dims()}")
        last = input.ndim - 1
        rms = input.mul(input).mean_dim(last).add_scalar(self.epsilon).sqrt()
        gamma = self.gamma.val().reshape([1] * last + [d_model])
        return input.div(rms).mul(gamma)

    def extra_repr(self) -> dict:
        return {"d_model": self.gamma.val().dims()[0], "epsilon": self.epsilon}
