"""`Fusion[B]`: the backend decorator that records element-wise ops and runs
each chain as one generated kernel (Burn's burn-fusion).

The class body names every op of the protocol with what Fusion does with it
(the declarations are in `recording.py`):

- *recorded*: element-wise float ops (arithmetic, scalar ops, math,
  comparisons, clamp, cast, mask_fill, mask_where; relu and sigmoid through
  the protocol's defaults, written with them) make a lazy `FusionTensor`,
  after the same shape and dtype checks B makes, so an error names the op
  the user wrote;
- *fused reductions*: sum, max, min, and their `_dim` forms and mean_dim run
  at once, in the kernel that computes their lazy input;
- *passed through*: everything else (creation, layout, indexing, matmul,
  module ops, Int and Bool ops, reading data) executes the lazy inputs, then
  runs B's op.
"""

from __future__ import annotations

from typing import Any

from burnbook.kernels.elementwise import BinaryOp, UnaryOp
from burnbook.kernels.reduce import Reduce

from .. import attention_ops, module_layers
from ..decorator import Decorator
from ..taichi.runtime import BOOL
from . import executor
from .recording import (
    LIVE, cast, clamp, fused_reduction, mask_fill, mask_where, passed_through, read_out,
    recorded_binary, recorded_scalar, recorded_unary, value,
)


def _shape(p: Any) -> tuple:
    return p.shape


def _dtype(p: Any) -> Any:
    return p.dtype


def _device(p: Any) -> Any:
    return p.device


