"""Stochastic gradient descent (Burn's `Sgd`), optionally with L2 weight
decay and momentum:

    grad  = grad + penalty * tensor             (weight_decay)
    grad  = momentum transform (see momentum.py)
    tensor = tensor - lr * grad

Same as `torch.optim.SGD(lr, momentum, dampening, nesterov, weight_decay)`
given the same numbers; mind Burn's dampening default of 0.1 (PyTorch: 0).
"""

from __future__ import annotations

from typing import Any

from burnbook.config import config
from .base import OptimizerAdaptor, State
from .decay import WeightDecay, WeightDecayConfig
from .grad_clipping import GradientClippingConfig
from .momentum import Momentum, MomentumConfig

__all__ = ["SgdConfig", "Sgd"]


@config
class SgdConfig:
    """Settings of SGD; `init()` gives the optimizer. Field names as Burn's
    (note `gradient_clipping` here, `grad_clipping` on the other optimizers,
    as in Burn 0.13)."""

    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig | None = None
    gradient_clipping: GradientClippingConfig | None = None

    def init(self) -> OptimizerAdaptor:
        rule = Sgd(
            momentum=Momentum(self.momentum) if self.momentum is not None else None,
            weight_decay=WeightDecay(self.weight_decay) if self.weight_decay is not None else None,
        )
        clip = self.gradient_clipping.init() if self.gradient_clipping is not None else None
        return OptimizerAdaptor(rule, clip)


class Sgd:
    """The SGD update rule; its state is `{"velocity": tensor}` with momentum,
    none without."""

    name = "Sgd"

    def __init__(self, momentum: Momentum | None = None, weight_decay: WeightDecay | None = None) -> None:
        self.momentum, self.weight_decay = momentum, weight_decay

    def state_keys(self) -> tuple[str, ...]:
        return ("velocity",) if self.momentum is not None else ()

    def step(self, lr: float, tensor: Any, grad: Any, state: State | None) -> tuple[Any, State | None]:
        if self.weight_decay is not None:
            grad = self.weight_decay.transform(grad, tensor)
        new_state = None
        if self.momentum is not None:
            grad, velocity = self.momentum.transform(grad, state["velocity"] if state else None)
            new_state = {"velocity": velocity}
        return tensor.sub(grad.mul_scalar(lr)), new_state

    def __repr__(self) -> str:
        return f"Sgd(momentum={self.momentum!r}, weight_decay={self.weight_decay!r})"
