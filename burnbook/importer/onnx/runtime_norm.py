"""Runtime helpers for `ops_norm` (see `runtime`): normalisations, pooling beyond Max/Average, resizing, sampling and attention."""

from __future__ import annotations

__all__: list[str] = []
