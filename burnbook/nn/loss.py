"""Losses: `CrossEntropyLoss`, `MseLoss`, `BinaryCrossEntropyLoss`,
`HuberLoss`, and `Reduction` (Burn's `nn::loss`). Each returns a `[1]`
tensor (Burn keeps the rank) unless asked for the unreduced values.
"""

from __future__ import annotations

import enum
from typing import Any, Optional

from burnbook.config import config
from burnbook.module import Module
from burnbook.tensor import Float, Int, Tensor, activation
from .common import on_backend_of, resolve_backend, show

__all__ = [
    "Reduction", "CrossEntropyLoss", "CrossEntropyLossConfig", "MseLoss", "MSELoss",
    "BinaryCrossEntropyLoss", "BinaryCrossEntropyLossConfig", "HuberLoss", "HuberLossConfig",
]

# The smallest probability taken to the log when a loss is given
# probabilities: sqrt of f32's smallest normal number, as later Burn does, so
# log(0) is a large finite number instead of -inf.
_PROB_EPS = 1.0842021724855044e-19


class Reduction(enum.Enum):
    """How a loss reduces its per-element values: `Mean` (also `Auto`) or `Sum`."""

    Mean = "mean"
    Sum = "sum"
    Auto = "auto"


def _reduce(values: Tensor, reduction: Reduction) -> Tensor:
    if reduction is Reduction.Sum:
        return values.sum()
    if reduction in (Reduction.Mean, Reduction.Auto):
        return values.mean()
    raise TypeError(f"expected a Reduction (Reduction.Mean, .Sum or .Auto), got {reduction!r}")


def _check_same_shape(name: str, a: Tensor, b: Tensor) -> None:
    if a.dims() != b.dims():
        raise ValueError(f"{name}: predictions {a.dims()} and targets {b.dims()} must have the same shape")


# -- cross entropy ----------------------------------------------------------------------


@config
class CrossEntropyLossConfig:
    """Settings of a `CrossEntropyLoss`: target values to ignore (`pad_tokens`),
    per-class `weights`, label `smoothing` alpha in [0, 1], and whether the
    inputs are `logits` (True) or probabilities."""

    pad_tokens: Optional[list[int]] = None
    weights: Optional[list[float]] = None
    smoothing: Optional[float] = None
    logits: bool = True

    def __post_init__(self) -> None:
        if self.smoothing is not None and not 0.0 <= self.smoothing <= 1.0:
            raise ValueError(f"CrossEntropyLossConfig: smoothing must lie in [0, 1], got {self.smoothing}")
        if self.weights is not None and not all(w > 0 for w in self.weights):
            raise ValueError("CrossEntropyLossConfig: weights must all be positive")

    def init(self, device: Any = None, backend: type | None = None) -> "CrossEntropyLoss":
        weights = None
        if self.weights is not None:
            weights = Tensor[resolve_backend(device, backend), 1].from_floats(self.weights, device)
        return CrossEntropyLoss(pad_tokens=None if self.pad_tokens is None else list(self.pad_tokens),
                                weights=weights, smoothing=self.smoothing, logits=self.logits)


