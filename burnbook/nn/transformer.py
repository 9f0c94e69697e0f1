"""Transformer blocks: `PositionWiseFeedForward`, `TransformerEncoder`,
`TransformerDecoder`, with Burn's input structs and their masks.

Layer-norm names follow Burn, which differ from PyTorch's in pre-norm mode:

| layer | post-norm (`norm_first=False`) | pre-norm (`norm_first=True`) |
| --- | --- | --- |
| encoder | norm_1 after attention, norm_2 after the FFN | norm_2 before attention, norm_1 before the FFN |
| decoder | norm_1 / norm_2 / norm_3 after self-attn / cross-attn / FFN | norm_3 / norm_1 / norm_2 before them |

PyTorch numbers its norms in the order they run, so its pre-norm `norm1` is
Burn's `norm_2` (encoder) or `norm_3` (decoder).
"""

from __future__ import annotations

import math
from typing import Any

from burnbook.config import config
from burnbook.module import Module
from burnbook.tensor import Tensor
from .activation import Gelu
from .attention import MhaInput, MultiHeadAttention, MultiHeadAttentionConfig
from .cache import TransformerEncoderAutoregressiveCache, TransformerEncoderLayerAutoregressiveCache
from .common import check_config, resolve_backend, show
from .dropout import Dropout, DropoutConfig
from .initializer import Initializer, KaimingUniform
from .linear import Linear, LinearConfig
from .norm import LayerNorm, LayerNormConfig

__all__ = [
    "PositionWiseFeedForward", "PositionWiseFeedForwardConfig",
    "TransformerEncoder", "TransformerEncoderConfig", "TransformerEncoderLayer", "TransformerEncoderInput",
    "TransformerDecoder", "TransformerDecoderConfig", "TransformerDecoderLayer", "TransformerDecoderInput",
]

_DEFAULT_INIT = KaimingUniform(gain=1.0 / math.sqrt(3.0), fan_out_only=False)


@config
class PositionWiseFeedForwardConfig:
    """Settings of a `PositionWiseFeedForward`: d_model -> d_ff -> d_model."""

    d_model: int
    d_ff: int
    dropout: float = 0.1
    initializer: Initializer = _DEFAULT_INIT

    def __post_init__(self) -> None:
        check_config(self, sizes=("d_model", "d_ff"), probabilities=("dropout",))

    def init(self, device: Any = None, backend: type | None = None) -> "PositionWiseFeedForward":
        self.__post_init__()
        B = resolve_backend(device, backend)
        return PositionWiseFeedForward(
            linear_inner=LinearConfig(self.d_model, self.d_ff, initializer=self.initializer).init(device, B),
            linear_outer=LinearConfig(self.d_ff, self.d_model, initializer=self.initializer).init(device, B),
            dropout=DropoutConfig(self.dropout).init(),
            gelu=Gelu(),
        )

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "PositionWiseFeedForward":
        return self.init(device, backend).load_record(record)


