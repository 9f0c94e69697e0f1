"""Float math, element-wise: exp, log, log1p, erf, sqrt, recip, cos, sin,
tanh, relu, sigmoid; each on its domain, then on edge values (large
magnitudes, zeros, infinities) where IEEE arithmetic says what comes out."""

from __future__ import annotations

import math as _m

import numpy as np

from ..case import Case, away_from_zero, fixed, uniform
from ._build import unary

F = "math"
_erf = np.vectorize(_m.erf, otypes=[np.float64])


def _range(lo: float, hi: float):
    return lambda rng, shape: uniform(rng, shape, lo, hi)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


_DOMAINS = {
    # op: (reference, inputs, edge values, rtol)
    "float_exp": (np.exp, _range(-5, 5), [-100.0, -1.0, 0.0, 20.0, 100.0, -np.inf], 1e-5),
    "float_log": (np.log, _range(0.01, 50), [1e-30, 1.0, 1e30, 0.0, np.inf], 1e-5),
    "float_log1p": (np.log1p, _range(-0.9, 50), [1e-7, -1e-7, 0.0, -1.0, 1e20], 1e-5),
    "float_erf": (_erf, _range(-3, 3), [-10.0, -1e-3, 0.0, 0.5, 10.0], 1e-5),
    "float_sqrt": (np.sqrt, _range(0, 50), [0.0, 1e-30, 4.0, 1e30, np.inf], 1e-5),
    "float_recip": (np.reciprocal, away_from_zero, [0.5, -4.0, 1e-3, np.inf], 1e-5),
    "float_cos": (np.cos, _range(-6, 6), [0.0, np.pi, -np.pi / 2, 20.0], 1e-5),
    "float_sin": (np.sin, _range(-6, 6), [0.0, np.pi / 2, -np.pi, 20.0], 1e-5),
    "float_tanh": (np.tanh, _range(-4, 4), [-100.0, -1e-4, 0.0, 1e-4, 100.0], 1e-5),
    "float_relu": (lambda x: np.maximum(x, 0.0), uniform, [-2.0, -0.0, 0.0, 3.0, np.inf, -np.inf], 1e-6),
    "float_sigmoid": (_sigmoid, _range(-8, 8), [-100.0, -20.0, 0.0, 20.0, 100.0], 1e-5),
}

CASES: list[Case] = []
for _op, (_ref, _make, _edge, _rtol) in _DOMAINS.items():
    CASES += unary(F, _op, _ref, _make, rtol=_rtol, atol=1e-6)
    CASES.append(Case(f"{_op}[edge values]", F, _op, fixed(np.array(_edge, np.float32)),
                      (lambda op: lambda B, d, x: getattr(B, op)(x))(_op), _ref,
                      rtol=_rtol, atol=1e-6, note=f"edge values {_edge}"))