class CrossEntropyLoss(Module):
    """Cross entropy of `[batch, classes]` scores against Int class
    indices `[batch]` (torch.nn.functional.cross_entropy).

    Targets equal to a pad token add nothing and are left out of the mean,
    as PyTorch's `ignore_index` (Burn 0.13 divided by the whole batch, a bug
    Burn later fixed: tracel-ai/burn#5568); a batch of pads only gives NaN.
    With `weights`, the mean is weighted: sum(w[y] * loss) / sum(w[y]).
    Smoothing uses the targets (1 - alpha) * one_hot + alpha / classes.
    """

    pad_tokens: list | None = None
    weights: Tensor | None = None
    smoothing: float | None = None
    logits: bool = True

    @classmethod
    def new(cls, pad_index: int | None = None, device: Any = None,
            backend: type | None = None) -> "CrossEntropyLoss":
        """Burn's `CrossEntropyLoss::new(pad_index, device)`."""
        pads = None if pad_index is None else [pad_index]
        return CrossEntropyLossConfig(pad_tokens=pads).init(device, backend)

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        """`[batch, classes]` scores and Int `[batch]` targets -> the loss, `[1]`."""
        if logits.ndim != 2 or targets.ndim != 1 or targets.kind is not Int:
            raise ValueError(f"CrossEntropyLoss: expects logits [batch, classes] and Int targets [batch], "
                             f"got {logits.dims()} and {targets.kind.name} {targets.dims()}")
        batch, classes = logits.dims()
        if targets.dims()[0] != batch:
            raise ValueError(f"CrossEntropyLoss: {targets.dims()[0]} targets for {batch} rows of logits")
        targets = on_backend_of(targets, logits)
        log_probs = activation.log_softmax(logits, 1) if self.logits else logits.clamp_min(_PROB_EPS).log()
        pad = self._padding(targets)
        # Pads may hold any index; point them at class 0 so gathers stay in range.
        safe = targets if pad is None else targets.mask_fill(pad, 0)
        weights = None if self.weights is None else on_backend_of(self.weights, logits)
        if self.smoothing is not None:
            alpha = self.smoothing
            soft = safe.one_hot(classes).float().mul_scalar(1.0 - alpha).add_scalar(alpha / classes)
            per_class = log_probs.mul(soft)
            if weights is not None:
                per_class = per_class.mul(weights.unsqueeze())
            losses = per_class.sum_dim(1).reshape([batch]).neg()
        else:
            losses = log_probs.gather(1, safe.reshape([batch, 1])).reshape([batch]).neg()
            if weights is not None:
                losses = losses.mul(weights.select(0, safe))
        norm = weights.select(0, safe) if weights is not None else None
        if pad is not None:
            losses = losses.mask_fill(pad, 0.0)
            if norm is None:
                norm = pad.bool_not().float()
            else:
                norm = norm.mask_fill(pad, 0.0)
        if norm is None:
            return losses.mean()
        return losses.sum().div(norm.sum().detach())

    def _padding(self, targets: Tensor) -> Tensor | None:
        """Bool `[batch]`, True where the target is a pad token."""
        if not self.pad_tokens:
            return None
        mask = targets.equal_elem(self.pad_tokens[0])
        for token in self.pad_tokens[1:]:
            mask = mask.bool_or(targets.equal_elem(token))
        return mask

    def extra_repr(self) -> dict:
        return {"pad_tokens": self.pad_tokens, "smoothing": self.smoothing, "logits": show(self.logits),
                "weights": None if self.weights is None else self.weights.to_numpy().tolist()}


# -- mean squared error ------------------------------------------------------------------


class MseLoss(Module):
    """Mean squared error (torch.nn.MSELoss)."""

    @classmethod
    def new(cls) -> "MseLoss":
        return cls()

    def forward(self, logits: Tensor, targets: Tensor, reduction: Reduction = Reduction.Auto) -> Tensor:
        """Same-shape predictions and targets -> the reduced loss, `[1]`."""
        return _reduce(self.forward_no_reduction(logits, targets), reduction)

    def forward_no_reduction(self, logits: Tensor, targets: Tensor) -> Tensor:
        """(logits - targets)^2, element-wise, same shape."""
        _check_same_shape("MseLoss", logits, targets)
        diff = logits.sub(targets)
        return diff.mul(diff)


MSELoss = MseLoss  # the Burn book's table spelling


# -- binary cross entropy ---------------------------------------------------------------


@config
class BinaryCrossEntropyLossConfig:
    """Settings of a `BinaryCrossEntropyLoss`: optional class `weights`,
    label `smoothing` alpha, and whether inputs are `logits` (default:
    probabilities, as in Burn)."""

    weights: Optional[list[float]] = None
    smoothing: Optional[float] = None
    logits: bool = False

    def __post_init__(self) -> None:
        if self.smoothing is not None and not 0.0 <= self.smoothing <= 1.0:
            raise ValueError(f"BinaryCrossEntropyLossConfig: smoothing must lie in [0, 1], got {self.smoothing}")
        if self.weights is not None and not all(w > 0 for w in self.weights):
            raise ValueError("BinaryCrossEntropyLossConfig: weights must all be positive")

    def init(self, device: Any = None, backend: type | None = None) -> "BinaryCrossEntropyLoss":
        weights = None
        if self.weights is not None:
            weights = Tensor[resolve_backend(device, backend), 1].from_floats(self.weights, device)
        return BinaryCrossEntropyLoss(weights=weights, smoothing=self.smoothing, logits=self.logits)


def _log_clamped(x: Tensor) -> Tensor:
    """max(log x, -100), with x = 0 mapped straight to -100 so that no
    backend takes log(0) (NumPy would warn about it)."""
    zero = x.lower_equal_elem(0.0)
    return x.mask_fill(zero, 1.0).log().clamp_min(-100.0).mask_fill(zero, -100.0)


