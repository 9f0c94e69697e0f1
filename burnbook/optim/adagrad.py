"""AdaGrad (Burn's `AdaGrad`):

    grad   = grad + penalty * tensor                 (weight_decay)
    sum    = sum + grad**2                           (0 before the first step)
    lr_t   = lr / (1 + (t - 1) * lr_decay)
    tensor = tensor - lr_t * grad / (sqrt(sum) + epsilon)

`torch.optim.Adagrad(lr_decay, eps, weight_decay)` with
`initial_accumulator_value=0` computes the same; Burn's epsilon default is
1e-5 (PyTorch 1e-10).
"""

from __future__ import annotations

from typing import Any

from burnbook.config import config
from .base import OptimizerAdaptor, State
from .decay import WeightDecay, WeightDecayConfig
from .grad_clipping import GradientClippingConfig

__all__ = ["AdaGradConfig", "AdaGrad"]


@config
class AdaGradConfig:
    """Settings of AdaGrad (Burn's defaults); `init()` gives the optimizer."""

    lr_decay: float = 0.0
    epsilon: float = 1e-5
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def __post_init__(self) -> None:
        if self.lr_decay < 0 or self.epsilon < 0:
            raise ValueError(f"AdaGradConfig: lr_decay and epsilon must be >= 0, "
                             f"got {self.lr_decay} and {self.epsilon}")

    def init(self) -> OptimizerAdaptor:
        decay = WeightDecay(self.weight_decay) if self.weight_decay is not None else None
        rule = AdaGrad(self.lr_decay, self.epsilon, decay)
        return OptimizerAdaptor(rule, self.grad_clipping.init() if self.grad_clipping is not None else None)


class AdaGrad:
    """The AdaGrad update rule; state `{"time": t, "sum": tensor}`."""

    name = "AdaGrad"

    def __init__(self, lr_decay: float = 0.0, epsilon: float = 1e-5, weight_decay: WeightDecay | None = None) -> None:
        self.lr_decay, self.epsilon, self.weight_decay = lr_decay, epsilon, weight_decay

    def state_keys(self) -> tuple[str, ...]:
        return ("time", "sum")

    def step(self, lr: float, tensor: Any, grad: Any, state: State | None) -> tuple[Any, State]:
        if self.weight_decay is not None:
            grad = self.weight_decay.transform(grad, tensor)
        square = grad.mul(grad)
        if state is None:
            time, total = 1, square
        else:
            time, total = state["time"] + 1, state["sum"].add(square)
        lr_t = lr / (1.0 + (time - 1) * self.lr_decay)
        update = grad.div(total.sqrt().add_scalar(self.epsilon)).mul_scalar(lr_t)
        return tensor.sub(update), {"time": time, "sum": total}

    def __repr__(self) -> str:
        return f"AdaGrad(lr_decay={self.lr_decay}, epsilon={self.epsilon}, weight_decay={self.weight_decay!r})"
