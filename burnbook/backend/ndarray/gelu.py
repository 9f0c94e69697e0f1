"""NdArray's GELU for large f32 arrays: x Phi(x), its derivative Phi(x) + x
phi(x) and the gradient grad (Phi(x) + x phi(x)), from a table of Phi
instead of an erf per element.

Phi, the normal CDF, is tabulated at the grid points x_k = k/2048 of [-14,
6] and corrected by Taylor's series about x, Phi(x) ~ Phi(x_k) + phi(x) d
(1 + x d / 2) with d = x - x_k, |d| <= 1/4096 (Phi'' = -x phi), the density
phi(x) = e^(-x^2/2) / sqrt(2 pi) coming from NumPy's exp (the derivative
needs it anyway). The scaled 2048 x, its rounding k and d are exact in f32 (a
power of two); the dropped third-order term is below 1e-11 relative to Phi
for |x| < 6 (x^2 d^3 / 6), so what remains is f32 rounding: the table's,
exp's and a few products' (measured on 1M normal draws and a grid of [-20,
20]: within 2.3 ulp of x Phi(x) in f64 wherever that exceeds 1e-30).
That beats the formula 0.5 x (1 + erf(x / sqrt 2)) in f32 (PyTorch's, and
`module_layers.gelu`'s) on the negative side, where 1 + erf cancels: at x = -4
an exactly rounded erf still leaves (1 + erf) 5e-4 off. Above 6, Phi rounds
to 1 in f32 and the last point gives it; the first point, -14, is 0, so
x = -inf gives NaN as the formula does, and NaN stays NaN.

Why (issue 34): a GPT step's GELU, on `[batch * seq, 4 d]` activations, was
a quarter of its NdArray time through the exactly rounded erf (`erf.py`,
~20 NumPy passes and two gathers an element) and the composite's backward.
Here the tracked forward (`gelu_with_derivative_f32`) is 23 contiguous f32
passes and one gather an element (the gather, NumPy's `take`, costs as much
as eight passes) over blocks of 64K elements whose buffers stay in the
caches, split with the helper thread when NumPy's BLAS runs on two (as
`erf_f32`), and the backward is one product with the kept derivative.
"""

from __future__ import annotations

import math

import numpy as np

from .erf import _BLOCK, in_halves

__all__ = ["gelu_backward_f32", "gelu_f32", "gelu_with_derivative_f32"]

_STEPS = 2048                 # grid points per unit
_LOW, _HIGH = -14.0, 6.0      # Phi(-14) ~ 8e-45 (taken as 0), Phi(6) rounds to 1 in f32
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# Adding 1.5 * 2^23 to an f32 below 2^22 in size rounds it to an integer (half
# to even, as rint) held in the low mantissa bits: one pass gives both k (as
# float, after subtracting it back) and, through the bits, the table index,
# where NumPy's float-to-int cast costs six passes' time.
_MAGIC = np.float32(1.5 * 2 ** 23)
_MAGIC_BITS = int(np.array(_MAGIC).view(np.int32))
_table: list[np.ndarray] = []


def _cdf_table() -> np.ndarray:
    """Phi(x_k) in f32 at x_k = -14 + k / 2048 (Phi(-14) stored as 0)."""
    if not _table:
        x = _LOW + np.arange(int((_HIGH - _LOW) * _STEPS) + 1) / _STEPS
        cdf = 0.5 * np.fromiter(map(math.erfc, (-x / math.sqrt(2.0)).tolist()), np.float64, x.size)
        cdf[0] = 0.0
        _table[:] = [cdf.astype(np.float32)]   # one store: threads may race here
    return _table[0]


