"""The autoregressive cache (`MultiHeadAttention.forward_cache`,
`TransformerEncoder.forward_autoregressive_inference`): fed the sequence one
token longer each call, every position's output equals the full forward
with a causal mask, ours and PyTorch's (copied weights); with RoPE inside
the attention as well; and a decoder-only model generates the same greedy
tokens with the cache as without."""

from __future__ import annotations

import numpy as np
import pytest

from burnbook import Tensor, nn
from burnbook.tensor import Int
from .helpers import DEEP, Tol, close, copy_mha, seeded, torch
from .test_layers import _copy_layer_norm, _copy_pwff
from .test_llama_blocks import _rope_reference

D, H, SEQ = 8, 2, 6
F = torch.nn.functional


def _steps(total: int, prompt: int) -> list[int]:
    """Sequence lengths fed: a prompt first, then one token more per call."""
    return list(range(prompt, total + 1))


def _causal(batch: int, seq: int, B) -> Tensor:
    return nn.generate_autoregressive_mask(batch, seq, backend=B)


@pytest.mark.parametrize("prompt", [1, 3], ids=["token_by_token", "prompt_first"])
def test_mha_forward_cache_equals_causal_forward(B, prompt: int) -> None:
    mha = nn.MultiHeadAttentionConfig(D, H, dropout=0.0).init(backend=B)
    x = Tensor[B, 3].from_data(seeded([2, SEQ, D], 40))
    full = mha.forward(nn.MhaInput.self_attn(x).mask_attn(_causal(2, SEQ, B)))
    cache = nn.MhaCache.autoregressive()
    for n in _steps(SEQ, prompt):
        out = mha.forward_cache(nn.MhaInput.self_attn(x[:, 0:n]), cache)
        new = out.weights.dims()[2]
        assert out.context.dims() == [2, n, D] and out.weights.dims() == [2, H, new, n]
        # Every row so far equals the full causal forward's; the weights are
        # the new rows' (zero past each row's own position).
        close(out.context.to_numpy(), full.context[:, 0:n].to_numpy(), DEEP, f"context at length {n}")
        close(out.weights.to_numpy(), full.weights[:, :, n - new:n, 0:n].to_numpy(), DEEP, f"weights at {n}")
    with pytest.raises(ValueError, match="one token longer"):
        mha.forward_cache(nn.MhaInput.self_attn(x), cache)


def test_mha_cross_attention_cache(B) -> None:
    """Keys and values of a fixed memory, computed on the first call; the
    queries grow. Each row equals the full (unmasked) cross-attention's."""
    mha = nn.MultiHeadAttentionConfig(D, H, dropout=0.0).init(backend=B)
    q, mem = (Tensor[B, 3].from_data(seeded([2, s, D], 41 + s)) for s in (SEQ, 5))
    full = mha.forward(nn.MhaInput.new(q, mem, mem)).context.to_numpy()
    cache = nn.MhaCache.autoregressive_cross_attention()
    for n in _steps(SEQ, 1):
        out = mha.forward_cache(nn.MhaInput.new(q[:, 0:n], mem, mem), cache)
    close(out.context.to_numpy(), full, DEEP, "cross-attention context")


