"""Bool ops: not, and, or, equal (broadcasting), the conversions to Int and
Float, and the layout and indexing cases of the float family on bools."""

from __future__ import annotations

import numpy as np

from ..case import Case, bools
from ._build import PAIRS, binary, unary
from .indexing import indexing_cases
from .layout import layout_cases

F = "bool"

CASES: list[Case] = [
    *unary(F, "bool_not", np.logical_not, bools),
    *binary(F, "bool_and", np.logical_and, bools, bools, pairs=PAIRS[:4]),
    *binary(F, "bool_or", np.logical_or, bools, bools, pairs=PAIRS[:4]),
    *binary(F, "bool_equal", np.equal, bools, bools, pairs=PAIRS[:4]),
    *unary(F, "bool_into_int", lambda x: x.astype(np.int64), bools, shapes=((3, 4), (7,))),
    *unary(F, "bool_into_float", lambda x: x.astype(np.float64), bools, shapes=((3, 4), (7,))),
    *layout_cases("bool", F, bools),
    *indexing_cases("bool", F, bools, adds=False, fill=None),
]
