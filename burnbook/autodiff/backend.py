"""`Autodiff[B]`: the backend decorator that makes any backend differentiable.

`Autodiff[B]` is a cached subclass of `Autodiff` whose Float primitive is an
`AutodiffTensor` (B's primitive plus a graph node, None when untracked). The
class body below is the op table as the decorator uses it: every op of the
protocol is declared by name with what Autodiff does with it
(`declarations.py`):

- `tracked(rule)`: run B's op on the inner primitives; when an input is
  tracked also record a node whose backward is `rule`, a function of
  `ops/` (`float_exp = tracked(unary.exp)`: the rule `exp` in ops/unary.py);
- `creates`, `reads`, `compares`: ops with no gradient (new tensors,
  shapes and data, comparisons);
- `inner_op`: Int and Bool primitives are B's own, and so are their ops.

`Autodiff[B]` binds each declaration to B's op when it is first built. The
extra ops of Burn's `AutodiffBackend` (`require_grad`, `backward`, `grad`...)
are written out at the end.

`Autodiff[Autodiff[B]]` is a TypeError: the backend is already
differentiable; gradients of gradients come from `backward(create_graph=True)`.
"""

from __future__ import annotations

from typing import Any

from ..backend.decorator import Decorator
from ..backend.protocol import AutodiffOps
from . import engine
from .declarations import compares, creates, inner_op, reads, tracked
from .gradients import Gradients
from .graph import AutodiffTensor, leaf
from .ops import arithmetic, attention as attention_rules, index, layers, layout, linalg, module, reduce, unary