class Fusion(Decorator):
    """The decorator: `Fusion[Taichi]` records element-wise ops and compiles
    each chain into one kernel; `Autodiff[Fusion[Taichi]]` trains on it.
    Classes are cached, so `Fusion[B] is Fusion[B]`."""

    prefix = "fusion"

    @classmethod
    def _check_inner(cls, inner: Any) -> None:
        from ..taichi import Taichi

        if getattr(inner, "is_autodiff", False):
            raise TypeError(f"Fusion[{inner!r}]: put Fusion inside Autodiff, as Autodiff[Fusion[B]]")
        if not (isinstance(inner, type) and issubclass(inner, Taichi)):
            raise TypeError(f"Fusion[{inner!r}]: fused kernels are generated for the Taichi backend only")

    @classmethod
    def _namespace(cls, inner: type) -> dict:
        return {"is_autodiff": False}

    @classmethod
    def primitive_layout(cls, p: Any) -> tuple:
        """The layout of the inner primitive; a lazy tensor has none until
        it runs, so its stream is executed first (as reading its data would)."""
        return cls._inner.primitive_layout(value(p))

    # -- recorded: arithmetic and comparisons ------------------------------------------------------
    float_add = recorded_binary(BinaryOp.ADD)
    float_sub = recorded_binary(BinaryOp.SUB)
    float_mul = recorded_binary(BinaryOp.MUL)
    float_div = recorded_binary(BinaryOp.DIV)
    float_powf = recorded_binary(BinaryOp.POW)
    float_equal = recorded_binary(BinaryOp.EQ, out=BOOL)
    float_greater = recorded_binary(BinaryOp.GT, out=BOOL)
    float_greater_equal = recorded_binary(BinaryOp.GE, out=BOOL)
    float_lower = recorded_binary(BinaryOp.LT, out=BOOL)
    float_lower_equal = recorded_binary(BinaryOp.LE, out=BOOL)

    # -- recorded: math --------------------------------------------------------------------------
    float_neg = recorded_unary(UnaryOp.NEG)
    float_abs = recorded_unary(UnaryOp.ABS)
    float_exp = recorded_unary(UnaryOp.EXP)
    float_log = recorded_unary(UnaryOp.LOG)
    float_log1p = recorded_unary(UnaryOp.LOG1P)
    float_erf = recorded_unary(UnaryOp.ERF)
    float_sqrt = recorded_unary(UnaryOp.SQRT)
    float_recip = recorded_unary(UnaryOp.RECIP)
    float_cos = recorded_unary(UnaryOp.COS)
    float_sin = recorded_unary(UnaryOp.SIN)
    float_tanh = recorded_unary(UnaryOp.TANH)

    # -- recorded: with a scalar -------------------------------------------------------------------
    float_add_scalar = recorded_scalar(UnaryOp.ADD_S)
    float_sub_scalar = recorded_scalar(UnaryOp.SUB_S)
    float_mul_scalar = recorded_scalar(UnaryOp.MUL_S)
    float_div_scalar = recorded_scalar(UnaryOp.DIV_S)
    float_powf_scalar = recorded_scalar(UnaryOp.POW_S)
    float_equal_elem = recorded_scalar(UnaryOp.EQ_S, out=BOOL)
    float_greater_elem = recorded_scalar(UnaryOp.GT_S, out=BOOL)
    float_greater_equal_elem = recorded_scalar(UnaryOp.GE_S, out=BOOL)
    float_lower_elem = recorded_scalar(UnaryOp.LT_S, out=BOOL)
    float_lower_equal_elem = recorded_scalar(UnaryOp.LE_S, out=BOOL)

    # -- recorded: the same function for every B ---------------------------------------------------
    float_clamp = staticmethod(clamp)
    float_mask_fill = staticmethod(mask_fill)
    float_mask_where = staticmethod(mask_where)
    float_cast = staticmethod(cast)
    # what a lazy tensor knows without running
    float_shape = int_shape = bool_shape = staticmethod(_shape)
    float_dtype = int_dtype = staticmethod(_dtype)
    float_device = int_device = bool_device = staticmethod(_device)

    # -- fused reductions ----------------------------------------------------------------------------
    float_sum = fused_reduction(Reduce.SUM)
    float_max = fused_reduction(Reduce.MAX)
    float_min = fused_reduction(Reduce.MIN)
    float_sum_dim = fused_reduction(Reduce.SUM, dim=True)
    float_mean_dim = fused_reduction(Reduce.SUM, dim=True, mean=True)
    float_max_dim = fused_reduction(Reduce.MAX, dim=True)
    float_min_dim = fused_reduction(Reduce.MIN, dim=True)

    # -- passed through: the lazy inputs executed, then B's op -------------------------------------
    float_into_data = int_into_data = bool_into_data = read_out
    float_from_data = float_empty = float_full = float_random = float_to_device = passed_through
    float_reshape = float_swap_dims = float_permute = float_expand = passed_through
    float_slice = float_slice_assign = float_cat = passed_through
    float_gather = float_scatter = float_select = float_select_assign = passed_through
    float_argmax = float_argmin = float_matmul = float_into_int = passed_through
    int_from_data = int_empty = int_full = int_to_device = passed_through
    int_reshape = int_swap_dims = int_permute = int_expand = int_slice = int_slice_assign = passed_through
    int_cat = int_gather = int_scatter = int_select = int_select_assign = passed_through
    int_mask_where = int_mask_fill = passed_through
    int_add = int_sub = int_mul = int_div = int_neg = int_abs = int_clamp = passed_through
    int_add_scalar = int_sub_scalar = int_mul_scalar = int_div_scalar = passed_through
    int_equal = int_greater = int_greater_equal = int_lower = int_lower_equal = passed_through
    int_equal_elem = int_greater_elem = int_greater_equal_elem = passed_through
    int_lower_elem = int_lower_equal_elem = passed_through
    int_sum = int_sum_dim = int_max = int_min = int_max_dim = int_min_dim = passed_through
    int_argmax = int_argmin = int_into_float = int_arange = passed_through
    bool_from_data = bool_empty = bool_to_device = passed_through
    bool_reshape = bool_swap_dims = bool_permute = bool_expand = bool_slice = passed_through
    bool_slice_assign = bool_cat = bool_select = bool_mask_where = passed_through
    bool_equal = bool_not = bool_and = bool_or = bool_into_int = bool_into_float = passed_through
    conv1d = conv2d = conv_transpose1d = conv_transpose2d = conv2d_weight_backward = passed_through
    avg_pool1d = avg_pool2d = avg_pool2d_backward = passed_through
    adaptive_avg_pool1d = adaptive_avg_pool2d = adaptive_avg_pool2d_backward = passed_through
    max_pool1d = max_pool1d_with_indices = max_pool2d = max_pool2d_with_indices = passed_through
    max_pool2d_with_indices_backward = embedding = embedding_backward = passed_through
    # attention: the protocol's composite on Fusion's own ops, so its element-wise steps are recorded and fused
    attention = classmethod(attention_ops.attention)
    # layer norm and GELU (and their autodiff helpers, inherited): the protocol's composites, fused as well
    layer_norm = classmethod(module_layers.layer_norm)
    gelu = classmethod(module_layers.gelu)

    @classmethod
    def sync(cls, device: Any = None) -> None:
        """Execute every recorded op whose result is still referenced, then
        wait for the device.

        Only the roots run (lazy tensors no other lazy op reads): each root's
        kernel also writes the intermediates something else still holds
        (executor._external), so an optimizer step's new parameter and its
        moments come out of one kernel, not one launch per recorded op."""
        pending = [t for t in LIVE if t.node is not None]
        read = {id(i) for t in pending for i in t.node.inputs}
        roots = sorted((t for t in pending if id(t) not in read), key=lambda t: t.node.id)
        del pending
        while roots:
            value(roots.pop(0))
        # Whatever a kernel left lazy (a miscounted reference) runs on its own.
        for t in sorted((t for t in LIVE if t.node is not None), key=lambda t: t.node.id):
            value(t)
        cls._inner.sync(device)

    @staticmethod
    def stats() -> dict:
        """Fused kernels `compiled` (generated and loaded) by this process,
        streams `executed`, the element-wise ops they `fused_ops`, the
        streams that ran in SIMD `lanes` (`KernelSettings.lanes`), and those
        over broadcast operands or summed along the row that ran in SIMD
        row lanes (`rows`, rows.py)."""
        return dict(executor.STATS)
