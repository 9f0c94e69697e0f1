"""A small MLP built twice, in burnbook and in PyTorch, with the same weights,
plus a training loop for each, so optimizer updates can be compared step by
step. burnbook's `Linear.weight` is `[in, out]`, PyTorch's `[out, in]`."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from burnbook import Tensor
from burnbook.backend import Autodiff, NdArray
from burnbook.module import Module
from burnbook.nn import Linear, LinearConfig
from burnbook.optim import GradientsParams

try:  # test modules that need it call pytest.importorskip("torch") themselves
    import torch
except ImportError:  # pragma: no cover - torch is an optional extra
    torch = None

B = Autodiff[NdArray]
D_IN, D_HIDDEN, D_OUT, BATCH = 4, 6, 3, 8


class Mlp(Module):
    """Linear -> tanh -> Linear."""

    l1: Linear
    l2: Linear

    def forward(self, x: Tensor) -> Tensor:
        return self.l2(self.l1(x).tanh())


def make_mlp(seed: int = 0) -> Mlp:
    B.seed(seed)
    return Mlp(l1=LinearConfig(D_IN, D_HIDDEN).init(), l2=LinearConfig(D_HIDDEN, D_OUT).init())


def data(seed: int = 1, batch: int = BATCH) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((batch, D_IN)).astype(np.float32),
            rng.standard_normal((batch, D_OUT)).astype(np.float32))


def loss_of(model: Mlp, x: np.ndarray, y: np.ndarray) -> Tensor:
    """Mean squared error of the model on (x, y)."""
    diff = model(Tensor[B, 2].from_data(x)).sub(Tensor[B, 2].from_data(y))
    return diff.mul(diff).mean()


def grads_of(model: Mlp, x: np.ndarray, y: np.ndarray) -> GradientsParams:
    return GradientsParams.from_grads(loss_of(model, x, y).backward(), model)


def weights(model: Mlp) -> dict[str, np.ndarray]:
    """Every parameter, in PyTorch's layout (weights transposed)."""
    out = {}
    for path, p in model.named_params():
        a = p.val().to_numpy()
        out[path] = a.T if a.ndim == 2 else a
    return out


def torch_twin(model: Mlp) -> "torch.nn.Module":
    net = torch.nn.Sequential(torch.nn.Linear(D_IN, D_HIDDEN), torch.nn.Tanh(), torch.nn.Linear(D_HIDDEN, D_OUT))
    w = weights(model)
    with torch.no_grad():
        for i, name in ((0, "l1"), (2, "l2")):
            net[i].weight.copy_(torch.from_numpy(w[f"{name}.weight"].copy()))
            net[i].bias.copy_(torch.from_numpy(w[f"{name}.bias"].copy()))
    return net


def torch_weights(net: "torch.nn.Module") -> dict[str, np.ndarray]:
    return {f"{name}.{kind}": getattr(net[i], kind).detach().numpy().copy()
            for i, name in ((0, "l1"), (2, "l2")) for kind in ("weight", "bias")}


def train_burn(model: Mlp, optim: Any, lrs: list[float], batches: list) -> list[dict[str, np.ndarray]]:
    """Weights after each step."""
    history = []
    for lr, (x, y) in zip(lrs, batches):
        model = optim.step(lr, model, grads_of(model, x, y))
        history.append(weights(model))
    return history


def train_torch(net: Any, make_optim: Callable, lrs: list[float], batches: list,
                clip: Callable | None = None) -> list[dict[str, np.ndarray]]:
    optim = make_optim(net.parameters(), lrs[0])
    history = []
    for lr, (x, y) in zip(lrs, batches):
        for group in optim.param_groups:
            group["lr"] = lr
        optim.zero_grad()
        loss = ((net(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean()
        loss.backward()
        if clip is not None:
            clip(net)
        optim.step()
        history.append(torch_weights(net))
    return history