def _bce_on_probabilities(p: Tensor, t: Tensor) -> Tensor:
    """-(t log p + (1 - t) log(1 - p)) per element, each log clamped at -100,
    with PyTorch's gradient (p - t) / max(p (1 - p), 1e-12).

    Differentiating the clamped logs themselves gives 0 * inf = NaN at p = 0
    or 1, even for a correct confident prediction. So the value is computed
    from a detached p, and the gradient rides on p * c - detach(p) * c with c
    that detached coefficient: a term that is exactly 0 and whose gradient
    is c. (A second derivative through it sees c as a constant.)"""
    pd = p.detach()
    log_p = _log_clamped(pd)
    log_q = _log_clamped(pd.neg().add_scalar(1.0))
    value = t.mul(log_p).add(t.neg().add_scalar(1.0).mul(log_q)).neg()
    td = t.detach()
    c = pd.sub(td).div(pd.mul(pd.neg().add_scalar(1.0)).clamp_min(1e-12))
    return value.add(p.mul(c).sub(pd.mul(c)))


class BinaryCrossEntropyLoss(Module):
    """Binary cross entropy, mean over every element (torch's
    binary_cross_entropy, or ..._with_logits when `logits`).

    Targets are 0/1 (Int, as Burn, or Float for soft labels) of the input's
    shape. `weights`: for rank >= 2 one per class of the last dim; for rank
    1 `[w_negative, w_positive]`, picked by each target. Log-probabilities are
    clamped at -100, as PyTorch does, so a probability of 0 stays finite.
    """

    weights: Tensor | None = None
    smoothing: float | None = None
    logits: bool = False

    def forward(self, logits: Tensor, targets: Tensor) -> Tensor:
        """Same-shape scores (or probabilities) and 0/1 targets -> the loss, `[1]`."""
        _check_same_shape("BinaryCrossEntropyLoss", logits, targets)
        t = targets.float() if targets.kind is not Float else targets
        t = on_backend_of(t, logits)
        dims = logits.dims()
        if self.smoothing is not None:
            classes = dims[-1] if logits.ndim > 1 else 2
            t = t.mul_scalar(1.0 - self.smoothing).add_scalar(self.smoothing / classes)
        if self.logits:
            # (1 - t) x - log sigmoid(x): stable for large |x|.
            loss = t.neg().add_scalar(1.0).mul(logits).sub(activation.log_sigmoid(logits))
        else:
            loss = _bce_on_probabilities(logits, t)
        if self.weights is not None:
            loss = loss.mul(self._weights(targets, logits))
        return loss.mean()

    def _weights(self, targets: Tensor, like: Tensor) -> Tensor:
        w = on_backend_of(self.weights, like)
        dims = like.dims()
        if like.ndim > 1:
            if w.dims()[0] != dims[-1]:
                raise ValueError(f"BinaryCrossEntropyLoss: {w.dims()[0]} weights for {dims[-1]} classes")
            return w.reshape([1] * (like.ndim - 1) + [dims[-1]])
        if targets.kind is not Int:
            raise TypeError("BinaryCrossEntropyLoss: rank-1 weights pick w[target] and need Int targets")
        return w.select(0, on_backend_of(targets, like))

    def extra_repr(self) -> dict:
        return {"smoothing": self.smoothing, "logits": show(self.logits),
                "weights": None if self.weights is None else self.weights.to_numpy().tolist()}


# -- Huber --------------------------------------------------------------------------------


@config
class HuberLossConfig:
    """Settings of a `HuberLoss`: where the loss turns from quadratic to linear."""

    delta: float

    def __post_init__(self) -> None:
        if not self.delta >= 0.0:
            raise ValueError(f"HuberLossConfig: delta must be >= 0, got {self.delta}")

    def init(self, device: Any = None, backend: type | None = None) -> "HuberLoss":
        return HuberLoss(delta=self.delta, lin_bias=0.5 * self.delta * self.delta)


class HuberLoss(Module):
    """0.5 r^2 for |r| <= delta, delta (|r| - delta / 2) beyond (torch.nn.HuberLoss)."""

    delta: float
    lin_bias: float

    def forward(self, predictions: Tensor, targets: Tensor, reduction: Reduction = Reduction.Auto) -> Tensor:
        """Same-shape predictions and targets -> the reduced loss, `[1]`."""
        return _reduce(self.forward_no_reduction(predictions, targets), reduction)

    def forward_no_reduction(self, predictions: Tensor, targets: Tensor) -> Tensor:
        """The loss of every element, same shape."""
        _check_same_shape("HuberLoss", predictions, targets)
        return self.forward_residuals(targets.sub(predictions))

    def forward_residuals(self, residuals: Tensor) -> Tensor:
        """The loss of residuals r = targets - predictions."""
        large = residuals.abs().greater_elem(self.delta)
        # clamp(r, -delta, delta) * r = delta * |r| outside the band, without sign().
        outside = residuals.clamp(-self.delta, self.delta).mul(residuals).sub_scalar(self.lin_bias)
        inside = residuals.mul(residuals).mul_scalar(0.5)
        return inside.mask_where(large, outside)

    def extra_repr(self) -> dict:
        return {"delta": self.delta}
