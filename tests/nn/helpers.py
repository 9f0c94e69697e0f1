"""Helpers for checking layers against PyTorch: run a forward pass in both,
take the same scalar loss `sum(out * R)` (R fixed random, so no gradient is
trivially symmetric), and compare outputs and gradients w.r.t. the inputs and
every parameter. The PyTorch side runs in float64 as the reference."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from burnbook import Tensor
from burnbook.backend import Autodiff, NdArray

try:  # test modules that need it call pytest.importorskip("torch") themselves
    import torch
except ImportError:  # pragma: no cover - torch is an optional extra
    torch = None

B = Autodiff[NdArray]
TOL = dict(rtol=1e-4, atol=1e-4)


def t64(a: Any, grad: bool = False) -> "torch.Tensor":
    """A float64 torch tensor of `a` (a burnbook tensor or array)."""
    out = torch.tensor(np.asarray(a), dtype=torch.float64)
    return out.requires_grad_(grad)


def set_param(param: "torch.nn.Parameter", value: Any) -> None:
    """Copy `value` (any array-like) into a torch parameter in place."""
    with torch.no_grad():
        param.copy_(torch.as_tensor(np.asarray(value), dtype=param.dtype).reshape(param.shape))


def seeded(shape: list[int], seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


class Run:
    """One forward/backward pass: `out` plus gradients of `sum(out * R)`."""

    def __init__(self, out: np.ndarray, input_grads: list, param_grads: dict) -> None:
        self.out, self.input_grads, self.param_grads = out, input_grads, param_grads


def run_burn(module: Any, forward: Callable, *arrays: np.ndarray, weight_seed: int = 99) -> Run:
    """Forward `forward(module, *inputs)` on Autodiff[NdArray] with tracked
    float inputs, then backward of `sum(out * R)`."""
    xs = [Tensor[B, a.ndim].from_data(a).require_grad() for a in arrays]
    out = forward(module, *xs)
    r = seeded(out.dims(), weight_seed)
    grads = out.mul(Tensor[B, out.ndim].from_data(r)).sum().backward()
    param_grads = {}
    for path, p in module.named_params():
        if p.is_require_grad():
            g = p.val().grad(grads)
            param_grads[path] = None if g is None else g.to_numpy()
    return Run(out.to_numpy(), [x.grad(grads).to_numpy() for x in xs], param_grads)


def run_torch(forward: Callable, *arrays: np.ndarray, weight_seed: int = 99) -> Run:
    """The same on PyTorch in float64; param grads are read by the caller."""
    xs = [t64(a, grad=True) for a in arrays]
    out = forward(*xs)
    r = torch.tensor(seeded(list(out.shape), weight_seed), dtype=torch.float64)
    (out * r).sum().backward()
    return Run(out.detach().numpy(), [x.grad.numpy() for x in xs], {})


def assert_close(actual: Any, expected: Any, what: str = "") -> None:
    np.testing.assert_allclose(np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64),
                               err_msg=what, **TOL)


def assert_match(ours: Run, theirs: Run, param_map: dict[str, Callable[[], np.ndarray]]) -> None:
    """Outputs, input gradients, and for every burnbook parameter path the
    torch gradient that `param_map[path]()` returns in burnbook's layout."""
    assert ours.out.shape == theirs.out.shape
    assert_close(ours.out, theirs.out, "output")
    for i, (a, b) in enumerate(zip(ours.input_grads, theirs.input_grads)):
        assert_close(a, b, f"gradient of input {i}")
    assert set(ours.param_grads) == set(param_map), "every parameter must be checked"
    for path, fn in param_map.items():
        assert ours.param_grads[path] is not None, f"{path} got no gradient"
        assert_close(ours.param_grads[path], fn(), f"gradient of {path}")


def val(module: Any, path: str) -> np.ndarray:
    """A burnbook parameter's values by path (`"query.weight"`)."""
    return dict(module.named_params())[path].val().to_numpy()


def copy_linear(burn_linear: Any, torch_linear: "torch.nn.Linear") -> None:
    """Burn's [d_in, d_out] weight into torch's [d_out, d_in]."""
    set_param(torch_linear.weight, burn_linear.weight.val().to_numpy().T)
    if burn_linear.bias is not None:
        set_param(torch_linear.bias, burn_linear.bias.val().to_numpy())


def linear_grads(prefix: str, torch_linear: "torch.nn.Linear", bias: bool = True) -> dict:
    """param_map entries for a Linear at `prefix` (weight grads transposed)."""
    out = {f"{prefix}weight": lambda: torch_linear.weight.grad.numpy().T}
    if bias:
        out[f"{prefix}bias"] = lambda: torch_linear.bias.grad.numpy()
    return out


def copy_mha(mha: Any, ref: "torch.nn.MultiheadAttention", prefix: str = "") -> dict:
    """Burn's four Linears into torch's packed in_proj and out_proj; returns
    the param_map entries under `prefix`."""
    d = mha.n_heads * mha.d_k
    parts = (mha.query, mha.key, mha.value)
    set_param(ref.in_proj_weight, np.concatenate([p.weight.val().to_numpy().T for p in parts]))
    set_param(ref.in_proj_bias, np.concatenate([p.bias.val().to_numpy() for p in parts]))
    copy_linear(mha.output, ref.out_proj)
    params = {}
    for i, name in enumerate(("query", "key", "value")):
        rows = slice(i * d, (i + 1) * d)
        params[f"{prefix}{name}.weight"] = lambda r=rows: ref.in_proj_weight.grad.numpy()[r].T
        params[f"{prefix}{name}.bias"] = lambda r=rows: ref.in_proj_bias.grad.numpy()[r]
    params.update(linear_grads(f"{prefix}output.", ref.out_proj))
    return params


def copy_layer_norm(norm: Any, ref: "torch.nn.LayerNorm", prefix: str, seed: int) -> dict:
    """Give `norm` random gamma/beta (so swapped norms show), copy them into
    `ref`; returns the param_map entries."""
    n = norm.gamma.val().dims()[0]
    g, b = seeded([n], seed, 0.3) + 1.0, seeded([n], seed + 1, 0.3)
    norm.gamma = norm.gamma.with_value(Tensor[norm.gamma.val()._B, 1].from_data(g))
    norm.beta = norm.beta.with_value(Tensor[norm.beta.val()._B, 1].from_data(b))
    set_param(ref.weight, g)
    set_param(ref.bias, b)
    return {f"{prefix}gamma": lambda: ref.weight.grad.numpy(), f"{prefix}beta": lambda: ref.bias.grad.numpy()}
