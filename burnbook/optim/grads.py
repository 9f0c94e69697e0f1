"""`GradientsParams`: gradients keyed by `ParamId` (Burn's `GradientsParams`).

`backward()` returns a `Gradients` container keyed by graph node. An optimizer
needs them keyed by *parameter* instead, because a `ParamId` survives
optimizer steps, records and `fork`s while graph nodes do not: every forward
pass makes new ones. `GradientsParams.from_grads(grads, model)` does the
translation, popping each parameter's gradient out of `grads`::

    grads = loss.backward()
    grads = GradientsParams.from_grads(grads, model)
    model = optim.step(lr, model, grads)

Gradients are tensors of the inner backend (no autodiff), so holding them
keeps no graph alive.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from burnbook.module import Param, ParamId, RunningState

__all__ = ["GradientsParams"]


def param_id(key: Any) -> ParamId:
    """A `ParamId` from a `ParamId`, a `Param` or the id's string value."""
    if isinstance(key, ParamId):
        return key
    if isinstance(key, Param):
        return key.id
    if isinstance(key, str):
        return ParamId(key)
    raise TypeError(f"expected a ParamId, a Param or an id string, got {type(key).__name__}")


def trainable_params(module: Any) -> Iterator[tuple[str, Param]]:
    """(path, param) of the float parameters an optimizer may update: every
    `Param` of the module except `RunningState`s (never trained) and Int/Bool
    tensors."""
    from burnbook.tensor import Float

    for path, p in module.named_params():
        if isinstance(p, RunningState) or getattr(p.val(), "_K", None) is not Float:
            continue
        yield path, p


class GradientsParams:
    """A mapping `ParamId -> gradient tensor` (inner backend).

    `register(id, grad)` sets (replacing any previous gradient, as Burn's
    tensor container does), `get(id)` reads, `remove(id)` pops; both return
    None when absent. Ids may be given as a `ParamId`, a `Param` or the id
    string.
    """

    __slots__ = ("_grads",)

    def __init__(self) -> None:
        self._grads: dict[ParamId, Any] = {}

    # -- building -----------------------------------------------------------------
    @classmethod
    def from_grads(cls, grads: Any, module: Any) -> "GradientsParams":
        """Pop the gradient of every trainable parameter of `module` out of
        the autodiff `grads` (Burn's `GradientsParams::from_grads`).

        Parameters without a gradient are skipped: `RunningState`s, parameters
        of a `no_grad()` module or with `set_require_grad(False)`, and
        parameters the loss did not use. The gradients taken are popped from
        `grads` (`param.val().grad_remove(grads)`), as in Burn.
        """
        return cls.from_params(grads, module, None)

    @classmethod
    def from_params(cls, grads: Any, module: Any, params: Iterable[Any] | None) -> "GradientsParams":
        """As `from_grads`, for the listed parameter ids only (`None`: all),
        e.g. to train part of a model with its own optimizer."""
        _check_gradients(grads)
        wanted = None if params is None else {param_id(p) for p in params}
        out = cls()
        for path, p in trainable_params(module):
            if wanted is not None and p.id not in wanted:
                continue
            tensor = p.val()
            if not tensor._B.is_autodiff:
                raise TypeError(
                    f"GradientsParams.from_grads: parameter '{path}' is on the backend "
                    f"{tensor._B.name()!r}, which has no autodiff, so it has no gradient. Pass the "
                    "model that computed the loss (on Autodiff[...]), not model.valid()"
                )
            grad = tensor.grad_remove(grads)
            if grad is not None:
                out.register(p.id, grad)
        return out

    # -- the container ---------------------------------------------------------------
    def get(self, id: Any) -> Any:  # noqa: A002 - Burn's name
        """The gradient of parameter `id`, or None."""
        return self._grads.get(param_id(id))

    def remove(self, id: Any) -> Any:  # noqa: A002
        """Pop the gradient of parameter `id`, or None when absent."""
        return self._grads.pop(param_id(id), None)

    def register(self, id: Any, tensor: Any) -> None:  # noqa: A002
        """Set the gradient of parameter `id` (replacing any previous one)."""
        from burnbook.tensor.core import TensorBase

        if not isinstance(tensor, TensorBase):
            raise TypeError(f"GradientsParams.register: expected a Tensor, got {type(tensor).__name__}")
        self._grads[param_id(id)] = tensor

    def ids(self) -> list[ParamId]:
        return list(self._grads)

    def len(self) -> int:
        """The number of parameters holding a gradient (Burn's `len`)."""
        return len(self._grads)

    def is_empty(self) -> bool:
        return not self._grads

    def __len__(self) -> int:
        return len(self._grads)

    def __contains__(self, id: Any) -> bool:  # noqa: A002
        try:
            return param_id(id) in self._grads
        except TypeError:
            return False

    def __iter__(self) -> Iterator[ParamId]:
        return iter(self._grads)

    def items(self) -> Iterator[tuple[ParamId, Any]]:
        return iter(self._grads.items())

    def copy(self) -> "GradientsParams":
        """A new container holding the same (immutable) gradient tensors."""
        out = GradientsParams()
        out._grads = dict(self._grads)
        return out

    def to_device(self, device: Any, module: Any) -> "GradientsParams":
        """The gradients of `module`'s parameters moved to `device` (Burn's
        `to_device`, used when models are forked across devices)."""
        out = self.copy()
        for _, p in trainable_params(module):
            grad = out._grads.get(p.id)
            if grad is not None:
                out._grads[p.id] = grad.to_device(device)
        return out

    def __repr__(self) -> str:
        lines = [f"  {pid.value}: {g.dims()} {g.dtype}," for pid, g in self._grads.items()]
        body = ("\n" + "\n".join(lines) + "\n") if lines else ""
        return f"GradientsParams {{{body}}}"


def _check_gradients(grads: Any) -> None:
    from burnbook.autodiff import Gradients

    if isinstance(grads, GradientsParams):
        raise TypeError("GradientsParams.from_grads: `grads` is already a GradientsParams; "
                        "pass it to optim.step(lr, model, grads) directly")
    if not isinstance(grads, Gradients):
        raise TypeError(f"GradientsParams.from_grads: expected the Gradients returned by loss.backward(), "
                        f"got {type(grads).__name__}")
