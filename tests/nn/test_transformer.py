"""Transformer encoder/decoder, feed-forward and positional encoding against
PyTorch (gelu activation, batch_first, dropout off)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from burnbook import Bool, Tensor, nn
from burnbook.backend import NdArray

from .helpers import (
    B, assert_match, copy_layer_norm, copy_linear, copy_mha, linear_grads, run_burn, run_torch,
    seeded,
)

torch = pytest.importorskip("torch")

D, FF, H = 8, 12, 2


def _copy_pwff(pwff, ref_layer, prefix: str) -> dict:
    copy_linear(pwff.linear_inner, ref_layer.linear1)
    copy_linear(pwff.linear_outer, ref_layer.linear2)
    return {**linear_grads(f"{prefix}pwff.linear_inner.", ref_layer.linear1),
            **linear_grads(f"{prefix}pwff.linear_outer.", ref_layer.linear2)}


def test_position_wise_feed_forward_matches_torch() -> None:
    B.seed(0)
    pwff = nn.PositionWiseFeedForwardConfig(D, FF, dropout=0.0).init()
    lin1, lin2 = torch.nn.Linear(D, FF).double(), torch.nn.Linear(FF, D).double()
    copy_linear(pwff.linear_inner, lin1)
    copy_linear(pwff.linear_outer, lin2)
    params = {**linear_grads("linear_inner.", lin1), **linear_grads("linear_outer.", lin2)}
    x = seeded([2, 3, D], 1)
    assert_match(run_burn(pwff, lambda m, x: m.forward(x), x),
                 run_torch(lambda x: lin2(torch.nn.functional.gelu(lin1(x))), x), params)


# Burn's norm that runs first, second (and third) in each layer, by mode.
ENCODER_NORMS = {False: ("norm_1", "norm_2"), True: ("norm_2", "norm_1")}
DECODER_NORMS = {False: ("norm_1", "norm_2", "norm_3"), True: ("norm_3", "norm_1", "norm_2")}


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_matches_torch(norm_first: bool) -> None:
    B.seed(1)
    enc = nn.TransformerEncoderConfig(D, FF, H, 2, dropout=0.0, norm_first=norm_first).init()
    refs, params = [], {}
    for i, layer in enumerate(enc.layers):
        ref = torch.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=norm_first).double()
        p = f"layers.{i}."
        params.update(copy_mha(layer.mha, ref.self_attn, p + "mha."))
        params.update(_copy_pwff(layer.pwff, ref, p))
        for j, name in enumerate(ENCODER_NORMS[norm_first]):
            ref_norm = getattr(ref, f"norm{j + 1}")
            params.update(copy_layer_norm(getattr(layer, name), ref_norm, p + name + ".", 10 * i + j))
        refs.append(ref)
    batch, seq = 2, 5
    pad = np.zeros((batch, seq), dtype=bool)
    pad[0, -2:] = True
    x = seeded([batch, seq, D], 2)

    def ours(m, x):
        return m.forward(nn.TransformerEncoderInput.new(x).mask_pad(Tensor[B, 2, Bool].from_data(pad)))

    def theirs(x):
        for ref in refs:
            x = ref(x, src_key_padding_mask=torch.tensor(pad))
        return x

    assert_match(run_burn(enc, ours, x), run_torch(theirs, x), params)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_decoder_matches_torch(norm_first: bool) -> None:
    B.seed(2)
    dec = nn.TransformerDecoderConfig(D, FF, H, 2, dropout=0.0, norm_first=norm_first).init()
    refs, params = [], {}
    for i, layer in enumerate(dec.layers):
        ref = torch.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=norm_first).double()
        p = f"layers.{i}."
        params.update(copy_mha(layer.self_attn, ref.self_attn, p + "self_attn."))
        params.update(copy_mha(layer.cross_attn, ref.multihead_attn, p + "cross_attn."))
        params.update(_copy_pwff(layer.pwff, ref, p))
        for j, name in enumerate(DECODER_NORMS[norm_first]):
            ref_norm = getattr(ref, f"norm{j + 1}")
            params.update(copy_layer_norm(getattr(layer, name), ref_norm, p + name + ".", 10 * i + j))
        refs.append(ref)
    batch, seq_t, seq_m = 2, 4, 6
    causal = nn.generate_autoregressive_mask(batch, seq_t)
    mem_pad = np.zeros((batch, seq_m), dtype=bool)
    mem_pad[1, -3:] = True
    target, memory = seeded([batch, seq_t, D], 3), seeded([batch, seq_m, D], 4)

    def ours(m, target, memory):
        inp = (nn.TransformerDecoderInput.new(target, memory).target_mask_attn(causal)
               .memory_mask_pad(Tensor[B, 2, Bool].from_data(mem_pad)))
        return m.forward(inp)

    def theirs(target, memory):
        causal_t = torch.tensor(np.triu(np.ones((seq_t, seq_t), dtype=bool), 1))
        for ref in refs:
            target = ref(target, memory, tgt_mask=causal_t, memory_key_padding_mask=torch.tensor(mem_pad))
        return target

    assert_match(run_burn(dec, ours, target, memory), run_torch(theirs, target, memory), params)


def test_encoder_record_paths_and_repr() -> None:
    enc = nn.TransformerEncoderConfig(D, FF, H, 2).init()
    paths = [p for p, _ in enc.named_params()]
    assert "layers.1.mha.query.weight" in paths and "layers.0.pwff.linear_outer.bias" in paths
    assert "layers.0.norm_2.gamma" in paths
    assert repr(enc).startswith("TransformerEncoder {\n  layers: [TransformerEncoderLayer {")


def test_positional_encoding_values_and_shapes() -> None:
    pe = nn.PositionalEncodingConfig(6, max_sequence_size=10).init()
    x = Tensor[B, 3].zeros([2, 4, 6])
    out = pe.forward(x).to_numpy()
    assert out.shape == (2, 4, 6)
    pos, k = 3, 2  # column pair 2 -> columns 4 (sin) and 5 (cos)
    angle = pos * math.exp(-(2 * k) * math.log(10_000) / 6)
    np.testing.assert_allclose(out[1, pos, 4], math.sin(angle), rtol=1e-5)
    np.testing.assert_allclose(out[1, pos, 5], math.cos(angle), rtol=1e-5)
    np.testing.assert_allclose(out[0, 0], [0, 1, 0, 1, 0, 1], atol=1e-7)
    assert pe.num_params() == 0 and dict(pe.named_params()) == {}
    # Gradients flow straight through; the table is a constant.
    xr = Tensor[B, 3].from_data(seeded([1, 3, 6], 1)).require_grad()
    grads = pe.forward(xr).sum().backward()
    np.testing.assert_allclose(xr.grad(grads).to_numpy(), 1.0)
    # After valid() the table follows the model onto the plain backend.
    assert pe.valid().forward(Tensor[NdArray, 3].zeros([1, 2, 6])).dims() == [1, 2, 6]
    with pytest.raises(ValueError, match="exceeds"):
        pe.forward(Tensor[B, 3].zeros([1, 11, 6]))
    with pytest.raises(ValueError, match="even"):
        nn.PositionalEncodingConfig(5)
