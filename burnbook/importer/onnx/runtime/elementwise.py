"""Runtime helpers for the element-wise family (`ops/elementwise`, `ops/arithmetic`): unary
math, activations, comparisons, logic, bitwise, the variadic Max/Min,
Mod, Clip with tensor bounds and Dropout.

The math helpers (rounding, the inverse and hyperbolic trigonometric
functions, ELU and friends) are composed from Tensor operations, so they run
on every backend and autodiff differentiates through them; each keeps to the
tensor's own float type and is written to stay accurate near 0 and finite
for large arguments. The bitwise helpers are host operations: the values are
read back with `to_numpy()`, combined by NumPy in the ONNX element type (so
shifts and NOT wrap as in `uint8`), and written back as an Int tensor.
Burnbook's Int tensors have no bitwise ops, and these only appear in integer
side computations of a graph, never on a gradient's path.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burnbook.backend.base import broadcast_shape
from burnbook.tensor import Bool, Distribution, Float, Int, Tensor

from .host import floats
from .layout import align

_LN2 = math.log(2.0)
_LARGE = 2.0 ** 28  # above it sqrt(x*x +- 1) is |x| to double precision: asinh/acosh are log(2|x|)


# -- rounding ------------------------------------------------------------------------
def round_even(x: Any) -> Any:
    """ONNX `Round`: to the nearest integer, halves to the even one (NumPy's
    `round`, not Python 2's). Adding then subtracting 2**mantissa_bits makes
    the float unit round the fraction away in its own mode, round-half-even;
    values that large are integers already. The result is piecewise
    constant, so it carries no gradient."""
    x = x.detach()
    big = float(2 ** np.finfo(x.dtype.np).nmant)
    a = x.abs()
    r = a.add_scalar(big).sub_scalar(big)
    r = r.mask_where(x.lower_elem(0.0), r.neg())
    return r.mask_where(a.greater_equal_elem(big), x)


def floor(x: Any) -> Any:
    """ONNX `Floor`: the largest integer not above x (no gradient)."""
    x = x.detach()
    r = round_even(x)
    return r.mask_where(r.greater(x), r.sub_scalar(1.0))


def ceil(x: Any) -> Any:
    """ONNX `Ceil`: the smallest integer not below x (no gradient)."""
    x = x.detach()
    r = round_even(x)
    return r.mask_where(r.lower(x), r.add_scalar(1.0))


def _trunc(x: Any) -> Any:
    """Rounded toward zero."""
    f = floor(x.abs())
    return f.mask_where(x.lower_elem(0.0), f.neg())


# -- trigonometric and hyperbolic ------------------------------------------------------
def tan(x: Any) -> Any:
    """ONNX `Tan`: sin(x) / cos(x)."""
    return x.sin() / x.cos()


# atan(t) = t + t^3 P(t^2) / Q(t^2) on |t| <= 0.66: Cephes' rational fit,
# good to double precision (P highest power first; Q is monic)
_ATAN_P = (-8.750608600031904122785e-01, -1.615753718733365076637e01, -7.500855792314704667340e01,
           -1.228866684490136173410e02, -6.485021904942025371773e01)
_ATAN_Q = (2.485846490142306297962e01, 1.650270098316988542046e02, 4.328810604912902668951e02,
           4.853903996359136964868e02, 1.945506571482613964425e02)
_TAN_3PI_8 = 2.414213562373095


def atan(x: Any) -> Any:
    """ONNX `Atan`. |x| is reduced to |t| <= 0.66 with atan(a) = pi/2 -
    atan(1/a) above tan(3 pi/8) and pi/4 + atan((a-1)/(a+1)) between 0.66
    and there, then a rational function of t^2 finishes it; the sign is
    put back at the end."""
    a = x.abs()
    high = a.greater_elem(_TAN_3PI_8)
    mid = a.greater_elem(0.66).bool_and(high.bool_not())
    # every branch is evaluated; the clamp keeps 1/a finite where it is not taken
    t = a.mask_where(high, a.clamp_min(1.0).recip().neg())
    t = t.mask_where(mid, (a - 1.0) / (a + 1.0))
    z = t * t
    p = z * _ATAN_P[0] + _ATAN_P[1]
    for c in _ATAN_P[2:]:
        p = p * z + c
    q = z + _ATAN_Q[0]
    for c in _ATAN_Q[1:]:
        q = q * z + c
    y = t + t * z * p / q
    y = y.mask_where(high, y + math.pi / 2).mask_where(mid, y + math.pi / 4)
    return y.mask_where(x.lower_elem(0.0), y.neg())


def asin(x: Any) -> Any:
    """ONNX `Asin`: 2 atan(x / (1 + sqrt(1 - x^2))), the half-angle form,
    whose denominator never vanishes; NaN outside [-1, 1]."""
    c = ((1.0 - x) * (1.0 + x)).sqrt()
    return atan(x / (c + 1.0)) * 2.0


def acos(x: Any) -> Any:
    """ONNX `Acos`: 2 atan(sqrt((1 - x) / (1 + x))), accurate near x = 1
    where pi/2 - asin(x) would cancel; NaN outside [-1, 1]."""
    d = x + 1.0
    d = d.mask_fill(d.equal_elem(0.0), float(np.finfo(x.dtype.np).tiny))  # x = -1: atan(+inf-ish) = pi/2
    return atan(((1.0 - x) / d).sqrt()) * 2.0


def _expm1(x: Any) -> Any:
    """e^x - 1, accurate near 0 (Kahan's (u - 1) x / log u with u = e^x,
    which cancels the rounding of u); exp(x) - 1 itself outside [-1, 1]."""
    s = x.clamp(-1.0, 1.0)
    u = s.exp()
    um1 = u - 1.0
    zero = um1.equal_elem(0.0)  # |x| under half an ulp: e^x - 1 is x
    near = (um1 * s / u.log().mask_fill(zero, 1.0)).mask_where(zero, s)
    return near.mask_where(x.abs().greater_elem(1.0), x.exp() - 1.0)


def _exp_half(a: Any) -> Any:
    """e^a / 2 for a >= 0 without overflowing before the result does."""
    return (a - _LN2).exp()


def sinh(x: Any) -> Any:
    """ONNX `Sinh`: (e^|x| - e^-|x|) / 2 with the sign of x, through expm1
    below 1 (where the difference cancels) and e^(|x| - ln 2) above."""
    a = x.abs()
    e = _expm1(a.clamp_max(1.0))
    near = (e + e / (e + 1.0)) * 0.5
    y = near.mask_where(a.greater_elem(1.0), _exp_half(a) - (a.neg() - _LN2).exp())
    return y.mask_where(x.lower_elem(0.0), y.neg())


def cosh(x: Any) -> Any:
    """ONNX `Cosh`: e^(|x| - ln 2) + e^(-|x| - ln 2)."""
    a = x.abs()
    return _exp_half(a) + (a.neg() - _LN2).exp()


def asinh(x: Any) -> Any:
    """ONNX `Asinh`: log1p(a + a^2 / (1 + sqrt(1 + a^2))) for a = |x|, the
    log(a + sqrt(a^2 + 1)) rewritten not to cancel near 0; log(a) + ln 2
    once a^2 + 1 is a^2. The sign of x is put back."""
    a = x.abs()
    m = a.clamp_max(_LARGE)
    y = (m + m * m / ((m * m + 1.0).sqrt() + 1.0)).log1p()
    y = y.mask_where(a.greater_elem(_LARGE), a.clamp_min(1.0).log() + _LN2)
    return y.mask_where(x.lower_elem(0.0), y.neg())


def acosh(x: Any) -> Any:
    """ONNX `Acosh`: log(x + sqrt(x^2 - 1)) as log1p(t + sqrt(t (x + 1)))
    with t = x - 1, exact near 1; log(x) + ln 2 for large x; NaN below 1."""
    m = x.clamp_max(_LARGE)
    t = m - 1.0
    y = (t + (t * (m + 1.0)).sqrt()).log1p()
    return y.mask_where(x.greater_elem(_LARGE), x.clamp_min(1.0).log() + _LN2)


def atanh(x: Any) -> Any:
    """ONNX `Atanh`: log((1 + x) / (1 - x)) / 2 as log1p(2a / (1 - a)) / 2
    for a = |x|, which keeps small x exact; +-inf at +-1, NaN beyond."""
    a = x.abs()
    y = (a * 2.0 / (1.0 - a)).log1p() * 0.5
    return y.mask_where(x.lower_elem(0.0), y.neg())


# -- activations ------------------------------------------------------------------------
def elu(x: Any, alpha: float = 1.0) -> Any:
    """ONNX `Elu`: x above 0, alpha (e^x - 1) at or below."""
    return x.mask_where(x.lower_equal_elem(0.0), _expm1(x.clamp_max(0.0)) * alpha)


def selu(x: Any, alpha: float, gamma: float) -> Any:
    """ONNX `Selu`: gamma x above 0, gamma alpha (e^x - 1) at or below."""
    return elu(x, alpha) * gamma


def celu(x: Any, alpha: float = 1.0) -> Any:
    """ONNX `Celu`: max(0, x) + min(0, alpha (e^(x / alpha) - 1))."""
    return x.mask_where(x.lower_equal_elem(0.0), _expm1(x.clamp_max(0.0) / alpha) * alpha)


def shrink(x: Any, lambd: float = 0.5, bias: float = 0.0) -> Any:
    """ONNX `Shrink`: x + bias below -lambd, x - bias above lambd, 0 between.
    An Int input is shrunk as floats and truncated back, as ONNX's float
    attributes meet integer values."""
    if x.kind is Int:
        return shrink(x.float(), lambd, bias).int()
    out = x.zeros_like().mask_where(x.lower_elem(-lambd), x + bias)
    return out.mask_where(x.greater_elem(lambd), x - bias)


# -- comparisons -------------------------------------------------------------------------
def is_inf(x: Any, detect_positive: bool = True, detect_negative: bool = True) -> Any:
    """ONNX `IsInf`: true at +inf and/or -inf, as the two flags ask."""
    inf = float("inf")
    if detect_positive and detect_negative:
        return x.abs().equal_elem(inf)
    if detect_positive:
        return x.equal_elem(inf)
    if detect_negative:
        return x.equal_elem(-inf)
    return x.equal_elem(float("nan"))  # NaN equals nothing: all false


def _extreme(xs: tuple, greater: bool) -> Any:
    out = xs[0]
    for x in xs[1:]:
        take = x.greater(out) if greater else x.lower(out)
        if x.kind is Float:  # NaN wins, as in NumPy's maximum/minimum
            take = take.bool_or(x.is_nan())
        out = out.mask_where(take, x)
    return out


def maximum(*xs: Any) -> Any:
    """ONNX `Max`: the element-wise maximum of tensors of one rank whose
    shapes broadcast (NaN propagates)."""
    return _extreme(xs, True)


def minimum(*xs: Any) -> Any:
    """ONNX `Min`: the element-wise minimum, as `maximum`."""
    return _extreme(xs, False)


# -- Mod -------------------------------------------------------------------------------------
def mod(a: Any, b: Any, fmod: bool = False) -> Any:
    """ONNX `Mod` of two tensors of one rank (shapes broadcast) or of a
    tensor and a number. `fmod`: C's fmod, the sign of the dividend
    (a - trunc(a / b) b); otherwise Python's %, the sign of the divisor.
    Int division by 0 raises."""
    number = isinstance(b, (int, float))
    if not number:
        shape = broadcast_shape("Mod", a.dims(), b.dims())
        a = a if a.dims() == shape else a.expand(shape)
        b = b if b.dims() == shape else b.expand(shape)
    if a.kind is Int:
        if not fmod:
            return a.remainder(b)
        return a - (a / b) * b  # Int division truncates toward zero
    q = _trunc(a / b)
    # q = 0 (|a| < |b|, b infinite included) leaves a itself, where q b would be 0 inf = NaN
    r = a - (q * b).mask_fill(q.equal_elem(0.0), 0.0)
    if fmod:
        return r
    if number:
        wrong_sign = r.lower_elem(0.0) if b > 0 else r.greater_elem(0.0)
    else:
        wrong_sign = r.lower_elem(0.0).bool_and(b.greater_elem(0.0)).bool_or(
            r.greater_elem(0.0).bool_and(b.lower_elem(0.0)))
    return r.mask_where(wrong_sign, r + b)


# -- bitwise (host) -----------------------------------------------------------------------------
def _host(like: Any, values: np.ndarray) -> Any:
    array = np.asarray(values).astype(np.int64)
    array = array.reshape(1) if array.ndim == 0 else array
    return Tensor[like.backend, array.ndim, Int].from_data(array, like.device())


def _as(x: Any, dtype: str) -> np.ndarray:
    if x.kind is not Int:
        raise TypeError(f"bitwise operations take Int tensors, got a {x.kind.name} tensor {x.dims()}")
    # the i64 holds the value of the ONNX type (uint64 ones past 2**63 wrapped): a cast recovers the bits
    return x.to_numpy().astype(np.dtype(dtype))


def _bitwise(fn: Any, a: Any, b: Any, dtype: str) -> Any:
    with np.errstate(over="ignore"):
        return _host(a, fn(_as(a, dtype), _as(b, dtype)))


def bitwise_and(a: Any, b: Any, dtype: str = "int64") -> Any:
    """a & b in the ONNX integer type `dtype` (Burn's `bitwise_and`; host op)."""
    return _bitwise(np.bitwise_and, a, b, dtype)


def bitwise_or(a: Any, b: Any, dtype: str = "int64") -> Any:
    """a | b (Burn's `bitwise_or`; host op)."""
    return _bitwise(np.bitwise_or, a, b, dtype)


def bitwise_xor(a: Any, b: Any, dtype: str = "int64") -> Any:
    """a ^ b (Burn's `bitwise_xor`; host op)."""
    return _bitwise(np.bitwise_xor, a, b, dtype)


def bitwise_not(x: Any, dtype: str = "int64") -> Any:
    """~x in `dtype`: 255 - x for uint8 (Burn's `bitwise_not`; host op)."""
    return _host(x, np.invert(_as(x, dtype)))


def bitwise_left_shift(a: Any, b: Any, dtype: str = "int64") -> Any:
    """a << b, the bits shifted out of `dtype` lost (Burn's
    `bitwise_left_shift`; host op)."""
    return _bitwise(np.left_shift, a, b, dtype)


def bitwise_right_shift(a: Any, b: Any, dtype: str = "int64") -> Any:
    """a >> b; logical for the unsigned types ONNX `BitShift` takes (Burn's
    `bitwise_right_shift`; host op)."""
    return _bitwise(np.right_shift, a, b, dtype)


def wrap_ints(values: list[int], low: int, bits: int) -> list[int]:
    """Host ints (shape arithmetic kept as a Python list) brought into the
    `bits`-wide integer type starting at `low` (-128 for int8, 0 for uint8)
    as two's complement wraps them: the host twin of the Tensor wrap that
    `emit.narrow_int_result` emits."""
    span = 1 << bits
    return [(v - low) % span + low for v in values]


_SQRT_I64 = 3037000499  # floor(sqrt(2**63 - 1)): the product of two values within it fits in i64


def int_pow(base: Any, exp: Any, low: int, high: int) -> Any:
    """ONNX `Pow` of two Int tensors (ranks already equal) for an output
    type spanning [low, high], computed exactly in i64 by repeated squaring
    rather than through a float. As onnxruntime gives it (its double result
    converted to the type on x86-64): a result outside the type is `low`; a
    negative exponent gives 0 for |base| > 1, +-1 for base +-1 and `low` for
    0 (1 / 0). For types up to 32 bits the running values saturate at
    +-3037000499, so nothing wraps in i64 before the range check; int64
    results past i64 wrap."""
    b0, e0 = base + exp * 0, exp + base * 0  # both at the broadcast shape
    e, b, result = e0.abs(), b0, b0 * 0 + 1
    # one read-back: the largest exponent's bit length bounds the squarings
    rounds = max(int(np.asarray(e.max().to_numpy()).reshape(-1)[0]).bit_length(), 1)
    bound = _SQRT_I64 if high < _SQRT_I64 else None

    def kept(v: Any) -> Any:
        return v.clamp(-bound, bound) if bound is not None else v

    for i in range(rounds):
        result = result.mask_where(e.remainder_scalar(2).equal_elem(1), kept(result * b))
        if i + 1 < rounds:
            e, b = e / 2, kept(b * b)
    negative = e0.lower_elem(0)
    result = result.mask_fill(negative.bool_and(b0.abs().greater_elem(1)), 0)
    result = result.mask_fill(negative.bool_and(b0.equal_elem(0)), low)
    if low > -2 ** 63 or high < 2 ** 63 - 1:
        result = result.mask_fill(result.lower_elem(low).bool_or(result.greater_elem(high)), low)
    return result


# -- Clip and Dropout -------------------------------------------------------------------------
def clip(x: Any, low: Any = None, high: Any = None) -> Any:
    """ONNX `Clip` with tensor bounds: min(max(x, low), high)."""
    if low is not None:
        lo = align(low, x.ndim)
        x = x.mask_where(x.lower(lo.expand(x.dims()) if lo.dims() != x.dims() else lo), lo.expand(x.dims()))
    if high is not None:
        hi = align(high, x.ndim)
        x = x.mask_where(x.greater(hi.expand(x.dims()) if hi.dims() != x.dims() else hi), hi.expand(x.dims()))
    return x


def dropout(x: Any, ratio: Any, training: Any = False) -> tuple:
    """ONNX `Dropout` whose ratio or training flag arrive as tensors: the
    output and the Bool keep-mask. Identity unless `training` is true."""
    p = float(floats(ratio)[0]) if not isinstance(ratio, (int, float)) else float(ratio)
    train = bool(training) if isinstance(training, bool) else bool(np.asarray(training.to_numpy()).reshape(-1)[0])
    if not train or p == 0.0:
        return x, dropout_mask(x)
    keep = Tensor[x.backend, x.ndim].random(x.dims(), Distribution.Bernoulli(1.0 - p), x.device()).bool()
    kept = x.zeros_like().mask_where(keep, x / (1.0 - p)) if p < 1.0 else x.zeros_like()
    return kept, keep


def dropout_mask(x: Any) -> Any:
    """The mask output of an inference-mode `Dropout`: every value kept."""
    return x.ones_like().bool() if x.kind is not Bool else x.ones_like()
