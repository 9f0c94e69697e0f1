"""Distributions for random tensors (`Tensor.random`, `random_like`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class _Dist:
    kind: str
    a: float = 0.0
    b: float = 1.0

    def __repr__(self) -> str:
        if self.kind == "default":
            return "Distribution.Default"
        if self.kind == "bernoulli":
            return f"Distribution.Bernoulli({self.a})"
        return f"Distribution.{self.kind.capitalize()}({self.a}, {self.b})"

    def sample(self, rng: np.random.Generator, shape: tuple, dtype) -> np.ndarray:
        """Draw `shape` values on the host, in float64, then cast to `dtype`."""
        if self.kind in ("default", "uniform"):
            out = rng.uniform(self.a, self.b, size=shape)
        elif self.kind == "normal":
            out = rng.normal(self.a, self.b, size=shape)
        else:
            out = (rng.random(size=shape) < self.a).astype(np.float64)
        return out.astype(dtype, copy=False)


class Distribution:
    """Burn's `Distribution`: `Default` (uniform on [0, 1)), `Uniform(low, high)`,
    `Normal(mean, std)` and `Bernoulli(p)` (ones with probability p)."""

    Default = _Dist("default", 0.0, 1.0)

    @staticmethod
    def Uniform(low: float, high: float) -> _Dist:  # noqa: N802 - Burn's name
        if not high >= low:
            raise ValueError(f"Distribution.Uniform: low {low} must not exceed high {high}")
        return _Dist("uniform", float(low), float(high))

    @staticmethod
    def Normal(mean: float, std: float) -> _Dist:  # noqa: N802
        if not std >= 0:
            raise ValueError(f"Distribution.Normal: std must be >= 0, got {std}")
        return _Dist("normal", float(mean), float(std))

    @staticmethod
    def Bernoulli(p: float) -> _Dist:  # noqa: N802
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Distribution.Bernoulli: p must lie in [0, 1], got {p}")
        return _Dist("bernoulli", float(p))
