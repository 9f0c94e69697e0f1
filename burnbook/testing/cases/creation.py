"""Data and creation, every kind: from_data / into_data round trips (and
into_data's answer is the caller's own copy), full, empty, random (its
distributions' ranges and means), shape, device, to_device, dtype, cast,
int_arange."""

from __future__ import annotations

import numpy as np

from ...tensor.distribution import Distribution
from ..case import Case, bools, fixed, ints, shape_id, uniform

F = "creation"
_SHAPES = ((7,), (3, 4), (2, 3, 4), (1,), (0, 3))
_MAKE = {"float": uniform, "int": ints, "bool": bools}


def _copy_kept(B, kind, p):
    """into_data twice, writing over the first answer: the second is unchanged."""
    first = np.asarray(getattr(B, f"{kind}_into_data")(p))
    first[...] = ~first if kind == "bool" else first + 7
    return p


def _copied_in(B, kind, device):
    """from_data, then overwrite the caller's array: the primitive keeps the old values."""
    array = _REFERENCE[kind].copy()
    p = getattr(B, f"{kind}_from_data")(array, device)
    array[...] = ~array if kind == "bool" else array + 7
    return p


_REFERENCE = {"float": np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -4.5]], np.float32),
              "int": np.array([[1, -2, 3], [0, 5, -6]], np.int64),
              "bool": np.array([[True, False, True], [False, False, True]])}


def _random_check(B, device, dist, lo, hi, mean, tol):
    """'ok', or what is wrong with 4000 samples of `dist` (range, mean)."""
    a = np.asarray(B.float_into_data(B.float_random((4000,), dist, device)))
    if a.shape != (4000,) or a.dtype != np.float32:
        return f"{np.dtype(a.dtype).name}{list(a.shape)} instead of f32[4000]"
    if a.min() < lo or a.max() > hi:
        return f"values outside [{lo}, {hi}]: min {a.min():.4g}, max {a.max():.4g}"
    if abs(a.mean() - mean) > tol:
        return f"mean {a.mean():.4g}, expected about {mean}"
    return "ok"


CASES: list[Case] = []
for _kind, _make in _MAKE.items():
    for _s in _SHAPES:
        CASES.append(Case(f"{_kind}_from_data[{shape_id(_s)}]", F, f"{_kind}_from_data",
                          (lambda s, m: lambda rng: (m(rng, s),))(_s, _make),
                          lambda B, d, x: x, lambda x: x, uses=(f"{_kind}_into_data",)))
    CASES += [
        Case(f"{_kind}_into_data[copy]", F, f"{_kind}_into_data",
             (lambda m: lambda rng: (m(rng, (2, 3)),))(_make),
             (lambda k: lambda B, d, x: _copy_kept(B, k, x))(_kind), lambda x: x,
             note="the array into_data returns is the caller's: writing to it changes nothing"),
        Case(f"{_kind}_from_data[copy]", F, f"{_kind}_from_data", fixed(),
             (lambda k: lambda B, d: _copied_in(B, k, d))(_kind), (lambda k: lambda: _REFERENCE[k])(_kind),
             note="from_data keeps its own copy: the caller may overwrite the array afterwards"),
        Case(f"{_kind}_shape[2x3x4]", F, f"{_kind}_shape", (lambda m: lambda rng: (m(rng, (2, 3, 4)),))(_make),
             (lambda k: lambda B, d, x: getattr(B, f"{k}_shape")(x))(_kind), lambda x: (2, 3, 4)),
        Case(f"{_kind}_device", F, f"{_kind}_device", (lambda m: lambda rng: (m(rng, (3,)),))(_make),
             (lambda k: lambda B, d, x: getattr(B, f"{k}_device")(x) == d)(_kind), lambda x: True,
             note="a primitive lives on the device it was made on"),
        Case(f"{_kind}_to_device[same]", F, f"{_kind}_to_device", (lambda m: lambda rng: (m(rng, (3, 4)),))(_make),
             (lambda k: lambda B, d, x: getattr(B, f"{k}_to_device")(x, d))(_kind), lambda x: x),
        Case(f"{_kind}_empty[2x3]", F, f"{_kind}_empty", fixed(),
             (lambda k: lambda B, d: getattr(B, f"{k}_shape")(getattr(B, f"{k}_empty")((2, 3), d)))(_kind),
             lambda: (2, 3), uses=(f"{_kind}_shape",)),
    ]

