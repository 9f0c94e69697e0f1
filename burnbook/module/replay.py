"""Replay: a module's NdArray forward pass recorded once as the backend calls
it made, then re-run as those calls alone, without the Tensor layer, the
modules' Python or the shape checks (a CUDA graph's idea, on NumPy).

An imported ONNX model with small tensors spends much of a forward pass in
that Python rather than in NumPy (`make bench`'s `zoo` family), and its
shape arithmetic (Shape, Gather, Concat feeding a Reshape) runs on every
call. The ONNX importer routes its generated models' calls here (`Module`'s
`_replay` hook); any module class can opt in the same way.

A recording is kept per input signature (shapes, dtypes, tensor types) and
replayed only where the input's values cannot have changed what it did:

- every array a recorded call takes is the input, a parameter or constant
  of the module, the result of an earlier recorded call, or data handed to
  `*_from_data` (built by Python from shapes); anything else stops it;
- a value read back to Python (`*_into_data`) is kept as a constant only
  when nothing it came from depends on the input (shape arithmetic); read
  from the input's values (control flow, a data-dependent shape) it stops
  the recording, and that signature always runs eagerly;
- random draws are made afresh on every replay; a call on constants alone
  is folded (its recorded result reused);
- the module is fingerprinted (the identity of every module, parameter,
  tensor, primitive, list and value it holds), re-checked whenever a module
  field or a tensor's values were assigned anywhere (`Writes`) or a list it
  holds changed: a changed module is recorded again.

The calls are recorded through NdArray's own hook (`tracing`, in
`backend/ndarray/trace.py`), which reports each op the forward pass runs.

The second call of a signature runs eagerly and by replay and keeps the
replay only when both agree bit for bit. Eight recordings are kept per
module, the oldest dropped; a recording costs several eager passes, so a
module whose input shapes never repeat (eight recorded, none replayed)
stops recording and runs eagerly. Replays do not re-run `forward`'s
Python, so its side effects (prints, counters, Python's `random`) happen
only on the first two calls. Only plain `NdArray` replays (nothing is
tracked for autodiff); other backends, keyword arguments and a `forward`
set on the instance run eagerly.

A call through `replay_call` computes quietly, as onnxruntime does: the
whole call, eager or replayed, runs under `np.errstate(divide="ignore",
over="ignore", invalid="ignore")`, so NumPy raises no floating-point
RuntimeWarning inside it, whatever the warning filters say. The modules
that route their calls here are graphs imported from a file (a class that
opts in takes this rule with the replay), and their
masks, buckets and padding make ±inf and NaN lanes by construction: a
causal or padding mask leaves a softmax row all -inf (`-inf - -inf` in its
max subtraction), an additive mask is `log(0)`, T5's position buckets cast
`log(0)` to an integer, and a later `Where` discards those lanes; burnbook
cannot tell them from others, so inside such a call it warns about none
(NaN the model really produces still shows in its output). Everything else
keeps NumPy's warnings as before: a user's own `x.log()` of 0 or `x.int()`
of NaN outside the call (burnbook's filter in `burnbook/__init__.py`
decides which of those show), the `forward` of every module that does not
route its calls here, and gradients, which `backward()` computes outside
the call. A replay's
generated function runs as a frame of this module (`__name__`), so
burnbook's filter applies to it as it does to the eager pass.
"""

from __future__ import annotations

import operator
import threading
import weakref
from typing import Any, Callable

import numpy as np

from ..backend.ndarray import NdArray
from ..backend.ndarray.trace import tracing
from ..tensor.core import TensorBase, Writes
from .base import Module
from .param import Param

__all__ = ["replay_call", "replay_state"]

# Ops whose Python result depends only on a primitive's shape, dtype or device.
_META = ("_shape", "_dtype", "_device")
# Ops that change the backend's state: a forward pass calling them is not replayed.
_STATEFUL = frozenset({"seed", "rng_state", "set_rng_state"})
_MAX_SIGNATURES = 8   # recordings kept per module (one per input shape), the oldest dropped
# A recording costs several eager passes (~7x): a module whose input shapes
# never repeat stops recording once this many were made and none replayed.
_RECORDINGS_WITHOUT_REPLAY = 8


