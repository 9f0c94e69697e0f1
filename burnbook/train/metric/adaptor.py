"""Adapting a step's output to each metric's input (Burn's `Adaptor<T>`).

In Burn, `ClassificationOutput` implements `Adaptor<AccuracyInput>` and
`Adaptor<LossInput>`, so the builder accepts an `AccuracyMetric` for a model
whose step returns a `ClassificationOutput`. Python has no trait impls, so
the same relation is kept in two places, checked in this order:

1. a registry, for output classes you do not own::

       @adaptor(MyOutput, AccuracyInput)
       def _(out: MyOutput) -> AccuracyInput:
           return AccuracyInput(out.logits, out.labels)

2. an ``adapt(self, input_type)`` method on the output class (return
   `NotImplemented` for input types it does not know);

3. an output that already *is* an instance of the input type.

`adapt(item, None)` is None: the metric needs no input (Burn's `()`, e.g.
`LearningRateMetric`, `CpuUse`).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

__all__ = ["Adaptor", "adaptor", "register_adaptor", "adapt", "AdaptError", "RAW"]


class _Raw:
    """`input_type` of a metric that takes the step output unadapted."""

    def __repr__(self) -> str:
        return "RAW"


RAW = _Raw()

_registry: dict[tuple[type, type], Callable[[Any], Any]] = {}


class AdaptError(TypeError):
    """A step output that no adaptor turns into a metric's input."""


@runtime_checkable
class Adaptor(Protocol):
    """An output that can become the input of some metrics."""

    def adapt(self, input_type: type) -> Any:
        """An instance of `input_type` built from this output, or NotImplemented."""
        ...


def register_adaptor(output_type: type, input_type: type, fn: Callable[[Any], Any]) -> None:
    """Teach `adapt` to turn `output_type` (and subclasses) into `input_type`."""
    if not isinstance(output_type, type) or not isinstance(input_type, type):
        raise TypeError("register_adaptor(output_type, input_type, fn) takes two classes and a function")
    _registry[(output_type, input_type)] = fn


def adaptor(output_type: type, input_type: type) -> Callable[[Callable], Callable]:
    """Decorator form of `register_adaptor`."""

    def decorate(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        register_adaptor(output_type, input_type, fn)
        return fn

    return decorate


def adapt(item: Any, input_type: Any, metric: str = "the metric") -> Any:
    """`item` as an instance of `input_type` (see the module docstring)."""
    if input_type is None:
        return None
    if input_type is RAW:
        return item
    for klass in type(item).__mro__:
        fn = _registry.get((klass, input_type))
        if fn is not None:
            return fn(item)
    method = getattr(item, "adapt", None)
    if callable(method):
        out = method(input_type)
        if out is not NotImplemented:
            return out
    if isinstance(input_type, type) and isinstance(item, input_type):
        return item
    raise AdaptError(
        f"{metric} reads a {getattr(input_type, '__name__', input_type)}, but the step returned a "
        f"{type(item).__name__} that cannot be adapted to it. Return an output that supports it "
        f"(ClassificationOutput adapts to AccuracyInput and LossInput; RegressionOutput to LossInput), "
        f"give {type(item).__name__} an adapt(self, input_type) method, or register one with "
        f"@adaptor({type(item).__name__}, {getattr(input_type, '__name__', input_type)})"
    )