CASES += [
    Case("float_full[2x3,1.5]", F, "float_full", fixed(), lambda B, d: B.float_full((2, 3), 1.5, d),
         lambda: np.full((2, 3), 1.5)),
    Case("float_full[4,-inf]", F, "float_full", fixed(), lambda B, d: B.float_full((4,), -np.inf, d),
         lambda: np.full((4,), -np.inf)),
    Case("float_full[2x2,f64]", F, "float_full", fixed(),
         lambda B, d: B.float_full((2, 2), 0.1, d, np.float64), lambda: np.full((2, 2), 0.1),
         out_dtype=np.float64, rtol=0, atol=0, note="dtype=f64 gives an f64 primitive holding f64's 0.1"),
    Case("int_full[3x2,-4]", F, "int_full", fixed(), lambda B, d: B.int_full((3, 2), -4, d),
         lambda: np.full((3, 2), -4, np.int64)),
    Case("float_dtype[f32]", F, "float_dtype", lambda rng: (uniform(rng, (3,)),),
         lambda B, d, x: B.float_dtype(x), lambda x: np.dtype(np.float32)),
    Case("int_dtype[i64]", F, "int_dtype", lambda rng: (ints(rng, (3,)),),
         lambda B, d, x: B.int_dtype(x), lambda x: np.dtype(np.int64)),
    Case("float_cast[f64]", F, "float_cast", fixed(np.array([0.1, -2.5, 1e30], np.float32)),
         lambda B, d, x: B.float_cast(x, np.float64), lambda x: x.astype(np.float32).astype(np.float64),
         out_dtype=np.float64, rtol=0, atol=0),
    Case("float_cast[f64->f32]", F, "float_cast", fixed(np.array([0.1, -2.5, 3.0], np.float32)),
         lambda B, d, x: B.float_cast(B.float_cast(x, np.float64), np.float32), lambda x: x),
    Case("int_arange[0,5,1]", F, "int_arange", fixed(), lambda B, d: B.int_arange(0, 5, 1, d),
         lambda: np.arange(0, 5, 1, dtype=np.int64)),
    Case("int_arange[-3,8,4]", F, "int_arange", fixed(), lambda B, d: B.int_arange(-3, 8, 4, d),
         lambda: np.arange(-3, 8, 4, dtype=np.int64)),
    Case("int_arange[5,-1,-2]", F, "int_arange", fixed(), lambda B, d: B.int_arange(5, -1, -2, d),
         lambda: np.arange(5, -1, -2, dtype=np.int64)),
]
for _name, _dist, _lo, _hi, _mean, _tol in (
        ("default", Distribution.Default, 0.0, 1.0, 0.5, 0.05),
        ("uniform(-3,-1)", Distribution.Uniform(-3.0, -1.0), -3.0, -1.0, -2.0, 0.1),
        ("normal(2,0.5)", Distribution.Normal(2.0, 0.5), -np.inf, np.inf, 2.0, 0.1),
        ("bernoulli(0.3)", Distribution.Bernoulli(0.3), 0.0, 1.0, 0.3, 0.05)):
    CASES.append(Case(f"float_random[{_name}]", F, "float_random", fixed(),
                      (lambda *a: lambda B, d: _random_check(B, d, *a))(_dist, _lo, _hi, _mean, _tol),
                      lambda: "ok", uses=("float_into_data",),
                      note="4000 samples: in range, mean within a loose tolerance"))
