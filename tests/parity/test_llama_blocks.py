"""Burn's Llama-era blocks against PyTorch with copied weights: `RmsNorm`
(torch.nn.RMSNorm), `RotaryEncoding` and `SwiGlu` (torch has neither as a
layer, so the reference is written here in a few lines of torch); output,
input gradients and every parameter's gradient, on both parity backends."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor, nn
from .helpers import DEEP, F32, Tol, copy_linear, copy_same, match, run_ours, run_torch, seeded, torch

F = torch.nn.functional
D, H = 8, 2


def _fwd(m, x):
    return m.forward(x)


@pytest.mark.parametrize("scale,offset", [(1.0, 0.0), (1e3, 0.0), (1.0, 5.0)],
                         ids=["unit", "large", "offset"])
def test_rms_norm(B, scale: float, offset: float) -> None:
    """Random gamma (so a wrong broadcast shows); large inputs and inputs far
    from zero mean, where RMS differs most from LayerNorm's spread."""
    layer = nn.RmsNormConfig(D).init(backend=B)
    layer.gamma = layer.gamma.with_value(Tensor[B, 1].from_data(seeded([D], 30) * 0.3 + 1.0))
    ref = torch.nn.RMSNorm(D, eps=1e-5)
    params = copy_same(layer, ref, {"gamma": "weight"})
    x = seeded([2, 3, D], 31, scale) + offset
    # The input gradient scales as 1 / |x|: absolute tolerance with it.
    match(run_ours(B, layer, _fwd, x), run_torch(ref, x), params, DEEP, Tol(1e-4, 1e-5 / scale))


def _rope_reference(x: "torch.Tensor", start: int, theta: float = 10000.0) -> "torch.Tensor":
    """RoFormer's rotation of adjacent pairs, as complex multiplication
    (Meta's Llama code): pair (x[2i], x[2i+1]) times e^{i p w_i}."""
    *lead, seq, d = x.shape
    w = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.arange(start, start + seq, dtype=torch.float64)[:, None] * w[None, :]
    rot = torch.polar(torch.ones_like(angles), angles).to(torch.complex64)
    pairs = torch.view_as_complex(x.reshape(*lead, seq, d // 2, 2).contiguous())
    return torch.view_as_real(pairs * rot).reshape(x.shape)


@pytest.mark.parametrize("shape,start", [([2, H, 5, D], 0), ([2, H, 5, D], 7), ([3, 4, 6], 2)],
                         ids=["heads", "heads_offset", "rank3_offset"])
def test_rotary_encoding(B, shape: list[int], start: int) -> None:
    """`forward` (positions from 0) and `apply(x, start)` on 4-D head
    tensors and a 3-D `[batch, seq, d_model]` one."""
    d = shape[-1]
    layer = nn.RotaryEncodingConfig(max_sequence_length=16, d_model=d).init(backend=B)
    assert layer.num_params() == 0 and not list(layer.named_params())
    x = seeded(shape, 32)
    ours = run_ours(B, layer, lambda m, x: m.apply(x, start) if start else m.forward(x), x)
    match(ours, run_torch(lambda x: _rope_reference(x, start), x), {}, F32, Tol(1e-5, 1e-5))


def test_rotary_encoding_keeps_relative_positions(B) -> None:
    """The point of RoPE: q.k after rotation depends on the positions'
    difference only (shifting both by 5 leaves every score unchanged)."""
    rope = nn.RotaryEncodingConfig(max_sequence_length=16, d_model=D).init(backend=B)
    q, k = (Tensor[B, 3].from_data(seeded([1, 4, D], s)) for s in (33, 34))

    def scores(start: int) -> np.ndarray:
        return rope.apply(q, start).matmul(rope.apply(k, start).transpose()).to_numpy()

    np.testing.assert_allclose(scores(5), scores(0), rtol=1e-5, atol=1e-5)
    assert not np.allclose(rope.forward(q).to_numpy(), q.to_numpy())


@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
def test_swiglu(B, bias: bool) -> None:
    layer = nn.SwiGluConfig(D, 12, bias=bias).init(backend=B)
    assert layer.num_params() == 2 * (D * 12 + (12 if bias else 0))
    inner, outer = torch.nn.Linear(D, 12, bias=bias), torch.nn.Linear(D, 12, bias=bias)
    params = {**copy_linear(layer, inner, "linear_inner."), **copy_linear(layer, outer, "linear_outer.")}
    x = seeded([2, 3, D], 35, 3.0)  # SiLU's negative side included
    match(run_ours(B, layer, _fwd, x), run_torch(lambda x: F.silu(inner(x)) * outer(x), x), params, DEEP)
