"""Adam and AdamW (Burn's `Adam`, `AdamW`).

Both keep per parameter `{"time": t, "moment_1": m, "moment_2": v}`:

    m = beta_1 * m + (1 - beta_1) * grad          (m = (1 - beta_1) * grad at t = 1)
    v = beta_2 * v + (1 - beta_2) * grad**2
    update = (m / (1 - beta_1**t)) / (sqrt(v / (1 - beta_2**t)) + epsilon)

Adam:  grad = grad + penalty * tensor first (L2, coupled, as PyTorch's Adam
       `weight_decay`); tensor = tensor - lr * update.
AdamW: tensor = tensor - lr * weight_decay * tensor - lr * update (decoupled,
       as `torch.optim.AdamW`).

Burn's defaults differ from PyTorch's: epsilon 1e-5 (PyTorch 1e-8), AdamW
weight_decay 1e-4 (PyTorch 1e-2). Epsilon is added after the square root in
both, so `torch.optim.Adam(eps=1e-5)` computes the same update.
"""

from __future__ import annotations

import math
from typing import Any

from burnbook.config import config
from .base import OptimizerAdaptor, State
from .decay import WeightDecay, WeightDecayConfig
from .grad_clipping import GradientClippingConfig

__all__ = ["AdamConfig", "AdamWConfig", "Adam", "AdamW", "adaptive_moment"]


def _check_betas(name: str, beta_1: float, beta_2: float, epsilon: float) -> None:
    for label, beta in (("beta_1", beta_1), ("beta_2", beta_2)):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"{name}: {label} must be in [0, 1), got {beta}")
    if epsilon < 0:
        raise ValueError(f"{name}: epsilon must be >= 0, got {epsilon}")


@config
class AdamConfig:
    """Settings of Adam (Burn's defaults); `init()` gives the optimizer."""

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def __post_init__(self) -> None:
        _check_betas("AdamConfig", self.beta_1, self.beta_2, self.epsilon)

    def init(self) -> OptimizerAdaptor:
        decay = WeightDecay(self.weight_decay) if self.weight_decay is not None else None
        rule = Adam(self.beta_1, self.beta_2, self.epsilon, decay)
        return OptimizerAdaptor(rule, self.grad_clipping.init() if self.grad_clipping is not None else None)


@config
class AdamWConfig:
    """Settings of AdamW (Burn's defaults: weight_decay 1e-4)."""

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float = 1e-4
    grad_clipping: GradientClippingConfig | None = None

    def __post_init__(self) -> None:
        _check_betas("AdamWConfig", self.beta_1, self.beta_2, self.epsilon)
        if self.weight_decay < 0:
            raise ValueError(f"AdamWConfig: weight_decay must be >= 0, got {self.weight_decay}")

    def init(self) -> OptimizerAdaptor:
        rule = AdamW(self.beta_1, self.beta_2, self.epsilon, self.weight_decay)
        return OptimizerAdaptor(rule, self.grad_clipping.init() if self.grad_clipping is not None else None)


def adaptive_moment(grad: Any, state: State | None, beta_1: float, beta_2: float,
                    epsilon: float) -> tuple[Any, State]:
    """Burn's `AdaptiveMomentum::transform`: (grad, state) -> (update, new state)."""
    square = grad.mul(grad)
    if state is None:
        time = 1
        m = grad.mul_scalar(1.0 - beta_1)
        v = square.mul_scalar(1.0 - beta_2)
    else:
        time = state["time"] + 1
        m = state["moment_1"].mul_scalar(beta_1).add(grad.mul_scalar(1.0 - beta_1))
        v = state["moment_2"].mul_scalar(beta_2).add(square.mul_scalar(1.0 - beta_2))
    m_hat = m.div_scalar(1.0 - math.pow(beta_1, time))
    v_hat = v.div_scalar(1.0 - math.pow(beta_2, time))
    update = m_hat.div(v_hat.sqrt().add_scalar(epsilon))
    return update, {"time": time, "moment_1": m, "moment_2": v}


class Adam:
    """The Adam update rule (coupled L2 weight decay)."""

    name = "Adam"

    def __init__(self, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-5,
                 weight_decay: WeightDecay | None = None) -> None:
        self.beta_1, self.beta_2, self.epsilon, self.weight_decay = beta_1, beta_2, epsilon, weight_decay

    def state_keys(self) -> tuple[str, ...]:
        return ("time", "moment_1", "moment_2")

    def step(self, lr: float, tensor: Any, grad: Any, state: State | None) -> tuple[Any, State]:
        if self.weight_decay is not None:
            grad = self.weight_decay.transform(grad, tensor)
        update, state = adaptive_moment(grad, state, self.beta_1, self.beta_2, self.epsilon)
        return tensor.sub(update.mul_scalar(lr)), state

    def __repr__(self) -> str:
        return (f"Adam(beta_1={self.beta_1}, beta_2={self.beta_2}, epsilon={self.epsilon}, "
                f"weight_decay={self.weight_decay!r})")


class AdamW:
    """The AdamW update rule (weight decay applied to the weights)."""

    name = "AdamW"

    def __init__(self, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-5,
                 weight_decay: float = 1e-4) -> None:
        self.beta_1, self.beta_2, self.epsilon, self.weight_decay = beta_1, beta_2, epsilon, weight_decay

    def state_keys(self) -> tuple[str, ...]:
        return ("time", "moment_1", "moment_2")

    def step(self, lr: float, tensor: Any, grad: Any, state: State | None) -> tuple[Any, State]:
        decayed = tensor.sub(tensor.mul_scalar(lr * self.weight_decay))
        update, state = adaptive_moment(grad, state, self.beta_1, self.beta_2, self.epsilon)
        return decayed.sub(update.mul_scalar(lr)), state

    def __repr__(self) -> str:
        return (f"AdamW(beta_1={self.beta_1}, beta_2={self.beta_2}, epsilon={self.epsilon}, "
                f"weight_decay={self.weight_decay})")
