"""Float comparisons: tensor-tensor (broadcasting) and with a scalar
(`_elem`); all return Bool primitives. Inputs share values on purpose so
equality and the `_equal` forms see ties."""

from __future__ import annotations

import numpy as np

from ..case import Case
from ._build import binary, with_scalar

F = "comparison"


def _few_values(rng, shape):
    """float32 values from a small set, so both sides often tie."""
    return rng.choice(np.array([-1.0, 0.0, 0.5, 2.0], np.float32), size=shape)


_BINARY = {"float_equal": np.equal, "float_greater": np.greater,
           "float_greater_equal": np.greater_equal, "float_lower": np.less,
           "float_lower_equal": np.less_equal}

CASES: list[Case] = []
for _op, _ref in _BINARY.items():
    CASES += binary(F, _op, _ref, _few_values, _few_values)
    CASES += with_scalar(F, f"{_op}_elem", _ref, (0.5, -1.0), make=_few_values)
