"""The autodiff methods of a tensor (`require_grad`, `backward`, `grad`,
`inner`...), which call the autodiff backend's `float_*` ops (Burn's
`AutodiffBackend`); on a plain backend the tracking ones do nothing."""

from __future__ import annotations

from .core import TensorBase
from .kind import Float


class GradOps(TensorBase):
    """Gradient tracking and the autodiff backend's inner tensors."""

    __slots__ = ()

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
