"""The optimizer protocol and the adaptor that turns a per-tensor update rule
into a module optimizer (Burn's `Optimizer`, `SimpleOptimizer` and
`OptimizerAdaptor`).

An update rule is a pure function on plain (inner-backend) tensors::

    new_tensor, new_state = rule.step(lr, tensor, grad, state)

`state` is None on a parameter's first step, then whatever the previous call
returned: a small dict of tensors and ints (`{"time": 3, "moment_1": ...,
"moment_2": ...}`). The rule never mutates it. `OptimizerAdaptor.step(lr,
module, grads)` runs the rule for every parameter holding a gradient, keeps
each parameter's state under its `ParamId`, and returns the updated module:
each parameter rebuilt with `param.with_value(new)`, so it keeps its id,
class and gradient tracking and the next forward pass tracks it again. The
update itself runs on the inner backend, so it builds no autodiff graph.

The learning rate is an argument of `step`, not a setting of the optimizer
(see the book's Training section): a scheduler supplies it each iteration.
"""

from __future__ import annotations

import abc
import math
from numbers import Real
from typing import Any, Protocol

from burnbook.record import Record, RecordError
from burnbook.tensor import TensorData
from burnbook.tensor.core import TensorBase
from .grad_clipping import GradientClipping
from .grads import GradientsParams, trainable_params

__all__ = ["LearningRate", "Optimizer", "SimpleOptimizer", "OptimizerAdaptor"]

LearningRate = float
State = dict  # name -> inner-backend tensor | int; TensorData after load_record until used


class SimpleOptimizer(Protocol):
    """A per-tensor update rule (Burn's `SimpleOptimizer`)."""

    name: str

    def step(self, lr: float, tensor: Any, grad: Any, state: State | None) -> tuple[Any, State | None]:
        """(tensor, grad, state) -> (new tensor, new state); pure."""
        ...

    def state_keys(self) -> tuple[str, ...]:
        """The keys of the state this rule keeps (for checking records)."""
        ...


class Optimizer(abc.ABC):
    """What trains a module (Burn's `Optimizer` trait)."""

    @abc.abstractmethod
    def step(self, lr: LearningRate, module: Any, grads: GradientsParams) -> Any:
        """The module after one update with learning rate `lr`."""

    @abc.abstractmethod
    def to_record(self) -> Record:
        """The optimizer's state (per parameter) as a `Record`."""

    @abc.abstractmethod
    def load_record(self, record: Record) -> "Optimizer":
        """Replace the state with `record`'s; returns the optimizer."""


