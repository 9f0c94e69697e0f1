"""RMSProp (Burn's `RmsProp`):

    grad       = grad + penalty * tensor                      (weight_decay)
    square_avg = alpha * square_avg + (1 - alpha) * grad**2   (0 before the first step)
    avg        = square_avg - grad_avg**2  with  grad_avg = alpha * grad_avg + (1 - alpha) * grad
                 when centered, else square_avg
    update     = grad / (sqrt(avg) + epsilon)
    buf        = momentum * buf + update; update = buf       (when momentum > 0)
    tensor     = tensor - lr * update

This is `torch.optim.RMSprop` step for step; Burn's defaults differ from
PyTorch's: momentum 0.9 (PyTorch 0) and epsilon 1e-5 (PyTorch 1e-8).
"""

from __future__ import annotations

from typing import Any

from burnbook.config import config
from .base import OptimizerAdaptor, State
from .decay import WeightDecay, WeightDecayConfig
from .grad_clipping import GradientClippingConfig

__all__ = ["RmsPropConfig", "RmsProp"]


@config
class RmsPropConfig:
    """Settings of RMSProp (Burn's defaults); `init()` gives the optimizer."""

    alpha: float = 0.99
    momentum: float = 0.9
    epsilon: float = 1e-5
    centered: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"RmsPropConfig: alpha must be in [0, 1], got {self.alpha}")
        if self.momentum < 0 or self.epsilon < 0:
            raise ValueError(f"RmsPropConfig: momentum and epsilon must be >= 0, "
                             f"got {self.momentum} and {self.epsilon}")

    def init(self) -> OptimizerAdaptor:
        decay = WeightDecay(self.weight_decay) if self.weight_decay is not None else None
        rule = RmsProp(self.alpha, self.momentum, self.epsilon, self.centered, decay)
        return OptimizerAdaptor(rule, self.grad_clipping.init() if self.grad_clipping is not None else None)


class RmsProp:
    """The RMSProp update rule; state `square_avg`, plus `grad_avg` when
    centered and `buf` when momentum > 0."""

    name = "RmsProp"

    def __init__(self, alpha: float = 0.99, momentum: float = 0.9, epsilon: float = 1e-5,
                 centered: bool = False, weight_decay: WeightDecay | None = None) -> None:
        self.alpha, self.momentum, self.epsilon = alpha, momentum, epsilon
        self.centered, self.weight_decay = centered, weight_decay

    def state_keys(self) -> tuple[str, ...]:
        keys = ["square_avg"]
        if self.centered:
            keys.append("grad_avg")
        if self.momentum > 0:
            keys.append("buf")
        return tuple(keys)

    def step(self, lr: float, tensor: Any, grad: Any, state: State | None) -> tuple[Any, State]:
        if self.weight_decay is not None:
            grad = self.weight_decay.transform(grad, tensor)
        a = self.alpha
        square = grad.mul(grad).mul_scalar(1.0 - a)
        square_avg = square if state is None else state["square_avg"].mul_scalar(a).add(square)
        new_state: State = {"square_avg": square_avg}
        avg = square_avg
        if self.centered:
            g = grad.mul_scalar(1.0 - a)
            grad_avg = g if state is None else state["grad_avg"].mul_scalar(a).add(g)
            new_state["grad_avg"] = grad_avg
            avg = square_avg.sub(grad_avg.mul(grad_avg))
        update = grad.div(avg.sqrt().add_scalar(self.epsilon))
        if self.momentum > 0:
            if state is not None:
                update = state["buf"].mul_scalar(self.momentum).add(update)
            new_state["buf"] = update
        return tensor.sub(update.mul_scalar(lr)), new_state

    def __repr__(self) -> str:
        return (f"RmsProp(alpha={self.alpha}, momentum={self.momentum}, epsilon={self.epsilon}, "
                f"centered={self.centered}, weight_decay={self.weight_decay!r})")
