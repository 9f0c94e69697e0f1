"""`NdArray`: the reference backend, every primitive a NumPy array on the CPU.

The primitive is a plain `np.ndarray`, never mutated after it is made (ops
that "assign" return new arrays), so views are safe to share. Keeping the
primitive bare keeps the per-op cost close to NumPy's own call.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _malloc
from .base import Backend, share_layout_ops
from .ndarray_erf import erf_f32
from .ndarray_module import NdArrayModuleOps

# NumPy's temporaries reuse freed heap memory instead of fresh pages (see _malloc).
_malloc.keep_freed_memory()

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
    `special.erf` below `_ERF_SCIPY_BELOW` elements and `ndarray_erf.erf_f32`
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


class Cpu:
    """The one device of `NdArray`: the host CPU."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Cpu"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cpu)

    def __hash__(self) -> int:
        return hash("Cpu")


_CPU = Cpu()


def _slice_assign(p, ranges, values):
    out = p.copy()
    out[ranges] = values
    return out


def _scatter(dim, p, indices, values):
    out = p.copy()
    idx = list(np.indices(indices.shape, sparse=True))
    idx[dim] = indices
    np.add.at(out, tuple(idx), values)
    return out


def _select_assign(p, dim, indices, values):
    out = p.copy()
    index = [slice(None)] * p.ndim
    index[dim] = indices
    np.add.at(out, tuple(index), values)
    return out


def _mask_where(p, mask, values):
    return np.where(mask, values, p)


def _mask_fill(p, mask, value):
    return np.where(mask, np.asarray(value, dtype=p.dtype), p)


def _clamp(p, lo, hi):
    # np.clip is one pass and several times faster than maximum + minimum
    # with a scalar (mobilenet's ReLU6 on a 112x112 plane: 0.7 ms against 3);
    # it keeps NaN as they do.
    if lo is None and hi is None:
        return p
    return np.clip(p, None if lo is None else np.asarray(lo, dtype=p.dtype),
                   None if hi is None else np.asarray(hi, dtype=p.dtype))


def _int_div(a, b):
    # Truncate toward zero as Burn (and C, Rust) do; NumPy floors. The tensor
    # layer refuses zero divisors; INT64_MIN / -1 wraps, like every i64
    # overflow, so only NumPy's overflow warning is silenced.
    with np.errstate(over="ignore"):
        q = np.floor_divide(a, b)
    fix = (q < 0) & (q * b != a)
    return q + fix


def _gather(dim, p, indices):
    # torch.gather reads by the index's shape: where the index is smaller
    # than `p` outside `dim`, only the leading part of `p` is read
    # (take_along_axis alone would broadcast the index over all of `p`).
    if any(n != m for d, (n, m) in enumerate(zip(indices.shape, p.shape)) if d != dim):
        p = p[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(indices.shape))]
    return np.take_along_axis(p, indices, axis=dim)


def _via_f64(fn):
    """`fn` evaluated in f64 and rounded back for f32/f16 arrays: NumPy's SIMD
    f32 sin and cos are often 1 ulp off the correctly rounded value that
    Rust's libm, and so Burn's printed output, gives (the reference notebook's
    sin(x^2) digits depend on it). exp, log, log1p and tanh keep NumPy's f32
    loops: also within 1 ulp, and several times faster on small tensors."""
    def op(p):
        if p.dtype == np.float64:
            return fn(p)
        return fn(p, dtype=np.float64).astype(p.dtype)

    return op


def _full_reduce(name):
    # The ndarray methods skip np.sum's Python wrapper (a few µs per call).
    return lambda p: np.asarray(getattr(p, name)()).reshape(1).astype(p.dtype, copy=False)


_F32_ZERO, _F32_INF = np.float32(0), np.float32(np.inf)
_RELU_ZERO = {"f": _F32_ZERO, "d": np.float64(0)}   # float_relu's maximum(0, x) types


