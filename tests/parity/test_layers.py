"""Every nn layer against its PyTorch twin with copied weights: output,
input gradients and every parameter's gradient, on ordinary inputs and on
large magnitudes (saturated recurrent gates, saturated attention scores,
-inf attention masks)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burnbook import Tensor, nn
from burnbook.nn import PaddingConfig1d, PaddingConfig2d
from burnbook.tensor import Bool
from .helpers import (
    DEEP, F32, Tol, close, copy_linear, copy_mha, copy_same, match, run_ours, run_torch, seeded, set_param,
    torch, val,
)

F = torch.nn.functional


def _fwd(m, x):
    return m.forward(x)


@pytest.mark.parametrize("scale", [1.0, 1e3], ids=["unit", "large"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_linear(B, bias: bool, scale: float) -> None:
    layer = nn.LinearConfig(5, 4, bias=bias).init(backend=B)
    ref = torch.nn.Linear(5, 4, bias=bias)
    params = copy_linear(layer, ref)
    x = seeded([3, 2, 5], 1, scale)
    # A dot product of 5 terms of size `scale`: its rounding is relative to
    # the terms, not to a result that may cancel towards 0.
    tol = Tol(1e-5, 1e-6 * scale)
    match(run_ours(B, layer, _fwd, x), run_torch(ref, x), params, tol, Tol(1e-5, 1e-5 * scale))


def test_embedding(B) -> None:
    layer = nn.EmbeddingConfig(7, 4).init(backend=B)
    ref = torch.nn.Embedding(7, 4)
    params = copy_same(layer, ref, {"weight": "weight"})
    ids = np.array([[0, 3, 3], [6, 1, 3]], np.int64)  # repeats: their gradients add up
    match(run_ours(B, layer, _fwd, ids), run_torch(ref, ids), params, F32)


CONV_CASES = {
    "conv1d": (lambda: nn.Conv1dConfig(4, 6, 3, stride=2, dilation=2, groups=2,
                                       padding=PaddingConfig1d.Explicit(2)),
               lambda: torch.nn.Conv1d(4, 6, 3, stride=2, dilation=2, groups=2, padding=2), [2, 4, 11]),
    "conv2d": (lambda: nn.Conv2dConfig([4, 6], [3, 2], stride=[2, 1], dilation=[1, 2], groups=2,
                                       padding=PaddingConfig2d.Explicit(1, 2)),
               lambda: torch.nn.Conv2d(4, 6, (3, 2), stride=(2, 1), dilation=(1, 2), groups=2, padding=(1, 2)),
               [2, 4, 7, 6]),
    "conv2d_depthwise": (lambda: nn.Conv2dConfig([4, 4], [3, 3], groups=4, padding=PaddingConfig2d.Same),
                         lambda: torch.nn.Conv2d(4, 4, 3, groups=4, padding="same"), [2, 4, 5, 5]),
    "conv_transpose1d": (lambda: nn.ConvTranspose1dConfig([4, 6], 3, stride=2, padding=1, padding_out=1,
                                                          groups=2),
                         lambda: torch.nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1,
                                                          groups=2), [2, 4, 5]),
    "conv_transpose2d": (lambda: nn.ConvTranspose2dConfig([4, 2], [3, 2], stride=[2, 2], padding=[1, 0],
                                                          padding_out=[1, 1], dilation=[1, 2]),
                         lambda: torch.nn.ConvTranspose2d(4, 2, (3, 2), stride=2, padding=(1, 0),
                                                          output_padding=1, dilation=(1, 2)), [2, 4, 3, 4]),
}


@pytest.mark.parametrize("name", list(CONV_CASES))
def test_convolution(B, name: str) -> None:
    make, make_ref, shape = CONV_CASES[name]
    layer, ref = make().init(backend=B), make_ref()
    params = copy_same(layer, ref, {"weight": "weight", "bias": "bias"})
    x = seeded(shape, 2)
    match(run_ours(B, layer, _fwd, x), run_torch(ref, x), params, Tol(1e-5, 1e-5))


POOL_CASES = {
    "max_pool1d": (nn.MaxPool1dConfig(3, stride=2, padding=PaddingConfig1d.Explicit(1)),
                   lambda x: F.max_pool1d(x, 3, 2, 1), [2, 3, 9]),
    "max_pool2d": (nn.MaxPool2dConfig([3, 2], strides=[2, 1], padding=PaddingConfig2d.Explicit(1, 1),
                                      dilation=[1, 2]),
                   lambda x: F.max_pool2d(x, (3, 2), (2, 1), (1, 1), dilation=(1, 2)), [2, 3, 7, 6]),
    "max_pool2d_ceil": (nn.MaxPool2dConfig([2, 2], strides=[2, 2], ceil_mode=True),
                        lambda x: F.max_pool2d(x, 2, 2, ceil_mode=True), [1, 2, 5, 5]),
    "avg_pool1d": (nn.AvgPool1dConfig(3, stride=2, padding=PaddingConfig1d.Explicit(1)),
                   lambda x: F.avg_pool1d(x, 3, 2, 1), [2, 3, 9]),
    "avg_pool2d_exclude_pad": (nn.AvgPool2dConfig([3, 3], strides=[2, 2], padding=PaddingConfig2d.Explicit(1, 1),
                                                  count_include_pad=False),
                               lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [2, 3, 6, 7]),
    "adaptive_avg_pool1d": (nn.AdaptiveAvgPool1dConfig(4), lambda x: F.adaptive_avg_pool1d(x, 4), [2, 3, 10]),
    "adaptive_avg_pool2d": (nn.AdaptiveAvgPool2dConfig([3, 2]), lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
                            [2, 3, 7, 5]),
}


@pytest.mark.parametrize("name", list(POOL_CASES))
def test_pooling(B, name: str) -> None:
    config, theirs, shape = POOL_CASES[name]
    x = seeded(shape, 3, 100.0)  # large values; a max must pick the same element
    match(run_ours(B, config.init(), _fwd, x), run_torch(theirs, x), {}, Tol(1e-5, 1e-4))


@pytest.mark.parametrize("shape", [[4, 3, 5], [3, 3, 2, 4]], ids=["1d", "2d"])
def test_batch_norm_training_and_running_stats(B, shape: list[int]) -> None:
    layer = nn.BatchNormConfig(3, momentum=0.2).init(backend=B)
    ref = torch.nn.BatchNorm1d(3, momentum=0.2) if len(shape) == 3 else torch.nn.BatchNorm2d(3, momentum=0.2)
    layer.gamma = layer.gamma.with_value(Tensor[B, 1].from_data(np.array([0.5, 1.5, -2.0], np.float32)))
    params = copy_same(layer, ref, {"gamma": "weight", "beta": "bias"})
    x = seeded(shape, 4, 50.0) + 200.0  # a large offset: the variance must not cancel
    # Normalising divides by a batch std estimated from 12-24 values.
    match(run_ours(B, layer, _fwd, x), run_torch(ref, x), params, Tol(1e-4, 1e-5))
    close(layer.running_mean.val().to_numpy(), ref.running_mean.numpy(), Tol(1e-5, 1e-5), "running mean")
    close(layer.running_var.val().to_numpy(), ref.running_var.numpy(), Tol(1e-4, 1e-5), "running var")


@pytest.mark.parametrize("offset", [0.0, 1e3], ids=["centred", "offset"])
def test_layer_norm(B, offset: float) -> None:
    layer = nn.LayerNormConfig(6).init(backend=B)
    layer.gamma = layer.gamma.with_value(Tensor[B, 1].from_data(seeded([6], 5) + 1.0))
    layer.beta = layer.beta.with_value(Tensor[B, 1].from_data(seeded([6], 6)))
    ref = torch.nn.LayerNorm(6)
    params = copy_same(layer, ref, {"gamma": "weight", "beta": "bias"})
    x = seeded([2, 3, 6], 7) + offset
    # At offset 1e3 an f32 input's ulp is 6e-5, and both libraries' outputs
    # are ~1.4e-4 off float64's (measured), in different directions.
    tol = Tol(1e-4, 5e-4) if offset else F32
    match(run_ours(B, layer, _fwd, x), run_torch(ref, x), params, tol, tol if offset else DEEP)


def test_group_norm(B) -> None:
    layer = nn.GroupNormConfig(2, 4).init(backend=B)
    layer.gamma = layer.gamma.with_value(Tensor[B, 1].from_data(seeded([4], 8) + 1.0))
    layer.beta = layer.beta.with_value(Tensor[B, 1].from_data(seeded([4], 9)))
    ref = torch.nn.GroupNorm(2, 4)
    params = copy_same(layer, ref, {"gamma": "weight", "beta": "bias"})
    x = seeded([3, 4, 5], 10, 10.0)
    match(run_ours(B, layer, _fwd, x), run_torch(ref, x), params, DEEP)


def _copy_gates(module, ref, order: tuple[str, ...]) -> dict:
    """Each burnbook gate into torch's stacked [4h or 3h, ...] tensors."""
    h = module.d_hidden
    gates = [f"{name}." for name in order]
    for t, ours in (("ih", "input_transform."), ("hh", "hidden_transform.")):
        set_param(getattr(ref, f"weight_{t}_l0"), np.concatenate([val(module, g + ours + "weight").T for g in gates]))
        set_param(getattr(ref, f"bias_{t}_l0"), np.concatenate([val(module, g + ours + "bias") for g in gates]))
    params = {}
    for i, g in enumerate(gates):
        rows = slice(i * h, (i + 1) * h)
        for t, ours in (("ih", "input_transform."), ("hh", "hidden_transform.")):
            params[g + ours + "weight"] = lambda t=t, r=rows: getattr(ref, f"weight_{t}_l0").grad.numpy()[r].T
            params[g + ours + "bias"] = lambda t=t, r=rows: getattr(ref, f"bias_{t}_l0").grad.numpy()[r]
    return params


