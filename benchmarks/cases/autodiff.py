"""Autodiff overhead: tracked ops on tiny tensors, and a 3-layer MLP training step.

The MLP is written once per API with the same shapes, the same seeded weights
and the same loss (`mean((out - y)^2)`): `relu(x @ w1 + b1)`, `relu(. @ w2 +
b2)`, `. @ w3 + b3`, with the bias rows broadcast over the batch. A step is
forward + backward + reading the six parameter gradients (no optimizer
update, so every step sees the same weights). The NumPy row is the same step
with the backward written by hand: the floor a tape can approach.
"""

from __future__ import annotations

import numpy as np

from ..measurement import Case
from ..profiles import Profile

FAMILY = "autodiff"
TITLE = "Autodiff overhead"
INTRO = (
    "`tracked_*`: one op on 4-element tensors (`[2, 2]` for matmul) that both "
    "require gradients, so each call records a graph node (burnbook: "
    "`require_grad()`; PyTorch: `requires_grad_()`). The NumPy row is the "
    "untracked op, the floor. `tiny_fwd_bwd`: `(x * y).sum().backward()` on 4 "
    "elements. `mlp_forward`: inference through the MLP (no graph; PyTorch in "
    "`torch.inference_mode()`). `mlp_fwd_bwd`: forward + backward + reading the "
    "six parameter gradients (PyTorch: grads reset to `None` each step; NumPy: "
    "the backward written by hand). `(1 thread)` rows: NumPy's BLAS and PyTorch "
    "on one thread for that framework's runs. Autodiff[Fusion[Taichi]] records "
    "an op lazily: a tracked op whose result nothing reads is recorded (with its "
    "graph node) and never executed, so its row is the cost of recording. Ratios "
    "are times: lower is better."
)
PARAMS = ("w1", "b1", "w2", "b2", "w3", "b3")
TRACKED = ("numpy", "autodiff", "autodiff_taichi", "autodiff_fusion", "torch")
MLP_TRAIN = TRACKED + ("numpy_1t", "autodiff_1t", "torch_1t")
MLP_INFER = ("numpy", "ndarray", "taichi", "torch", "numpy_1t", "ndarray_1t", "torch_1t")


# -- tiny tracked ops -------------------------------------------------------------------
def _vec(rng):
    return {"x": rng.uniform(-1, 1, 4).astype(np.float32), "y": rng.uniform(-1, 1, 4).astype(np.float32)}


def _mat(rng):
    return {"x": rng.uniform(-1, 1, (2, 2)).astype(np.float32),
            "y": rng.uniform(-1, 1, (2, 2)).astype(np.float32)}


def _track_burnbook(fw, ns):
    ns["x"] = ns["x"].require_grad()
    ns["y"] = ns["y"].require_grad()


def _track_torch(fw, ns):
    ns["x"].requires_grad_(True)
    ns["y"].requires_grad_(True)


_TRACK = {"burnbook": _track_burnbook, "torch": _track_torch}


# -- the MLP ----------------------------------------------------------------------------
def _mlp_inputs(dims):
    batch, d_in, h1, h2, d_out = dims

    def make(rng):
        def w(fan_in, fan_out):
            return (rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)).astype(np.float32)

        def b(n):
            return (rng.standard_normal((1, n)) * 0.01).astype(np.float32)

        return {
            "x": rng.standard_normal((batch, d_in)).astype(np.float32),
            "y": rng.standard_normal((batch, d_out)).astype(np.float32),
            "w1": w(d_in, h1), "b1": b(h1), "w2": w(h1, h2), "b2": b(h2),
            "w3": w(h2, d_out), "b3": b(d_out),
        }

    return make


