"""The Int ops of the Backend protocol (Burn's `IntTensorOps`), one stub each.

Int primitives hold int64 by default. The layout and indexing ops move
elements without looking at them, so a backend may leave them out and let
`base.share_layout_ops` reuse its Float ones. The order is `base.INT_OPS`'.
"""

from __future__ import annotations

from .stub import protocol


class IntOps:
    """Int ops: signatures and what each computes."""

    # -- data and creation -------------------------------------------------------------
    @protocol
    def int_from_data(cls, array, device):
        """A primitive holding a copy of `array` (an int64 np.ndarray) on `device`."""

    @protocol
    def int_into_data(cls, p):
        """A host np.ndarray copy of `p`."""

    @protocol
    def int_empty(cls, shape, device):
        """An uninitialised int64 primitive of `shape`."""

    @protocol
    def int_full(cls, shape, value, device):
        """`shape` filled with the int `value`."""

    @protocol
    def int_shape(cls, p):
        """The shape of `p`, a tuple of ints."""

    @protocol
    def int_device(cls, p):
        """The device `p` lives on."""

    @protocol
    def int_to_device(cls, p, device):
        """`p` on `device`."""

    @protocol
    def int_dtype(cls, p):
        """The np.dtype of `p`'s elements."""

    # -- layout ------------------------------------------------------------------------
    @protocol
    def int_reshape(cls, p, shape):
        """`p` with a new `shape`, row-major order kept."""

    @protocol
    def int_swap_dims(cls, p, d1, d2):
        """`p` with dims `d1` and `d2` exchanged."""

    @protocol
    def int_permute(cls, p, axes):
        """`p` with its dims reordered by `axes`."""

    @protocol
    def int_expand(cls, p, shape):
        """`p` broadcast to `shape`."""

    @protocol
    def int_slice(cls, p, ranges):
        """The region `ranges` of `p`."""

    @protocol
    def int_slice_assign(cls, p, ranges, values):
        """A new primitive: `p` with region `ranges` replaced by `values`."""

    @protocol
    def int_cat(cls, ps, dim):
        """The primitives `ps` joined along `dim`."""

    # -- indexing ----------------------------------------------------------------------
    @protocol
    def int_gather(cls, dim, p, indices):
        """out[..i..] = p[..indices[..i..]..] along `dim`."""

    @protocol
    def int_scatter(cls, dim, p, indices, values):
        """`p` with `values` *added* at `indices` along `dim`."""

    @protocol
    def int_select(cls, p, dim, indices):
        """The slices of `p` at the 1-D `indices` along `dim`."""

    @protocol
    def int_select_assign(cls, p, dim, indices, values):
        """`p` with `values` *added* to the slices at `indices`."""

    @protocol
    def int_mask_where(cls, p, mask, values):
        """`values` where `mask` is true, else `p`."""

    @protocol
    def int_mask_fill(cls, p, mask, value):
        """The scalar `value` where `mask` is true, else `p`."""

    # -- arithmetic --------------------------------------------------------------------
    @protocol
    def int_add(cls, lhs, rhs):
        """lhs + rhs, element-wise, broadcasting size-1 dims."""

    @protocol
    def int_sub(cls, lhs, rhs):
        """lhs - rhs."""

    @protocol
    def int_mul(cls, lhs, rhs):
        """lhs * rhs."""

    @protocol
    def int_div(cls, lhs, rhs):
        """lhs / rhs truncated toward zero, as Burn (NumPy floors)."""

    @protocol
    def int_add_scalar(cls, p, scalar):
        """p + scalar."""

    @protocol
    def int_sub_scalar(cls, p, scalar):
        """p - scalar."""

    @protocol
    def int_mul_scalar(cls, p, scalar):
        """p * scalar."""

    @protocol
    def int_div_scalar(cls, p, scalar):
        """p / scalar truncated toward zero."""

    @protocol
    def int_neg(cls, p):
        """-p."""

    @protocol
    def int_abs(cls, p):
        """|p|."""

    @protocol
    def int_clamp(cls, p, min, max):  # noqa: A002 - the protocol's names
        """`p` clipped to [min, max]; either bound may be None."""

    # -- comparison: Bool primitives ---------------------------------------------------
    @protocol
    def int_equal(cls, lhs, rhs):
        """lhs == rhs, element-wise, as a Bool primitive."""

    @protocol
    def int_greater(cls, lhs, rhs):
        """lhs > rhs."""

    @protocol
    def int_greater_equal(cls, lhs, rhs):
        """lhs >= rhs."""

    @protocol
    def int_lower(cls, lhs, rhs):
        """lhs < rhs."""

    @protocol
    def int_lower_equal(cls, lhs, rhs):
        """lhs <= rhs."""

    @protocol
    def int_equal_elem(cls, p, scalar):
        """p == scalar."""

    @protocol
    def int_greater_elem(cls, p, scalar):
        """p > scalar."""

    @protocol
    def int_greater_equal_elem(cls, p, scalar):
        """p >= scalar."""

    @protocol
    def int_lower_elem(cls, p, scalar):
        """p < scalar."""

    @protocol
    def int_lower_equal_elem(cls, p, scalar):
        """p <= scalar."""

    # -- reductions: the rank is kept --------------------------------------------------
    @protocol
    def int_sum(cls, p):
        """The sum of every element, shape (1,)."""

    @protocol
    def int_sum_dim(cls, p, dim):
        """The sum along `dim`, which keeps size 1."""

    @protocol
    def int_max(cls, p):
        """The largest element, shape (1,)."""

    @protocol
    def int_min(cls, p):
        """The smallest element, shape (1,)."""

    @protocol
    def int_max_dim(cls, p, dim):
        """The maximum along `dim`."""

    @protocol
    def int_min_dim(cls, p, dim):
        """The minimum along `dim`."""

    @protocol
    def int_argmax(cls, p, dim):
        """The (first) index of the maximum along `dim`."""

    @protocol
    def int_argmin(cls, p, dim):
        """The (first) index of the minimum along `dim`."""

    # -- conversion and creation -------------------------------------------------------
    @protocol
    def int_into_float(cls, p):
        """A Float primitive (f32) of the same values."""

    @protocol
    def int_arange(cls, start, end, step, device):
        """start, start + step, ... below `end`, 1-D."""