class Autodiff(Decorator, AutodiffOps):
    """The decorator: `Autodiff[B]` is B with a dynamic graph (Burn's
    `Autodiff<B>`); `Autodiff[B].InnerBackend is B`. Classes are cached, so
    `Autodiff[B] is Autodiff[B]`."""

    prefix = "autodiff"
    is_autodiff = True
    InnerBackend = None  # set on each Autodiff[B]

    @classmethod
    def _check_inner(cls, inner: Any) -> None:
        super()._check_inner(inner)
        if getattr(inner, "is_autodiff", False):
            raise TypeError(
                f"Autodiff[{inner!r}]: {inner!r} is already differentiable. For "
                "gradients of gradients use backward(create_graph=True)."
            )

    @classmethod
    def _namespace(cls, inner: type) -> dict:
        return {"InnerBackend": inner, "is_autodiff": True,
                "__doc__": f"`{inner.__name__}` with automatic differentiation "
                           f"(Burn's `Autodiff<{inner.__name__}>`)."}

    # -- Float data and creation: no gradient, except through a device or dtype change -----------
    float_from_data = float_empty = float_full = float_random = creates
    float_into_data = float_shape = float_device = float_dtype = reads
    float_to_device = tracked(linalg.to_device)
    float_cast = tracked(linalg.cast)

    # -- layout: ops/layout.py ------------------------------------------------------------------
    float_reshape = tracked(layout.reshape)
    float_swap_dims = tracked(layout.swap_dims)
    float_permute = tracked(layout.permute)
    float_expand = tracked(layout.expand)
    float_slice = tracked(layout.slice_)
    float_slice_assign = tracked(layout.slice_assign)
    float_cat = tracked(layout.cat)

    # -- indexing: ops/index.py -----------------------------------------------------------------
    float_gather = tracked(index.gather)
    float_scatter = tracked(index.scatter)
    float_select = tracked(index.select)
    float_select_assign = tracked(index.select_assign)
    float_mask_where = tracked(index.mask_where)
    float_mask_fill = tracked(index.mask_fill)

    # -- arithmetic: ops/arithmetic.py ------------------------------------------------------------
    float_add = tracked(arithmetic.add)
    float_sub = tracked(arithmetic.sub)
    float_mul = tracked(arithmetic.mul)
    float_div = tracked(arithmetic.div)
    float_powf = tracked(arithmetic.powf)
    float_add_scalar = tracked(arithmetic.add_scalar)
    float_sub_scalar = tracked(arithmetic.sub_scalar)
    float_mul_scalar = tracked(arithmetic.mul_scalar)
    float_div_scalar = tracked(arithmetic.div_scalar)
    float_powf_scalar = tracked(arithmetic.powf_scalar)
    float_neg = tracked(arithmetic.neg)
    float_abs = tracked(arithmetic.abs_)
    float_clamp = tracked(arithmetic.clamp)

    # -- unary math: ops/unary.py -----------------------------------------------------------------
    float_exp = tracked(unary.exp)
    float_log = tracked(unary.log)
    float_log1p = tracked(unary.log1p)
    float_erf = tracked(unary.erf)
    float_sqrt = tracked(unary.sqrt)
    float_recip = tracked(unary.recip)
    float_cos = tracked(unary.cos)
    float_sin = tracked(unary.sin)
    float_tanh = tracked(unary.tanh)
    float_relu = tracked(unary.relu)
    float_sigmoid = tracked(unary.sigmoid)

    # -- comparisons: Bool primitives, no gradient ------------------------------------------------
    float_equal = float_greater = float_greater_equal = float_lower = float_lower_equal = compares
    float_equal_elem = float_greater_elem = float_greater_equal_elem = reads
    float_lower_elem = float_lower_equal_elem = reads

    # -- reductions: ops/reduce.py; arg-extremes and the Int conversion have no gradient ----------
    float_sum = tracked(reduce.sum_)
    float_sum_dim = tracked(reduce.sum_dim)
    float_mean_dim = tracked(reduce.mean_dim)
    float_max = tracked(reduce.extreme)
    float_min = tracked(reduce.extreme)
    float_max_dim = tracked(reduce.to_index)
    float_min_dim = tracked(reduce.to_index)
    float_argmax = float_argmin = float_into_int = reads
    float_matmul = tracked(linalg.matmul)

    # -- module ops: ops/module.py ----------------------------------------------------------------
    conv1d = tracked(module.conv1d)
    conv2d = tracked(module.conv2d)
    conv_transpose1d = tracked(module.conv_transpose1d)
    conv_transpose2d = tracked(module.conv_transpose2d)
    conv2d_weight_backward = tracked(module.conv2d_weight_backward)
    avg_pool1d = tracked(module.avg_pool1d)
    avg_pool2d = tracked(module.avg_pool2d)
    avg_pool2d_backward = tracked(module.avg_pool2d_backward)
    adaptive_avg_pool1d = tracked(module.adaptive_avg_pool1d)
    adaptive_avg_pool2d = tracked(module.adaptive_avg_pool2d)
    adaptive_avg_pool2d_backward = tracked(module.adaptive_avg_pool2d_backward)
    max_pool1d = tracked(module.max_pool1d)
    max_pool1d_with_indices = tracked(module.max_pool1d_with_indices)
    max_pool2d = tracked(module.max_pool2d)
    max_pool2d_with_indices = tracked(module.max_pool2d_with_indices)
    max_pool2d_with_indices_backward = tracked(module.max_pool2d_with_indices_backward)
    embedding = tracked(module.embedding)
    embedding_backward = tracked(module.embedding_backward)
    attention = tracked(attention_rules.attention)   # ops/attention.py
    layer_norm = tracked(layers.layer_norm)          # ops/layers.py: one node, rule via layer_norm_backward
    gelu = tracked(layers.gelu)                      # ops/layers.py: rule via gelu_backward

    # -- Int and Bool ops: B's own primitives, B's ops; into Float makes an untracked tensor -------
    int_from_data = int_into_data = int_empty = int_full = int_shape = int_device = inner_op
    int_to_device = int_dtype = int_reshape = int_swap_dims = int_permute = int_expand = inner_op
    int_slice = int_slice_assign = int_cat = int_gather = int_scatter = int_select = inner_op
    int_select_assign = int_mask_where = int_mask_fill = inner_op
    int_add = int_sub = int_mul = int_div = int_add_scalar = int_sub_scalar = inner_op
    int_mul_scalar = int_div_scalar = int_neg = int_abs = int_clamp = inner_op
    int_equal = int_greater = int_greater_equal = int_lower = int_lower_equal = inner_op
    int_equal_elem = int_greater_elem = int_greater_equal_elem = inner_op
    int_lower_elem = int_lower_equal_elem = inner_op
    int_sum = int_sum_dim = int_max = int_min = int_max_dim = int_min_dim = inner_op
    int_argmax = int_argmin = int_arange = inner_op
    int_into_float = creates
    bool_from_data = bool_into_data = bool_empty = bool_shape = bool_device = inner_op
    bool_to_device = bool_reshape = bool_swap_dims = bool_permute = bool_expand = inner_op
    bool_slice = bool_slice_assign = bool_cat = bool_select = bool_mask_where = inner_op
    bool_equal = bool_not = bool_and = bool_or = bool_into_int = inner_op
    bool_into_float = creates

    # -- AUTODIFF_OPS (Burn's AutodiffBackend) -----------------------------------
    @classmethod
    def float_require_grad(cls, p: AutodiffTensor) -> AutodiffTensor:
        """Track `p` as a leaf whose gradient `backward()` returns. On a tensor
        that is already tracked (an op's output) it asks `backward()` to
        return that node's gradient too (PyTorch's `retain_grad`)."""
        n = p.node
        if n is None:
            return AutodiffTensor(p.primitive, leaf(tuple(cls.InnerBackend.float_shape(p.primitive)), p.primitive))
        n.requires_grad = True
        return p

    @classmethod
    def float_set_require_grad(cls, p: AutodiffTensor, flag: bool) -> AutodiffTensor:
        """`require_grad()` when `flag`, else an untracked tensor (as Burn)."""
        return cls.float_require_grad(p) if flag else cls.float_detach(p)

    @staticmethod
    def float_is_require_grad(p: AutodiffTensor) -> bool:
        """Whether `p` is a leaf that requires grad (Burn: `Requirement::Grad`);
        False for ops' outputs, which are tracked but not returned."""
        return p.node is not None and p.node.requires_grad

    @staticmethod
    def float_detach(p: AutodiffTensor) -> AutodiffTensor:
        return p if p.node is None else AutodiffTensor(p.primitive, None)

    @classmethod
    def float_backward(cls, p: AutodiffTensor, create_graph: bool = False,
                       retain_graph: bool | None = None, retain_grads: bool = False,
                       grad: Any = None) -> Gradients:
        """Gradients of `p` (seeded with ones of its shape, or with `grad`)
        for every tracked leaf that requires grad.

        - `create_graph`: record the backward pass so that the gradients
          (then Autodiff primitives) can be differentiated again.
        - `retain_graph`: None frees every node nothing can reach again (the
          root always); False frees every visited node; True frees nothing.
        - `retain_grads`: also keep every intermediate node's gradient (for
          drawing the graph).
        """
        return engine.backward(cls, p, create_graph, retain_graph, retain_grads, grad)

    @staticmethod
    def float_grad(p: AutodiffTensor, grads: Gradients) -> Any:
        """p's gradient: an inner primitive (an Autodiff primitive when
        `grads.create_graph`), or None when p is untracked or has none."""
        n = p.node
        return None if n is None else grads.get(n.id)

    @staticmethod
    def float_grad_remove(p: AutodiffTensor, grads: Gradients) -> Any:
        n = p.node
        return None if n is None else grads.remove(n.id)

    @staticmethod
    def float_grad_replace(p: AutodiffTensor, grads: Gradients, grad: Any) -> None:
        n = p.node
        if n is not None:
            grads.replace(n.id, grad)

    @classmethod
    def primitive_layout(cls, p: Any) -> tuple:
        """The inner primitive's layout (Int and Bool primitives are B's own)."""
        return cls._inner.primitive_layout(p.primitive if isinstance(p, AutodiffTensor) else p)

    @staticmethod
    def float_inner(p: AutodiffTensor) -> Any:
        return p.primitive

    @staticmethod
    def float_from_inner(p: Any) -> AutodiffTensor:
        return AutodiffTensor(p, None)
