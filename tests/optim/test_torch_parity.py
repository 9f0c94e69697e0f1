"""Every update rule against PyTorch's optimizer, step for step, on the same
MLP and batches, with the learning rate changing between steps.

How Burn's settings map onto PyTorch's (set so both compute the same thing):

| burnbook / Burn | torch.optim |
| --- | --- |
| `SgdConfig(momentum=MomentumConfig(m, dampening=d, nesterov=n))` | `SGD(momentum=m, dampening=d, nesterov=n)`; Burn's default d is 0.1, torch's 0 (torch needs d=0 for nesterov) |
| `WeightDecayConfig(p)` on SGD/Adam/RmsProp/AdaGrad | `weight_decay=p` (L2 added to the gradient) |
| `AdamConfig()` | `Adam(eps=1e-5)`: Burn's epsilon is 1e-5, torch's 1e-8; both add it after the sqrt |
| `AdamWConfig()` | `AdamW(eps=1e-5, weight_decay=1e-4)`: torch's default decay is 1e-2 |
| `RmsPropConfig()` | `RMSprop(alpha=0.99, momentum=0.9, eps=1e-5)`: torch's momentum default is 0 |
| `AdaGradConfig(lr_decay)` | `Adagrad(lr_decay, eps=1e-5)`: torch's eps is 1e-10 |
| `GradientClippingConfig.Value(v)` | `clip_grad_value_(p, v)` before `step()` |
| `GradientClippingConfig.Norm(n)` | per parameter: scale by n / norm when norm > n (torch's `clip_grad_norm_` is global) |
"""

from __future__ import annotations

import numpy as np
import pytest

from burnbook.optim import (
    AdaGradConfig, AdamConfig, AdamWConfig, GradientClippingConfig, MomentumConfig, RmsPropConfig,
    SgdConfig, WeightDecayConfig,
)
from .helpers import data, make_mlp, torch_twin, train_burn, train_torch

torch = pytest.importorskip("torch")

STEPS = 6
LRS = [0.05, 0.05, 0.03, 0.02, 0.04, 0.01]
BATCHES = [data(seed=10 + i) for i in range(STEPS)]

CASES = {
    "sgd": (SgdConfig(), lambda p, lr: torch.optim.SGD(p, lr)),
    "sgd-momentum-burn-default": (
        SgdConfig(momentum=MomentumConfig()),
        lambda p, lr: torch.optim.SGD(p, lr, momentum=0.9, dampening=0.1)),
    "sgd-nesterov": (
        SgdConfig(momentum=MomentumConfig(momentum=0.8, dampening=0.0, nesterov=True)),
        lambda p, lr: torch.optim.SGD(p, lr, momentum=0.8, dampening=0.0, nesterov=True)),
    "sgd-momentum-decay": (
        SgdConfig(momentum=MomentumConfig(0.7, 0.0), weight_decay=WeightDecayConfig(0.01)),
        lambda p, lr: torch.optim.SGD(p, lr, momentum=0.7, weight_decay=0.01)),
    "adam": (AdamConfig(), lambda p, lr: torch.optim.Adam(p, lr, eps=1e-5)),
    "adam-decay-betas": (
        AdamConfig(beta_1=0.8, beta_2=0.99, epsilon=1e-6, weight_decay=WeightDecayConfig(0.05)),
        lambda p, lr: torch.optim.Adam(p, lr, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05)),
    "adamw": (AdamWConfig(), lambda p, lr: torch.optim.AdamW(p, lr, eps=1e-5, weight_decay=1e-4)),
    "adamw-strong-decay": (
        AdamWConfig(weight_decay=0.1), lambda p, lr: torch.optim.AdamW(p, lr, eps=1e-5, weight_decay=0.1)),
    "rmsprop": (RmsPropConfig(), lambda p, lr: torch.optim.RMSprop(p, lr, alpha=0.99, eps=1e-5, momentum=0.9)),
    "rmsprop-centered-decay-no-momentum": (
        RmsPropConfig(momentum=0.0, centered=True, weight_decay=WeightDecayConfig(0.01)),
        lambda p, lr: torch.optim.RMSprop(p, lr, eps=1e-5, centered=True, weight_decay=0.01)),
    "rmsprop-centered-momentum": (
        RmsPropConfig(momentum=0.5, centered=True, alpha=0.9),
        lambda p, lr: torch.optim.RMSprop(p, lr, alpha=0.9, eps=1e-5, momentum=0.5, centered=True)),
    "adagrad": (
        AdaGradConfig(lr_decay=0.1, weight_decay=WeightDecayConfig(0.01)),
        lambda p, lr: torch.optim.Adagrad(p, lr, lr_decay=0.1, eps=1e-5, weight_decay=0.01)),
}


def assert_same_history(ours: list, theirs: list) -> None:
    assert len(ours) == len(theirs) == STEPS
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for name in b:
            np.testing.assert_allclose(a[name], b[name], rtol=1e-5, atol=1e-5,
                                       err_msg=f"{name} after step {step + 1}")


@pytest.mark.parametrize("case", list(CASES))
def test_update_rule_matches_torch(case: str) -> None:
    config, make_torch = CASES[case]
    model = make_mlp()
    net = torch_twin(model)
    ours = train_burn(model, config.init(), LRS, BATCHES)
    theirs = train_torch(net, make_torch, LRS, BATCHES)
    assert_same_history(ours, theirs)
    # The weights really moved (the comparison is not vacuous).
    assert not np.allclose(ours[-1]["l1.weight"], ours[0]["l1.weight"])


def test_clip_by_value_matches_torch() -> None:
    model = make_mlp()
    net = torch_twin(model)
    optim = SgdConfig(gradient_clipping=GradientClippingConfig.Value(0.05)).init()
    ours = train_burn(model, optim, LRS, BATCHES)
    theirs = train_torch(net, lambda p, lr: torch.optim.SGD(p, lr), LRS, BATCHES,
                         clip=lambda n: torch.nn.utils.clip_grad_value_(n.parameters(), 0.05))
    assert_same_history(ours, theirs)


def _clip_each_by_norm(net, max_norm: float) -> None:
    """Burn's norm clipping: every parameter on its own, no epsilon."""
    with torch.no_grad():
        for p in net.parameters():
            norm = float(p.grad.norm())
            if norm > max_norm:
                p.grad.mul_(max_norm / norm)


def test_clip_by_norm_is_per_parameter() -> None:
    model = make_mlp()
    net = torch_twin(model)
    optim = AdamConfig(grad_clipping=GradientClippingConfig.Norm(0.1)).init()
    ours = train_burn(model, optim, LRS, BATCHES)
    theirs = train_torch(net, lambda p, lr: torch.optim.Adam(p, lr, eps=1e-5), LRS, BATCHES,
                         clip=lambda n: _clip_each_by_norm(n, 0.1))
    assert_same_history(ours, theirs)
