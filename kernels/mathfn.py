"""Scalar math for the element-wise kernels: what Taichi lacks (erf, log1p,
matching the NumPy reference), an f32 exp that LLVM vectorises on the CPU
(`exp32`), and the dispatchers (`exp_`, `log_`, `sin_`, `cos_`, `tanh_`,
`pow_`) that pick the native instruction or, on SPIR-V archs, a routine of
spirv_math.py.

Each function computes in its argument's precision (see the rules in
kernels/__init__.py): f32 math in f32, f64 math in f64."""

import math

import taichi as ti

from .context import CONTEXT
from .spirv_math import cos64, exp64, expm1_series, log32, log64, pow_spirv, sin64

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_ONE_OVER_SQRT_PI = 1.0 / math.sqrt(math.pi)


# 2/sqrt(pi) * (-1)^k / (k! (2k + 1)): Maclaurin coefficients of erf(x)/x.
_ERF_SERIES = tuple(_TWO_OVER_SQRT_PI * (-1) ** k / (math.factorial(k) * (2 * k + 1)) for k in range(13))

# erfc fit coefficients, innermost first (Numerical Recipes' erfcc).
_FIT = (-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
        0.09678418, 0.37409196, 1.00002368)


@ti.func
def erf_fit(x, ct: ti.template()):
    """erf of an f32 value in f32 (f16 comes widened to f32), with the Numerical
    Recipes Chebyshev fit of erfc that the NdArray backend evaluates in f64
    (fit error < 1.2e-7; in f32 a few ulp more). Everything stays in `ct`: an
    f64 step here would make every unary kernel illegal on SPIR-V archs.

    Branch-free, so that LLVM vectorises it on the CPU arch: both the fit and
    the Maclaurin series are computed and `ti.select` keeps one, and the
    exponential is `exp_` (the vectorisable `exp32` on the CPU), where a
    branch and `ti.exp`'s scalar libm call kept every lane scalar (a GELU of
    1M floats took ~8x an exp's time)."""
    z = ti.abs(x)
    one = ct(1.0)
    t = one / (one + ct(0.5) * z)
    p = ct(0.17087277)
    for i in ti.static(range(len(_FIT))):
        p = ct(_FIT[i]) + t * p
    erfc = t * exp_(-z * z - ct(1.26551223) + t * p, ct)
    fit = ti.select(x >= 0, one - erfc, erfc - one)
    # Near 0 the fit's absolute error dwarfs erf itself, so take the
    # Maclaurin series there, as the NdArray backend does.
    x2 = x * x
    s = ct(_ERF_SERIES[12])
    for k in ti.static(range(11, -1, -1)):
        s = ct(_ERF_SERIES[k]) + x2 * s
    return ti.select(z < ct(0.5), x * s, fit)


@ti.func
def erf64(x):
    """erf in f64 to ~1e-15 relative: for |x| < 2.5 the positive-term series
    erf(x) = 2/sqrt(pi) e^(-x^2) sum 2^n x^(2n+1) / (1*3*...*(2n+1)) (no
    cancellation, < 45 terms); above, 1 - erfc(|x|) from erfc's continued
    fraction evaluated backwards 40 deep; 1 from |x| >= 6."""
    xd = ti.cast(x, ti.f64)
    z = ti.abs(xd)
    r = ti.cast(1.0, ti.f64)
    if z < 2.5:
        z2 = z * z
        term = z
        s = z
        for n in range(1, 60):
            term = term * 2.0 * z2 / (2.0 * n + 1.0)
            s += term
            if term <= ti.f64(1e-17) * s:
                break
        r = ti.f64(_TWO_OVER_SQRT_PI) * exp_(-z2, ti.f64) * s
    elif z < 6.0:
        f = z
        for q in range(40):
            n = 40 - q
            f = z + (0.5 * n) / f
        r = 1.0 - exp_(-z * z, ti.f64) * ti.f64(_ONE_OVER_SQRT_PI) / f
    if xd < 0:
        r = -r
    if ti.math.isnan(xd):
        r = xd
    return r


@ti.func
def log1p(x, ct: ti.template()):
    """log(1 + x) accurate for small x, in x's precision `ct`: for |x| < 0.25
    2 atanh(x / (2 + x)) by its series (SPIR-V's log may be off by 2**-21
    absolute near 1, which Goldberg's trick would carry into the result), else
    Goldberg's log(u) * x / (u - 1) with u = 1 + x."""
    u = 1.0 + x
    r = log_(u, ct)
    if ti.abs(x) < 0.25:
        s = x / (2.0 + x)  # |s| < 1/7
        s2 = s * s
        q = ct(1.0 / 21.0)
        for n in ti.static(range(9, -1, -1)):
            q = ct(1.0 / (2 * n + 1)) + s2 * q
        r = 2.0 * s * q
    elif not ti.math.isinf(u):
        r = r * (x / (u - 1.0))
    return r


