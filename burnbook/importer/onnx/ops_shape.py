"""Operators that make or re-arrange shapes: Expand, Tile, Pad, Split, Range, ConstantOfShape and the generators: emitters of the operator table (see `ops`)."""

from __future__ import annotations
