"""Int ops (int64): arithmetic with truncating division (Burn's, not
Python's floor), comparisons, reductions, layout and indexing (the float
cases' shapes on ints), and the conversions between Int and Float."""

from __future__ import annotations

import numpy as np

from ..case import Case, fixed, ints, uniform
from ._build import PAIRS, along_dim, binary, unary, with_scalar
from .indexing import indexing_cases
from .layout import layout_cases

F = "int"


def _nonzero(rng, shape):
    return rng.integers(1, 6, size=shape).astype(np.int64) * rng.choice([-1, 1], size=shape)


def _trunc_div(a, b):
    """Division rounding toward zero (Burn's and C's), on int64."""
    q = np.abs(a) // np.abs(b)
    return (np.sign(a) * np.sign(b) * q).astype(np.int64)


def _few(rng, shape):
    return rng.integers(-2, 3, size=shape).astype(np.int64)


def _full(fn):
    return lambda x: np.asarray(fn(x)).reshape(1).astype(np.int64)


def _keep(fn):
    return lambda x, d: fn(x, axis=d, keepdims=True).astype(np.int64)


def _arg(fn):
    return lambda x, d: np.expand_dims(fn(x, axis=d), d).astype(np.int64)


def _distinct_ints(rng, shape):
    n = int(np.prod(shape))
    return (rng.permutation(n) - n // 2).astype(np.int64).reshape(shape)


_COMPARE = {"int_equal": np.equal, "int_greater": np.greater, "int_greater_equal": np.greater_equal,
            "int_lower": np.less, "int_lower_equal": np.less_equal}

CASES: list[Case] = [
    *binary(F, "int_add", np.add, ints, ints),
    *binary(F, "int_sub", np.subtract, ints, ints),
    *binary(F, "int_mul", np.multiply, ints, ints),
    *binary(F, "int_div", _trunc_div, ints, _nonzero, note="rounds toward zero: -7 / 2 == -3"),
    *with_scalar(F, "int_add_scalar", np.add, (3, -5), make=ints),
    *with_scalar(F, "int_sub_scalar", np.subtract, (3, -5), make=ints),
    *with_scalar(F, "int_mul_scalar", np.multiply, (3, -2, 0), make=ints),
    *with_scalar(F, "int_div_scalar", _trunc_div, (2, -3), make=ints),
    *unary(F, "int_neg", np.negative, ints),
    *unary(F, "int_abs", np.abs, ints),
    Case("int_div[signs]", F, "int_div", fixed(np.array([7, -7, 7, -7, 0, 1], np.int64),
                                               np.array([2, 2, -2, -2, 3, 5], np.int64)),
         lambda B, d, x, y: B.int_div(x, y), _trunc_div, note="every sign pair, rounding toward zero"),
    Case("int_clamp[3x4,-3,4]", F, "int_clamp", lambda rng: (ints(rng, (3, 4)),),
         lambda B, d, x: B.int_clamp(x, -3, 4), lambda x: np.clip(x, -3, 4)),
    *unary(F, "int_sum", _full(np.sum), ints),
    *unary(F, "int_max", _full(np.max), ints),
    *unary(F, "int_min", _full(np.min), ints),
    *along_dim(F, "int_sum_dim", _keep(np.sum), ints),
    *along_dim(F, "int_max_dim", _keep(np.max), ints),
    *along_dim(F, "int_min_dim", _keep(np.min), ints),
    *along_dim(F, "int_argmax", _arg(np.argmax), _distinct_ints),
    *along_dim(F, "int_argmin", _arg(np.argmin), _distinct_ints),
    *unary(F, "int_into_float", lambda x: x.astype(np.float64), ints, shapes=((3, 4), (7,))),
    Case("float_into_int[toward zero]", F, "float_into_int",
         fixed(np.array([-1.7, -0.5, 0.5, 1.7, 3.0, -3.0, 0.0], np.float32)),
         lambda B, d, x: B.float_into_int(x), lambda x: np.trunc(x).astype(np.int64),
         note="truncates toward zero, as Burn's cast does"),
    *unary(F, "float_into_int", lambda x: np.trunc(x).astype(np.int64), lambda r, s: uniform(r, s, -50, 50),
           shapes=((3, 4), (2, 3, 4))),
    *layout_cases("int", F, ints),
    *indexing_cases("int", F, ints, fill=-7),
]
for _op, _ref in _COMPARE.items():
    CASES += binary(F, _op, _ref, _few, _few, pairs=PAIRS[:3])
    CASES += with_scalar(F, f"{_op}_elem", _ref, (0, -1), make=_few, shapes=((3, 4),))
