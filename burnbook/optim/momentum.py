"""SGD momentum (Burn's `Momentum`).

    velocity_1 = grad                                   (first step)
    velocity_t = momentum * velocity_{t-1} + (1 - dampening) * grad
    update     = grad + momentum * velocity_t   (nesterov)   or   velocity_t

This is PyTorch's SGD momentum exactly, but Burn's default dampening is 0.1
where PyTorch's is 0 (and PyTorch refuses nesterov with a non-zero
dampening; Burn allows it).
"""

from __future__ import annotations

from typing import Any

from burnbook.config import config

__all__ = ["MomentumConfig", "Momentum"]


@config
class MomentumConfig:
    """Burn's defaults: momentum 0.9, dampening 0.1, no Nesterov."""

    momentum: float = 0.9
    dampening: float = 0.1
    nesterov: bool = False

    def __post_init__(self) -> None:
        if self.momentum < 0:
            raise ValueError(f"MomentumConfig: momentum must be >= 0, got {self.momentum}")


class Momentum:
    __slots__ = ("momentum", "dampening", "nesterov")

    def __init__(self, config: MomentumConfig) -> None:
        self.momentum, self.dampening, self.nesterov = config.momentum, config.dampening, config.nesterov

    def transform(self, grad: Any, velocity: Any | None) -> tuple[Any, Any]:
        """(grad, previous velocity or None) -> (update direction, new velocity)."""
        if velocity is None:
            velocity = grad
        else:
            velocity = grad.mul_scalar(1.0 - self.dampening).add(velocity.mul_scalar(self.momentum))
        update = velocity.mul_scalar(self.momentum).add(grad) if self.nesterov else velocity
        return update, velocity

    def __repr__(self) -> str:
        return f"Momentum(momentum={self.momentum}, dampening={self.dampening}, nesterov={self.nesterov})"
