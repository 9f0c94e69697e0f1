"""`PositionalEncoding`: fixed sinusoids added to a sequence of embeddings."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burnbook.config import ConfigError, config
from burnbook.module import Module
from burnbook.tensor import Tensor
from .common import check_config, device_or_default, on_backend_of, resolve_backend

__all__ = ["PositionalEncoding", "PositionalEncodingConfig", "generate_sinusoids"]


@config
class PositionalEncodingConfig:
    """Settings of a `PositionalEncoding`: table length, width and the
    longest wavelength."""

    d_model: int
    max_sequence_size: int = 5_000
    max_timescale: int = 10_000

    def __post_init__(self) -> None:
        check_config(self, sizes=("d_model", "max_sequence_size", "max_timescale"))
        if self.d_model % 2:
            raise ConfigError(f"PositionalEncodingConfig: d_model must be even, got {self.d_model}")
        if self.max_timescale < self.max_sequence_size:
            raise ConfigError(f"PositionalEncodingConfig: max_timescale ({self.max_timescale}) must be at least "
                              f"max_sequence_size ({self.max_sequence_size})")

    def init(self, device: Any = None, backend: type | None = None) -> "PositionalEncoding":
        self.__post_init__()
        B = resolve_backend(device, backend)
        sinusoids = generate_sinusoids(self.max_sequence_size, self.d_model, self.max_timescale,
                                       device_or_default(device, B), B)
        return PositionalEncoding(sinusoids=sinusoids.unsqueeze())


def generate_sinusoids(length: int, d_model: int, max_timescale: int, device: Any = None,
                       backend: type | None = None) -> Tensor:
    """`[length, d_model]`: sin at even columns, cos at odd ones, of
    position * max_timescale^(-k / d_model) for column pair k ("Attention Is
    All You Need", section 3.5)."""
    B = resolve_backend(device, backend)
    # Computed in f32, as Burn does.
    k = np.arange(0, d_model, 2, dtype=np.float32)
    div = np.exp(k * np.float32(-math.log(max_timescale) / d_model)).astype(np.float32)
    angles = np.arange(length, dtype=np.float32)[:, None] * div[None, :]
    table = np.empty((length, d_model), dtype=np.float32)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return Tensor[B, 2].from_data(table, device)


class PositionalEncoding(Module):
    """Adds `sinusoids[:, :seq]` to its input; the table is a constant (a
    plain tensor, not a parameter), so it is neither trained nor recorded."""

    sinusoids: Tensor

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[batch, seq, d_model]` -> the same shape."""
        _, seq, d_model = input.dims()
        _, max_len, width = self.sinusoids.dims()
        if seq > max_len:
            raise ValueError(f"PositionalEncoding: sequence length {seq} exceeds max_sequence_size {max_len}")
        if d_model != width:
            raise ValueError(f"PositionalEncoding: input d_model {d_model} differs from the table's {width}")
        table = on_backend_of(self.sinusoids, input)
        return input.add(table[:, 0:seq])

    def extra_repr(self) -> dict:
        _, max_len, width = self.sinusoids.dims()
        return {"d_model": width, "max_sequence_size": max_len}