class _Block:
    """One block's scratch buffers, reused from block to block."""

    def __init__(self, m: int):
        self.s, self.k, self.y, self.pdf = (np.empty(m, np.float32) for _ in range(4))
        self.bits = np.empty(m, np.int32)
        self.index = np.empty(m, np.intp)

    def cut(self, m: int) -> None:
        """Shorten the buffers to the last block's m elements."""
        for name in ("s", "k", "y", "pdf", "bits", "index"):
            setattr(self, name, getattr(self, name)[:m])

    def pdf_cdf(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(phi(xs), Phi(xs)) in `self.pdf` and `self.y`."""
        s, k, pdf = self.s, self.k, self.pdf
        np.multiply(xs, xs, out=pdf)
        np.multiply(pdf, np.float32(-0.5), out=pdf)
        np.exp(pdf, out=pdf)
        np.multiply(pdf, np.float32(_INV_SQRT_2PI), out=pdf)       # phi(x)
        np.multiply(xs, np.float32(_STEPS), out=s)                  # exact
        np.clip(s, np.float32(_LOW * _STEPS), np.float32(_HIGH * _STEPS), out=s)
        np.add(s, _MAGIC, out=k)                                     # rint(s) + 1.5 * 2^23
        np.subtract(k.view(np.int32), np.int32(_MAGIC_BITS + int(_LOW * _STEPS)), out=self.bits)
        np.subtract(k, _MAGIC, out=k)                                # rint(s), exact
        np.subtract(s, k, out=s)                                     # d' = 2048 x - k, exact, |d'| <= 1/2
        self.index[...] = self.bits
        np.take(_table[0], self.index, out=self.y, mode="clip")      # NaN's index is clipped; d' is NaN
        np.add(k, s, out=k)                                          # the clipped 2048 x (finite at +-inf)
        np.multiply(k, s, out=k)                                     # the second order: d' (1 + x d / 2)
        np.multiply(k, np.float32(0.5 / _STEPS ** 2), out=k)
        np.add(k, np.float32(1.0), out=k)
        np.multiply(s, k, out=s)
        np.multiply(s, pdf, out=s)
        np.multiply(s, np.float32(1.0 / _STEPS), out=s)              # phi(x) d
        return pdf, np.add(self.y, s, out=self.y)


def _walk(n: int, body) -> None:
    """body(block, start, stop) over [0, n) in `_BLOCK` pieces, in two halves on
    two threads where `erf.in_halves` splits (as erf_f32's blocks)."""
    def run(begin: int, end: int) -> None:
        block = _Block(min(_BLOCK, end - begin))
        with np.errstate(invalid="ignore", over="ignore", under="ignore"):   # NaN's cast, exp's tails
            for start in range(begin, end, _BLOCK):
                stop = min(start + _BLOCK, end)
                if stop - start != block.s.size:
                    block.cut(stop - start)
                body(block, start, stop)

    _cdf_table()   # built here, before a helper thread reads it
    in_halves(n, run)


def _run(x: np.ndarray, forward: bool, grad: np.ndarray | None = None, derivative: bool = True) -> tuple:
    """(x Phi(x) or None, Phi(x) + x phi(x) times `grad` when given, or None
    when not `derivative`) of an f32 array, from one Phi and phi an element."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(flat.size, np.float32) if forward else None
    deriv = np.empty(flat.size, np.float32) if derivative else None
    g = None if grad is None else np.ascontiguousarray(grad, np.float32).reshape(-1)

    def body(block: _Block, start: int, stop: int) -> None:
        xs = flat[start:stop]
        pdf, cdf = block.pdf_cdf(xs)
        if forward:
            np.multiply(xs, cdf, out=out[start:stop])
        if derivative:
            np.multiply(pdf, xs, out=pdf)
            if g is None:
                np.add(pdf, cdf, out=deriv[start:stop])
            else:
                np.add(pdf, cdf, out=pdf)
                np.multiply(pdf, g[start:stop], out=deriv[start:stop])

    _walk(flat.size, body)
    return tuple(None if a is None else a.reshape(x.shape) for a in (out, deriv))


def gelu_f32(x: np.ndarray) -> np.ndarray:
    """x Phi(x) of an f32 array `[...]` (same shape)."""
    return _run(x, True, derivative=False)[0]


def gelu_backward_f32(x: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """grad (Phi(x) + x phi(x)) for f32 `x` and `grad` of one shape."""
    return _run(x, False, grad)[1]


def gelu_with_derivative_f32(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x Phi(x), Phi(x) + x phi(x)) of an f32 array, from one Phi and phi per
    element: the tracked forward, whose backward is then one product."""
    return _run(x, True)
