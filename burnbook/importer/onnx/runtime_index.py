"""Runtime helpers for `ops_index` (see `runtime`): reductions, arg-max/min, top-k, cumulative sums and the gather/scatter family."""

from __future__ import annotations

__all__: list[str] = []
