"""The Bool ops of the Backend protocol (Burn's `BoolTensorOps`), one stub each.

Bool primitives hold np.bool_ values; comparisons of every kind make them.
Layout ops may come from the Float ones (`base.share_layout_ops`). The
order is `base.BOOL_OPS`'.
"""

from __future__ import annotations

from .stub import protocol


class BoolOps:
    """Bool ops: signatures and what each computes."""

    # -- data and creation -------------------------------------------------------------
    @protocol
    def bool_from_data(cls, array, device):
        """A primitive holding a copy of `array` (a bool np.ndarray) on `device`."""

    @protocol
    def bool_into_data(cls, p):
        """A host np.ndarray copy of `p`."""

    @protocol
    def bool_empty(cls, shape, device):
        """A primitive of `shape` (its values unspecified)."""

    @protocol
    def bool_shape(cls, p):
        """The shape of `p`, a tuple of ints."""

    @protocol
    def bool_device(cls, p):
        """The device `p` lives on."""

    @protocol
    def bool_to_device(cls, p, device):
        """`p` on `device`."""

    # -- layout ------------------------------------------------------------------------
    @protocol
    def bool_reshape(cls, p, shape):
        """`p` with a new `shape`, row-major order kept."""

    @protocol
    def bool_swap_dims(cls, p, d1, d2):
        """`p` with dims `d1` and `d2` exchanged."""

    @protocol
    def bool_permute(cls, p, axes):
        """`p` with its dims reordered by `axes`."""

    @protocol
    def bool_expand(cls, p, shape):
        """`p` broadcast to `shape`."""

    @protocol
    def bool_slice(cls, p, ranges):
        """The region `ranges` of `p`."""

    @protocol
    def bool_slice_assign(cls, p, ranges, values):
        """A new primitive: `p` with region `ranges` replaced by `values`."""

    @protocol
    def bool_cat(cls, ps, dim):
        """The primitives `ps` joined along `dim`."""

    @protocol
    def bool_select(cls, p, dim, indices):
        """The slices of `p` at the 1-D Int `indices` along `dim`."""

    @protocol
    def bool_mask_where(cls, p, mask, values):
        """`values` where `mask` is true, else `p`."""

    # -- logic -------------------------------------------------------------------------
    @protocol
    def bool_equal(cls, lhs, rhs):
        """lhs == rhs, element-wise."""

    @protocol
    def bool_not(cls, p):
        """Logical not."""

    @protocol
    def bool_and(cls, lhs, rhs):
        """Logical and, element-wise."""

    @protocol
    def bool_or(cls, lhs, rhs):
        """Logical or, element-wise."""

    # -- conversion --------------------------------------------------------------------
    @protocol
    def bool_into_int(cls, p):
        """An Int primitive: 1 where true, 0 elsewhere."""

    @protocol
    def bool_into_float(cls, p):
        """A Float primitive (f32): 1.0 where true, 0.0 elsewhere."""
