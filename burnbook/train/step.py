"""What a model gives the Learner (Burn's `TrainStep`, `ValidStep`,
`TrainOutput`, `ClassificationOutput`, `RegressionOutput`).

A model trained by the Learner defines two methods::

    class Model(Module):
        def train_step(self, batch) -> TrainOutput:          # Burn's TrainStep::step
            item = self.forward_classification(batch.images, batch.targets)
            return TrainOutput(self, item.loss.backward(), item)

        def valid_step(self, batch) -> ClassificationOutput:  # Burn's ValidStep::step
            return self.forward_classification(batch.images, batch.targets)

`valid_step` runs on `model.valid()`, the same model on the inner backend.
The item of either step is what the metrics read, adapted to each metric's
input (`AccuracyInput`, `LossInput`, ...) by the `Adaptor` mechanism.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from burnbook.optim import GradientsParams
from .metric.acc import AccuracyInput, LossInput

__all__ = ["TrainOutput", "TrainStep", "ValidStep", "ClassificationOutput", "RegressionOutput", "detach_item"]

T = TypeVar("T")


class TrainOutput(Generic[T]):
    """The gradients of a training step and the item its metrics read.

    `grads` may be the `Gradients` of `loss.backward()` (turned into
    `GradientsParams` for `model` here, popping them, as Burn's
    `TrainOutput::new` does) or `GradientsParams` already.
    """

    __slots__ = ("grads", "item")

    def __init__(self, model: Any, grads: Any, item: T) -> None:
        self.grads = grads if isinstance(grads, GradientsParams) else GradientsParams.from_grads(grads, model)
        self.item = item

    def __repr__(self) -> str:
        return f"TrainOutput(grads: {len(self.grads)} parameters, item={self.item!r})"


@runtime_checkable
class TrainStep(Protocol):
    """A model the Learner can train (Burn's `TrainStep<TI, TO>`)."""

    def train_step(self, batch: Any) -> TrainOutput:
        ...


@runtime_checkable
class ValidStep(Protocol):
    """A model the Learner can validate (Burn's `ValidStep<VI, VO>`)."""

    def valid_step(self, batch: Any) -> Any:
        ...


class _Output:
    """Shared by the output classes: fields `loss`, `output`, `targets`."""

    __slots__ = ("loss", "output", "targets")

    def __init__(self, loss: Any, output: Any, targets: Any) -> None:
        self.loss, self.output, self.targets = loss, output, targets

    def detach(self) -> "_Output":
        """The same output on the inner backend, cut from the autodiff graph."""
        return type(self)(_detach(self.loss), _detach(self.output), _detach(self.targets))

    def __repr__(self) -> str:
        dims = {k: _dims(getattr(self, k)) for k in self.__slots__}
        return f"{type(self).__name__}(loss={dims['loss']}, output={dims['output']}, targets={dims['targets']})"


class ClassificationOutput(_Output):
    """Loss `[1]`, scores `[batch, num_classes]`, Int targets `[batch]`.
    Adapts to `AccuracyInput` and `LossInput`."""

    def adapt(self, input_type: type) -> Any:
        if input_type is AccuracyInput:
            return AccuracyInput(self.output, self.targets)
        if input_type is LossInput:
            return LossInput(self.loss)
        return NotImplemented


class RegressionOutput(_Output):
    """Loss `[1]`, predictions `[batch, d]`, float targets `[batch, d]`.
    Adapts to `LossInput`."""

    def adapt(self, input_type: type) -> Any:
        if input_type is LossInput:
            return LossInput(self.loss)
        return NotImplemented


def _dims(t: Any) -> Any:
    dims = getattr(t, "dims", None)
    return dims() if callable(dims) else type(t).__name__


def _detach(value: Any) -> Any:
    """A tensor on an autodiff backend as the same values on its inner
    backend (no graph node kept alive); anything else unchanged."""
    backend = getattr(value, "_B", None)
    if backend is not None and getattr(backend, "is_autodiff", False) and hasattr(value, "inner"):
        return value.inner()
    return value


def detach_item(item: Any) -> Any:
    """`item` with every autodiff tensor it holds moved off the graph, so
    the metrics (and anything they keep) hold no reference to it.

    Uses the item's own `detach()` when it has one; otherwise walks
    dataclasses, tuples, lists, dicts and plain objects one level deep
    (their tensor attributes).
    """
    if getattr(item, "_B", None) is not None:
        return _detach(item)
    method = getattr(item, "detach", None)
    if callable(method):
        return method()
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        changes = {f.name: detach_item(getattr(item, f.name)) for f in dataclasses.fields(item) if f.init}
        try:
            return dataclasses.replace(item, **changes)
        except (TypeError, ValueError):
            return item
    if isinstance(item, tuple) and hasattr(item, "_fields"):
        return type(item)(*(detach_item(v) for v in item))
    if isinstance(item, (list, tuple)):
        return type(item)(detach_item(v) for v in item)
    if isinstance(item, dict):
        return {k: detach_item(v) for k, v in item.items()}
    if hasattr(item, "__dict__") and not isinstance(item, type):
        tensors = {k: v for k, v in vars(item).items() if getattr(v, "_B", None) is not None}
        if tensors:
            out = copy.copy(item)
            for k, v in tensors.items():
                setattr(out, k, _detach(v))
            return out
    return item
