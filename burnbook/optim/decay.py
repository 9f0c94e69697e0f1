"""L2 weight decay added to the gradient (Burn's `WeightDecay`): `grad +
penalty * tensor`, PyTorch's `weight_decay` argument of SGD, Adam, RMSprop
and Adagrad. (AdamW decays the weights themselves instead; see `adam.py`.)"""

from __future__ import annotations

from typing import Any

from burnbook.config import config

__all__ = ["WeightDecayConfig", "WeightDecay"]


@config
class WeightDecayConfig:
    """`penalty`: the L2 coefficient (PyTorch's `weight_decay`)."""

    penalty: float

    def __post_init__(self) -> None:
        if self.penalty < 0:
            raise ValueError(f"WeightDecayConfig: penalty must be >= 0, got {self.penalty}")


class WeightDecay:
    __slots__ = ("penalty",)

    def __init__(self, config: WeightDecayConfig) -> None:
        self.penalty = config.penalty

    def transform(self, grad: Any, tensor: Any) -> Any:
        return tensor.mul_scalar(self.penalty).add(grad)

    def __repr__(self) -> str:
        return f"WeightDecay(penalty={self.penalty})"
