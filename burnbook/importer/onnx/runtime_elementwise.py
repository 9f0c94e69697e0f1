"""Runtime helpers for `ops_elementwise` (see `runtime`): element-wise operators beyond the first table: unary math, activations, comparisons, logic, bitwise and the variadic Max/Min/Sum/Mean."""

from __future__ import annotations

__all__: list[str] = []
