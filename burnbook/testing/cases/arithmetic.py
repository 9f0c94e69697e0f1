"""Float arithmetic: the four binary ops with broadcasting, powf, the scalar
forms, neg, abs and clamp (one bound may be None)."""

from __future__ import annotations

import numpy as np

from ..case import Case, away_from_zero, fixed, uniform
from ._build import binary, unary, with_scalar

F = "arithmetic"


def _positive(rng, shape):
    return uniform(rng, shape, 0.5, 2.0)


CASES: list[Case] = [
    *binary(F, "float_add", np.add),
    *binary(F, "float_sub", np.subtract),
    *binary(F, "float_mul", np.multiply),
    *binary(F, "float_div", np.divide, make_b=away_from_zero),
    *binary(F, "float_powf", np.power, make_a=_positive, rtol=1e-4),
    *with_scalar(F, "float_add_scalar", np.add, (2.5, -1.0)),
    *with_scalar(F, "float_sub_scalar", np.subtract, (2.5, -1.0)),
    *with_scalar(F, "float_mul_scalar", np.multiply, (3.0, -0.5, 0.0)),
    *with_scalar(F, "float_div_scalar", np.divide, (4.0, -0.5)),
    *with_scalar(F, "float_powf_scalar", np.power, (2.0, 3.0, 0.5, -1.0, 0.0), make=_positive, rtol=1e-4),
    *unary(F, "float_neg", np.negative),
    *unary(F, "float_abs", np.abs),
    Case("float_abs[special]", F, "float_abs", fixed(np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, -3.5],
                                                          np.float32)),
         lambda B, d, x: B.float_abs(x), np.abs, note="signed zero, infinities, NaN"),
    Case("float_div[by zero]", F, "float_div", fixed(np.array([1.0, -1.0, 0.0], np.float32),
                                                     np.zeros(3, np.float32)),
         lambda B, d, x, y: B.float_div(x, y), np.divide, note="x/0 is +-inf, 0/0 is NaN (IEEE)"),
]
for _lo, _hi in ((-0.5, 0.5), (None, 0.2), (-0.3, None)):
    CASES.append(Case(f"float_clamp[3x4,{_lo},{_hi}]", F, "float_clamp",
                      lambda rng: (uniform(rng, (3, 4), -1.0, 1.0),),
                      (lambda lo, hi: lambda B, d, x: B.float_clamp(x, lo, hi))(_lo, _hi),
                      (lambda lo, hi: lambda x: np.clip(x, lo, hi))(_lo, _hi)))
