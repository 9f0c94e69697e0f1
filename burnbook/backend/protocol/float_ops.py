"""The Float ops of the Backend protocol (Burn's `FloatTensorOps`), one stub each.

`P` is the backend's Float primitive. Every op here but `float_relu` and
`float_sigmoid` (defaults from two or three other ops) is a `@protocol` stub:
a backend writes its own. The order is `base.FLOAT_OPS`'.
"""

from __future__ import annotations

from typing import Any

from .stub import protocol


class FloatOps:
    """Float ops: signatures and what each computes (see `base.py` for what
    the tensor layer has already checked before it calls them)."""

    # -- data and creation -------------------------------------------------------------
    @protocol
    def float_from_data(cls, array, device):
        """A primitive holding a copy of `array` (an np.ndarray of a float dtype) on `device`."""

    @protocol
    def float_into_data(cls, p):
        """A host np.ndarray copy of `p` that the caller may keep."""

    @protocol
    def float_empty(cls, shape, device, dtype=None):
        """An uninitialised primitive of `shape` (f32 unless `dtype`)."""

    @protocol
    def float_full(cls, shape, value, device, dtype=None):
        """`shape` filled with `value` (f32 unless `dtype`)."""

    @protocol
    def float_random(cls, shape, distribution, device, dtype=None):
        """Samples of `distribution`, drawn by the backend's generator (see `seed`)."""

    @protocol
    def float_shape(cls, p) -> tuple:
        """The shape of `p`, a tuple of ints."""

    @protocol
    def float_device(cls, p):
        """The device `p` lives on."""

    @protocol
    def float_to_device(cls, p, device):
        """`p` on `device` (itself when already there)."""

    @protocol
    def float_dtype(cls, p):
        """The np.dtype of `p`'s elements."""

    @protocol
    def float_cast(cls, p, dtype):
        """`p` converted to the float `dtype` (f16, f32 or f64)."""

    # -- layout ------------------------------------------------------------------------
    @protocol
    def float_reshape(cls, p, shape):
        """`p` with the same elements in row-major order and a new `shape`."""

    @protocol
    def float_swap_dims(cls, p, d1, d2):
        """`p` with dims `d1` and `d2` exchanged."""

    @protocol
    def float_permute(cls, p, axes):
        """`p` with its dims reordered: output dim i is input dim `axes[i]`."""

    @protocol
    def float_expand(cls, p, shape):
        """`p` broadcast to `shape` (only its size-1 dims grow)."""

    @protocol
    def float_slice(cls, p, ranges):
        """The region `ranges` (resolved slices, one per leading dim) of `p`."""

    @protocol
    def float_slice_assign(cls, p, ranges, values):
        """A new primitive: `p` with region `ranges` replaced by `values` (p is not modified)."""

    @protocol
    def float_cat(cls, ps, dim):
        """The primitives `ps` joined along `dim`."""

    # -- indexing ----------------------------------------------------------------------
    @protocol
    def float_gather(cls, dim, p, indices):
        """out[..i..] = p[..indices[..i..]..] along `dim` (torch.gather)."""

    @protocol
    def float_scatter(cls, dim, p, indices, values):
        """`p` with `values` *added* at `indices` along `dim`."""

    @protocol
    def float_select(cls, p, dim, indices):
        """The slices of `p` at the 1-D Int `indices` along `dim`."""

    @protocol
    def float_select_assign(cls, p, dim, indices, values):
        """`p` with `values` *added* to the slices at `indices` along `dim`."""

    @protocol
    def float_mask_where(cls, p, mask, values):
        """`values` where the Bool `mask` is true, else `p` (broadcasting)."""

    @protocol
    def float_mask_fill(cls, p, mask, value):
        """The scalar `value` where `mask` is true, else `p`."""

    # -- arithmetic --------------------------------------------------------------------
    @protocol
    def float_add(cls, lhs, rhs):
        """lhs + rhs, element-wise, broadcasting size-1 dims."""

    @protocol
    def float_sub(cls, lhs, rhs):
        """lhs - rhs, element-wise."""

    @protocol
    def float_mul(cls, lhs, rhs):
        """lhs * rhs, element-wise."""

    @protocol
    def float_div(cls, lhs, rhs):
        """lhs / rhs, element-wise."""

    @protocol
    def float_powf(cls, lhs, rhs):
        """lhs ** rhs, element-wise."""

    @protocol
    def float_add_scalar(cls, p, scalar):
        """p + scalar."""

    @protocol
    def float_sub_scalar(cls, p, scalar):
        """p - scalar."""

    @protocol
    def float_mul_scalar(cls, p, scalar):
        """p * scalar."""

    @protocol
    def float_div_scalar(cls, p, scalar):
        """p / scalar."""

    @protocol
    def float_powf_scalar(cls, p, scalar):
        """p ** scalar."""

    @protocol
    def float_neg(cls, p):
        """-p."""

    @protocol
    def float_abs(cls, p):
        """|p|."""

    @protocol
    def float_clamp(cls, p, min, max):  # noqa: A002 - the protocol's names
        """`p` clipped to [min, max]; either bound may be None (no bound)."""

    # -- unary math --------------------------------------------------------------------
    @protocol
    def float_exp(cls, p):
        """e**x element-wise."""

    @protocol
    def float_log(cls, p):
        """The natural logarithm, element-wise."""

    @protocol
    def float_log1p(cls, p):
        """log(1 + x), accurate for small x."""

    @protocol
    def float_erf(cls, p):
        """The error function, element-wise."""

    @protocol
    def float_sqrt(cls, p):
        """The square root, element-wise."""

    @protocol
    def float_recip(cls, p):
        """1 / x, element-wise."""

    @protocol
    def float_cos(cls, p):
        """The cosine, element-wise."""

    @protocol
    def float_sin(cls, p):
        """The sine, element-wise."""

    @protocol
    def float_tanh(cls, p):
        """The hyperbolic tangent, element-wise."""

    @classmethod
    def float_relu(cls, p: Any) -> Any:
        """max(x, 0): 0 where x < 0, x itself elsewhere, so NaN and -0.0 pass
        through as in PyTorch's relu (Burn's mask `x <= 0` would turn -0.0
        into +0.0). A default from two primitives; backends override it
        with one pass."""
        return cls.float_mask_fill(p, cls.float_lower_elem(p, 0.0), 0.0)

    @classmethod
    def float_sigmoid(cls, p: Any) -> Any:
        """1 / (1 + e^-x) (Burn's `ActivationOps::sigmoid`), accurate on both
        tails: with e = e^-|x| (never overflows), 1 / (1 + e) for x >= 0 and
        e / (1 + e) for x < 0, so sigmoid(-88) keeps f32 relative accuracy
        where 1 - small or (1 + tanh(x/2)) / 2 would cancel to 0."""
        e = cls.float_exp(cls.float_neg(cls.float_abs(p)))
        r = cls.float_recip(cls.float_add_scalar(e, 1.0))
        return cls.float_mask_where(r, cls.float_lower_elem(p, 0.0), cls.float_mul(e, r))

    # -- comparison: Bool primitives ---------------------------------------------------
    @protocol
    def float_equal(cls, lhs, rhs):
        """lhs == rhs, element-wise, as a Bool primitive."""

    @protocol
    def float_greater(cls, lhs, rhs):
        """lhs > rhs."""

    @protocol
    def float_greater_equal(cls, lhs, rhs):
        """lhs >= rhs."""

    @protocol
    def float_lower(cls, lhs, rhs):
        """lhs < rhs."""

    @protocol
    def float_lower_equal(cls, lhs, rhs):
        """lhs <= rhs."""

    @protocol
    def float_equal_elem(cls, p, scalar):
        """p == scalar, as a Bool primitive."""

    @protocol
    def float_greater_elem(cls, p, scalar):
        """p > scalar."""

    @protocol
    def float_greater_equal_elem(cls, p, scalar):
        """p >= scalar."""

    @protocol
    def float_lower_elem(cls, p, scalar):
        """p < scalar."""

    @protocol
    def float_lower_equal_elem(cls, p, scalar):
        """p <= scalar."""

    # -- reductions: the rank is kept --------------------------------------------------
    @protocol
    def float_sum(cls, p):
        """The sum of every element, shape (1,)."""

    @protocol
    def float_sum_dim(cls, p, dim):
        """The sum along `dim`, which keeps size 1."""

    @protocol
    def float_mean_dim(cls, p, dim):
        """The mean along `dim`, which keeps size 1."""

    @protocol
    def float_max(cls, p):
        """The largest element, shape (1,)."""

    @protocol
    def float_min(cls, p):
        """The smallest element, shape (1,)."""

    @protocol
    def float_max_dim(cls, p, dim):
        """The maximum along `dim`, which keeps size 1."""

    @protocol
    def float_min_dim(cls, p, dim):
        """The minimum along `dim`, which keeps size 1."""

    @protocol
    def float_argmax(cls, p, dim):
        """The (first) index of the maximum along `dim`, an Int primitive with size 1 there."""

    @protocol
    def float_argmin(cls, p, dim):
        """The (first) index of the minimum along `dim`, an Int primitive."""

    # -- linear algebra and conversion -------------------------------------------------
    @protocol
    def float_matmul(cls, lhs, rhs):
        """`[..., m, k] @ [..., k, n]`, the batch dims broadcast."""

    @protocol
    def float_into_int(cls, p):
        """An Int primitive, each value truncated toward zero."""
