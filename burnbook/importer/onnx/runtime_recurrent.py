"""Runtime helpers for `ops_recurrent` (see `runtime`): recurrent layers (LSTM, GRU, RNN) and control flow (If, Loop, Scan)."""

from __future__ import annotations

__all__: list[str] = []
