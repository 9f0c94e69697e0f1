"""Math routines for SPIR-V archs (Vulkan, Metal), where the native ones fall
short: f64 exp, log, sin and cos from f64 arithmetic, f32 log, and pow with
C99's special values. mathfn.py's dispatchers (`exp_`, `log_`...) choose
them, with `ti.static`, on SPIR-V archs only.

Each function computes in its argument's precision (see the rules in
kernels/__init__.py)."""

import math

import taichi as ti

# SPIR-V's GLSL.std.450 exp/log/pow/sin/cos/tanh take 32-bit floats at most, so
# there an f64 kernel computes them from +, *, / and bit casts (within a few
# ulp; sin/cos reduce the argument with a three-part pi/2, exact for
# |x| < 2**19 * pi/2 and degrading beyond). Its f32 log and tanh lose all
# relative accuracy near 1 and 0, and its pow is undefined for x <= 0, so
# those get f32 routines too. mathfn.py's dispatchers pick them on SPIR-V archs.

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
def expm1_series(y, ct: ti.template()):
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