class PositionWiseFeedForward(Module):
    """linear_outer(dropout(gelu(linear_inner(x)))), applied at every position."""

    linear_inner: Linear
    linear_outer: Linear
    dropout: Dropout
    gelu: Gelu

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[..., d_model]` -> `[..., d_model]`."""
        x = self.linear_inner.forward(input)
        x = self.gelu.forward(x)
        x = self.dropout.forward(x)
        return self.linear_outer.forward(x)


def _mha(cfg: Any, device: Any, backend: type) -> MultiHeadAttention:
    return MultiHeadAttentionConfig(cfg.d_model, cfg.n_heads, dropout=cfg.dropout,
                                    quiet_softmax=cfg.quiet_softmax,
                                    initializer=cfg.initializer).init(device, backend)


def _pwff(cfg: Any, device: Any, backend: type) -> PositionWiseFeedForward:
    return PositionWiseFeedForwardConfig(cfg.d_model, cfg.d_ff, dropout=cfg.dropout,
                                         initializer=cfg.initializer).init(device, backend)


def _attend(mha: MultiHeadAttention, query: Tensor, memory: Tensor | None,
            mask_pad: Tensor | None, mask_attn: Tensor | None) -> Tensor:
    """Self-attention (no memory) or cross-attention on `memory`; the context."""
    kv = query if memory is None else memory
    return mha.forward(MhaInput(query, kv, kv, mask_pad, mask_attn)).context


# -- encoder ------------------------------------------------------------------------


@config
class TransformerEncoderConfig:
    """Settings of a `TransformerEncoder` of `n_layers` identical layers."""

    d_model: int
    d_ff: int
    n_heads: int
    n_layers: int
    dropout: float = 0.1
    norm_first: bool = False
    quiet_softmax: bool = False
    initializer: Initializer = _DEFAULT_INIT

    def __post_init__(self) -> None:
        check_config(self, sizes=("d_model", "d_ff", "n_heads", "n_layers"), probabilities=("dropout",))

    def init(self, device: Any = None, backend: type | None = None) -> "TransformerEncoder":
        self.__post_init__()
        B = resolve_backend(device, backend)
        layers = [TransformerEncoderLayer(
            mha=_mha(self, device, B), pwff=_pwff(self, device, B),
            norm_1=LayerNormConfig(self.d_model).init(device, B),
            norm_2=LayerNormConfig(self.d_model).init(device, B),
            dropout=DropoutConfig(self.dropout).init(), norm_first=self.norm_first,
        ) for _ in range(self.n_layers)]
        return TransformerEncoder(layers=layers)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "TransformerEncoder":
        return self.init(device, backend).load_record(record)


class TransformerEncoderInput:
    """`tensor` `[batch, seq, d_model]` and optional masks (Burn's builder:
    `TransformerEncoderInput.new(x).mask_pad(pad).mask_attn(causal)`)."""

    __slots__ = ("tensor", "padding", "attention")

    def __init__(self, tensor: Tensor, padding: Tensor | None = None, attention: Tensor | None = None) -> None:
        self.tensor, self.padding, self.attention = tensor, padding, attention

    @classmethod
    def new(cls, tensor: Tensor) -> "TransformerEncoderInput":
        return cls(tensor)

    def mask_pad(self, mask_pad: Tensor) -> "TransformerEncoderInput":
        """Bool `[batch, seq]`, True at padded positions."""
        return TransformerEncoderInput(self.tensor, mask_pad, self.attention)

    def mask_attn(self, mask_attn: Tensor) -> "TransformerEncoderInput":
        """Bool `[batch, seq, seq]`, True where a position may not attend."""
        return TransformerEncoderInput(self.tensor, self.padding, mask_attn)


class TransformerEncoderLayer(Module):
    """Self-attention then feed-forward, each in a residual branch with dropout."""

    mha: MultiHeadAttention
    pwff: PositionWiseFeedForward
    norm_1: LayerNorm
    norm_2: LayerNorm
    dropout: Dropout
    norm_first: bool = False

    def forward(self, x: Tensor, mask_pad: Tensor | None = None, mask_attn: Tensor | None = None) -> Tensor:
        """`[batch, seq, d_model]` -> the same shape."""
        return self._forward(x, mask_pad, mask_attn)[0]

    def forward_with_weights(self, x: Tensor, mask_pad: Tensor | None = None,
                             mask_attn: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """`forward`'s output `[batch, seq, d_model]` and the self-attention
        weights `[batch, n_heads, seq, seq]` it used (after the attention's
        dropout, which only an autodiff backend applies)."""
        x, att = self._forward(x, mask_pad, mask_attn)
        return x, att.weights

    def _forward(self, x: Tensor, mask_pad: Tensor | None, mask_attn: Tensor | None) -> tuple:
        """The output and the attention's `MhaOutput` (whose weights, when the
        attention ran as one op, are made only if read)."""
        if self.norm_first:
            h = self.norm_2.forward(x)
            att = self.mha.forward(MhaInput(h, h, h, mask_pad, mask_attn))
            x = x + self.dropout.forward(att.context)
            return x + self.dropout.forward(self.pwff.forward(self.norm_1.forward(x))), att
        att = self.mha.forward(MhaInput(x, x, x, mask_pad, mask_attn))
        x = self.norm_1.forward(x + self.dropout.forward(att.context))
        return self.norm_2.forward(x + self.dropout.forward(self.pwff.forward(x))), att

    def forward_autoregressive_inference(self, x: Tensor, mask_pad: Tensor | None, mask_attn: Tensor | None,
                                         cache: TransformerEncoderLayerAutoregressiveCache) -> Tensor:
        """`forward` on the sequence so far `[batch, seq, d_model]` with a
        causal mask implied, computing only the positions `cache` has not
        seen: each norm, the feed-forward and the attention keep their rows
        (Burn's layer method of the same name; see `burnbook.nn.cache`)."""
        drop = self.dropout.forward

        def attend(h: Tensor) -> Tensor:
            return self.mha.forward_cache(MhaInput(h, h, h, mask_pad, mask_attn), cache.mha).context

        if self.norm_first:
            x = x + drop(attend(cache.norm_2.forward_autoregressive(x, 1, self.norm_2.forward)))
            h = cache.norm_1.forward_autoregressive(x, 1, self.norm_1.forward)
            return x + drop(cache.pwff.forward_autoregressive(h, 1, self.pwff.forward))
        x = cache.norm_1.forward_autoregressive(x + drop(attend(x)), 1, self.norm_1.forward)
        x = x + drop(cache.pwff.forward_autoregressive(x, 1, self.pwff.forward))
        return cache.norm_2.forward_autoregressive(x, 1, self.norm_2.forward)

    def extra_repr(self) -> dict:
        return {"norm_first": show(self.norm_first)}


class TransformerEncoder(Module):
    """A stack of `TransformerEncoderLayer`s (torch.nn.TransformerEncoder
    with activation="gelu", batch_first=True)."""

    layers: list

    def forward(self, input: TransformerEncoderInput) -> Tensor:  # noqa: A002
        """`input.tensor` `[batch, seq, d_model]` -> `[batch, seq, d_model]`."""
        x = input.tensor
        for layer in self.layers:
            x = layer.forward(x, input.padding, input.attention)
        return x

    def forward_with_weights(self, input: TransformerEncoderInput) -> tuple[Tensor, list[Tensor]]:  # noqa: A002
        """`forward`'s output `[batch, seq, d_model]` and each layer's
        self-attention weights `[batch, n_heads, seq, seq]`, first layer
        first (what `burnbook.widgets.AttentionView` shows)."""
        x, weights = input.tensor, []
        for layer in self.layers:
            x, w = layer.forward_with_weights(x, input.padding, input.attention)
            weights.append(w)
        return x, weights

    def forward_autoregressive_inference(self, input: TransformerEncoderInput,  # noqa: A002
                                         cache: TransformerEncoderAutoregressiveCache) -> Tensor:
        """`input.tensor` `[batch, seq, d_model]`, the sequence so far (one or
        more positions longer than at the last call with `cache`) ->
        `[batch, seq, d_model]`, equal to `forward` with a causal mask at every
        position, computing only the new ones (Burn's method of the same name).

            cache = encoder.new_autoregressive_cache()
            for n in range(1, steps + 1):
                out = encoder.forward_autoregressive_inference(TransformerEncoderInput.new(x[:, :n]), cache)
        """
        if len(cache.layers) != len(self.layers):
            raise ValueError(f"TransformerEncoder: the cache has {len(cache.layers)} layers, the encoder "
                             f"{len(self.layers)}; build it with new_autoregressive_cache()")
        x = input.tensor
        for layer, layer_cache in zip(self.layers, cache.layers):
            x = layer.forward_autoregressive_inference(x, input.padding, input.attention, layer_cache)
        return x

    def new_autoregressive_cache(self) -> TransformerEncoderAutoregressiveCache:
        """An empty cache for `forward_autoregressive_inference`, one per sequence."""
        return TransformerEncoderAutoregressiveCache.empty(len(self.layers))

    def extra_repr(self) -> dict:
        first = self.layers[0] if self.layers else None
        return {"n_layers": len(self.layers),
                "norm_first": show(first.norm_first) if first is not None else "-"}


# -- decoder ------------------------------------------------------------------------


@config
class TransformerDecoderConfig:
    """Settings of a `TransformerDecoder` of `n_layers` identical layers."""

    d_model: int
    d_ff: int
    n_heads: int
    n_layers: int
    dropout: float = 0.1
    norm_first: bool = False
    quiet_softmax: bool = False
    initializer: Initializer = _DEFAULT_INIT

    def __post_init__(self) -> None:
        check_config(self, sizes=("d_model", "d_ff", "n_heads", "n_layers"), probabilities=("dropout",))

    def init(self, device: Any = None, backend: type | None = None) -> "TransformerDecoder":
        self.__post_init__()
        B = resolve_backend(device, backend)
        layers = [TransformerDecoderLayer(
            cross_attn=_mha(self, device, B), self_attn=_mha(self, device, B),
            pwff=_pwff(self, device, B),
            norm_1=LayerNormConfig(self.d_model).init(device, B),
            norm_2=LayerNormConfig(self.d_model).init(device, B),
            norm_3=LayerNormConfig(self.d_model).init(device, B),
            dropout=DropoutConfig(self.dropout).init(), norm_first=self.norm_first,
        ) for _ in range(self.n_layers)]
        return TransformerDecoder(layers=layers)

    def init_with(self, record: Any, device: Any = None, backend: type | None = None) -> "TransformerDecoder":
        return self.init(device, backend).load_record(record)


class TransformerDecoderInput:
    """`target` `[batch, seq_t, d_model]`, `memory` `[batch, seq_m, d_model]`
    and optional masks for each (Burn's builder: `.target_mask_pad(m)`,
    `.target_mask_attn(m)`, `.memory_mask_pad(m)`, `.memory_mask_attn(m)`)."""

    __slots__ = ("target", "memory", "target_padding", "target_attention",
                 "memory_padding", "memory_attention")

    def __init__(self, target: Tensor, memory: Tensor, target_padding: Tensor | None = None,
                 target_attention: Tensor | None = None, memory_padding: Tensor | None = None,
                 memory_attention: Tensor | None = None) -> None:
        self.target, self.memory = target, memory
        self.target_padding, self.target_attention = target_padding, target_attention
        self.memory_padding, self.memory_attention = memory_padding, memory_attention

    @classmethod
    def new(cls, target: Tensor, memory: Tensor) -> "TransformerDecoderInput":
        return cls(target, memory)

    def _with(self, **changes: Any) -> "TransformerDecoderInput":
        values = {name: getattr(self, name) for name in self.__slots__}
        values.update(changes)
        return TransformerDecoderInput(**values)

    def target_mask_pad(self, mask: Tensor) -> "TransformerDecoderInput":
        """Bool `[batch, seq_t]`, True at padded target positions."""
        return self._with(target_padding=mask)

    def target_mask_attn(self, mask: Tensor) -> "TransformerDecoderInput":
        """Bool `[batch, seq_t, seq_t]`, e.g. `generate_autoregressive_mask`."""
        return self._with(target_attention=mask)

    def memory_mask_pad(self, mask: Tensor) -> "TransformerDecoderInput":
        """Bool `[batch, seq_m]`, True at padded memory positions."""
        return self._with(memory_padding=mask)

    def memory_mask_attn(self, mask: Tensor) -> "TransformerDecoderInput":
        """Bool `[batch, seq_t, seq_m]`."""
        return self._with(memory_attention=mask)


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention on the memory, then feed-forward,
    each in a residual branch with dropout."""

    cross_attn: MultiHeadAttention
    self_attn: MultiHeadAttention
    pwff: PositionWiseFeedForward
    norm_1: LayerNorm
    norm_2: LayerNorm
    norm_3: LayerNorm
    dropout: Dropout
    norm_first: bool = False

    def forward(self, input: TransformerDecoderInput) -> TransformerDecoderInput:  # noqa: A002
        """The input with `target` replaced by this layer's output `[batch, seq_t, d_model]`."""
        x, mem = input.target, input.memory
        drop = self.dropout.forward
        if self.norm_first:
            x = x + drop(_attend(self.self_attn, self.norm_3.forward(x), None,
                                 input.target_padding, input.target_attention))
            x = x + drop(_attend(self.cross_attn, self.norm_1.forward(x), mem,
                                 input.memory_padding, input.memory_attention))
            x = x + drop(self.pwff.forward(self.norm_2.forward(x)))
        else:
            x = self.norm_1.forward(x + drop(_attend(self.self_attn, x, None,
                                                     input.target_padding, input.target_attention)))
            x = self.norm_2.forward(x + drop(_attend(self.cross_attn, x, mem,
                                                     input.memory_padding, input.memory_attention)))
            x = self.norm_3.forward(x + drop(self.pwff.forward(x)))
        return input._with(target=x)

    def extra_repr(self) -> dict:
        return {"norm_first": show(self.norm_first)}


class TransformerDecoder(Module):
    """A stack of `TransformerDecoderLayer`s (torch.nn.TransformerDecoder
    with activation="gelu", batch_first=True)."""

    layers: list

    def forward(self, input: TransformerDecoderInput) -> Tensor:  # noqa: A002
        """target `[batch, seq_t, d_model]` attending to memory -> `[batch, seq_t, d_model]`."""
        for layer in self.layers:
            input = layer.forward(input)
        return input.target

    def extra_repr(self) -> dict:
        first = self.layers[0] if self.layers else None
        return {"n_layers": len(self.layers),
                "norm_first": show(first.norm_first) if first is not None else "-"}