class _Slot:
    """A recorded array, by its index in a replay's environment."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class _Stop(Exception):
    """Why a forward pass cannot be replayed."""


class _Recorder:
    """The backend calls of one eager forward pass, made on this thread
    (NdArray's `tracing` reports them to `note`)."""

    def __init__(self, inputs: list, constants: dict) -> None:
        self.thread = threading.get_ident()
        self.slot_of: dict[int, int] = {}   # id(array) -> slot
        self.keep: list = []                # every array seen, so no id is reused while recording
        self.tainted: list[bool] = []       # per slot: depends on the input's values
        self.steps: list[tuple] = []        # (fn, args template, kwargs template, out slots)
        self.constants = constants          # id -> the module's own primitives
        self.failure: str | None = None
        self.inputs = [self._slot(a, True) for a in inputs]

    def _slot(self, array: np.ndarray, tainted: bool) -> int:
        index = len(self.tainted)
        self.slot_of.setdefault(id(array), index)
        self.keep.append(array)
        self.tainted.append(tainted)
        return index

    def _template(self, value: Any, used: list, op: str) -> Any:
        if isinstance(value, np.ndarray):
            index = self.slot_of.get(id(value))
            if index is not None:
                used.append(index)
                return _Slot(index)
            if id(value) in self.constants or op.endswith("_from_data"):
                return value
            raise _Stop(f"{op} was given an array that no recorded call made")
        if isinstance(value, (list, tuple)) and any(isinstance(v, (np.ndarray, list, tuple)) for v in value):
            return type(value)(self._template(v, used, op) for v in value)
        return value

    def note(self, name: str, fn: Callable, args: tuple, kwargs: dict, result: Any) -> None:
        """Record one call (or stop recording, saying why)."""
        if self.failure is not None:
            return
        try:
            self._note(name, fn, args, kwargs, result)
        except _Stop as stop:
            self.failure = str(stop)
            self.keep.clear()

    def _note(self, name: str, fn: Callable, args: tuple, kwargs: dict, result: Any) -> None:
        if name in _STATEFUL:
            raise _Stop(f"the forward pass calls {name}")
        if name.endswith(_META) or name == "sync":
            return
        used: list[int] = []
        args_t = self._template(args, used, name)
        kwargs_t = {k: self._template(v, used, name) for k, v in kwargs.items()}
        tainted = any(self.tainted[i] for i in used)
        if name.endswith("_into_data"):
            if tainted:
                raise _Stop(f"{name} reads values computed from the input back to Python "
                            "(data-dependent control flow or shapes)")
            return   # shape arithmetic: the same values on every call with these shapes
        outs = result if isinstance(result, tuple) else (result,)
        if not outs or not all(isinstance(o, np.ndarray) for o in outs):
            raise _Stop(f"{name} returned {type(result).__name__}, not arrays")
        if not used and "random" not in name:
            # Made from constants alone (a bias reshaped, zeros for a state):
            # the same array on every call, so the recorded one is kept.
            for o in outs:
                self.constants[id(o)] = o
                self.keep.append(o)
            return
        tainted = tainted or "random" in name
        slots = tuple(self._slot(o, tainted) for o in outs)
        self.steps.append((fn, args_t, kwargs_t, slots, isinstance(result, tuple)))


_active: _Recorder | None = None   # the recording in progress (one at a time: `tracing` waits)


class _Source:
    """The Python source of a replay: one call per line on local variables
    (`s<slot>`), the constants and functions passed in as globals."""

    def __init__(self) -> None:
        self.names: dict = {}
        self.lines: list[str] = []

    def const(self, value: Any) -> str:
        name = f"c{len(self.names)}"
        self.names[name] = value
        return name

    def expr(self, template: Any) -> str:
        if isinstance(template, _Slot):
            return f"s{template.index}"
        if isinstance(template, (list, tuple)) and any(isinstance(v, (_Slot, list, tuple)) for v in template):
            items = ", ".join(self.expr(v) for v in template)
            return f"[{items}]" if isinstance(template, list) else f"({items},)"
        return self.const(template)


class _Plan:
    """A recorded forward pass, pruned to the calls its outputs need and
    compiled to one Python function (`run`)."""

    def __init__(self, rec: _Recorder, result: Any) -> None:
        src = _Source()
        outputs: list[int] = []
        returned = _rebuilt(result, rec, src, outputs)
        needed = set(outputs)
        kept = []
        for step in reversed(rec.steps):
            fn, args_t, kwargs_t, slots, many = step
            if not needed.intersection(slots):
                continue     # only shape arithmetic read back to Python used it
            used: list[int] = []
            _collect(args_t, used)
            _collect(tuple(kwargs_t.values()), used)
            needed.update(used)
            kept.append((fn, args_t, kwargs_t, slots, many, used))
        kept.reverse()
        last_use: dict[int, int] = {}
        for n, (*_, used) in enumerate(kept):
            for s in used:
                last_use[s] = n
        frees: list[list[int]] = [[] for _ in kept]
        for s, n in last_use.items():
            if s not in outputs:
                frees[n].append(s)   # dropped after its last use, as the eager pass would
        for (fn, args_t, kwargs_t, slots, many, _), free in zip(kept, frees):
            call = [src.expr(a) for a in args_t] + [f"{k}={src.expr(v)}" for k, v in kwargs_t.items()]
            target = "".join(f"s{x}, " for x in slots) if many else f"s{slots[0]}"
            src.lines.append(f"    {target} = {src.const(fn)}({', '.join(call)})")
            if free:
                src.lines.append(f"    del {', '.join(f's{x}' for x in sorted(set(free)))}")
        params = ", ".join(f"s{x}" for x in rec.inputs)
        code = "\n".join([f"def run({params}):", *src.lines, f"    return {returned}"])
        # A frame of this module, so burnbook's warning filter (burnbook/__init__.py)
        # treats the replay as it treats the eager pass.
        scope = dict(src.names, __name__=__name__)
        exec(compile(code, "<burnbook replay>", "exec"), scope)  # noqa: S102 - our own generated lines
        self._run = scope["run"]
        self.calls = len(kept)
        self.verified = False

    def run(self, primitives: list) -> Any:
        return self._run(*primitives)


def _collect(template: Any, used: list) -> None:
    if isinstance(template, _Slot):
        used.append(template.index)
    elif isinstance(template, (list, tuple)):
        for v in template:
            _collect(v, used)


# -- the module side ----------------------------------------------------------------------

def _walk(root: Any) -> tuple[list, list] | None:
    """(every object `root` holds, in a fixed order: modules, params,
    tensors, primitives, lists, plain values; the primitives alone), or None
    when some tensor is not on plain NdArray."""
    objects: list = []
    primitives: list = []
    stack = [root]
    pop, push, more, add = stack.pop, stack.append, stack.extend, objects.append
    while stack:
        value = pop()
        add(value)
        if isinstance(value, Module):
            more([getattr(value, f) for f in value._fields])
        elif isinstance(value, TensorBase):
            if value._B is not NdArray:
                return None
            add(value._p)
            primitives.append(value._p)
        elif type(value) is Param:
            push(value._value)
        elif isinstance(value, (list, tuple)):
            more(value)
    return objects, primitives


class _State:
    """One module's recordings: {input signature: _Plan | reason string},
    valid while the module holds the very objects in `pinned` (which also
    keeps them alive, so that none is replaced by a newcomer at its address)."""

    def __init__(self) -> None:
        self.pinned: list = []
        self.primitives: list = []
        self.lists: list = []       # (list, ids of its items): lists change without a `Writes`
        self.writes = -1            # `Writes.count` when the fingerprint was taken
        self.plans: dict = {}
        self.disabled: str | None = None
        self.recorded = 0           # recordings made, and replays run, over the module's life
        self.replayed = 0
        self.eager: str | None = None   # why the module runs eagerly (not on NdArray)

    def check(self, module: Any) -> bool:
        """Re-take the fingerprint if anything was assigned since (anywhere:
        `Writes`) or a list the module holds changed; drop the recordings if
        the module itself changed. False when the module cannot replay."""
        if self.writes == Writes.count and all(tuple(map(id, lst)) == ids for lst, ids in self.lists):
            return self.eager is None
        walked = _walk(module)
        self.writes = Writes.count
        if walked is None:
            self.eager, self.plans, self.pinned, self.primitives, self.lists = (
                "a tensor of the module is not on plain NdArray", {}, [], [], [])
            return False
        objects, primitives = walked
        del objects[0]   # the module itself: pinning it here would keep it alive through `_states`
        self.eager = None
        if len(objects) != len(self.pinned) or not all(map(operator.is_, objects, self.pinned)):
            self.pinned, self.primitives, self.plans = objects, primitives, {}
        self.lists = [(o, tuple(map(id, o))) for o in objects if type(o) is list]
        return True


_states: "weakref.WeakKeyDictionary[Any, _State]" = weakref.WeakKeyDictionary()


def _signature(args: tuple) -> tuple | None:
    sig = []
    for a in args:
        if isinstance(a, TensorBase):
            if a._B is not NdArray:
                return None
            p = a._p
            sig.append((type(a), p.shape, p.dtype.str))
        elif a is None or isinstance(a, (int, float, str, bool)):
            sig.append((type(a), a))
        else:
            return None
    return tuple(sig)


def _rebuilt(result: Any, rec: _Recorder, src: _Source, outputs: list) -> str:
    """The expression giving `result`'s structure (tensors, tuples and lists
    of them) with the replayed primitives, a tensor class's `_wrap` per
    tensor; the tensors' slots are appended to `outputs`. Anything else
    cannot be replayed."""
    if isinstance(result, TensorBase):
        index = rec.slot_of.get(id(result._p))
        if index is None:
            raise _Stop("the output is not the result of a recorded call")
        outputs.append(index)
        return f"{src.const(type(result))}._wrap(s{index})"
    if type(result) not in (list, tuple):   # a tuple subclass (a named tuple) is not rebuilt
        raise _Stop(f"the forward pass returns {type(result).__name__}")
    items = ", ".join(_rebuilt(r, rec, src, outputs) for r in result)
    return f"[{items}]" if isinstance(result, list) else f"({items},)"


def _record(module: Any, args: tuple, constants: dict) -> tuple[Any, _Plan | str]:
    """Run `module.forward(*args)` eagerly while recording it."""
    global _active
    inputs = [a._p for a in args if isinstance(a, TensorBase)]
    rec = _Recorder(inputs, constants)
    with tracing(rec.note):
        _active = rec
        try:
            result = module.forward(*args)
        finally:
            _active = None
    if rec.failure is not None:
        return result, rec.failure
    try:
        plan = _Plan(rec, result)
    except _Stop as stop:
        return result, str(stop)
    finally:
        rec.keep.clear()
    return result, plan


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, TensorBase):
        return type(a) is type(b) and np.array_equal(a._p, b._p, equal_nan=a._p.dtype.kind in "fc")
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return False


