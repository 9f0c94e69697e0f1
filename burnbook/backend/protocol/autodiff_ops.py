"""The extra ops of an autodiff backend (Burn's `AutodiffBackend`), one stub each.

They act on Float primitives only; the Int and Bool primitives of
`Autodiff[B]` are B's own. `Autodiff` (burnbook/autodiff/backend.py) writes
every one of them; a plain backend has none (`Tensor.backward()` there is a
TypeError that says to wrap it in `Autodiff[...]`). The order is
`base.AUTODIFF_OPS`'.
"""

from __future__ import annotations

from .stub import protocol


class AutodiffOps:
    """Autodiff ops: signatures and what each does."""

    @protocol
    def float_require_grad(cls, p):
        """`p`, now tracked as a leaf whose gradient `backward()` returns."""

    @protocol
    def float_set_require_grad(cls, p, flag):
        """`require_grad(p)` when `flag`, else `p` untracked."""

    @protocol
    def float_is_require_grad(cls, p) -> bool:
        """Whether `p` is a leaf that requires grad."""

    @protocol
    def float_detach(cls, p):
        """`p` with no graph behind it."""

    @protocol
    def float_backward(cls, p, create_graph=False, retain_graph=None, retain_grads=False, grad=None):
        """The `Gradients` of `p` (seeded with ones of its shape, or `grad`) for every tracked leaf."""

    @protocol
    def float_grad(cls, p, grads):
        """`p`'s gradient in `grads`, an inner primitive, or None."""

    @protocol
    def float_grad_remove(cls, p, grads):
        """`p`'s gradient, popped from `grads` (None when it has none)."""

    @protocol
    def float_grad_replace(cls, p, grads, grad):
        """Set `p`'s gradient in `grads` to the inner primitive `grad`."""

    @protocol
    def float_inner(cls, p):
        """The inner backend's primitive of `p`."""

    @protocol
    def float_from_inner(cls, p):
        """An untracked primitive of this backend around the inner primitive `p`."""
