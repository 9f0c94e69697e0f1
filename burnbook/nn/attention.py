"""`MultiHeadAttention` with Burn's `MhaInput`/`MhaOutput`, and the mask
helpers `generate_autoregressive_mask` and `generate_padding_mask`.

Masks are Bool tensors where True means "do not attend": `mask_pad`
`[batch, seq_k]` (PyTorch's `key_padding_mask`) and `mask_attn`
`[batch, seq_q, seq_k]` (PyTorch's `attn_mask`, repeated for every head).
Masked scores are set to `min_float` (-1e4), as Burn does, rather than -inf,
so a fully masked row gives uniform weights instead of NaN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from burnbook.config import ConfigError, config
from burnbook.module import Module
from burnbook.tensor import Bool, Int, Tensor, activation
from burnbook.tensor import module as F
from burnbook.tensor.core import TensorBase
from .common import check_config, on_backend_of, resolve_backend, show
from .cache import MhaCache
from .dropout import Dropout, DropoutConfig
from .initializer import Initializer, KaimingUniform
from .linear import Linear, LinearConfig
from .rotary import RotaryEncoding

__all__ = [
    "MultiHeadAttention", "MultiHeadAttentionConfig", "MhaInput", "MhaOutput", "MhaCache",
    "generate_autoregressive_mask", "generate_padding_mask", "GeneratePaddingMask",
]


class MhaInput:
    """The query, key and value `[batch, seq, d_model]` of one attention
    call, with optional masks (Burn's `MhaInput`). The builder methods
    `mask_pad(m)` and `mask_attn(m)` return a new input, as in Burn:
    `MhaInput.self_attn(x).mask_pad(pad)`."""

    __slots__ = ("query", "key", "value", "padding", "attention")

    def __init__(self, query: Tensor, key: Tensor, value: Tensor,
                 padding: Tensor | None = None, attention: Tensor | None = None) -> None:
        self.query, self.key, self.value = query, key, value
        self.padding, self.attention = padding, attention  # the two masks, or None

    @classmethod
    def self_attn(cls, tensor: Tensor) -> "MhaInput":
        """Self-attention: `tensor` is query, key and value."""
        return cls(tensor, tensor, tensor)

    @classmethod
    def new(cls, query: Tensor, key: Tensor, value: Tensor) -> "MhaInput":
        return cls(query, key, value)

    def mask_pad(self, mask_pad: Tensor) -> "MhaInput":
        """Bool `[batch, seq_k]`: True at padded key positions."""
        return MhaInput(self.query, self.key, self.value, mask_pad, self.attention)

    def mask_attn(self, mask_attn: Tensor) -> "MhaInput":
        """Bool `[batch, seq_q, seq_k]`: True where a query may not look."""
        return MhaInput(self.query, self.key, self.value, self.padding, mask_attn)


class MhaOutput:
    """`weights` `[batch, n_heads, seq_q, seq_k]` and `context` `[batch, seq_q, d_model]`.

    `weights` may come as a function that makes them: when the attention ran
    as one backend op (`F.attention`, no weights made), they are computed
    from the same queries and keys when first read, and kept."""

    __slots__ = ("_weights", "_make", "context")

    def __init__(self, weights: Any, context: Tensor) -> None:
        lazy = callable(weights) and not isinstance(weights, TensorBase)
        self._weights, self._make = (None, weights) if lazy else (weights, None)
        self.context = context

    @property
    def weights(self) -> Tensor:
        if self._make is not None:
            self._weights, self._make = self._make(), None
        return self._weights

    def __repr__(self) -> str:
        return f"MhaOutput(weights={self.weights!r}, context={self.context!r})"


@config
class MultiHeadAttentionConfig:
    """Settings of a `MultiHeadAttention`; `d_model` must be a multiple of `n_heads`."""

    d_model: int
    n_heads: int
    dropout: float = 0.1
    min_float: float = -1.0e4
    quiet_softmax: bool = False
    initializer: Initializer = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)

    def __post_init__(self) -> None:
        check_config(self, sizes=("d_model", "n_heads"), probabilities=("dropout",))
        if self.d_model % self.n_heads:
            raise ConfigError(f"MultiHeadAttentionConfig: d_model ({self.d_model}) must be a multiple "
                              f"of n_heads ({self.n_heads})")

    def init(self, device: Any = None, backend: type | None = None) -> "MultiHeadAttention":
        self.__post_init__()
        B = resolve_backend(device, backend)

        def linear() -> Linear:
            return LinearConfig(self.d_model, self.d_model, initializer=self.initializer).init(device, B)

        return MultiHeadAttention(
            query=linear(), key=linear(), value=linear(), output=linear(),
            dropout=DropoutConfig(self.dropout).init(),
            n_heads=self.n_heads, d_k=self.d_model // self.n_heads,
            min_float=self.min_float, quiet_softmax=self.quiet_softmax,
        )

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "MultiHeadAttention":
        return self.init(device, backend).load_record(record)


class MultiHeadAttention(Module):
    """Scaled dot-product attention over `n_heads` heads ("Attention Is All
    You Need"); torch.nn.MultiheadAttention(batch_first=True) with its
    `in_proj_weight` split into `query`, `key`, `value` (transposed).

    Dropout acts on the attention weights after the softmax, as in the paper
    and PyTorch. (Burn applies it to the scores before the softmax; only
    training-time randomness differs.)
    """

    query: Linear
    key: Linear
    value: Linear
    output: Linear
    dropout: Dropout
    n_heads: int
    d_k: int
    min_float: float = -1.0e4
    quiet_softmax: bool = False

    def forward(self, input: MhaInput, rotary: RotaryEncoding | None = None) -> MhaOutput:  # noqa: A002
        """query `[batch, seq_q, d_model]`, key/value `[batch, seq_k, d_model]`
        -> `MhaOutput(weights [batch, n_heads, seq_q, seq_k], context [batch, seq_q, d_model])`.

        `rotary` (a burnbook addition; Burn's layer has none): a
        `RotaryEncoding` of `d_model = d_k` that rotates every head's
        queries and keys by position before the scores, as Llama does."""
        q = self._heads(input.query, self.query)
        k = self._heads(input.key, self.key)
        v = self._heads(input.value, self.value)
        if rotary is not None:
            q, k = rotary.forward(q), rotary.forward(k)
        weights, context = self._attend(q, k, v, input.padding, input.attention)
        return MhaOutput(weights=weights, context=self.output.forward(context))

    def forward_cache(self, input: MhaInput, cache: MhaCache,  # noqa: A002
                      rotary: RotaryEncoding | None = None) -> MhaOutput:
        """Burn's `forward_cache`: `input` holds the sequence so far, one or
        more tokens longer than at the last call with this `cache`; only the
        new positions are projected and attend, to every key held.

        query `[batch, seq, d_model]` -> `MhaOutput(weights [batch, n_heads,
        new, seq_k], context [batch, seq, d_model])`: the context's rows are
        the cached ones followed by the new ones, equal to `forward` with a
        causal mask (`generate_autoregressive_mask`); the weights are the new
        rows' only. In self-attention (`MhaCache.autoregressive()`) new
        positions are causally masked among themselves; a given `mask_attn`
        is `[batch, seq, seq_k]` for the whole sequence and `mask_pad`
        `[batch, seq_k]`. `rotary` rotates the new queries and keys at
        their positions (`apply(x, start)`)."""
        held = cache.held()
        batch, seq, _ = input.query.dims()
        new = seq - held
        if new < 1:
            raise ValueError(f"MultiHeadAttention.forward_cache: the cache holds {held} positions and the "
                             f"query has {seq}: feed the whole sequence so far, at least one token longer")
        q = self._heads(input.query.narrow(1, held, new), self.query)

        def keys(t: Tensor, start: int) -> Tensor:
            k = self._heads(t, self.key)
            return k if rotary is None else rotary.apply(k, start)

        if cache.cross_attention:
            k = cache.key.forward_full(input.key, lambda t: keys(t, 0))
            v = cache.value.forward_full(input.value, lambda t: self._heads(t, self.value))
        else:
            start = cache.key.held(2)
            k = cache.key.forward_autoregressive(input.key, 2, lambda t: keys(t, start))
            v = cache.value.forward_autoregressive(input.value, 2, lambda t: self._heads(t, self.value))
        if rotary is not None:
            q = rotary.apply(q, held)
        mask_attn = input.attention
        if mask_attn is not None:
            mask_attn = mask_attn.narrow(1, held, new)
        if new > 1 and not cache.cross_attention:
            mask_attn = _causal_rows(held, new, k.dims()[2], batch, q, mask_attn)
        weights, context = self._attend(q, k, v, input.padding, mask_attn)
        return MhaOutput(weights=weights, context=cache.output.append(self.output.forward(context), 1))

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, mask_pad: Tensor | None,
                mask_attn: Tensor | None) -> tuple[Tensor, Tensor]:
        """The attention itself, shared by `forward` and `forward_cache`:
        q `[batch, n_heads, seq_q, d_k]`, k/v `[batch, n_heads, seq_k, d_k]`
        -> weights `[batch, n_heads, seq_q, seq_k]` (after dropout) and the
        heads' context joined, `[batch, seq_q, d_model]` (before `output`)."""
        batch, _, seq_q, _ = q.dims()
        if not self.quiet_softmax and (self.dropout.prob == 0.0 or not q._B.is_autodiff):
            # No dropout acts: the whole attention is one backend op with its own
            # backward (issue 34), and the weights are made only if read.
            out = F.attention(q, k, v, self._mask(mask_pad, mask_attn, q), 1.0 / math.sqrt(self.d_k),
                              self.min_float)
            context = out.swap_dims(1, 2).reshape([batch, seq_q, self.n_heads * self.d_k])
            return (lambda: self._weights(q.matmul(k.transpose()).div_scalar(math.sqrt(self.d_k)),
                                          mask_pad, mask_attn)), context
        scores = q.matmul(k.transpose()).div_scalar(math.sqrt(self.d_k))
        weights = self._weights(scores, mask_pad, mask_attn)
        weights = self.dropout.forward(weights)
        context = weights.matmul(v).swap_dims(1, 2).reshape([batch, seq_q, self.n_heads * self.d_k])
        return weights, context

    def _mask(self, mask_pad: Tensor | None, mask_attn: Tensor | None, q: Tensor) -> Tensor | None:
        """Both masks as one Bool `[batch, 1, seq_q, seq_k]` on q's backend (None if neither)."""
        mask = None
        if mask_attn is not None:
            batch, seq_q, seq_k = mask_attn.dims()
            mask = on_backend_of(mask_attn, q).reshape([batch, 1, seq_q, seq_k])
        if mask_pad is not None:
            batch, seq_k = mask_pad.dims()
            pad = on_backend_of(mask_pad, q).reshape([batch, 1, 1, seq_k]).expand([batch, 1, q.dims()[2], seq_k])
            mask = pad if mask is None else mask.bool_or(pad)
        return mask

    def _heads(self, x: Tensor, linear: Linear) -> Tensor:
        """`[batch, seq, d_model]` -> `[batch, n_heads, seq, d_k]`."""
        batch, seq, _ = x.dims()
        return linear.forward(x).reshape([batch, seq, self.n_heads, self.d_k]).swap_dims(1, 2)

    def _weights(self, scores: Tensor, mask_pad: Tensor | None, mask_attn: Tensor | None) -> Tensor:
        if mask_pad is not None:
            mask_pad = on_backend_of(mask_pad, scores)
            batch, seq_k = mask_pad.dims()
            scores = scores.mask_fill(mask_pad.reshape([batch, 1, 1, seq_k]), self.min_float)
        if mask_attn is not None:
            mask_attn = on_backend_of(mask_attn, scores)
            batch, seq_q, seq_k = mask_attn.dims()
            scores = scores.mask_fill(mask_attn.reshape([batch, 1, seq_q, seq_k]), self.min_float)
        if self.quiet_softmax:
            return activation.quiet_softmax(scores, 3)
        return activation.softmax(scores, 3)

    def extra_repr(self) -> dict:
        return {"d_model": self.n_heads * self.d_k, "n_heads": self.n_heads, "d_k": self.d_k,
                "min_float": self.min_float, "quiet_softmax": show(self.quiet_softmax)}


def _causal_rows(held: int, new: int, seq_k: int, batch: int, like: Tensor,
                 mask_attn: Tensor | None) -> Tensor:
    """Bool `[batch, new, seq_k]`: query row r (position held + r) may not see
    keys past itself; or-ed with `mask_attn` when one is given."""
    rows = np.arange(held, held + new)[:, None] < np.arange(seq_k)[None, :]
    causal = Tensor[like._B, 3, Bool].from_data(np.broadcast_to(rows, (batch, new, seq_k)).copy(), like.device())
    return causal if mask_attn is None else causal.bool_or(on_backend_of(mask_attn, causal))


def generate_autoregressive_mask(batch_size: int, seq_length: int, device: Any = None,
                                 backend: type | None = None) -> Tensor:
    """Bool `[batch, seq, seq]`, True above the diagonal: position i may not
    attend to any j > i (Burn's `generate_autoregressive_mask::<B>`)."""
    mask = np.triu(np.ones((seq_length, seq_length), dtype=bool), k=1)
    mask = np.broadcast_to(mask, (batch_size, seq_length, seq_length)).copy()
    return Tensor[resolve_backend(device, backend), 3, Bool].from_data(mask, device)


@dataclass
class GeneratePaddingMask:
    """`tensor`: Int `[batch, max_len]` token ids, padded; `mask`: Bool, True at pads."""

    tensor: Tensor
    mask: Tensor


def generate_padding_mask(pad_token: int, tokens_list: Sequence[Sequence[int]],
                          max_seq_length: int | None = None, device: Any = None,
                          backend: type | None = None) -> GeneratePaddingMask:
    """Pad every token list to the longest (cut at `max_seq_length`) with
    `pad_token` and mark the pads (Burn's `generate_padding_mask::<B>`)."""
    longest = max((len(t) for t in tokens_list), default=0)
    size = longest if max_seq_length is None else min(longest, max_seq_length)
    ids = np.full((len(tokens_list), size), pad_token, dtype=np.int64)
    for row, tokens in enumerate(tokens_list):
        cut = list(tokens)[:size]
        ids[row, :len(cut)] = cut
    tensor = Tensor[resolve_backend(device, backend), 2, Int].from_data(ids, device)
    return GeneratePaddingMask(tensor=tensor, mask=tensor.equal_elem(pad_token))
