"""NdArray's error function (NumPy has none): `np_erf` picks a method by
dtype and size; `erf_f32` gives libm's value for an f32 array at a few NumPy
passes instead of a Python call per element.

erf_f32: erf(x) is evaluated in f64 from a table: at the nearest grid point
x_k = k/2048 of [0, 4], erf(x_k) and the Taylor terms of orders 1 to 3
(erf' = 2/sqrt(pi) e^-x^2 and its derivatives, through Hermite polynomials),
summed by Horner in d = x - x_k, |d| <= 1/4096. The relative error is below
4e-15 (the order-4 term, d^4 erf''''/24), so rounding to f32 gives libm's
result except where the f64 value lies within 1e-12 (relative) of a rounding
boundary; those elements (about one in 30 000, and NaN, +-inf) are recomputed
with `math.erf`. Past |x| = 4 erf(x) rounds to +-1 in f32, which the table's
last point already gives. It makes a large GELU (0.5 x (1 + erf(x / sqrt 2)))
cheap on NdArray, and exact where the Chebyshev fit it replaced was within
1.2e-7. Below ~6k elements SciPy's erf, one ufunc call, is faster
(`_ERF_SCIPY_BELOW`).

Why it is laid out so (issue 34: a GPT step's GELU erfs were a quarter of
its NdArray time): the array is walked in blocks of `_BLOCK` elements, whose
buffers, reused from block to block, stay in the caches (a pass over a whole
1M-element f64 temporary goes to memory); the grid index and d are found in
f32, where 2048 |x|, its rounding and the difference are exact, at half the
bytes; the four coefficient columns are gathered as two complex128 tables,
(erf, erf') and (order 2, order 3), two gathers instead of four, the gathers
being the costliest passes; the sign goes onto the f32 result. When NumPy's
OpenBLAS runs on several threads (NdArray's matmuls do), a large array's
blocks are split in two halves, one on burnbook's helper thread
(`_helper_thread.both`; the ufuncs release the GIL; blocks of 64K elements,
as 16K ones spent the second thread waiting for the GIL). 1M floats: ~13 ms
on one thread and ~8 ms on two, where whole-array passes took ~28 ms
(interleaved medians on the shared 2-core VM, others running).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from burnbook._blas import blas_threads as _blas_threads
from burnbook._helper_thread import TWO_CORES, both

__all__ = ["erf_f32", "in_halves", "np_erf"]

_STEPS = 2048             # grid points per unit
_TOP = 4.0                # erf(4) = 1 - 1.5e-8 rounds to 1.0 in f32, as does everything past it
_AMBIGUOUS = 1e-12        # well above the table's 4e-15 relative error
_columns: list[np.ndarray] = []


def _table() -> list[np.ndarray]:
    """The Taylor coefficients erf^(n)(x_k) / n! for n = 0..3, one contiguous
    array per order (built on first use, 8193 points each)."""
    if not _columns:
        x = np.arange(int(_TOP * _STEPS) + 1) / _STEPS
        g = 2.0 / math.sqrt(math.pi) * np.exp(-x * x)   # erf'
        erf0 = np.fromiter(map(math.erf, x.tolist()), np.float64, x.size)
        # erf^(n) = 2/sqrt(pi) (-1)^(n-1) H_(n-1)(x) e^-x^2, H_1 = 2x, H_2 = 4x^2 - 2
        _columns[:] = [erf0, g, -x * g, (4.0 * x * x - 2.0) * g / 6.0]   # one store: threads may race here
    return _columns


_BLOCK = 1 << 16          # elements per block: its buffers (~2.5 MiB) stay in the caches
_pairs: list[np.ndarray] = []


def _pair_tables() -> list[np.ndarray]:
    """The coefficients for Horner in the grid-scaled d' = 2048 |x| - k
    (order n scaled by 2048^-n), packed two to a complex128: (erf, erf') and
    (order 2, order 3), so that one gather fetches two of them."""
    if not _pairs:
        c0, c1, c2, c3 = _table()
        h = 1.0 / _STEPS
        _pairs[:] = [c0 + 1j * (c1 * h), (c2 * h * h) + 1j * (c3 * h ** 3)]   # one store, as `_table`
    return _pairs


def erf_f32(x: np.ndarray) -> np.ndarray:
    """erf of an f32 array, equal to `math.erf` of each element rounded to f32."""
    flat = np.ascontiguousarray(x).reshape(-1)
    n = flat.size
    out = np.empty(n, np.float32)
    tables = _pair_tables()   # built here, before any helper thread reads them
    redo = [i for part in in_halves(n, lambda begin, end: _blocks(tables, flat, out, begin, end)) for i in part]
    if redo:
        where = np.concatenate(redo)
        out[where] = [math.erf(v) for v in flat[where].astype(np.float64).tolist()]
    return out.reshape(x.shape)


# From this many elements, when NumPy's OpenBLAS has more than one thread,
# the blocks are shared with the helper thread (a hand-off costs ~50 us).
_SPLIT_FROM = 1 << 18


def in_halves(n: int, run: Callable[[int, int], Any]) -> list:
    """[run(begin, end)] over [0, n) in `_BLOCK`-aligned pieces: where NumPy's
    matmuls run on several threads and n is large, two halves at once, the
    second on burnbook's helper thread (the ufuncs release the GIL), as the
    BLAS paths split a product; else one call. Shared with `gelu.py`."""
    if n >= _SPLIT_FROM and TWO_CORES and _blas_threads() > 1:
        half = (n // 2 // _BLOCK) * _BLOCK
        return list(both(lambda: run(0, half), lambda: run(half, n)))
    return [run(0, n)]


def _blocks(tables: list, flat: np.ndarray, out: np.ndarray, begin: int, end: int) -> list:
    """`out[begin:end]` = erf of `flat[begin:end]`, block by block, from the
    `_pair_tables()`; returns the indices whose rounding is in doubt (to
    recompute with libm)."""
    low, high = tables
    m = min(_BLOCK, end - begin)
    s, k = np.empty(m, np.float32), np.empty(m, np.float32)
    index = np.empty(m, np.intp)
    d, y, t = np.empty(m, np.float64), np.empty(m, np.float64), np.empty(m, np.float64)
    lo, hi = np.empty(m, np.float32), np.empty(m, np.float32)
    pair = np.empty(m, np.complex128)
    doubt = np.empty(m, bool)
    redo = []
    with np.errstate(invalid="ignore"):   # NaN and +-inf give a clipped index; `doubt` catches them
        for start in range(begin, end, _BLOCK):
            stop = min(start + _BLOCK, end)
            if stop - start != m:   # the last, shorter block
                m = stop - start
                s, k, index, d, y, t, lo, hi, pair, doubt = (
                    a[:m] for a in (s, k, index, d, y, t, lo, hi, pair, doubt))
            xs = flat[start:stop]
            np.abs(xs, out=s)
            np.minimum(s, np.float32(_TOP), out=s)     # NaN stays NaN
            np.multiply(s, np.float32(_STEPS), out=s)  # exact in f32
            np.rint(s, out=k)
            np.subtract(s, k, out=s)                   # d' = 2048 |x| - k, exact, |d'| <= 1/2
            index[...] = k                             # NaN casts out of range: clipped below, y is NaN
            d[...] = s
            np.take(high, index, out=pair, mode="clip")
            np.multiply(pair.imag, d, out=y)
            np.add(y, pair.real, out=y)
            np.multiply(y, d, out=y)
            np.take(low, index, out=pair, mode="clip")
            np.add(y, pair.imag, out=y)
            np.multiply(y, d, out=y)
            np.add(y, pair.real, out=y)
            o = out[start:stop]
            o[...] = y
            np.copysign(o, xs, out=o)
            # where y's error could straddle an f32 rounding boundary (NaN included), ask libm
            np.multiply(y, 1.0 - _AMBIGUOUS, out=t)
            lo[...] = t
            np.multiply(y, 1.0 + _AMBIGUOUS, out=t)
            hi[...] = t
            np.not_equal(lo, hi, out=doubt)
            if doubt.any():
                redo.append(np.flatnonzero(doubt) + start)
    return redo


# Below this many elements erf is libm's `math.erf` per element, exact in f64
# and then rounded: a Python loop of ~65 ns an element beats the fit's ~45
# NumPy calls (~40 us whatever the size) up to about a thousand elements.
_ERF_EXACT_BELOW = 1024
# f32 arrays below this size take SciPy's erf: one ufunc call, computed in f64
# and rounded (the same bits as libm's rounded value, like the table), cheaper
# than the table's NumPy passes on small arrays; from ~6k elements the table,
# vectorised, wins.
_ERF_SCIPY_BELOW = 6144


def _erf_exact(x: np.ndarray) -> np.ndarray:
    return np.fromiter(map(math.erf, x.ravel().tolist()), x.dtype, x.size).reshape(x.shape)


def np_erf(x: np.ndarray) -> np.ndarray:
    """The error function: exact (libm) in f64; f32 arrays are SciPy's
    `special.erf` below `_ERF_SCIPY_BELOW` elements and `erf_f32`
    above, both libm's value rounded to f32; f16 below `_ERF_EXACT_BELOW`
    elements libm's too, bigger f16 arrays the Numerical Recipes Chebyshev
    fit of erfc, whose relative error (< 1.2e-7) is below f16 rounding.
    NumPy has no erf of its own."""
    if x.dtype == np.float32:
        if x.size < _ERF_SCIPY_BELOW:
            from scipy.special import erf   # imported on first use: SciPy takes ~0.1 s to load

            return erf(x)
        return erf_f32(x)
    if x.dtype == np.float64 or x.size < _ERF_EXACT_BELOW:
        return _erf_exact(x)
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
        0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
            1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    fit = np.where(x >= 0, 1.0 - erfc, erfc - 1.0)
    # Near 0 the fit's absolute error dwarfs erf itself (erf(0) would be
    # -3e-8), so |x| < 0.5 takes the Maclaurin series, exact to f64 there.
    x64 = x.astype(np.float64)
    x2 = x64 * x64
    series = np.zeros_like(x64)
    for k in range(12, -1, -1):
        series = _ERF_SERIES[k] + x2 * series
    return np.where(z < 0.5, x64 * series, fit).astype(x.dtype)


# 2/sqrt(pi) * (-1)^k / (k! (2k + 1)), the Maclaurin coefficients of erf(x)/x.
_ERF_SERIES = [2.0 / math.sqrt(math.pi) * (-1) ** k / (math.factorial(k) * (2 * k + 1)) for k in range(13)]
