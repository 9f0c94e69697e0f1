"""MultiHeadAttention against torch.nn.MultiheadAttention(batch_first=True),
and the mask helpers."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Bool, Tensor, nn
from burnbook.backend import NdArray

from .helpers import B, assert_close, assert_match, copy_mha, run_burn, run_torch, seeded

torch = pytest.importorskip("torch")

D, H = 8, 2


def make(seed: int = 0, **cfg):
    B.seed(seed)
    mha = nn.MultiHeadAttentionConfig(D, H, dropout=0.0, **cfg).init()
    ref = torch.nn.MultiheadAttention(D, H, batch_first=True).double()
    return mha, ref, copy_mha(mha, ref)


def pad_mask(batch: int, seq: int) -> np.ndarray:
    mask = np.zeros((batch, seq), dtype=bool)
    mask[0, -2:] = True  # the last two keys of the first sequence are padding
    mask[1, -1] = True
    return mask


@pytest.mark.parametrize("masks", ["none", "pad", "attn", "both"])
def test_self_attention_matches_torch(masks: str) -> None:
    mha, ref, params = make()
    batch, seq = 2, 5
    pad = pad_mask(batch, seq) if masks in ("pad", "both") else None
    causal = np.triu(np.ones((seq, seq), dtype=bool), 1)
    attn = np.broadcast_to(causal, (batch, seq, seq)).copy() if masks in ("attn", "both") else None
    x = seeded([batch, seq, D], 1)

    def ours(m, x):
        inp = nn.MhaInput.self_attn(x)
        if pad is not None:
            inp = inp.mask_pad(Tensor[B, 2, Bool].from_data(pad))
        if attn is not None:
            inp = inp.mask_attn(Tensor[B, 3, Bool].from_data(attn))
        out = m.forward(inp)
        ours.weights = out.weights.to_numpy()
        return out.context

    def theirs(x):
        kw = {}
        if pad is not None:
            kw["key_padding_mask"] = torch.tensor(pad)
        if attn is not None:
            kw["attn_mask"] = torch.tensor(attn).repeat_interleave(H, dim=0)  # [batch * heads, L, S]
        out, w = ref(x, x, x, need_weights=True, average_attn_weights=False, **kw)
        theirs.weights = w.detach().numpy()
        return out

    assert_match(run_burn(mha, ours, x), run_torch(theirs, x), params)
    assert ours.weights.shape == (batch, H, seq, seq)
    assert_close(ours.weights, theirs.weights, "attention weights")


def test_cross_attention_matches_torch() -> None:
    mha, ref, params = make(seed=1)
    q, k, v = seeded([2, 3, D], 2), seeded([2, 6, D], 3), seeded([2, 6, D], 4)
    pad = pad_mask(2, 6)
    ours = run_burn(mha, lambda m, q, k, v: m.forward(
        nn.MhaInput(q, k, v).mask_pad(Tensor[B, 2, Bool].from_data(pad))).context, q, k, v)
    theirs = run_torch(lambda q, k, v: ref(q, k, v, key_padding_mask=torch.tensor(pad))[0], q, k, v)
    assert_match(ours, theirs, params)


def test_quiet_softmax_weights_sum_below_one() -> None:
    mha, _, _ = make(quiet_softmax=True)
    out = mha.forward(nn.MhaInput.self_attn(Tensor[B, 3].from_data(seeded([1, 4, D], 5))))
    sums = out.weights.sum_dim(3).to_numpy()
    assert (sums < 1.0).all() and (sums > 0.0).all()
    assert out.context.dims() == [1, 4, D]


def test_masks_work_after_valid_and_dropout_is_off_there() -> None:
    B.seed(4)
    mha = nn.MultiHeadAttentionConfig(D, H, dropout=0.5).init()
    model = mha.valid()
    mask = nn.generate_autoregressive_mask(2, 4)  # built on the autodiff backend
    x = Tensor[NdArray, 3].from_data(seeded([2, 4, D], 6))
    a = model.forward(nn.MhaInput.self_attn(x).mask_attn(mask))
    b = model.forward(nn.MhaInput.self_attn(x).mask_attn(mask))
    np.testing.assert_array_equal(a.context.to_numpy(), b.context.to_numpy())
    np.testing.assert_allclose(np.triu(a.weights.to_numpy()[0, 0], 1), 0.0)


def test_mask_helpers() -> None:
    mask = nn.generate_autoregressive_mask(3, 4, backend=NdArray)
    assert mask.dims() == [3, 4, 4] and mask.kind is Bool
    np.testing.assert_array_equal(mask.to_numpy()[1], np.triu(np.ones((4, 4), dtype=bool), 1))
    padded = nn.generate_padding_mask(0, [[5, 6, 7], [8], [1, 2, 3, 4, 5]], max_seq_length=4, backend=NdArray)
    np.testing.assert_array_equal(padded.tensor.to_numpy(), [[5, 6, 7, 0], [8, 0, 0, 0], [1, 2, 3, 4]])
    np.testing.assert_array_equal(padded.mask.to_numpy(), padded.tensor.to_numpy() == 0)


def test_config_checks_heads() -> None:
    with pytest.raises(ValueError, match="multiple of n_heads"):
        nn.MultiHeadAttentionConfig(10, 3)
    assert "n_heads: 2" in repr(nn.MultiHeadAttentionConfig(D, H).init())