# -- tanh on SPIR-V archs, from exp ---------------------------------------------------
@ti.func
def tanh_spirv(x, ct: ti.template()):
    """tanh in `ct` from exp: SPIR-V's own tanh loses all relative accuracy
    near 0 (lavapipe: thousands of ulp), so below 0.5 e**2x - 1 comes from
    its series."""
    a = ti.abs(x)
    r = ct(1.0)
    if ti.math.isnan(x):
        r = x
    elif a < 0.5:
        t = expm1_series(2.0 * a, ct)
        r = t / (t + 2.0)
    elif a < 22.0:
        e = exp_(2.0 * a, ct)
        r = (e - 1.0) / (e + 1.0)
    if x < 0:
        r = -r
    return r


# Cephes' expf: exp(r) ~ 1 + r + r^2 P(r) on |r| <= ln2/2, P innermost first.
_EXPF_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
           1.6666665459e-1, 5.0000001201e-1)
_LN2_HI32, _LN2_LO32 = 0.693145751953125, 1.428606765330187e-06  # ln 2 split for f32 (16-bit high part)


@ti.func
def exp32(x):
    """exp of an f32 in f32 and i32 arithmetic only (within 1 ulp of NumPy;
    overflow to inf; NaN kept; subnormal results as libm gives them). On the CPU
    arch LLVM vectorises this, while `ti.exp` calls scalar libm for each
    element. 2^k is added to p's exponent bits. Needs Taichi's fast-math off
    (burnbook's runtime turns it off), which would merge the two-part ln 2;
    NaN is found from the bits, which fast-math could not fold away."""
    f = ti.f32
    xc = ti.min(ti.max(x, f(-104.0)), f(88.75))
    # round(xc / ln 2) by truncating a positive value: no floor call on
    # baseline x86-64, where LLVM would not vectorise one.
    ki = ti.cast(xc * f(1.4426950408889634) + f(200.5), ti.i32) - 200
    k = ti.cast(ki, f)
    r = xc - k * f(_LN2_HI32)  # exact: _LN2_HI32 has 16 bits, |k| <= 150
    r = r - k * f(_LN2_LO32)
    p = f(_EXPF_P[0])
    for i in ti.static(range(1, len(_EXPF_P))):
        p = p * r + f(_EXPF_P[i])
    p = p * r * r + r + f(1.0)
    pb = ti.bit_cast(p, ti.i32)
    e = (pb >> 23) + ki
    res = ti.bit_cast(pb + (ki << 23), f)
    # Below the normal range, scale in two steps so the last one rounds into
    # a subnormal (or to 0 where the CPU flushes them), as libm's exp does.
    tiny = ti.bit_cast(pb + ((ki + 100) << 23), f) * f(2.0 ** -100)
    res = ti.select(e <= 0, tiny, ti.select(e >= 255, f(math.inf), res))
    xb = ti.bit_cast(x, ti.i32) & 0x7FFFFFFF
    return ti.select(xb > 0x7F800000, x, res)


# Dispatchers: the native instruction, or a routine of spirv_math.py on SPIR-V
# archs (and exp32 for f32 exp on the CPU). `settings.spirv` is set once,
# before any kernel compiles, when the runtime starts (the arch never changes
# in a process), and read here in `ti.static`.
@ti.func
def exp_(x, ct: ti.template()):
    r = x
    if ti.static(ct == ti.f64 and CONTEXT.settings.spirv):
        r = exp64(x)
    elif ti.static(ct == ti.f32 and not CONTEXT.settings.gpu):
        r = exp32(x)
    else:
        r = ti.exp(x)
    return r


@ti.func
def log_(x, ct: ti.template()):
    r = x
    if ti.static(ct == ti.f64 and CONTEXT.settings.spirv):
        r = log64(x)
    elif ti.static(CONTEXT.settings.spirv):
        r = log32(x)
    else:
        r = ti.log(x)
    return r


@ti.func
def sin_(x, ct: ti.template()):
    r = x
    if ti.static(ct == ti.f64 and CONTEXT.settings.spirv):
        r = sin64(x)
    else:
        r = ti.sin(x)
    return r


@ti.func
def cos_(x, ct: ti.template()):
    r = x
    if ti.static(ct == ti.f64 and CONTEXT.settings.spirv):
        r = cos64(x)
    else:
        r = ti.cos(x)
    return r


@ti.func
def tanh_(x, ct: ti.template()):
    r = x
    if ti.static(CONTEXT.settings.spirv):
        r = tanh_spirv(x, ct)
    else:
        r = ti.tanh(x)
    return r


@ti.func
def pow_(x, y, ct: ti.template()):
    r = x
    if ti.static(CONTEXT.settings.spirv):
        r = pow_spirv(x, y, ct)
    else:
        r = x**y
    return r
