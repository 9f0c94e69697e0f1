"""`NdArray`: the reference backend, every primitive a NumPy array on the CPU.

The primitive is a plain `np.ndarray`, never mutated after it is made (ops
that "assign" return new arrays), so views are safe to share. Keeping the
primitive bare keeps the per-op cost close to NumPy's own call.
"""

from __future__ import annotations

import numpy as np

from ..base import Backend, share_layout_ops
from .device import CPU, Cpu
from .erf import np_erf
from .matmul import matmul
from .module_ops import NdArrayModuleOps
from .numpy_ops import (
    clamp, full_reduce, gather, int_div, mask_fill, mask_where, scatter, select_assign, slice_assign, via_f64,
)

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
        return CPU

    @classmethod
    def seed(cls, seed: int) -> None:
        cls._rng = np.random.default_rng(seed)

    @staticmethod
    def primitive_layout(p) -> tuple:
        """NumPy's own layout of `p`: strides in bytes divided by the item
        size, the offset from the owning array's first byte, and that owner's
        size (`p.base`, followed to the array that owns the memory)."""
        p = np.asarray(p)
        item = p.itemsize
        base = p
        while isinstance(base.base, np.ndarray):
            base = base.base
        start = p.__array_interface__["data"][0]
        origin = base.__array_interface__["data"][0]
        return (tuple(p.shape), tuple(s // item for s in p.strides), (start - origin) // item,
                base.nbytes // item)

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
        return CPU

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

    float_slice_assign = staticmethod(slice_assign)

    @staticmethod
    def float_cat(ps, dim):
        return np.concatenate(ps, axis=dim)

    # -- indexing ------------------------------------------------------------
    float_gather = staticmethod(gather)
    float_scatter = staticmethod(scatter)

    @staticmethod
    def float_select(p, dim, indices):
        return np.take(p, indices, axis=dim)

    float_select_assign = staticmethod(select_assign)
    float_mask_where = staticmethod(mask_where)
    float_mask_fill = staticmethod(mask_fill)

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
    float_clamp = staticmethod(clamp)

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

    float_cos = staticmethod(via_f64(np.cos))
    float_sin = staticmethod(via_f64(np.sin))
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
    float_sum = staticmethod(full_reduce("sum"))
    float_max = staticmethod(full_reduce("max"))
    float_min = staticmethod(full_reduce("min"))

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
    float_matmul = staticmethod(matmul)   # one BLAS thread a call, halves on two threads (matmul.py)

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
    int_div = staticmethod(int_div)
    int_add_scalar = float_add_scalar
    int_sub_scalar = float_sub_scalar
    int_mul_scalar = float_mul_scalar

    @staticmethod
    def int_div_scalar(p, s):
        return int_div(p, np.int64(s))

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