@share_layout_ops
class NdArray(NdArrayModuleOps, Backend):
    """NumPy on the CPU (Burn's `NdArray<f32>`); device `Cpu`. Module ops
    (conv, pooling) come from `NdArrayModuleOps` (NumPy sliding windows) and
    `Backend`'s defaults."""

    Device = Cpu
    is_autodiff = False
    _rng = np.random.default_rng()

    @classmethod
    def name(cls) -> str:
        return "ndarray"

    @classmethod
    def default_device(cls) -> Cpu:
        return _CPU

    @classmethod
    def seed(cls, seed: int) -> None:
        cls._rng = np.random.default_rng(seed)

    # -- data and creation ---------------------------------------------------
    @staticmethod
    def float_from_data(array, device):
        return np.array(array, copy=True)

    @staticmethod
    def float_into_data(p):
        return np.array(p, copy=True)

    @staticmethod
    def float_empty(shape, device, dtype=np.float32):
        return np.empty(shape, dtype=dtype)

    @staticmethod
    def float_full(shape, value, device, dtype=np.float32):
        return np.full(shape, value, dtype=dtype)

    @classmethod
    def float_random(cls, shape, distribution, device, dtype=np.float32):
        return distribution.sample(cls._rng, tuple(shape), dtype)

    @staticmethod
    def float_shape(p):
        return p.shape

    @staticmethod
    def float_device(p):
        return _CPU

    @staticmethod
    def float_to_device(p, device):
        if not isinstance(device, Cpu):
            raise ValueError(f"to_device: the ndarray backend has only the Cpu device, not {device}")
        return p

    @staticmethod
    def float_dtype(p):
        return p.dtype

    @staticmethod
    def float_cast(p, dtype):
        with np.errstate(over="ignore"):  # beyond f16's range is inf, as IEEE casts give
            return p.astype(dtype)

    # -- layout --------------------------------------------------------------
    @staticmethod
    def float_reshape(p, shape):
        return p.reshape(shape)

    @staticmethod
    def float_swap_dims(p, d1, d2):
        return np.swapaxes(p, d1, d2)

    @staticmethod
    def float_permute(p, axes):
        return np.transpose(p, axes)

    @staticmethod
    def float_expand(p, shape):
        return np.broadcast_to(p, shape)

    @staticmethod
    def float_slice(p, ranges):
        return p[ranges]

    float_slice_assign = staticmethod(_slice_assign)

    @staticmethod
    def float_cat(ps, dim):
        return np.concatenate(ps, axis=dim)

    # -- indexing ------------------------------------------------------------
    float_gather = staticmethod(_gather)
    float_scatter = staticmethod(_scatter)

    @staticmethod
    def float_select(p, dim, indices):
        return np.take(p, indices, axis=dim)

    float_select_assign = staticmethod(_select_assign)
    float_mask_where = staticmethod(_mask_where)
    float_mask_fill = staticmethod(_mask_fill)

    # -- arithmetic ----------------------------------------------------------
    float_add = staticmethod(np.add)
    float_sub = staticmethod(np.subtract)
    float_mul = staticmethod(np.multiply)
    float_div = staticmethod(np.divide)
    float_powf = staticmethod(np.power)

    @staticmethod
    def float_add_scalar(p, s):
        return p + s

    @staticmethod
    def float_sub_scalar(p, s):
        return p - s

    @staticmethod
    def float_mul_scalar(p, s):
        return p * s

    @staticmethod
    def float_div_scalar(p, s):
        return p / s

    @staticmethod
    def float_powf_scalar(p, s):
        if s == 2.0:
            return p * p
        return np.power(p, np.asarray(s, dtype=p.dtype))

    float_neg = staticmethod(np.negative)
    float_abs = staticmethod(np.abs)
    float_clamp = staticmethod(_clamp)

    # -- unary math ------------------------------------------------------------
    float_exp = staticmethod(np.exp)
    float_log = staticmethod(np.log)
    float_log1p = staticmethod(np.log1p)
    float_erf = staticmethod(np_erf)
    float_sqrt = staticmethod(np.sqrt)

    @staticmethod
    def float_recip(p):
        # The same bits as np.reciprocal, faster on large f32 arrays
        # (NumPy's divide loop is vectorised, its reciprocal is not).
        return np.divide(1, p)

    float_cos = staticmethod(_via_f64(np.cos))
    float_sin = staticmethod(_via_f64(np.sin))
    float_tanh = staticmethod(np.tanh)

    @staticmethod
    def float_relu(p):
        # Both keep NaN and -0.0, as PyTorch's relu does. On large f32 arrays
        # NumPy's two-sided clip runs SIMD and is ~2.6x faster than maximum
        # with a scalar (what a one-sided clip calls); on small ones maximum
        # saves clip's ~3 us of Python. Of two equal zeros NumPy's f32/f64
        # maximum returns the second operand, so 0 goes first; its f16 loop
        # returns the first, so f16 (and any other float type) takes clip.
        c = p.dtype.char
        if c == "f" and p.size > 4096:
            return np.clip(p, _F32_ZERO, _F32_INF)
        zero = _RELU_ZERO.get(c)
        if zero is None:
            return np.clip(p, p.dtype.type(0), p.dtype.type(np.inf))
        return np.maximum(zero, p)

    @staticmethod
    def float_sigmoid(p):
        # 1 / (1 + e^-x) in four passes. e^-x overflows to inf below x = -88
        # (f32), giving 0 as PyTorch does; elsewhere the error stays within
        # rounding on both tails (the division by a large 1 + e^-x is exact
        # to an ulp). f16 runs in f32: its own e^-x would overflow at -11.
        q = p.astype(np.float32) if p.dtype.char == "e" else p
        with np.errstate(over="ignore"):
            e = np.exp(np.negative(q))
        e += 1
        r = np.divide(1, e, out=e)   # reciprocal's bits, vectorised (see float_recip)
        return r.astype(np.float16) if q is not p else r

    # -- comparison ----------------------------------------------------------
    float_equal = staticmethod(np.equal)
    float_greater = staticmethod(np.greater)
    float_greater_equal = staticmethod(np.greater_equal)
    float_lower = staticmethod(np.less)
    float_lower_equal = staticmethod(np.less_equal)
    float_equal_elem = staticmethod(np.equal)
    float_greater_elem = staticmethod(np.greater)
    float_greater_equal_elem = staticmethod(np.greater_equal)
    float_lower_elem = staticmethod(np.less)
    float_lower_equal_elem = staticmethod(np.less_equal)

    # -- reductions ----------------------------------------------------------
    float_sum = staticmethod(_full_reduce("sum"))
    float_max = staticmethod(_full_reduce("max"))
    float_min = staticmethod(_full_reduce("min"))

    @staticmethod
    def float_sum_dim(p, dim):
        return p.sum(axis=dim, keepdims=True)

    @staticmethod
    def float_mean_dim(p, dim):
        if p.shape[dim] == 0:  # the mean of nothing is NaN, without NumPy's "empty slice" warning
            return np.full(p.shape[:dim] + (1,) + p.shape[dim + 1:], np.nan, dtype=p.dtype)
        if p.dtype.char == "e":  # f16: NumPy sums it in f32
            return p.mean(axis=dim, keepdims=True)
        # np.mean's own two ufunc calls (the same bits), without its Python wrapper's 4 us
        s = np.add.reduce(p, axis=dim, keepdims=True)
        return np.true_divide(s, p.shape[dim], out=s)

    @staticmethod
    def float_max_dim(p, dim):
        return p.max(axis=dim, keepdims=True)

    @staticmethod
    def float_min_dim(p, dim):
        return p.min(axis=dim, keepdims=True)

    @staticmethod
    def float_argmax(p, dim):
        return np.expand_dims(np.argmax(p, axis=dim), dim).astype(np.int64, copy=False)

    @staticmethod
    def float_argmin(p, dim):
        return np.expand_dims(np.argmin(p, axis=dim), dim).astype(np.int64, copy=False)

    # -- linear algebra and conversion -------------------------------------------
    float_matmul = staticmethod(np.matmul)

    @staticmethod
    def float_into_int(p):
        return p.astype(np.int64)

    # -- Int: the same NumPy calls, int64 primitives -----------------------------
    @staticmethod
    def int_from_data(array, device):
        return np.array(array, dtype=np.int64, copy=True)


    @staticmethod
    def int_empty(shape, device):
        return np.empty(shape, dtype=np.int64)

    @staticmethod
    def int_full(shape, value, device):
        return np.full(shape, value, dtype=np.int64)

    int_add = float_add
    int_sub = float_sub
    int_mul = float_mul
    int_div = staticmethod(_int_div)
    int_add_scalar = float_add_scalar
    int_sub_scalar = float_sub_scalar
    int_mul_scalar = float_mul_scalar

    @staticmethod
    def int_div_scalar(p, s):
        return _int_div(p, np.int64(s))

    int_neg = float_neg
    int_abs = float_abs
    int_clamp = float_clamp
    int_equal = float_equal
    int_greater = float_greater
    int_greater_equal = float_greater_equal
    int_lower = float_lower
    int_lower_equal = float_lower_equal
    int_equal_elem = float_equal_elem
    int_greater_elem = float_greater_elem
    int_greater_equal_elem = float_greater_equal_elem
    int_lower_elem = float_lower_elem
    int_lower_equal_elem = float_lower_equal_elem
    int_sum = float_sum
    int_sum_dim = float_sum_dim
    int_max = float_max
    int_min = float_min
    int_max_dim = float_max_dim
    int_min_dim = float_min_dim
    int_argmax = float_argmax
    int_argmin = float_argmin

    @staticmethod
    def int_into_float(p):
        return p.astype(np.float32)

    @staticmethod
    def int_arange(start, end, step, device):
        return np.arange(start, end, step, dtype=np.int64)

    # -- Bool ------------------------------------------------------------------
    @staticmethod
    def bool_from_data(array, device):
        return np.array(array, dtype=np.bool_, copy=True)


    @staticmethod
    def bool_empty(shape, device):
        return np.zeros(shape, dtype=np.bool_)

    bool_equal = float_equal
    bool_not = staticmethod(np.logical_not)
    bool_and = staticmethod(np.logical_and)
    bool_or = staticmethod(np.logical_or)

    @staticmethod
    def bool_into_int(p):
        return p.astype(np.int64)

    @staticmethod
    def bool_into_float(p):
        return p.astype(np.float32)
