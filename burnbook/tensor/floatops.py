"""Float-only ops (math, matmul, variance, precision), Bool ops, and the
autodiff methods (`require_grad`, `backward`, `grad`, `inner`...)."""

from __future__ import annotations

import numpy as np

from burnbook.backend.base import broadcast_shape
from .core import TensorBase
from .kind import Bool, Float

_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def _unary(name: str, doc: str):
    def op(self):
        if self._K is not Float:
            self._require_float(name)
        return self._like(getattr(self._ops, name)(self._p))

    op.__name__ = name
    op.__doc__ = doc
    return op


class FloatOps:
    __slots__ = ()

    exp = _unary("exp", "Element-wise e**x.")
    log = _unary("log", "Element-wise natural logarithm.")
    log1p = _unary("log1p", "Element-wise log(1 + x), accurate near 0.")
    erf = _unary("erf", "Element-wise error function.")
    sqrt = _unary("sqrt", "Element-wise square root.")
    recip = _unary("recip", "Element-wise 1 / x (torch.reciprocal).")
    cos = _unary("cos", "Element-wise cosine.")
    sin = _unary("sin", "Element-wise sine.")
    tanh = _unary("tanh", "Element-wise hyperbolic tangent.")

    def sigmoid(self):
        from . import activation

        return activation.sigmoid(self)

    def is_nan(self):
        """A Bool tensor, true where the value is NaN."""
        if self._K is not Float:
            return self.equal_elem(0).bool_and(self.equal_elem(1))
        return self.equal(self).bool_not()

    def contains_nan(self) -> bool:
        return bool(np.isnan(self.to_numpy()).any()) if self._K is Float else False

    def matmul(self, other):
        """Matrix product over the last two dims, `[..., m, k] @ [..., k, n]`,
        batch dims broadcast."""
        if type(other) is not type(self) or self._K is not Float or self._D < 2:
            self._require_float("matmul")
            self._check_other("matmul", other)
            raise ValueError(f"matmul: needs rank >= 2, got rank {self._D} ({self.dims()})")
        try:
            return self._like(self._ops.matmul(self._p, other._p))
        except ValueError:
            # Checked only on failure, so the common path pays nothing.
            a, b = self.dims(), other.dims()
            if a[-1] != b[-2]:
                raise ValueError(
                    f"matmul: inner dims differ: lhs {a} has {a[-1]} columns, rhs {b} has {b[-2]} rows"
                ) from None
            broadcast_shape("matmul", a[:-2], b[:-2])
            raise

    def var(self, dim: int):
        """Unbiased variance along `dim` (divides by n - 1), size 1 at `dim`."""
        return self.var_mean(dim)[0]

    def var_bias(self, dim: int):
        """Biased variance along `dim` (divides by n)."""
        return self.var_mean_bias(dim)[0]

    def var_mean(self, dim: int):
        """(unbiased variance, mean) along `dim`."""
        return self._var_mean(dim, 1)

    def var_mean_bias(self, dim: int):
        return self._var_mean(dim, 0)

    def _var_mean(self, dim: int, correction: int):
        self._require_float("var")
        d = self._dim(dim, "var")
        n = self.dims()[d]
        mean = self.mean_dim(d)
        centred = self.sub(mean)
        var = centred.mul(centred).sum_dim(d).div_scalar(max(n - correction, 0) or float("nan"))
        return var, mean

    # -- precision -------------------------------------------------------------------
    def cast(self, dtype):
        """The values in another float type: "f16", "f32", "f64" or a NumPy dtype."""
        self._require_float("cast")
        target = np.dtype(_DTYPES.get(str(dtype), dtype))
        if target.kind != "f":
            raise TypeError(f"cast: {dtype} is not a float type; use .int() or .bool()")
        if self._ops.dtype(self._p) == target:
            return self
        return self._like(self._ops.cast(self._p, target))

    def to_full_precision(self):
        """The tensor in f32 (Burn's full precision) when it is stored in f16."""
        self._require_float("to_full_precision")
        return self.cast(np.float32) if self._ops.dtype(self._p) == np.float16 else self

    @classmethod
    def from_full_precision(cls, tensor):
        """Back from full precision to this type's float (f32 by default)."""
        return cls._wrap(tensor._p) if tensor._ops.dtype(tensor._p) == np.float32 else tensor.cast(np.float32)

    # -- Bool ---------------------------------------------------------------------------
    def bool_not(self):
        if self._K is not Bool:
            raise TypeError(f"bool_not is a Bool operation; this tensor's kind is {self._K.name}")
        return self._like(self._B.bool_not(self._p))

    def _bool_binary(self, op: str, other):
        if self._K is not Bool or not isinstance(other, TensorBase) or other._K is not Bool:
            raise TypeError(f"{op}: both operands must be Bool tensors")
        self._check_other(op, other)
        try:
            return self._like(getattr(self._B, "bool_" + op)(self._p, other._p))
        except ValueError:
            self._broadcast_error(op, other)
            raise

    def bool_and(self, other):
        return self._bool_binary("and", other)

    def bool_or(self, other):
        return self._bool_binary("or", other)

    __invert__ = bool_not
    __and__ = bool_and
    __or__ = bool_or

    def all(self) -> bool:
        return bool(np.all(self.to_numpy()))

    def any(self) -> bool:
        return bool(np.any(self.to_numpy()))

    # -- autodiff ---------------------------------------------------------------------
    def _autodiff(self, op: str) -> bool:
        return self._B.is_autodiff and self._K is Float

    def require_grad(self):
        """Track this tensor's gradient (a leaf); does nothing without autodiff."""
        return self.set_require_grad(True)

    def set_require_grad(self, require_grad: bool):
        if not self._autodiff("set_require_grad"):
            return self
        return self._like(self._B.float_set_require_grad(self._p, bool(require_grad)))

    def is_require_grad(self) -> bool:
        return bool(self._autodiff("is_require_grad") and self._B.float_is_require_grad(self._p))

    def detach(self):
        """The same values cut from the graph."""
        if not self._autodiff("detach"):
            return self
        return self._like(self._B.float_detach(self._p))

    def _need_autodiff(self, op: str) -> None:
        if not self._B.is_autodiff:
            raise TypeError(
                f"{op} needs an autodiff backend; the backend {self._B.name()!r} has none. "
                f"Wrap it: Autodiff[{self._B.__name__}]"
            )
        self._require_float(op)

    def backward(self, create_graph: bool = False, retain_graph: bool | None = None,
                 retain_grads: bool = False):
        """Gradients of this tensor w.r.t. every tracked leaf (ones seed, as Burn).

        `create_graph=True` records the backward pass itself, so the returned
        gradients can be differentiated again (PyTorch's double backward).
        `retain_graph=True` keeps every node's saved state for another pass.
        `retain_grads=True` also keeps every intermediate node's gradient (what
        `GraphView` shows on each op).
        """
        self._need_autodiff("backward")
        if create_graph or retain_graph is not None or retain_grads:
            return self._B.float_backward(self._p, create_graph=create_graph, retain_graph=retain_graph,
                                          retain_grads=retain_grads)
        return self._B.float_backward(self._p)

    def _inner_type(self, kind=None):
        return type(self)._specialise(self._B.InnerBackend, self._D, kind or self._K)

    def _grad_type(self, grads):
        # Gradients made with create_graph=True are themselves tracked.
        return type(self) if getattr(grads, "create_graph", False) else self._inner_type()

    def grad(self, grads):
        """This tensor's gradient in `grads` on the inner backend, or None."""
        self._need_autodiff("grad")
        p = self._B.float_grad(self._p, grads)
        return None if p is None else self._grad_type(grads)._wrap(p)

    def grad_remove(self, grads):
        """Pop this tensor's gradient from `grads` (inner backend), or None."""
        self._need_autodiff("grad_remove")
        p = self._B.float_grad_remove(self._p, grads)
        return None if p is None else self._grad_type(grads)._wrap(p)

    def grad_replace(self, grads, grad) -> None:
        self._need_autodiff("grad_replace")
        self._B.float_grad_replace(self._p, grads, grad._p)

    def inner(self):
        """The same tensor on the inner backend, outside the graph (for validation)."""
        if not self._B.is_autodiff:
            raise TypeError(f"inner() needs an autodiff backend; {self._B.name()!r} is already a plain backend")
        p = self._B.float_inner(self._p) if self._K is Float else self._p
        return self._inner_type()._wrap(p)

    @classmethod
    def from_inner(cls, tensor):
        """An untracked tensor of this autodiff type from an inner-backend tensor."""
        if not cls._B.is_autodiff:
            raise TypeError(f"from_inner needs an autodiff backend type, not {cls._B.name()!r}")
        if tensor._B is not cls._B.InnerBackend:
            raise TypeError(f"from_inner: expected a tensor of {cls._B.InnerBackend.name()}, got {tensor._B.name()}")
        p = cls._B.float_from_inner(tensor._p) if tensor._K is Float else tensor._p
        return cls._specialise(cls._B, tensor._D, tensor._K)._wrap(p)
