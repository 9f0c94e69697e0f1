"""Scalar math that Taichi lacks: erf and log1p, matching the NumPy reference.

Each function computes in its argument's precision (see the rules in
kernels/__init__.py): f32 math in f32, f64 math in f64."""

import math

import taichi as ti

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
    one = ti.cast(1.0, ct)
    t = one / (one + ti.cast(0.5, ct) * z)
    p = ti.cast(0.17087277, ct)
    for i in ti.static(range(len(_FIT))):
        p = ti.cast(_FIT[i], ct) + t * p
    erfc = t * ti.exp(-z * z - ti.cast(1.26551223, ct) + t * p)
    r = erfc - one
    if x >= 0:
        r = one - erfc
    if z < 0.5:
        # Near 0 the fit's absolute error dwarfs erf itself, so take the
        # Maclaurin series there, as the NdArray backend does.
        x2 = x * x
        s = ti.cast(_ERF_SERIES[12], ct)
        for k in ti.static(range(11, -1, -1)):
            s = ti.cast(_ERF_SERIES[k], ct) + x2 * s
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
        r = ti.f64(_TWO_OVER_SQRT_PI) * ti.exp(-z2) * s
    elif z < 6.0:
        f = z
        for q in range(40):
            n = 40 - q
            f = z + (0.5 * n) / f
        r = 1.0 - ti.exp(-z * z) * ti.f64(_ONE_OVER_SQRT_PI) / f
    if xd < 0:
        r = -r
    if ti.math.isnan(xd):
        r = xd
    return r


@ti.func
def log1p(x):
    """log(1 + x) accurate for small x (Goldberg's trick), in x's precision."""
    u = 1.0 + x
    r = ti.log(u)
    if u == 1.0:
        r = x
    elif not ti.math.isinf(u):
        r = ti.log(u) * (x / (u - 1.0))
    return r
