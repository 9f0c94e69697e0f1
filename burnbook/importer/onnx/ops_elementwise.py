"""Element-wise operators beyond the first table: unary math, activations, comparisons, logic, bitwise and the variadic Max/Min/Sum/Mean: emitters of the operator table (see `ops`)."""

from __future__ import annotations