def replay_call(module: Any, args: tuple, kwargs: dict) -> Any:
    """`module(*args)` through its recording where it can be replayed, else
    `module.forward(*args, **kwargs)`; quietly: NumPy's floating-point
    warnings (divide by zero, overflow, invalid value, casts included) are
    off for the call, as in onnxruntime (the module docstring says why)."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return _call(module, args, kwargs)


def _call(module: Any, args: tuple, kwargs: dict) -> Any:
    rec = _active
    if rec is not None and rec.thread == threading.get_ident():
        return module.forward(*args, **kwargs)   # inside another module's recording: part of it
    sig = None if kwargs or "forward" in vars(module) else _signature(args)
    if sig is None:   # keyword arguments, a forward set on the instance, or not NdArray
        return module.forward(*args, **kwargs)
    state = _states.get(module)
    if state is None:
        state = _states[module] = _State()
    if state.disabled is not None or not state.check(module):
        return module.forward(*args)
    plan = state.plans.get(sig)
    if plan is None:
        if state.recorded >= _RECORDINGS_WITHOUT_REPLAY and not state.replayed:
            state.disabled = (f"{state.recorded} input signatures recorded and none replayed: "
                              "the shapes do not repeat")
            return module.forward(*args)
        if len(state.plans) >= _MAX_SIGNATURES:
            del state.plans[next(iter(state.plans))]
        state.recorded += 1
        result, state.plans[sig] = _record(module, args, {id(p): p for p in state.primitives})
        return result
    if isinstance(plan, str):
        return module.forward(*args)
    primitives_in = [a._p for a in args if isinstance(a, TensorBase)]
    if plan.verified:
        state.replayed += 1
        return plan.run(primitives_in)
    eager = module.forward(*args)
    try:
        replayed = plan.run(primitives_in)
    except Exception as exc:  # noqa: BLE001 - the eager result stands; the reason is kept
        state.disabled = f"the replay failed: {type(exc).__name__}: {exc}"
        return eager
    if _same(eager, replayed):
        plan.verified = True
    else:
        state.disabled = "the replay differed from the eager forward pass"
    return eager


def replay_state(module: Any) -> dict:
    """What replay holds for `module`: {"disabled": reason or None, "plans":
    {signature: number of calls, or the reason it is not replayed}}."""
    state = _states.get(module)
    if state is None:
        return {"disabled": None, "plans": {}}
    plans = {sig: (p if isinstance(p, str) else {"calls": p.calls, "verified": p.verified})
             for sig, p in state.plans.items()}
    return {"disabled": state.disabled, "plans": plans}