# Large inputs push every gate to sigmoid's and tanh's tails (|pre-activation|
# in the tens), where the old sigmoid read exactly 0 and 1.
@pytest.mark.parametrize("scale", [1.0, 30.0], ids=["unit", "saturated"])
def test_lstm(B, scale: float) -> None:
    layer = nn.LstmConfig(3, 4).init(backend=B)
    ref = torch.nn.LSTM(3, 4, batch_first=True)
    params = _copy_gates(layer, ref, ("input_gate", "forget_gate", "cell_gate", "output_gate"))
    x, c0, h0 = seeded([2, 5, 3], 11, scale), seeded([2, 4], 12), seeded([2, 4], 13)

    def ours(m, x, c0, h0):
        cells, hiddens = m.forward(x, (c0, h0))
        return Tensor.cat([hiddens, cells.narrow(1, 4, 1)], 1)

    def theirs(x, c0, h0):
        out, (_, c_n) = ref(x, (h0[None], c0[None]))
        return torch.cat([out, c_n.transpose(0, 1)], 1)

    match(run_ours(B, layer, ours, x, c0, h0), run_torch(theirs, x, c0, h0), params, DEEP)


@pytest.mark.parametrize("scale", [1.0, 30.0], ids=["unit", "saturated"])
def test_gru(B, scale: float) -> None:
    layer = nn.GruConfig(3, 4).init(backend=B)
    ref = torch.nn.GRU(3, 4, batch_first=True)
    params = _copy_gates(layer, ref, ("reset_gate", "update_gate", "new_gate"))
    x, h0 = seeded([2, 5, 3], 14, scale), seeded([2, 4], 15)
    match(run_ours(B, layer, lambda m, x, h0: m.forward(x, h0), x, h0),
          run_torch(lambda x, h0: ref(x, h0[None])[0], x, h0), params, DEEP)


