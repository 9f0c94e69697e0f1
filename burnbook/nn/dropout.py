"""`Dropout`: zero random activations while training (Burn's `nn::Dropout`)."""

from __future__ import annotations

from typing import Any

from burnbook.config import config
from burnbook.module import Module
from burnbook.tensor import Distribution, Tensor
from .common import check_config

__all__ = ["Dropout", "DropoutConfig"]


@config
class DropoutConfig:
    """Settings of a `Dropout` layer: the probability of zeroing a value."""

    prob: float

    def __post_init__(self) -> None:
        check_config(self, probabilities=("prob",))

    def init(self, device: Any = None, backend: type | None = None) -> "Dropout":
        """A new `Dropout` (it has no tensors; the arguments are accepted so
        every config can be called the same way)."""
        self.__post_init__()
        return Dropout(prob=self.prob)


class Dropout(Module):
    """Zeroes each value with probability `prob` and scales the rest by
    1 / (1 - prob), but only on an autodiff backend: Burn's rule is that an
    autodiff backend means training and `model.valid()` means evaluation."""

    prob: float

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        """`[...]` -> `[...]`, the same shape."""
        if not input._B.is_autodiff or self.prob == 0.0:
            return input
        if self.prob >= 1.0:
            return input.mul_scalar(0.0)
        keep = 1.0 - self.prob
        mask = input.random_like(Distribution.Bernoulli(keep)).detach()
        return input.mul(mask).mul_scalar(1.0 / keep)

    def extra_repr(self) -> dict:
        return {"prob": self.prob}
