"""Scalar math that Taichi lacks: erf and log1p, matching the NumPy reference.

Each function computes in its argument's precision (see the rules in
kernels/__init__.py): f32 math in f32, f64 math in f64."""

import math

import taichi as ti

from burnbook.backend.taichi.settings import SETTINGS

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
    f64 step here would make every unary kernel illegal on SPIR-V archs."""
    z = ti.abs(x)
    one = ct(1.0)
    t = one / (one + ct(0.5) * z)
    p = ct(0.17087277)
    for i in ti.static(range(len(_FIT))):
        p = ct(_FIT[i]) + t * p
    erfc = t * ti.exp(-z * z - ct(1.26551223) + t * p)
    r = erfc - one
    if x >= 0:
        r = one - erfc
    if z < 0.5:
        # Near 0 the fit's absolute error dwarfs erf itself, so take the
        # Maclaurin series there, as the NdArray backend does.
        x2 = x * x
        s = ct(_ERF_SERIES[12])
        for k in ti.static(range(11, -1, -1)):
            s = ct(_ERF_SERIES[k]) + x2 * s
        r = x * s
    return r


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


# -- for SPIR-V archs (Vulkan, Metal) ------------------------------------------------
# SPIR-V's GLSL.std.450 exp/log/pow/sin/cos/tanh take 32-bit floats at most, so
# there an f64 kernel computes them from +, *, / and bit casts (within a few
# ulp; sin/cos reduce the argument with a three-part pi/2, exact for
# |x| < 2**19 * pi/2 and degrading beyond). Its f32 log and tanh lose all
# relative accuracy near 1 and 0, and its pow is undefined for x <= 0, so
# those get f32 routines too. `SETTINGS.spirv` is set once, before any kernel
# compiles, when the runtime starts (the arch never changes in a process).

_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
_PIO2_1, _PIO2_2, _PIO2_3 = 1.57079632673412561417e+00, 6.07710050650619224932e-11, 2.02226624879595063154e-21
_INV_FACT = tuple(1.0 / math.factorial(n) for n in range(22))


@ti.func
def _f64(c: ti.template()):
    # An f64 constant. (A plain argument, or ti.cast of a Python float, would
    # round it to the default f32 first.)
    return ti.f64(c)


@ti.func
def _pow2(k):
    """2**k as f64 for integer k in [-1022, 1023], built from its bits."""
    return ti.bit_cast((ti.cast(k, ti.i64) + 1023) << 52, ti.f64)


@ti.func
def _expm1_series(y, ct: ti.template()):
    """e**y - 1 for |y| <= 1 in `ct`, by Taylor's series (no cancellation):
    to y**21 in f64, y**11 in f32."""
    top = ti.static(21 if ct == ti.f64 else 11)
    s = ct(_INV_FACT[top])
    for n in ti.static(range(top - 1, 0, -1)):
        s = ct(_INV_FACT[n]) + y * s
    return y * s


@ti.func
def exp64(x):
    r = _f64(0.0)
    if ti.math.isnan(x):
        r = x
    elif x > _f64(709.782712893384):
        r = _f64(math.inf)
    elif x >= _f64(-745.2):
        k = ti.round(x * _f64(1.4426950408889634))  # x / ln 2
        t = (x - k * _f64(_LN2_HI)) - k * _f64(_LN2_LO)  # |t| <= ln2 / 2, exactly reduced
        p = _f64(_INV_FACT[16])
        for n in ti.static(range(15, -1, -1)):
            p = _f64(_INV_FACT[n]) + t * p
        ki = ti.cast(k, ti.i32)
        # 2**k in two factors: k reaches -1075 (subnormal results) and 1024
        h = ti.raw_div(ki, 2)
        r = p * _pow2(h) * _pow2(ki - h)
    return r


@ti.func
def log64(x):
    r = _f64(0.0)
    if ti.math.isnan(x) or x < 0:
        r = _f64(math.nan)
    elif x == 0:
        r = _f64(-math.inf)
    elif ti.math.isinf(x):
        r = x
    else:
        m = x
        e = ti.cast(0, ti.i64)
        if m < _f64(2.2250738585072014e-308):  # subnormal: scale into the normal range first
            m = m * _f64(18014398509481984.0)  # 2**54
            e = ti.cast(-54, ti.i64)
        bits = ti.bit_cast(m, ti.i64)
        e += ((bits >> 52) & 0x7FF) - 1023
        m = ti.bit_cast((bits & ti.i64(0xFFFFFFFFFFFFF)) | (ti.i64(1023) << 52), ti.f64)  # [1, 2)
        if m > _f64(1.4142135623730951):
            m = m * 0.5
            e += 1
        f = m - 1.0
        s = f / (2.0 + f)  # log(m) = 2 atanh(s), |s| < 0.172
        s2 = s * s
        q = _f64(1.0 / 25.0)
        for n in ti.static(range(11, -1, -1)):
            q = _f64(1.0 / (2 * n + 1)) + s2 * q
        ef = ti.cast(e, ti.f64)
        r = ef * _f64(_LN2_HI) + (2.0 * s * q + ef * _f64(_LN2_LO))
    return r


@ti.func
def _sin_poly(r):
    r2 = r * r
    s = _f64(_INV_FACT[21])
    for n in ti.static(range(9, -1, -1)):
        s = _f64((-1) ** n * _INV_FACT[2 * n + 1]) + r2 * s
    return r * s


@ti.func
def _cos_poly(r):
    r2 = r * r
    c = _f64(_INV_FACT[20])
    for n in ti.static(range(9, -1, -1)):
        c = _f64((-1) ** n * _INV_FACT[2 * n]) + r2 * c
    return c


@ti.func
def _sincos64(x, want_cos: ti.template()):
    r = _f64(math.nan)
    if not (ti.math.isnan(x) or ti.math.isinf(x)):
        k = ti.round(x * _f64(0.6366197723675814))  # x / (pi/2)
        t = ((x - k * _f64(_PIO2_1)) - k * _f64(_PIO2_2)) - k * _f64(_PIO2_3)
        q = ti.cast(k - 4.0 * ti.floor(k * 0.25), ti.i32)  # k mod 4, also for huge k
        if ti.static(want_cos):
            q += 1
        q = q & 3
        if q == 0:
            r = _sin_poly(t)
        elif q == 1:
            r = _cos_poly(t)
        elif q == 2:
            r = -_sin_poly(t)
        else:
            r = -_cos_poly(t)
    return r


@ti.func
def sin64(x):
    return _sincos64(x, False)


@ti.func
def cos64(x):
    return _sincos64(x, True)


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
        t = _expm1_series(2.0 * a, ct)
        r = t / (t + 2.0)
    elif a < 22.0:
        e = exp_(2.0 * a, ct)
        r = (e - 1.0) / (e + 1.0)
    if x < 0:
        r = -r
    return r


@ti.func
def log32(x):
    """log of an f32 in f32 arithmetic (within 2 ulp), for SPIR-V archs, whose
    f32 log is only good to 2**-21 absolute near 1 (lavapipe: 10**4 ulp)."""
    r = ti.f32(0.0)
    if ti.math.isnan(x) or x < 0:
        r = ti.f32(math.nan)
    elif x == 0:
        r = ti.f32(-math.inf)
    elif ti.math.isinf(x):
        r = x
    else:
        m = x
        e = 0
        if m < ti.f32(1.1754943508222875e-38):  # subnormal: scale into the normal range first
            m = m * ti.f32(16777216.0)  # 2**24
            e = -24
        bits = ti.bit_cast(m, ti.i32)
        e += ((bits >> 23) & 0xFF) - 127
        m = ti.bit_cast((bits & 0x7FFFFF) | (127 << 23), ti.f32)  # [1, 2)
        if m > ti.f32(1.4142135623730951):
            m = m * 0.5
            e += 1
        f = m - 1.0
        s = f / (2.0 + f)  # log(m) = 2 atanh(s), |s| < 0.172
        s2 = s * s
        q = ti.f32(1.0 / 13.0)
        for n in ti.static(range(5, -1, -1)):
            q = ti.f32(1.0 / (2 * n + 1)) + s2 * q
        ef = ti.cast(e, ti.f32)
        # ln 2 split so that ef * hi is exact for |e| < 2**8
        r = ef * ti.f32(0.693145751953125) + (2.0 * s * q + ef * ti.f32(1.428606765330187e-06))
    return r


@ti.func
def pow_spirv(x, y, ct: ti.template()):
    """x**y with C99/NumPy's special cases, for SPIR-V archs, where pow is
    undefined for x <= 0 (so (-2)**3 would not be -8). The core is pow(|x|, y):
    SPIR-V's for f32, exp(y log|x|) in f64 arithmetic for f64, whose error
    grows with |y log x| (about 1e-13 relative for results near 1e300)."""
    inf = ct(math.inf)
    r = ct(math.nan)
    ax = ti.abs(x)
    y_int = ti.floor(y) == y
    y_odd = False
    if y_int and ti.abs(y) < ct(9007199254740992.0):
        h = y * 0.5
        y_odd = ti.floor(h) != h
    if y == 0 or x == 1:
        r = ct(1.0)
    elif ti.math.isnan(x) or ti.math.isnan(y):
        r = ct(math.nan)
    elif ti.math.isinf(y):
        r = ct(1.0)
        if ax > 1:
            r = inf if y > 0 else ct(0.0)
        elif ax < 1:
            r = ct(0.0) if y > 0 else inf
    elif x < 0 and not y_int:
        r = ct(math.nan)
    else:
        m = ct(0.0)
        if ti.math.isinf(ax):
            m = inf if y > 0 else ct(0.0)
        elif ax == 0:
            m = ct(0.0) if y > 0 else inf
        elif ti.static(ct == ti.f64):
            m = exp64(y * log64(ax))
        else:
            m = ax**y
        r = m
        if y_odd and (x < 0 or (x == 0 and 1.0 / x < 0)):
            r = -m
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


# Dispatchers: the native instruction, or the routine above on SPIR-V archs.
@ti.func
def exp_(x, ct: ti.template()):
    r = x
    if ti.static(ct == ti.f64 and SETTINGS.spirv):
        r = exp64(x)
    elif ti.static(ct == ti.f32 and not SETTINGS.gpu):
        r = exp32(x)
    else:
        r = ti.exp(x)
    return r


@ti.func
def log_(x, ct: ti.template()):
    r = x
    if ti.static(ct == ti.f64 and SETTINGS.spirv):
        r = log64(x)
    elif ti.static(SETTINGS.spirv):
        r = log32(x)
    else:
        r = ti.log(x)
    return r


@ti.func
def sin_(x, ct: ti.template()):
    r = x
    if ti.static(ct == ti.f64 and SETTINGS.spirv):
        r = sin64(x)
    else:
        r = ti.sin(x)
    return r


@ti.func
def cos_(x, ct: ti.template()):
    r = x
    if ti.static(ct == ti.f64 and SETTINGS.spirv):
        r = cos64(x)
    else:
        r = ti.cos(x)
    return r


@ti.func
def tanh_(x, ct: ti.template()):
    r = x
    if ti.static(SETTINGS.spirv):
        r = tanh_spirv(x, ct)
    else:
        r = ti.tanh(x)
    return r


@ti.func
def pow_(x, y, ct: ti.template()):
    r = x
    if ti.static(SETTINGS.spirv):
        r = pow_spirv(x, y, ct)
    else:
        r = x**y
    return r