D, H = 8, 2


def _masks(batch: int, seq_q: int, seq_k: int) -> tuple[np.ndarray, np.ndarray]:
    """A padding mask (the last keys of sample 0) and a causal-like attention
    mask; every query keeps at least one key."""
    pad = np.zeros((batch, seq_k), bool)
    pad[0, -2:] = True
    attn = np.triu(np.ones((seq_q, seq_k), bool), 1)
    return pad, np.broadcast_to(attn, (batch, seq_q, seq_k)).copy()


@pytest.mark.parametrize("min_float,scale", [(-1e4, 1.0), (-math.inf, 1.0), (-math.inf, 20.0)],
                         ids=["min_float", "neg_inf", "neg_inf_saturated"])
def test_multi_head_attention(B, min_float: float, scale: float) -> None:
    """Masked scores filled with the default -1e4, or with -inf as torch
    does (a config float must be finite, so -inf is set on the layer)."""
    layer = nn.MultiHeadAttentionConfig(D, H, dropout=0.0).init(backend=B)
    layer.min_float = min_float
    ref = torch.nn.MultiheadAttention(D, H, batch_first=True)
    params = copy_mha(layer, ref)
    q, kv = seeded([2, 4, D], 16, scale), seeded([2, 5, D], 17, scale)
    pad, attn = _masks(2, 4, 5)

    def ours(m, q, kv):
        out = m.forward(nn.MhaInput.new(q, kv, kv).mask_pad(Tensor[B, 2, Bool].from_data(pad))
                        .mask_attn(Tensor[B, 3, Bool].from_data(attn)))
        return Tensor.cat([out.context.reshape([2, 4 * D]), out.weights.reshape([2, H * 4 * 5])], 1)

    def theirs(q, kv):
        ctx, w = ref(q, kv, kv, key_padding_mask=torch.tensor(pad),
                     attn_mask=torch.tensor(np.repeat(attn, H, 0)), average_attn_weights=False)
        return torch.cat([ctx.reshape(2, 4 * D), w.reshape(2, H * 4 * 5)], 1)

    # Saturated scores (|q.k| ~ 400 / sqrt(d_k)) make softmax's gradient a
    # difference of near-equal terms; absolute error is relative to ~scale.
    tol = DEEP if scale == 1.0 else Tol(1e-4, 1e-4 * scale)
    match(run_ours(B, layer, ours, q, kv), run_torch(theirs, q, kv), params, DEEP, tol)


