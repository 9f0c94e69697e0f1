"""`RotaryEncoding` (RoPE): positions as rotations of feature pairs
(Su et al. 2021, "RoFormer"; used by Llama).

Instead of adding a position vector, RoPE turns each pair of features
`(x[2i], x[2i+1])` at position `p` by the angle `p * theta^(-2i / d_model)`.
The dot product of a rotated query at `p` and a rotated key at `q` then
depends only on `p - q`, so attention sees relative positions. Burn pairs
*adjacent* features (interleaved, as Meta's Llama code and GPT-J), not the
two halves of the vector (the Hugging Face "rotate_half" layout); so does
this module:

    out[2i]   = x[2i] * cos(p w_i) - x[2i+1] * sin(p w_i)
    out[2i+1] = x[2i+1] * cos(p w_i) + x[2i] * sin(p w_i),   w_i = theta^(-2i / d_model)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burnbook.config import ConfigError, config
from burnbook.module import Module
from burnbook.tensor import Tensor
from .common import check_config, device_or_default, on_backend_of, resolve_backend

__all__ = ["RotaryEncoding", "RotaryEncodingConfig"]


@config
class RotaryEncodingConfig:
    """Settings of a `RotaryEncoding`: the longest sequence it can rotate,
    the (even) feature size `d_model` it rotates (the head size `d_k` when
    applied to attention heads) and the frequency base `theta`."""

    max_sequence_length: int
    d_model: int
    theta: float = 10000.0

    def __post_init__(self) -> None:
        check_config(self, sizes=("max_sequence_length", "d_model"))
        if self.d_model % 2:
            raise ConfigError(f"RotaryEncodingConfig: d_model must be even (features rotate in pairs), "
                              f"got {self.d_model}")
        if not self.theta > 0.0:
            raise ConfigError(f"RotaryEncodingConfig: theta must be > 0, got {self.theta}")

    def init(self, device: Any = None, backend: type | None = None) -> "RotaryEncoding":
        self.__post_init__()
        B = resolve_backend(device, backend)
        # Angles in float64, rounded once to f32 (Burn computes them in f32;
        # the two tables differ by an ulp or so of cos and sin).
        w = self.theta ** (-np.arange(0, self.d_model, 2, dtype=np.float64) / self.d_model)
        angles = np.arange(self.max_sequence_length, dtype=np.float64)[:, None] * w[None, :]
        # [max_len, d_model, 2]: (cos, sin) of each feature's angle, each
        # pair's angle repeated for its two features (Burn's `freq_complex`).
        table = np.stack([np.cos(angles), np.sin(angles)], axis=-1).repeat(2, axis=1).astype(np.float32)
        return RotaryEncoding(freq_complex=Tensor[B, 3].from_data(table, device_or_default(device, B)),
                              max_sequence_length=self.max_sequence_length, theta=self.theta)


class RotaryEncoding(Module):
    """Rotates feature pairs by position; no parameters (the table is a
    constant, neither trained nor recorded).

        rope = nn.RotaryEncodingConfig(max_sequence_length=128, d_model=16).init(device)
        q = rope.forward(q)          # [batch, n_heads, seq, 16], positions 0..seq-1
        k = rope.apply(k_new, 7)     # the same for a tensor starting at position 7
    """

    freq_complex: Tensor  # [max_sequence_length, d_model, 2]: cos and sin
    max_sequence_length: int
    theta: float = 10000.0

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[..., seq, d_model]` (rank >= 2) -> the same shape, positions 0..seq-1."""
        return self.apply(input, 0)

    def apply(self, input: Tensor, start: int) -> Tensor:  # noqa: A002
        """`[..., seq, d_model]` -> the same shape, the rows at positions
        `start..start+seq` (Burn's `apply(x, start)`; for a cache, whose
        new tokens come after `start` earlier ones)."""
        dims = input.dims()
        d_model = self.freq_complex.dims()[1]
        if input.ndim < 2 or dims[-1] != d_model:
            raise ValueError(f"RotaryEncoding: expects [..., seq, {d_model}] (rank >= 2), got {dims}")
        seq = dims[-2]
        if start < 0 or start + seq > self.max_sequence_length:
            raise ValueError(f"RotaryEncoding: positions {start}..{start + seq} exceed "
                             f"max_sequence_length {self.max_sequence_length}")
        table = on_backend_of(self.freq_complex, input)[start:start + seq]
        lead = [1] * (input.ndim - 2)
        cos = table[:, :, 0:1].reshape(lead + [seq, d_model])
        sin = table[:, :, 1:2].reshape(lead + [seq, d_model])
        # The pair partner with the sign of the rotation: (x0, x1) -> (-x1, x0).
        pairs = input.reshape(dims[:-1] + [d_model // 2, 2])
        last = input.ndim  # the pairs' own dim
        turned = Tensor.cat([pairs.narrow(last, 1, 1).neg(), pairs.narrow(last, 0, 1)], last).reshape(dims)
        return input.mul(cos).add(turned.mul(sin))

    def extra_repr(self) -> dict:
        return {"d_model": self.freq_complex.dims()[1], "max_sequence_length": self.max_sequence_length,
                "theta": self.theta}
