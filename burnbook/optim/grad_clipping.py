"""Gradient clipping (Burn's `grad_clipping` module): limit each parameter's
gradient before the optimizer uses it, against exploding gradients.

Burn's enum `GradientClippingConfig { Value(f32), Norm(f32) }` becomes a base
`@config` class with two variants, spelled as in Burn::

    SgdConfig(gradient_clipping=GradientClippingConfig.Value(0.5))
    AdamConfig(grad_clipping=GradientClippingConfig.Norm(1.0))

Both act on every parameter's gradient separately, as Burn does. PyTorch's
`clip_grad_value_` is the same thing; `clip_grad_norm_` differs: it scales
all gradients together by their global norm (and adds 1e-6 to the norm).
A config saves as a tagged variant: `{"Norm": {"max_norm": 1.0}}`.
"""

from __future__ import annotations

from typing import Any

from burnbook.config import config

__all__ = ["GradientClippingConfig", "GradientClipping"]


@config
class GradientClippingConfig:
    """Base of the clipping variants: `GradientClippingConfig.Value(threshold)`
    or `GradientClippingConfig.Norm(max_norm)`."""

    def init(self) -> "GradientClipping":
        raise NotImplementedError("GradientClippingConfig is the base class; use "
                                  "GradientClippingConfig.Value(threshold) or .Norm(max_norm)")


@config
class Value(GradientClippingConfig):
    """Clamp every gradient element to [-threshold, threshold]."""

    threshold: float

    def __post_init__(self) -> None:
        if not self.threshold > 0:
            raise ValueError(f"GradientClippingConfig.Value: threshold must be > 0, got {self.threshold}")

    def init(self) -> "GradientClipping":
        return GradientClipping("value", self.threshold)


@config
class Norm(GradientClippingConfig):
    """Scale a gradient down to L2 norm `max_norm` when its norm is larger."""

    max_norm: float

    def __post_init__(self) -> None:
        if not self.max_norm > 0:
            raise ValueError(f"GradientClippingConfig.Norm: max_norm must be > 0, got {self.max_norm}")

    def init(self) -> "GradientClipping":
        return GradientClipping("norm", self.max_norm)


# Burn's spelling of the variants.
GradientClippingConfig.Value = Value  # type: ignore[attr-defined]
GradientClippingConfig.Norm = Norm  # type: ignore[attr-defined]


class GradientClipping:
    """The clipping an optimizer applies (Burn's `GradientClipping`):
    `clip_gradient(grad)` returns the clipped gradient, a new tensor."""

    __slots__ = ("mode", "threshold")

    def __init__(self, mode: str, threshold: float) -> None:
        if mode not in ("value", "norm"):
            raise ValueError(f"GradientClipping: mode is 'value' or 'norm', got {mode!r}")
        self.mode, self.threshold = mode, float(threshold)

    @classmethod
    def Value(cls, threshold: float) -> "GradientClipping":  # noqa: N802 - Burn's variant name
        return cls("value", threshold)

    @classmethod
    def Norm(cls, max_norm: float) -> "GradientClipping":  # noqa: N802
        return cls("norm", max_norm)

    def clip_gradient(self, grad: Any) -> Any:
        if self.mode == "value":
            return grad.clamp(-self.threshold, self.threshold)
        # The norm is read back as a Python float to decide, as Burn does.
        norm = grad.mul(grad).sum().sqrt().into_scalar()
        if norm > self.threshold:
            return grad.mul_scalar(self.threshold / norm)
        return grad

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GradientClipping) and (other.mode, other.threshold) == (self.mode, self.threshold)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"GradientClipping.{self.mode.capitalize()}({self.threshold})"