def _copy_layer_norm(module, ref, prefix: str, seed: int, B) -> dict:
    """Give the LayerNorm at `prefix` random gamma and beta (so swapped norms
    show), copy them into `ref`; the gradient map."""
    for path, value in ((prefix + "gamma", seeded([D], seed) * 0.3 + 1.0), (prefix + "beta", seeded([D], seed + 1))):
        owner = module
        *parents, leaf = path.split(".")
        for p in parents:
            owner = owner[int(p)] if p.isdigit() else getattr(owner, p)
        setattr(owner, leaf, getattr(owner, leaf).with_value(Tensor[B, 1].from_data(value)))
    return copy_same(module, ref, {prefix + "gamma": "weight", prefix + "beta": "bias"})


def _copy_pwff(module, ref, prefix: str) -> dict:
    return {**copy_linear(module, ref.linear1, prefix + "pwff.linear_inner."),
            **copy_linear(module, ref.linear2, prefix + "pwff.linear_outer.")}


def test_position_wise_feed_forward(B) -> None:
    layer = nn.PositionWiseFeedForwardConfig(D, 12, dropout=0.0).init(backend=B)
    lin1, lin2 = torch.nn.Linear(D, 12), torch.nn.Linear(12, D)
    params = {**copy_linear(layer, lin1, "linear_inner."), **copy_linear(layer, lin2, "linear_outer.")}
    x = seeded([2, 3, D], 18, 5.0)  # GELU's negative tail included
    match(run_ours(B, layer, _fwd, x), run_torch(lambda x: lin2(F.gelu(lin1(x))), x), params, DEEP)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_transformer_encoder(B, norm_first: bool) -> None:
    enc = nn.TransformerEncoderConfig(D, 12, H, 2, dropout=0.0, norm_first=norm_first).init(backend=B)
    norms = ("norm_2", "norm_1") if norm_first else ("norm_1", "norm_2")
    refs, params = [], {}
    for i in range(2):
        ref = torch.nn.TransformerEncoderLayer(D, H, 12, dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=norm_first)
        p = f"layers.{i}."
        params.update(copy_mha(enc, ref.self_attn, p + "mha."))
        params.update(_copy_pwff(enc, ref, p))
        for j, name in enumerate(norms):
            params.update(_copy_layer_norm(enc, getattr(ref, f"norm{j + 1}"), f"{p}{name}.", 10 * i + j, B))
        refs.append(ref)
    pad, _ = _masks(2, 5, 5)
    x = seeded([2, 5, D], 19)

    def ours(m, x):
        return m.forward(nn.TransformerEncoderInput.new(x).mask_pad(Tensor[B, 2, Bool].from_data(pad)))

    def theirs(x):
        for ref in refs:
            x = ref(x, src_key_padding_mask=torch.tensor(pad))
        return x

    match(run_ours(B, enc, ours, x), run_torch(theirs, x), params, DEEP)