class OptimizerAdaptor(Optimizer):
    """A `SimpleOptimizer` applied to every parameter of a module, with its
    state kept per `ParamId` and optional gradient clipping. What
    `SgdConfig().init()`, `AdamConfig().init()`... return.

    Two different parameters of the module sharing a `ParamId` are refused
    (`DuplicateParamIdError`, naming both paths); one `Param` at several
    paths (tied weights) is updated once. Gradients whose id matches no
    trainable parameter of the module are ignored, as in Burn (you may step a sub-module with the gradients of a
    whole model), but a step where *none* of a non-empty set of gradients
    matches raises a `ValueError`: that is always a mistake, typically the
    gradients of another model, or of a model reloaded with other ids.
    """

    def __init__(self, optim: SimpleOptimizer, grad_clipping: GradientClipping | None = None) -> None:
        self.optim = optim
        self.grad_clipping = grad_clipping
        self._states: dict[str, State] = {}

    def with_grad_clipping(self, grad_clipping: GradientClipping) -> "OptimizerAdaptor":
        self.grad_clipping = grad_clipping
        return self

    # -- stepping ------------------------------------------------------------------
    def step(self, lr: LearningRate, module: Any, grads: GradientsParams) -> Any:
        lr = _check_lr(lr)
        if not isinstance(grads, GradientsParams):
            hint = (" Convert them first: GradientsParams.from_grads(grads, model)"
                    if type(grads).__name__ == "Gradients" else "")
            raise TypeError(f"optim.step: expected GradientsParams, got {type(grads).__name__}.{hint}")
        if not hasattr(module, "map_params"):
            raise TypeError(f"optim.step: expected a Module, got {type(module).__name__}")
        remaining = grads.copy()
        # Refuses two different parameters with one id (DuplicateParamIdError).
        trainable = {id(p) for _, p in trainable_params(module, "optim.step")}
        done: dict[Any, Any] = {}  # a parameter used at several paths (tied weights) updates once
        matched = 0

        def update(path: str, param: Any) -> Any:
            nonlocal matched
            if id(param) not in trainable:
                return param
            if param.id in done:
                return done[param.id]
            grad = remaining.remove(param.id)
            if grad is None:
                return param
            matched += 1
            done[param.id] = param.with_value(self._step_tensor(path, param, grad, lr))
            return done[param.id]

        updated = module.map_params(update)
        if matched == 0 and len(grads) > 0:
            raise ValueError(
                f"optim.step: none of the {len(grads)} gradients belongs to a trainable parameter of "
                f"{type(module).__name__}. Compute them from this model's loss with "
                "GradientsParams.from_grads(grads, model); a model loaded from a record takes the record's "
                "parameter ids"
            )
        return updated

    def _step_tensor(self, path: str, param: Any, grad: Any, lr: float) -> Any:
        tensor = param.val()
        autodiff = tensor._B.is_autodiff
        inner = tensor.inner() if autodiff else tensor
        if grad._B.is_autodiff:  # gradients made with backward(create_graph=True)
            grad = grad.inner()
        if grad._B is not inner._B:
            raise TypeError(f"optim.step: the gradient of '{path}' is on {grad._B.name()!r}, "
                            f"the parameter on {inner._B.name()!r}")
        if grad.dims() != inner.dims():
            raise ValueError(f"optim.step: the gradient of '{path}' has shape {grad.dims()}, "
                             f"the parameter {inner.dims()}")
        if self.grad_clipping is not None:
            grad = self.grad_clipping.clip_gradient(grad)
        key = param.id.value
        state = self._states.get(key)
        if state is not None:
            state = _materialize(state, grad)
        new, state = self.optim.step(lr, inner, grad, state)
        if state is None:
            self._states.pop(key, None)
        else:
            self._states[key] = state
        return type(tensor).from_inner(new) if autodiff else new

    # -- records -----------------------------------------------------------------------
    def to_record(self) -> Record:
        """`Record(optimizer=<rule name>, states={param id: {state}})`: tensors
        as `TensorData`, counters as ints. Save it with any recorder."""
        states = {key: {k: _to_leaf(v) for k, v in state.items()} for key, state in self._states.items()}
        return Record({"optimizer": self.optim.name, "states": states})

    def load_record(self, record: Any) -> "OptimizerAdaptor":
        """Take the states of `record` (replacing the current ones); a
        `RecordError` says what does not fit. Tensors are placed on the
        gradient's backend and device at the parameter's next step."""
        if not isinstance(record, Record):
            try:
                record = Record(record)
            except TypeError as err:
                raise RecordError(f"{self.optim.name} optimizer: cannot read the record: {err}") from None
        if "optimizer" not in record or "states" not in record:
            raise RecordError(f"{self.optim.name} optimizer: not an optimizer record (fields: "
                              f"{', '.join(record) or 'none'}; expected optimizer, states)")
        if record["optimizer"] != self.optim.name:
            raise RecordError(f"the record holds the state of a {record['optimizer']!r} optimizer, "
                              f"not of {self.optim.name!r}")
        expected = set(self.optim.state_keys())
        states: dict[str, State] = {}
        problems = []
        for key, state in record["states"].items():
            if not isinstance(state, Record):
                problems.append(f"{key}: expected a record, found {type(state).__name__}")
                continue
            if set(state) != expected:
                problems.append(f"{key}: fields {sorted(state)}, this {self.optim.name} keeps {sorted(expected)}")
                continue
            bad = [k for k, v in state.items() if not isinstance(v, (TensorData, int)) or isinstance(v, bool)]
            if bad:
                problems.append(f"{key}: {', '.join(bad)} should be tensors or ints")
                continue
            states[key] = dict(state)
        if problems:
            raise RecordError(f"cannot load the {self.optim.name} optimizer record: " + "; ".join(problems))
        self._states = states
        return self

    def __len__(self) -> int:
        """The number of parameters with a state."""
        return len(self._states)

    def __repr__(self) -> str:
        clip = f", grad_clipping={self.grad_clipping!r}" if self.grad_clipping is not None else ""
        return f"OptimizerAdaptor({self.optim!r}{clip}, states: {len(self._states)})"


def _check_lr(lr: Any) -> float:
    if isinstance(lr, bool) or not isinstance(lr, Real):
        hint = " Pass scheduler.step(), the scheduler's next learning rate." if hasattr(lr, "step") else ""
        raise TypeError(f"optim.step: the learning rate must be a number, got {type(lr).__name__}.{hint}")
    lr = float(lr)
    if not math.isfinite(lr):
        raise ValueError(f"optim.step: the learning rate must be finite, got {lr}")
    return lr


def _to_leaf(value: Any) -> Any:
    return value.to_data() if isinstance(value, TensorBase) else value


def _materialize(state: State, like: Any) -> State:
    """State tensors as tensors on `like`'s backend and device (a record
    holds `TensorData`; a module may have moved to another device)."""
    out = {}
    for k, v in state.items():
        if isinstance(v, TensorData):
            if list(v.shape) != like.dims():
                raise ValueError(f"optimizer state '{k}' has shape {list(v.shape)} in the loaded record, "
                                 f"the parameter {like.dims()}: the record belongs to another model")
            v = type(like).from_data(v, like.device())
        elif isinstance(v, TensorBase) and v.device() != like.device():
            v = v.to_device(like.device())
        out[k] = v
    return out
