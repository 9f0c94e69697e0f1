"""Caches for autoregressive inference (Burn's `nn::cache`): `TensorCache`,
`MhaCache` and `TransformerEncoderAutoregressiveCache`.

Generating text one token at a time, a causal model at step n sees the
same first n-1 tokens it saw at step n-1, and (causally masked) its
results at those positions cannot change. So each layer keeps what it
computed for them and works out only the new position: the attention's
keys and values, and the outputs of every position-wise block (norms,
feed-forward, the attention's output projection). A step then costs one
position through every layer plus one row of attention scores, instead of
the whole prefix again.

As in Burn, the caller feeds the whole sequence so far, one token longer
each call, and gets the whole output back (cached rows followed by the new
one). The first call may feed a prompt of any length; each later call may
add one or more tokens. Caches hold inference results: use them on a plain
backend (`model.valid()`) or under no-grad, and start a new one per
sequence.
"""

from __future__ import annotations

from typing import Callable

from burnbook.tensor import Tensor

__all__ = ["TensorCache", "MhaCache", "TransformerEncoderAutoregressiveCache",
           "TransformerEncoderLayerAutoregressiveCache"]


class TensorCache:
    """One tensor kept between calls (Burn's `TensorCache`); `state` is None
    while empty."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state: Tensor | None = None

    @classmethod
    def empty(cls) -> "TensorCache":
        return cls()

    def held(self, dim: int) -> int:
        """How many positions (along `dim`) the cache holds: 0 while empty."""
        return 0 if self.state is None else self.state.dims()[dim]

    def append(self, new: Tensor, dim_cat: int) -> Tensor:
        """Concatenate `new` after the held positions along `dim_cat`; the whole."""
        self.state = new if self.state is None else Tensor.cat([self.state, new], dim_cat)
        return self.state

    def forward_autoregressive(self, tensor: Tensor, dim_cat: int,
                               func: Callable[[Tensor], Tensor]) -> Tensor:
        """`tensor` `[batch, seq, d]`, the sequence so far: `func` runs only on
        the positions `held..seq` not seen before, and its result is appended
        along `dim_cat` (1 for `[batch, seq, ...]` results, 2 for
        `[batch, n_heads, seq, d_k]`). Burn takes the last position only; this
        takes every new one, so a prompt can come first."""
        held = self.held(dim_cat)
        new = _new_positions(tensor, held, "TensorCache")
        return self.append(func(tensor.narrow(1, held, new)), dim_cat)

    def forward_full(self, tensor: Tensor, func: Callable[[Tensor], Tensor]) -> Tensor:
        """`func(tensor)` computed on the first call and kept (a cross-attention
        memory's keys and values)."""
        if self.state is None:
            self.state = func(tensor)
        return self.state


def _new_positions(tensor: Tensor, held: int, who: str) -> int:
    if tensor.ndim != 3:
        raise ValueError(f"{who}: expects the sequence so far, [batch, seq, d_model], got {tensor.dims()}")
    seq = tensor.dims()[1]
    if seq <= held:
        raise ValueError(f"{who}: the cache holds {held} positions and the input has {seq}: feed the whole "
                         f"sequence so far, at least one token longer each call (or start a new cache)")
    return seq - held


class MhaCache:
    """What `MultiHeadAttention.forward_cache` keeps (Burn's `MhaCache`):
    keys and values `[batch, n_heads, seq_k, d_k]` and the output rows
    `[batch, seq, d_model]` already answered. Build one with
    `MhaCache.autoregressive()` (self-attention: keys grow with the
    sequence) or `MhaCache.autoregressive_cross_attention()` (keys and
    values from a fixed memory, computed on the first call)."""

    __slots__ = ("key", "value", "output", "cross_attention")

    def __init__(self, cross_attention: bool = False) -> None:
        self.key, self.value, self.output = TensorCache(), TensorCache(), TensorCache()
        self.cross_attention = cross_attention

    @classmethod
    def autoregressive(cls) -> "MhaCache":
        return cls(cross_attention=False)

    @classmethod
    def autoregressive_cross_attention(cls) -> "MhaCache":
        return cls(cross_attention=True)

    def held(self) -> int:
        """Query positions answered so far."""
        return self.output.held(1)


class TransformerEncoderLayerAutoregressiveCache:
    """One encoder layer's caches: its attention's and the outputs of its
    two norms and feed-forward block, each `[batch, seq, d_model]`."""

    __slots__ = ("mha", "pwff", "norm_1", "norm_2")

    def __init__(self) -> None:
        self.mha = MhaCache.autoregressive()
        self.pwff, self.norm_1, self.norm_2 = TensorCache(), TensorCache(), TensorCache()

    @classmethod
    def empty(cls) -> "TransformerEncoderLayerAutoregressiveCache":
        return cls()


class TransformerEncoderAutoregressiveCache:
    """A cache per layer of a `TransformerEncoder` (Burn's
    `TransformerEncoderAutoregressiveCache`); get one from
    `encoder.new_autoregressive_cache()`."""

    __slots__ = ("layers",)

    def __init__(self, layers: list[TransformerEncoderLayerAutoregressiveCache]) -> None:
        self.layers = layers

    @classmethod
    def empty(cls, num_layers: int) -> "TransformerEncoderAutoregressiveCache":
        return cls([TransformerEncoderLayerAutoregressiveCache() for _ in range(num_layers)])

    def held(self) -> int:
        """Positions computed so far (0 for a new cache)."""
        return self.layers[0].mha.held() if self.layers else 0