def _torch_causal_attention(ref: "torch.nn.MultiheadAttention", x: "torch.Tensor",
                            rope: bool) -> "torch.Tensor":
    """torch's attention written out with its packed weights, so RoPE can
    rotate each head's queries and keys before the scores."""
    batch, seq, d = x.shape
    q, k, v = F.linear(x, ref.in_proj_weight, ref.in_proj_bias).chunk(3, dim=-1)
    q, k, v = (t.reshape(batch, seq, H, d // H).transpose(1, 2) for t in (q, k, v))
    if rope:
        q, k = _rope_reference(q, 0), _rope_reference(k, 0)
    ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return ref.out_proj(ctx.transpose(1, 2).reshape(batch, seq, d))


@pytest.mark.parametrize("rope", [False, True], ids=["plain", "rope"])
def test_mha_with_rotary_against_torch(B, rope: bool) -> None:
    """`forward(input, rotary)` and `forward_cache(input, cache, rotary)`
    against torch's causal attention with RoPE on q and k: output, input
    and parameter gradients for the full forward; each cached row's value."""
    mha = nn.MultiHeadAttentionConfig(D, H, dropout=0.0).init(backend=B)
    rotary = nn.RotaryEncodingConfig(16, D // H).init(backend=B) if rope else None
    ref = torch.nn.MultiheadAttention(D, H, batch_first=True)
    params = copy_mha(mha, ref)
    xs = seeded([2, SEQ, D], 43)
    x = Tensor[B, 3].from_data(xs).require_grad()
    out = mha.forward(nn.MhaInput.self_attn(x).mask_attn(_causal(2, SEQ, B)), rotary).context
    r = seeded([2, SEQ, D], 44)
    grads = out.mul(Tensor[B, 3].from_data(r)).sum().backward()
    xt = torch.tensor(xs, requires_grad=True)
    theirs = _torch_causal_attention(ref, xt, rope)
    (theirs * torch.tensor(r)).sum().backward()
    close(out.to_numpy(), theirs.detach().numpy(), DEEP, "output")
    close(x.grad(grads).to_numpy(), xt.grad.numpy(), DEEP, "gradient of the input")
    for path, p in mha.named_params():
        close(p.val().grad(grads).to_numpy(), params[path](), DEEP, f"gradient of {path}")
    cache = nn.MhaCache.autoregressive()
    plain = x.detach()
    for n in _steps(SEQ, 2):
        cached = mha.forward_cache(nn.MhaInput.self_attn(plain[:, 0:n]), cache, rotary).context
    close(cached.to_numpy(), theirs.detach().numpy(), DEEP, "cached rows")


def _encoder_and_torch(B, norm_first: bool):
    enc = nn.TransformerEncoderConfig(D, 12, H, 2, dropout=0.0, norm_first=norm_first).init(backend=B)
    norms = ("norm_2", "norm_1") if norm_first else ("norm_1", "norm_2")
    refs = []
    for i in range(2):
        ref = torch.nn.TransformerEncoderLayer(D, H, 12, dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=norm_first)
        copy_mha(enc, ref.self_attn, f"layers.{i}.mha.")
        _copy_pwff(enc, ref, f"layers.{i}.")
        for j, name in enumerate(norms):
            _copy_layer_norm(enc, getattr(ref, f"norm{j + 1}"), f"layers.{i}.{name}.", 10 * i + j, B)
        refs.append(ref.eval())
    return enc, refs


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_encoder_autoregressive_inference(B, norm_first: bool) -> None:
    """Token by token (after a 2-token prompt) through a 2-layer encoder:
    each length's output equals ours and torch's full causal forward."""
    enc, refs = _encoder_and_torch(B, norm_first)
    xs = seeded([2, SEQ, D], 45)
    x = Tensor[B, 3].from_data(xs)
    ours_full = enc.forward(nn.TransformerEncoderInput.new(x).mask_attn(_causal(2, SEQ, B))).to_numpy()
    with torch.no_grad():
        theirs = torch.tensor(xs)
        for ref in refs:
            theirs = ref(theirs, src_mask=torch.nn.Transformer.generate_square_subsequent_mask(SEQ),
                         is_causal=True)
    cache = enc.new_autoregressive_cache()
    for n in _steps(SEQ, 2):
        out = enc.forward_autoregressive_inference(nn.TransformerEncoderInput.new(x[:, 0:n]), cache).to_numpy()
        close(out, ours_full[:, 0:n], Tol(1e-5, 1e-5), f"cached vs full at length {n}")
        close(out, theirs[:, 0:n].numpy(), DEEP, f"cached vs torch at length {n}")
    assert cache.held() == SEQ
    with pytest.raises(ValueError, match="layers"):
        enc.forward_autoregressive_inference(nn.TransformerEncoderInput.new(x),
                                             nn.TransformerEncoderAutoregressiveCache.empty(1))


def test_greedy_generation_same_with_and_without_cache(B) -> None:
    """A decoder-only model (embedding, pre-norm causal encoder stack,
    linear head): 8 greedy tokens, recomputing the whole prefix each step
    versus the cache; the tokens agree and so do the last logits."""
    vocab, steps = 11, 8
    emb = nn.EmbeddingConfig(vocab, D).init(backend=B)
    enc = nn.TransformerEncoderConfig(D, 12, H, 2, dropout=0.0, norm_first=True).init(backend=B)
    head = nn.LinearConfig(D, vocab).init(backend=B)

    def logits(tokens: list[list[int]], cache=None) -> np.ndarray:
        x = emb.forward(Tensor[B, 2, Int].from_data(np.array(tokens, np.int64)))
        batch, n = len(tokens), len(tokens[0])
        if cache is None:
            h = enc.forward(nn.TransformerEncoderInput.new(x).mask_attn(_causal(batch, n, B)))
        else:
            h = enc.forward_autoregressive_inference(nn.TransformerEncoderInput.new(x), cache)
        return head.forward(h[:, n - 1:n]).to_numpy()[:, 0]

    def generate(use_cache: bool) -> tuple[list[list[int]], np.ndarray]:
        tokens, cache = [[3, 1], [7, 2]], enc.new_autoregressive_cache() if use_cache else None
        for _ in range(steps):
            last = logits(tokens, cache)
            for row, t in zip(tokens, last.argmax(-1)):
                row.append(int(t))
        return tokens, last

    (plain, plain_logits), (cached, cached_logits) = generate(False), generate(True)
    assert cached == plain and len(plain[0]) == 2 + steps
    assert len(set(plain[0][2:] + plain[1][2:])) > 1, "a constant sequence would test little"
    close(cached_logits, plain_logits, Tol(1e-5, 1e-5), "last step's logits")
