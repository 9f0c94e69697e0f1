"""`GradientsAccumulator`: sum gradients over several backward passes before
one optimizer step (Burn's `GradientsAccumulator`), e.g. to train with a
batch too big for memory::

    accumulator = GradientsAccumulator()
    for batch in micro_batches:
        grads = GradientsParams.from_grads(model(batch).backward(), model)
        accumulator.accumulate(model, grads)
    model = optim.step(lr, model, accumulator.grads())   # the sum; the accumulator is empty again
"""

from __future__ import annotations

from typing import Any

from .grads import GradientsParams, trainable_params

__all__ = ["GradientsAccumulator"]


class GradientsAccumulator:
    """Running sums of `GradientsParams`, per parameter id."""

    __slots__ = ("_grads",)

    def __init__(self) -> None:
        self._grads = GradientsParams()

    def accumulate(self, module: Any, grads: GradientsParams) -> None:
        """Add `grads` to the sums, for the parameters of `module` only (as in
        Burn: gradients of ids that are not in `module` are dropped)."""
        if not isinstance(grads, GradientsParams):
            raise TypeError(f"GradientsAccumulator.accumulate: expected GradientsParams (from "
                            f"GradientsParams.from_grads(grads, model)), got {type(grads).__name__}")
        new = grads.copy()
        for _, p in trainable_params(module):
            grad = new.remove(p.id)
            if grad is None:
                continue
            old = self._grads.remove(p.id)
            self._grads.register(p.id, grad if old is None else old.add(grad))

    def grads(self) -> GradientsParams:
        """The accumulated gradients; the accumulator starts empty again."""
        out, self._grads = self._grads, GradientsParams()
        return out

    def __len__(self) -> int:
        return len(self._grads)

    def __repr__(self) -> str:
        return f"GradientsAccumulator({len(self._grads)} parameters)"