def test_transformer_decoder(B) -> None:
    dec = nn.TransformerDecoderConfig(D, 12, H, 1, dropout=0.0).init(backend=B)
    ref = torch.nn.TransformerDecoderLayer(D, H, 12, dropout=0.0, activation="gelu", batch_first=True)
    p = "layers.0."
    params = {**copy_mha(dec, ref.self_attn, p + "self_attn."), **copy_mha(dec, ref.multihead_attn, p + "cross_attn."),
              **_copy_pwff(dec, ref, p)}
    for j, name in enumerate(("norm_1", "norm_2", "norm_3")):
        params.update(_copy_layer_norm(dec, getattr(ref, f"norm{j + 1}"), f"{p}{name}.", 20 + j, B))
    mem_pad, _ = _masks(2, 4, 6)
    target, memory = seeded([2, 4, D], 20), seeded([2, 6, D], 21)

    def ours(m, target, memory):
        causal = nn.generate_autoregressive_mask(2, 4, backend=B)
        return m.forward(nn.TransformerDecoderInput.new(target, memory).target_mask_attn(causal)
                         .memory_mask_pad(Tensor[B, 2, Bool].from_data(mem_pad)))

    def theirs(target, memory):
        causal = torch.tensor(np.triu(np.ones((4, 4), bool), 1))
        return ref(target, memory, tgt_mask=causal, memory_key_padding_mask=torch.tensor(mem_pad))

    match(run_ours(B, dec, ours, target, memory), run_torch(theirs, target, memory), params, DEEP)


def test_positional_encoding(B) -> None:
    """PyTorch has no such layer: the reference is the sinusoid table of
    "Attention is all you need", computed in torch."""
    layer = nn.PositionalEncodingConfig(D, max_sequence_size=16).init(backend=B)
    pos = torch.arange(6, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, D, 2, dtype=torch.float32) * (-math.log(10000.0) / D))
    table = torch.zeros(6, D)
    table[:, 0::2], table[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    x = seeded([2, 6, D], 22)
    match(run_ours(B, layer, _fwd, x), run_torch(lambda x: x + table, x), {}, Tol(1e-5, 1e-5))


def test_dropout_scaling_and_gradient(B) -> None:
    """torch's generator cannot be reproduced, so torch's twin applies the
    mask ours drew: survivors scaled by 1 / (1 - p) in value and gradient."""
    drop = nn.DropoutConfig(0.25).init()
    x = seeded([64, 8], 23) + 10.0  # never 0, so the output's zeros are the mask
    ours = run_ours(B, drop, _fwd, x)
    keep = ours.out != 0.0
    assert abs(1.0 - keep.mean() - 0.25) < 0.08, f"dropped {1.0 - keep.mean():.3f} of 512, asked 0.25"
    match(ours, run_torch(lambda x: x * torch.tensor(keep) / 0.75, x), {}, F32)
