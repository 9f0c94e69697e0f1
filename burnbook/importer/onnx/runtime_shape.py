"""Runtime helpers for `ops_shape` (see `runtime`): operators that make or re-arrange shapes: Expand, Tile, Pad, Split, Range, ConstantOfShape and the generators."""

from __future__ import annotations

__all__: list[str] = []
