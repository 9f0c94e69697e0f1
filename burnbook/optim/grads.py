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

import warnings
from typing import Any, Iterable, Iterator

from burnbook.module import Param, ParamId, RunningState
from burnbook.module.base import unique_params

__all__ = ["GradientsParams", "MissingGradientsError", "MissingGradientsWarning"]


class MissingGradientsError(ValueError):
    """No trainable parameter of the model has a gradient: the step would
    change nothing, which is never what the loop meant."""


class MissingGradientsWarning(UserWarning):
    """Some trainable parameters have gradients and some do not (a layer the
    loss never reached); frozen parameters are not counted."""


def param_id(key: Any) -> ParamId:
    """A `ParamId` from a `ParamId`, a `Param` or the id's string value."""
    if isinstance(key, ParamId):
        return key
    if isinstance(key, Param):
        return key.id
    if isinstance(key, str):
        return ParamId(key)
    raise TypeError(f"expected a ParamId, a Param or an id string, got {type(key).__name__}")


def trainable_params(module: Any, where: str = "optimizer") -> Iterator[tuple[str, Param]]:
    """(path, param) of the float parameters an optimizer may update: every
    `Param` of the module except `RunningState`s (never trained) and Int/Bool
    tensors, a tied parameter once. `DuplicateParamIdError` (naming both
    paths, `where` first) when two different parameters share an id."""
    from burnbook.tensor import Float

    for path, p in unique_params(module, where):
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

        A loss that reached none of the module's trainable parameters raises
        `MissingGradientsError` with the usual causes; one that reached only
        some of them warns (`MissingGradientsWarning`) with the paths left
        out. Two different parameters sharing an id raise
        `DuplicateParamIdError`.
        """
        return cls.from_params(grads, module, None)

    @classmethod
    def from_params(cls, grads: Any, module: Any, params: Iterable[Any] | None) -> "GradientsParams":
        """As `from_grads`, for the listed parameter ids only (`None`: all),
        e.g. to train part of a model with its own optimizer."""
        _check_gradients(grads)
        wanted = None if params is None else {param_id(p) for p in params}
        out = cls()
        without: list[str] = []  # trainable and tracked, yet no gradient
        for path, p in trainable_params(module, "GradientsParams.from_grads"):
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
            elif p.is_require_grad() and tensor.is_require_grad():
                without.append(path)
        if without and out.is_empty():
            raise MissingGradientsError(
                f"GradientsParams.from_grads: none of the {len(without)} trainable parameters of "
                f"{type(module).__name__} ({_listed(without)}) has a gradient, so a step would change nothing. "
                "Likely causes: the loss was computed from a detached copy (tensor.detach(), to_data/from_data) "
                "or from model.valid() or tensor.inner(), which leave autodiff; the loss came from another "
                "model or an earlier forward pass than this `model`; or these gradients were already taken "
                "by an earlier from_grads (it pops them). Call loss.backward() on a loss computed by this "
                "model's forward pass")
        if without:
            warnings.warn(
                f"GradientsParams.from_grads: {len(without)} trainable parameter(s) of {type(module).__name__} "
                f"got no gradient and will not be updated: {_listed(without)}. The loss does not depend on "
                "them; freeze them with no_grad() if that is intended", MissingGradientsWarning, stacklevel=3)
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


def _listed(paths: list[str], limit: int = 8) -> str:
    shown = ", ".join(paths[:limit])
    return shown if len(paths) <= limit else f"{shown} and {len(paths) - limit} more"


def _check_gradients(grads: Any) -> None:
    from burnbook.autodiff import Gradients

    if isinstance(grads, GradientsParams):
        raise TypeError("GradientsParams.from_grads: `grads` is already a GradientsParams; "
                        "pass it to optim.step(lr, model, grads) directly")
    if not isinstance(grads, Gradients):
        raise TypeError(f"GradientsParams.from_grads: expected the Gradients returned by loss.backward(), "
                        f"got {type(grads).__name__}")
