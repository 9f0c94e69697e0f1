"""Reductions, arg-max/min, top-k, cumulative sums and the gather/scatter family: emitters of the operator table (see `ops`)."""

from __future__ import annotations
