"""Run one computation in burnbook and in PyTorch (float32 both, the
precision users train in) and compare outputs and gradients.

The scalar both sides differentiate is `sum(out * R)` with R fixed random,
so no gradient is trivially symmetric. Tolerances are per case: `Tol(rtol,
atol)` means |ours - torch| <= atol + rtol * |torch| element-wise, and a
NaN or inf on one side only always fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest

from burnbook import Tensor
from burnbook.tensor import Bool, Int

torch = pytest.importorskip("torch")


@dataclass(frozen=True)
class Tol:
    rtol: float
    atol: float


# Ordinary inputs of order 1 through a few f32 ops: a few ulps of rounding
# each, amplified by sums over at most ~100 terms.
F32 = Tol(1e-5, 1e-6)
# Deeper graphs (recurrences, attention, normalisation over few elements,
# transformer stacks): more ops, reductions and divisions by small spreads.
DEEP = Tol(1e-4, 1e-5)
# Activation tails: relative down to 1e-35. PyTorch's values below that pass
# through the subnormal range (sigmoid(-88) = 6e-39, silu(-88) = -88 * 6e-39),
# which a backend may flush to zero.
TAIL = Tol(1e-5, 1e-35)

EXTREMES = np.array([-88.0, -50.0, -20.0, -17.0, -10.0, -1.0, -1e-3, 0.0, 1e-3, 1.0, 10.0, 17.0, 20.0,
                     50.0, 88.0], dtype=np.float32)


def seeded(shape: list[int], seed: int, scale: float = 1.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def ours_tensor(B: type, a: np.ndarray) -> Tensor:
    """A burnbook tensor of `a` on B: Float ones track gradients."""
    if a.dtype == np.bool_:
        return Tensor[B, a.ndim, Bool].from_data(a)
    if np.issubdtype(a.dtype, np.integer):
        return Tensor[B, a.ndim, Int].from_data(a)
    return Tensor[B, a.ndim].from_data(a).require_grad()


def torch_tensor(a: np.ndarray) -> "torch.Tensor":
    if a.dtype == np.bool_:
        return torch.tensor(a)
    if np.issubdtype(a.dtype, np.integer):
        return torch.tensor(a, dtype=torch.long)
    return torch.tensor(a, dtype=torch.float32, requires_grad=True)


@dataclass
class Run:
    out: np.ndarray
    input_grads: list
    param_grads: dict


def run_ours(B: type, module: Any, forward: Callable, *arrays: np.ndarray, seed: int = 99) -> Run:
    """`forward(module, *inputs)` on B, then the gradients of sum(out * R)."""
    xs = [ours_tensor(B, a) for a in arrays]
    out = forward(module, *xs)
    r = Tensor[B, out.ndim].from_data(seeded(out.dims(), seed))
    grads = out.mul(r).sum().backward()
    params = {}
    if module is not None:
        for path, p in module.named_params():
            if not p.is_require_grad():  # running statistics
                continue
            g = p.val().grad(grads)
            params[path] = None if g is None else g.to_numpy()
    inputs = [x.grad(grads).to_numpy() if x.kind is not Int and x.kind is not Bool else None for x in xs]
    return Run(out.to_numpy(), inputs, params)


def run_torch(forward: Callable, *arrays: np.ndarray, seed: int = 99) -> Run:
    """The same in PyTorch; parameter gradients are read by the caller's map."""
    xs = [torch_tensor(a) for a in arrays]
    out = forward(*xs)
    r = torch.tensor(seeded(list(out.shape), seed))
    (out * r).sum().backward()
    return Run(out.detach().numpy(), [x.grad.numpy() if x.requires_grad else None for x in xs], {})


def close(actual: Any, expected: Any, tol: Tol, what: str) -> None:
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != torch's {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=tol.rtol, atol=tol.atol, equal_nan=False, err_msg=what)


def match(ours: Run, theirs: Run, params: dict[str, Callable[[], np.ndarray]], tol: Tol,
          grad_tol: Tol | None = None) -> None:
    """Output, every float input's gradient and every parameter's gradient
    (`params[path]()` gives torch's in burnbook's layout)."""
    grad_tol = grad_tol or tol
    close(ours.out, theirs.out, tol, "output")
    for i, (a, b) in enumerate(zip(ours.input_grads, theirs.input_grads)):
        if b is not None:
            close(a, b, grad_tol, f"gradient of input {i}")
    assert set(ours.param_grads) == set(params), "every parameter must be compared"
    for path, fn in params.items():
        assert ours.param_grads[path] is not None, f"{path} got no gradient"
        close(ours.param_grads[path], fn(), grad_tol, f"gradient of {path}")


def set_param(param: "torch.nn.Parameter", value: Any) -> None:
    """Copy `value` into a torch parameter in place."""
    with torch.no_grad():
        param.copy_(torch.as_tensor(np.asarray(value), dtype=param.dtype).reshape(param.shape))


def val(module: Any, path: str) -> np.ndarray:
    return dict(module.named_params())[path].val().to_numpy()


def copy_same(module: Any, ref: "torch.nn.Module", names: dict[str, str]) -> dict:
    """Copy burnbook parameters (path -> torch name) whose layouts agree;
    returns the gradient map."""
    out = {}
    for path, name in names.items():
        set_param(getattr(ref, name), val(module, path))
        out[path] = lambda n=name: getattr(ref, n).grad.numpy()
    return out


def copy_linear(module: Any, ref: "torch.nn.Linear", prefix: str = "") -> dict:
    """burnbook's [in, out] weight into torch's [out, in]; the gradient map."""
    set_param(ref.weight, val(module, prefix + "weight").T)
    out = {prefix + "weight": lambda: ref.weight.grad.numpy().T}
    if ref.bias is not None:
        set_param(ref.bias, val(module, prefix + "bias"))
        out[prefix + "bias"] = lambda: ref.bias.grad.numpy()
    return out


def copy_mha(module: Any, ref: "torch.nn.MultiheadAttention", prefix: str = "") -> dict:
    """The four burnbook Linears into torch's packed in_proj and out_proj."""
    parts = [prefix + n for n in ("query.", "key.", "value.")]
    set_param(ref.in_proj_weight, np.concatenate([val(module, p + "weight").T for p in parts]))
    set_param(ref.in_proj_bias, np.concatenate([val(module, p + "bias") for p in parts]))
    d = ref.embed_dim
    out = copy_linear(module, ref.out_proj, prefix + "output.")
    for i, p in enumerate(parts):
        rows = slice(i * d, (i + 1) * d)
        out[p + "weight"] = lambda r=rows: ref.in_proj_weight.grad.numpy()[r].T
        out[p + "bias"] = lambda r=rows: ref.in_proj_bias.grad.numpy()[r]
    return out