def _mlp_numpy(fw, ns):
    x, y = ns["x"], ns["y"]
    w1, b1, w2, b2, w3, b3 = (ns[k] for k in PARAMS)

    def forward():
        h1 = np.maximum(x @ w1 + b1, 0)
        h2 = np.maximum(h1 @ w2 + b2, 0)
        return h2 @ w3 + b3

    def step():
        z1 = x @ w1 + b1
        h1 = np.maximum(z1, 0)
        z2 = h1 @ w2 + b2
        h2 = np.maximum(z2, 0)
        d = h2 @ w3 + b3 - y
        loss = (d * d).mean()  # noqa: F841  (computed, as the frameworks do)
        g = d * np.float32(2.0 / d.size)
        gw3, gb3 = h2.T @ g, g.sum(0, keepdims=True)  # noqa: F841
        g = (g @ w3.T) * (z2 > 0)
        gw2, gb2 = h1.T @ g, g.sum(0, keepdims=True)  # noqa: F841
        g = (g @ w2.T) * (z1 > 0)
        gw1, gb1 = x.T @ g, g.sum(0, keepdims=True)  # noqa: F841
        return gw1

    ns["forward"], ns["step"] = forward, step


def _mlp_burnbook(fw, ns):
    relu, x, y = ns["relu"], ns["x"], ns["y"]
    params = [ns[k] for k in PARAMS]
    if getattr(fw.backend, "is_autodiff", False):
        params = [p.require_grad() for p in params]
    w1, b1, w2, b2, w3, b3 = params

    def forward():
        h1 = relu(x.matmul(w1) + b1)
        h2 = relu(h1.matmul(w2) + b2)
        return h2.matmul(w3) + b3

    def step():
        d = forward() - y
        loss = (d * d).mean()
        grads = loss.backward()
        g = [p.grad(grads) for p in params]
        return g[0]

    ns["forward"], ns["step"] = forward, step


def _mlp_torch(fw, ns):
    torch, x, y = ns["torch"], ns["x"], ns["y"]
    params = [ns[k] for k in PARAMS]
    w1, b1, w2, b2, w3, b3 = params

    def forward():
        h1 = torch.relu(x @ w1 + b1)
        h2 = torch.relu(h1 @ w2 + b2)
        return h2 @ w3 + b3

    def infer():
        with torch.inference_mode():
            return forward()

    def step():
        for p in params:
            p.grad = None
        d = forward() - y
        loss = (d * d).mean()
        loss.backward()
        g = [p.grad for p in params]
        return g[0]

    def track():
        for p in params:
            p.requires_grad_(True)

    ns["forward"], ns["infer"], ns["step"], ns["_track"] = forward, infer, step, track


def _mlp_torch_train(fw, ns):
    _mlp_torch(fw, ns)
    ns["_track"]()


def mlp_size(profile: Profile) -> str:
    """The MLP case's size label, e.g. `64x784-256-128-10`."""
    batch, *dims = profile.mlp
    return f"{batch}x" + "-".join(map(str, dims))


def cases(profile: Profile) -> list:
    def tiny(op, inputs, stmt, size="4"):
        return Case(FAMILY, op, size, inputs, stmt, ratio="time", setup=_TRACK,
                    frameworks=TRACKED, tol=1e-6, tiny=True)

    size = mlp_size(profile)
    return [
        tiny("tracked_add", _vec, {"*": "x + y"}),
        tiny("tracked_mul", _vec, {"*": "x * y"}),
        tiny("tracked_exp", _vec, {"numpy": "np.exp(x)", "burnbook": "x.exp()", "torch": "torch.exp(x)"}),
        tiny("tracked_matmul", _mat, {"numpy": "x @ y", "burnbook": "x.matmul(y)", "torch": "x @ y"}, size="2x2"),
        Case(FAMILY, "tiny_fwd_bwd", "4", _vec,
             {"burnbook": "(x * y).sum().backward()", "torch": "(x * y).sum().backward()"},
             ratio="time", setup=_TRACK, frameworks=TRACKED, check="", tiny=True),
        Case(FAMILY, "mlp_forward", size, _mlp_inputs(profile.mlp),
             {"numpy": "forward()", "burnbook": "forward()", "torch": "infer()"},
             ratio="time", setup={"numpy": _mlp_numpy, "burnbook": _mlp_burnbook, "torch": _mlp_torch},
             frameworks=MLP_INFER, check="forward()", tol=1e-4),
        Case(FAMILY, "mlp_fwd_bwd", size, _mlp_inputs(profile.mlp),
             {"*": "step()"},
             ratio="time", setup={"numpy": _mlp_numpy, "burnbook": _mlp_burnbook, "torch": _mlp_torch_train},
             frameworks=MLP_TRAIN, tol=1e-4),
    ]
