"""Every optimizer (and both gradient clippings) against torch.optim: three
steps on the same two-layer MLP and batches, the learning rate changing
between steps, weights compared after each step on NdArray and Taichi.

Burn's defaults differ from torch's in places (tests/optim/test_torch_parity.py
has the table); each torch twin below is configured to compute the same rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor, nn
from burnbook.module import Module
from burnbook.optim import (
    AdaGradConfig, AdamConfig, AdamWConfig, GradientClippingConfig, GradientsParams, MomentumConfig,
    RmsPropConfig, SgdConfig, WeightDecayConfig,
)
from .helpers import Tol, close, copy_linear, seeded, torch

LRS = [0.05, 0.02, 0.04]
TOL = Tol(1e-5, 1e-5)
# The second batch has larger inputs, so some tanh units saturate and their
# gradients are small next to others (Adam's and RMSprop's normalisation
# sees both); the third has large targets, so large gradients.
BATCHES = [(seeded([8, 4], 40), seeded([8, 3], 41)), (seeded([8, 4], 42, 4.0), seeded([8, 3], 43)),
           (seeded([8, 4], 44), seeded([8, 3], 45, 10.0))]


def _clip_each_by_norm(net, max_norm: float) -> None:
    """Burn's norm clipping: each parameter on its own (torch's is global)."""
    with torch.no_grad():
        for p in net.parameters():
            norm = float(p.grad.norm())
            if norm > max_norm:
                p.grad.mul_(max_norm / norm)


CASES = {
    "sgd": (SgdConfig(), lambda p: torch.optim.SGD(p, 0.1), None),
    "sgd_momentum": (SgdConfig(momentum=MomentumConfig()),
                     lambda p: torch.optim.SGD(p, 0.1, momentum=0.9, dampening=0.1), None),
    "sgd_nesterov_decay": (
        SgdConfig(momentum=MomentumConfig(0.8, 0.0, nesterov=True), weight_decay=WeightDecayConfig(0.01)),
        lambda p: torch.optim.SGD(p, 0.1, momentum=0.8, nesterov=True, weight_decay=0.01), None),
    "adam": (AdamConfig(), lambda p: torch.optim.Adam(p, 0.1, eps=1e-5), None),
    "adam_decay": (AdamConfig(beta_1=0.8, beta_2=0.99, epsilon=1e-6, weight_decay=WeightDecayConfig(0.05)),
                   lambda p: torch.optim.Adam(p, 0.1, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05), None),
    "adamw": (AdamWConfig(weight_decay=0.1), lambda p: torch.optim.AdamW(p, 0.1, eps=1e-5, weight_decay=0.1), None),
    "rmsprop": (RmsPropConfig(), lambda p: torch.optim.RMSprop(p, 0.1, alpha=0.99, eps=1e-5, momentum=0.9), None),
    "rmsprop_centered": (RmsPropConfig(momentum=0.5, centered=True, alpha=0.9),
                         lambda p: torch.optim.RMSprop(p, 0.1, alpha=0.9, eps=1e-5, momentum=0.5, centered=True),
                         None),
    "adagrad": (AdaGradConfig(lr_decay=0.1, weight_decay=WeightDecayConfig(0.01)),
                lambda p: torch.optim.Adagrad(p, 0.1, lr_decay=0.1, eps=1e-5, weight_decay=0.01), None),
    "clip_value": (SgdConfig(gradient_clipping=GradientClippingConfig.Value(0.05)),
                   lambda p: torch.optim.SGD(p, 0.1),
                   lambda net: torch.nn.utils.clip_grad_value_(net.parameters(), 0.05)),
    "clip_norm": (AdamConfig(grad_clipping=GradientClippingConfig.Norm(0.1)),
                  lambda p: torch.optim.Adam(p, 0.1, eps=1e-5), lambda net: _clip_each_by_norm(net, 0.1)),
}


class Mlp(Module):
    l1: nn.Linear
    l2: nn.Linear

    def forward(self, x: Tensor) -> Tensor:
        return self.l2.forward(self.l1.forward(x).tanh())


def _weights(model: Mlp) -> dict[str, np.ndarray]:
    return {path: p.val().to_numpy() for path, p in model.named_params()}


@pytest.mark.parametrize("case", list(CASES))
def test_three_steps_match_torch(B, case: str) -> None:
    config, make_torch, clip = CASES[case]
    model = Mlp(l1=nn.LinearConfig(4, 6).init(backend=B), l2=nn.LinearConfig(6, 3).init(backend=B))
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    grad_maps = {**copy_linear(model, net[0], "l1."), **copy_linear(model, net[2], "l2.")}
    # torch's parameter values in burnbook's layout: the gradient maps read
    # `.grad`; the same transposes apply to the values.
    start = _weights(model)
    optim, torch_optim = config.init(), make_torch(net.parameters())
    for step, (lr, (x, y)) in enumerate(zip(LRS, BATCHES)):
        diff = model.forward(Tensor[B, 2].from_data(x)).sub(Tensor[B, 2].from_data(y))
        grads = GradientsParams.from_grads(diff.mul(diff).mean().backward(), model)
        model = optim.step(lr, model, grads)

        for group in torch_optim.param_groups:
            group["lr"] = lr
        torch_optim.zero_grad()
        ((net(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean().backward()
        if clip is not None:
            clip(net)
        torch_optim.step()
        theirs = {"l1.weight": net[0].weight.detach().numpy().T, "l1.bias": net[0].bias.detach().numpy(),
                  "l2.weight": net[2].weight.detach().numpy().T, "l2.bias": net[2].bias.detach().numpy()}
        ours = _weights(model)
        assert set(ours) == set(theirs) == set(grad_maps)
        for path in theirs:
            # Adaptive rules (Adam, RMSprop, AdaGrad) scale every gradient to
            # an update of order lr, however small the gradient: behind a
            # saturated tanh it is 1 - tanh^2 from a tanh rounded near 1,
            # known to a few ulps of 1 only, so the weights agree to a few
            # 1e-6 absolute, not to f32's 1e-7.
            close(ours[path], theirs[path], TOL, f"{path} after step {step + 1}")
    assert not np.allclose(_weights(model)["l1.weight"], start["l1.weight"])  # the weights did move
